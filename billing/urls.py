"""Dashboard pages of Billing."""

from django.urls import path

from billing.views import balance, invoices, orders, overview, payments, profile, subscriptions

urlpatterns = [
    path("billing", overview.BillingOverviewView.as_view(), name="billing"),
    path("billing/invoices", invoices.InvoiceListView.as_view(), name="billing_invoices"),
    path("billing/payments", payments.PaymentListView.as_view(), name="billing_payments"),
    path(
        "billing/invoices/<id:invoice_id>",
        invoices.InvoiceDetailView.as_view(),
        name="billing_invoice",
    ),
    path(
        "billing/invoices/<id:invoice_id>/pdf",
        invoices.InvoicePdfView.as_view(),
        name="billing_invoice_pdf",
    ),
    path(
        "billing/invoices/<id:invoice_id>/pay",
        invoices.InvoicePayWithCreditView.as_view(),
        name="billing_invoice_pay",
    ),
    path(
        "billing/credit-notes/<id:credit_note_id>/pdf",
        invoices.CreditNotePdfView.as_view(),
        name="billing_credit_note_pdf",
    ),
    path("billing/order", orders.OrderView.as_view(), name="billing_order"),
    path(
        "billing/subscriptions",
        subscriptions.SubscriptionListView.as_view(),
        name="billing_subscriptions",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>",
        subscriptions.SubscriptionDetailView.as_view(),
        name="billing_subscription",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>/change",
        subscriptions.SubscriptionChangeView.as_view(),
        name="billing_subscription_change",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>/cancel",
        subscriptions.SubscriptionCancelView.as_view(),
        name="billing_subscription_cancel",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>/resume",
        subscriptions.SubscriptionResumeView.as_view(),
        name="billing_subscription_resume",
    ),
    path("billing/balance", balance.BalanceView.as_view(), name="billing_balance"),
    path("billing/profile", profile.BillingProfileView.as_view(), name="billing_profile"),
]

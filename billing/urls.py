"""Dashboard pages of Billing."""

from django.urls import path

from billing import dashboard, views

urlpatterns = [
    path("billing", views.BillingOverviewView.as_view(), name="billing"),
    path("billing/invoices", views.InvoiceListView.as_view(), name="billing_invoices"),
    path("billing/payments", views.PaymentListView.as_view(), name="billing_payments"),
    path(
        "billing/invoices/<id:invoice_id>",
        views.InvoiceDetailView.as_view(),
        name="billing_invoice",
    ),
    path(
        "billing/invoices/<id:invoice_id>/pdf",
        views.InvoicePdfView.as_view(),
        name="billing_invoice_pdf",
    ),
    path(
        "billing/invoices/<id:invoice_id>/pay",
        views.InvoicePayWithCreditView.as_view(),
        name="billing_invoice_pay",
    ),
    path(
        "billing/credit-notes/<id:credit_note_id>/pdf",
        views.CreditNotePdfView.as_view(),
        name="billing_credit_note_pdf",
    ),
    path("billing/order", dashboard.OrderView.as_view(), name="billing_order"),
    path(
        "billing/subscriptions",
        dashboard.SubscriptionListView.as_view(),
        name="billing_subscriptions",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>",
        dashboard.SubscriptionDetailView.as_view(),
        name="billing_subscription",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>/change",
        dashboard.SubscriptionChangeView.as_view(),
        name="billing_subscription_change",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>/cancel",
        dashboard.SubscriptionCancelView.as_view(),
        name="billing_subscription_cancel",
    ),
    path(
        "billing/subscriptions/<id:subscription_id>/resume",
        dashboard.SubscriptionResumeView.as_view(),
        name="billing_subscription_resume",
    ),
    path("billing/balance", views.BalanceView.as_view(), name="billing_balance"),
    path("billing/profile", views.BillingProfileView.as_view(), name="billing_profile"),
]

"""Dashboard pages of Billing."""

from django.urls import path

from billing import views

urlpatterns = [
    path("billing", views.BillingOverviewView.as_view(), name="billing"),
    path("billing/invoices", views.InvoiceListView.as_view(), name="billing_invoices"),
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
    path("billing/balance", views.BalanceView.as_view(), name="billing_balance"),
    path("billing/profile", views.BillingProfileView.as_view(), name="billing_profile"),
]

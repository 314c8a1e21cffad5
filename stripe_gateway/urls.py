from django.urls import path

from stripe_gateway import dashboard, views

urlpatterns = [
    path("stripe/webhook", views.stripe_webhook, name="stripe_webhook"),
    path(
        "billing/payment-methods",
        dashboard.PaymentMethodsView.as_view(),
        name="billing_payment_methods",
    ),
    path(
        "billing/payment-methods/setup-intent",
        dashboard.SetupIntentStartView.as_view(),
        name="billing_setup_intent",
    ),
    path(
        "billing/payment-methods/save",
        dashboard.PaymentMethodSaveView.as_view(),
        name="billing_payment_method_save",
    ),
    path(
        "billing/payment-methods/<id:payment_method_id>/default",
        dashboard.PaymentMethodActionView.as_view(verb="default"),
        name="billing_payment_method_default",
    ),
    path(
        "billing/payment-methods/<id:payment_method_id>/remove",
        dashboard.PaymentMethodActionView.as_view(verb="remove"),
        name="billing_payment_method_remove",
    ),
    path(
        "billing/invoices/<id:invoice_id>/pay-by-card",
        dashboard.InvoicePayByCardView.as_view(),
        name="billing_invoice_pay_by_card",
    ),
    path(
        "billing/invoices/<id:invoice_id>/card-return",
        dashboard.CardReturnView.as_view(),
        name="billing_invoice_card_return",
    ),
]

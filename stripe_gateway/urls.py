from django.urls import path

from stripe_gateway.views import cards, webhook

urlpatterns = [
    path("stripe/webhook", webhook.stripe_webhook, name="stripe_webhook"),
    path(
        "billing/payment-methods",
        cards.PaymentMethodsView.as_view(),
        name="billing_payment_methods",
    ),
    path(
        "billing/payment-methods/setup-intent",
        cards.SetupIntentStartView.as_view(),
        name="billing_setup_intent",
    ),
    path(
        "billing/payment-methods/save",
        cards.PaymentMethodSaveView.as_view(),
        name="billing_payment_method_save",
    ),
    path(
        "billing/payment-methods/<id:payment_method_id>/default",
        cards.PaymentMethodActionView.as_view(verb="default"),
        name="billing_payment_method_default",
    ),
    path(
        "billing/payment-methods/<id:payment_method_id>/remove",
        cards.PaymentMethodActionView.as_view(verb="remove"),
        name="billing_payment_method_remove",
    ),
    path(
        "billing/invoices/<id:invoice_id>/pay-by-card",
        cards.InvoicePayByCardView.as_view(),
        name="billing_invoice_pay_by_card",
    ),
    path(
        "billing/invoices/<id:invoice_id>/card-return",
        cards.CardReturnView.as_view(),
        name="billing_invoice_card_return",
    ),
]

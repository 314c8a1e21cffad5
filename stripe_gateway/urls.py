from django.urls import path

from stripe_gateway import views

urlpatterns = [
    path("stripe/webhook", views.stripe_webhook, name="stripe_webhook"),
    path(
        "billing/invoices/<id:invoice_id>/card-return",
        views.CardReturnView.as_view(),
        name="billing_invoice_card_return",
    ),
]

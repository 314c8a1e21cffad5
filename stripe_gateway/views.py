"""Stripe's webhook endpoint (outside ``/v1``: Stripe signs its requests; it has no API key),
and the page the bank sends a customer back to after 3-D Secure."""

import stripe
from django.contrib import messages
from django.http import HttpRequest, JsonResponse
from django.shortcuts import redirect
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from billing.models import PaymentStatus
from billing.views import InvoiceObjectMixin
from hosting.api.exceptions import error_response
from hosting.errors import ApplicationError, ValidationFailed
from stripe_gateway.models import StripeCharge
from stripe_gateway.services.charges import intent_apply
from stripe_gateway.services.client import stripe_client
from stripe_gateway.services.notifications import MAX_BODY_BYTES, stripe_event_receive


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> JsonResponse:
    """Verify and keep the notification, answer at once; the worker does the work."""
    try:
        if int(request.headers.get("Content-Length") or 0) > MAX_BODY_BYTES:
            raise ValidationFailed("The notification is too large.")
        new = stripe_event_receive(request.body, request.headers.get("Stripe-Signature"))
    except ApplicationError as refused:
        return error_response(refused, request)
    return JsonResponse({"received": True, "duplicate": not new})


class CardReturnView(InvoiceObjectMixin, View):
    """Where the bank sends the customer back after 3-D Secure (``return_url``): the payment
    is brought to where its PaymentIntent stands at Stripe, then the invoice page says how it
    went. Reading Stripe again is harmless: the notification or the reconciliation would."""

    http_method_names = ["get"]

    def get(self, request, *args, **kwargs):
        charge = (
            StripeCharge.objects.select_related("payment")
            .filter(
                payment__invoice=self.invoice,
                payment_intent=request.GET.get("payment_intent", ""),
            )
            .first()
        )
        if charge is None:
            messages.error(request, "That card payment is not one of this invoice's.")
            return redirect(self.refused_url)
        try:
            intent = stripe_client().v1.payment_intents.retrieve(charge.payment_intent)
        except stripe.StripeError:
            messages.info(request, "The card payment is being confirmed; this page will show it.")
            return redirect(self.refused_url)
        outcome = intent_apply(charge.payment, intent)
        if outcome.status == PaymentStatus.SUCCEEDED:
            messages.success(request, f"Invoice {self.invoice.number} is paid by card.")
        elif outcome.status == PaymentStatus.FAILED:
            charge.payment.refresh_from_db()
            messages.error(request, f"The card payment failed: {charge.payment.failure_message}")
        else:
            messages.info(request, "The card payment is being confirmed; this page will show it.")
        return redirect(self.refused_url)

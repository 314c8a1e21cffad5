"""Stripe's webhook endpoint (outside ``/v1``: Stripe signs its requests; it has no API key)."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from hosting.api.exceptions import error_response
from hosting.errors import ApplicationError, ValidationFailed
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

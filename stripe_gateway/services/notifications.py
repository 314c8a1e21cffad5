"""Stripe's notifications (webhooks): verified with the library, each event id handled once,
the work done in the worker, and the outcome taken from the object as Stripe has it now, not
from the event, so events arriving late, twice or out of order end in the right state."""

import json
import logging

import stripe
from django.conf import settings
from django.db import IntegrityError, transaction
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext_noop

from accounts.actors import SYSTEM
from accounts.models import Account
from billing.models import Payment
from hosting.errors import ApplicationError
from stripe_gateway.models import PaymentMethod, StripeEvent
from stripe_gateway.services.charges import intent_apply
from stripe_gateway.services.client import stripe_client
from stripe_gateway.services.methods import payment_method_forget, payment_method_save

logger = logging.getLogger(__name__)

# The largest notification accepted (Stripe's are a few kilobytes).
MAX_BODY_BYTES = 512 * 1024


class InvalidSignature(ApplicationError):
    status, code = 400, "invalid_signature"
    message = gettext_noop("The Stripe-Signature header does not match the body.")


def stripe_event_receive(body: bytes, signature: str | None) -> bool:
    """Verify a notification and keep it; queue its handling the first time its id is seen.
    Returns whether it was new. A bad signature is ``InvalidSignature`` and changes nothing."""
    try:
        event = stripe.Webhook.construct_event(body, signature, settings.STRIPE_WEBHOOK_SECRET)
    except (ValueError, stripe.SignatureVerificationError):
        raise InvalidSignature() from None
    obj = event.data.object
    try:
        with transaction.atomic():
            StripeEvent.objects.create(
                id=event.id,
                type=event.type,
                object_id=str(getattr(obj, "id", "") or "")[:255],
                payload=json.loads(body),
            )
            stripe_event_process.enqueue(event.id)
    except IntegrityError:
        return False  # delivered again: handled (or being handled) already
    return True


@task
def stripe_event_process(event_id: str) -> str:
    """The worker's side: handle one stored notification, once."""
    with transaction.atomic():
        event = StripeEvent.objects.select_for_update().get(pk=event_id)
        if event.processed_at is not None:
            return "already handled"
    outcome = _handle(event)
    StripeEvent.objects.filter(pk=event_id).update(processed_at=timezone.now())
    return outcome


def _handle(event: StripeEvent) -> str:
    obj = event.payload.get("data", {}).get("object", {})
    metadata = obj.get("metadata") or {}
    if event.type.startswith("payment_intent."):
        payment = Payment.objects.filter(pk=metadata.get("payment", "")).first()
        if payment is None:
            payment = Payment.objects.filter(gateway_payment_id=obj.get("id", "")).first()
        if payment is None:
            return "no payment of ours"
        intent = stripe_client().v1.payment_intents.retrieve(obj["id"])
        return intent_apply(payment, intent).status
    if event.type == "setup_intent.succeeded":
        account = Account.objects.filter(pk=metadata.get("account", "")).first()
        if account is None:
            return "no account of ours"
        payment_method_save(account=account, setup_intent=obj["id"], actor=SYSTEM)
        return "card saved"
    if event.type == "payment_method.detached":
        method = PaymentMethod.objects.filter(stripe_id=obj.get("id", "")).first()
        if method is not None:
            payment_method_forget(method, SYSTEM)
            return "card forgotten"
        return "no card of ours"
    return "ignored"

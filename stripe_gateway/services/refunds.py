"""Refunds to a card: a credit note refunded to the customer (``billing.services.credit_notes``)
records the refund on the payment in its transaction and queues a ``StripeRefund``; the worker
sends it to Stripe (idempotency key ``refund-<id>``: a retry after a timeout is the same refund),
and the reconciliation sends again any still pending after a while."""

import logging
from datetime import datetime, timedelta

import stripe
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from accounts.actors import SYSTEM
from billing.models import CreditNote, Payment
from billing.representations import payment_representation
from events.services import record_event
from stripe_gateway.models import StripeRefund
from stripe_gateway.services.client import stripe_client

logger = logging.getLogger(__name__)

RETRY_AFTER = timedelta(minutes=5)


def refund_open(*, payment: Payment, amount: int, credit_note: CreditNote) -> StripeRefund:
    """In the credit note's transaction: the refund to send, and its task."""
    refund = StripeRefund.objects.create(payment=payment, credit_note=credit_note, amount=amount)
    stripe_refund_send.enqueue(refund.pk)
    return refund


@task
def stripe_refund_send(refund_id: int) -> str:
    return refund_send(refund_id)


def refund_send(refund_id: int) -> str:
    """Send one pending refund to Stripe; outside a transaction. Returns its status."""
    refund = StripeRefund.objects.select_related("payment", "credit_note").get(pk=refund_id)
    if refund.status != StripeRefund.Status.PENDING:
        return refund.status
    try:
        sent = stripe_client().v1.refunds.create(
            params={
                "payment_intent": refund.payment.gateway_payment_id,
                "amount": refund.amount,
                "metadata": {"credit_note": refund.credit_note_id, "payment": refund.payment_id},
            },
            options={"idempotency_key": f"refund-{refund.pk}"},
        )
    except (stripe.APIConnectionError, stripe.RateLimitError, stripe.APIError) as unknown:
        logger.warning("stripe: refund %s not sent yet: %s", refund.pk, unknown)
        return refund.status  # pending: the reconciliation sends it again, same key
    except stripe.StripeError as refused:
        message = getattr(refused, "user_message", None) or str(refused)
        _refund_failed(refund, message)
        return StripeRefund.Status.FAILED
    if sent.status in ("failed", "canceled"):
        reason = getattr(sent, "failure_reason", None) or sent.status
        _refund_failed(refund, f"Stripe could not give the money back ({reason}).", sent.id)
        return StripeRefund.Status.FAILED
    StripeRefund.objects.filter(pk=refund.pk).update(
        status=StripeRefund.Status.SUCCEEDED, refund_id=sent.id
    )
    return StripeRefund.Status.SUCCEEDED


@transaction.atomic
def _refund_failed(refund: StripeRefund, message: str, refund_id: str = "") -> None:
    """Stripe will not give the money back: staff settle it another way (admin, Card payments
    → Stripe refunds, shows why); ``payment.refund_failed`` tells the account's integrations."""
    updated = StripeRefund.objects.filter(pk=refund.pk, status=StripeRefund.Status.PENDING).update(
        status=StripeRefund.Status.FAILED, failure_message=message[:500], refund_id=refund_id
    )
    if not updated:
        return  # another worker settled it meanwhile
    logger.error("stripe: refund %s refused: %s", refund.pk, message)
    payment = refund.payment
    record_event(
        type="payment.refund_failed",
        account=payment.account,
        object_type="payment",
        obj=payment_representation(payment),
        actor=SYSTEM,
        related_id=refund.credit_note_id,
    )


def refunds_resend(*, now: datetime | None = None) -> int:
    """Send again the refunds still pending after RETRY_AFTER; how many Stripe now has."""
    now = now or timezone.now()
    stale = StripeRefund.objects.filter(
        status=StripeRefund.Status.PENDING, created_at__lt=now - RETRY_AFTER
    ).values_list("pk", flat=True)
    return sum(refund_send(pk) == StripeRefund.Status.SUCCEEDED for pk in list(stale))

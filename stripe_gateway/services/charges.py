"""Charging a saved card, exactly once.

A charge is a billing payment in ``processing`` (``billing.services.payments.payment_open``),
opened in the transaction that decides to charge, with its ``StripeCharge`` row. Then, outside
any transaction (``charge_confirm``, in the worker for renewals):

1. the PaymentIntent is created **unconfirmed** (idempotency key ``<payment id>-create``) and
   its id is committed here: until then no money can move;
2. it is confirmed (idempotency key ``<payment id>-confirm``; a retry of the call after a
   timeout is the same call to Stripe, never a second charge);
3. what Stripe answers is applied (``intent_apply``): succeeded pays the invoice; a decline
   fails the payment and dunning goes on; a bank that wants the customer (3-D Secure) fails
   an off-session payment with an e-mailed link to pay (a later success still counts), or
   sends an on-session customer through the confirmation.

An answer that never comes leaves the payment ``processing``; Stripe's notification
(``notifications``) or the reconciliation (``charges_reconcile``, in housekeeping) settles it
from the PaymentIntent as Stripe has it. Nothing is ever settled by guessing.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import stripe
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext_noop
from stripe.params import PaymentIntentConfirmParams

from accounts.actors import SYSTEM, Actor
from billing.models import Invoice, Payment, PaymentStatus
from billing.services.payments import (
    payment_failed,
    payment_gateway_id_set,
    payment_open,
    payment_succeeded,
)
from stripe_gateway.models import PaymentMethod, StripeCharge
from stripe_gateway.services.client import stripe_client
from stripe_gateway.services.customers import stripe_customer_id

logger = logging.getLogger(__name__)

GATEWAY = "stripe"
# A payment still processing this long after it was opened is asked about at Stripe.
RECONCILE_AFTER = timedelta(minutes=5)
# ... and one whose PaymentIntent was never recorded (so never confirmed: nothing was charged)
# is failed after this long, once no call of ours can still be on its way.
ABANDON_AFTER = timedelta(minutes=15)
# A payment's ``failure_message`` is stored, and the API returns it as stored: always in
# English (gettext_noop only marks these for the catalogue; a page showing one translates it).
ACTION_REQUIRED = gettext_noop("Your bank asks you to confirm this payment.")
NOT_STARTED = gettext_noop("The payment could not be started; nothing was charged.")
CARD_DECLINED = gettext_noop("The card was declined.")
NOT_MADE = gettext_noop("The card payment could not be made.")


@dataclass(frozen=True)
class ChargeOutcome:
    """Where a charge stands after ``charge_confirm``: the payment's status, and for an
    on-session charge the bank wants confirmed, where to send the customer (a URL) or what
    Stripe.js needs (the PaymentIntent's client secret)."""

    status: str
    redirect_url: str = ""
    client_secret: str = ""


def charge_open(
    *,
    invoice: Invoice,
    method: PaymentMethod,
    off_session: bool,
    return_url: str = "",
    actor: Actor = SYSTEM,
) -> Payment:
    """In the caller's transaction: the processing payment of what remains on ``invoice``,
    to be charged to ``method``. Off-session, the worker confirms it after the commit."""
    payment = payment_open(invoice=invoice, gateway=GATEWAY, reference=method.label, actor=actor)
    StripeCharge.objects.create(
        payment=payment,
        payment_method=method.stripe_id,
        off_session=off_session,
        return_url=return_url,
    )
    if off_session:
        stripe_charge_confirm.enqueue(payment.id)
    return payment


@task
def stripe_charge_confirm(payment_id: str) -> str:
    """The worker's side of an off-session charge."""
    return charge_confirm(payment_id).status


def charge_confirm(payment_id: str) -> ChargeOutcome:
    """Steps 1 to 3 of the module for the payment ``payment_id``; call it outside a
    transaction (it calls Stripe). Safe to call again: each step is idempotent."""
    charge = StripeCharge.objects.select_related("payment__account", "payment__invoice").get(
        pk=payment_id
    )
    payment = charge.payment
    if payment.status != PaymentStatus.PROCESSING:
        return ChargeOutcome(payment.status)
    client = stripe_client()
    try:
        if not charge.payment_intent:
            intent = client.v1.payment_intents.create(
                params={
                    "amount": payment.amount,
                    "currency": payment.currency.lower(),
                    "customer": stripe_customer_id(payment.account),
                    "payment_method": charge.payment_method,
                    "metadata": {
                        "payment": payment.id,
                        "invoice": payment.invoice_id,
                        "account": payment.account_id,
                    },
                },
                options={"idempotency_key": f"{payment.id}-create"},
            )
            charge.payment_intent = intent.id
            charge.save(update_fields=["payment_intent"])
            payment_gateway_id_set(payment, intent.id)
        params: PaymentIntentConfirmParams = {"off_session": charge.off_session}  # card: set
        if not charge.off_session:
            params["return_url"] = charge.return_url
        intent = client.v1.payment_intents.confirm(
            charge.payment_intent,
            params=params,
            options={"idempotency_key": f"{payment.id}-confirm"},
        )
    except stripe.CardError as declined:
        declined_intent = declined.error.payment_intent if declined.error else None
        return _declined(payment, charge, declined_intent, declined)
    except stripe.InvalidRequestError as refused:
        logger.warning("stripe: %s refused: %s", payment.id, refused)
        if charge.payment_intent:
            # Refused as the PaymentIntent stands (a retried confirmation of one already
            # charged, say): what counts is that state, read again.
            try:
                intent = client.v1.payment_intents.retrieve(charge.payment_intent)
            except stripe.StripeError:
                return ChargeOutcome(PaymentStatus.PROCESSING)  # the reconciliation asks later
            return intent_apply(payment, intent)
        # Refused before any PaymentIntent existed (the card was removed at Stripe, say):
        # nothing can have moved.
        message = refused.user_message or NOT_MADE
        return ChargeOutcome(payment_failed(payment, message=message).status)
    except (stripe.APIConnectionError, stripe.RateLimitError, stripe.APIError) as unknown:
        # No answer, or Stripe's own error: whether it charged is unknown. The payment stays
        # processing until Stripe's notification or the reconciliation says.
        logger.warning("stripe: %s left processing: %s", payment.id, unknown)
        return ChargeOutcome(PaymentStatus.PROCESSING)
    return intent_apply(payment, intent)


def _declined(
    payment: Payment,
    charge: StripeCharge,
    intent: stripe.PaymentIntent | None,
    error: stripe.CardError,
) -> ChargeOutcome:
    code = getattr(error, "code", "") or ""
    if intent is None and charge.payment_intent:
        try:
            intent = stripe_client().v1.payment_intents.retrieve(charge.payment_intent)
        except stripe.StripeError:
            intent = None
    if intent is not None and intent.status == "succeeded":
        return intent_apply(payment, intent)  # a decline reported late for a later success
    action = code == "authentication_required"
    message = ACTION_REQUIRED if action else (error.user_message or CARD_DECLINED)
    payment = payment_failed(payment, message=message, action_required=action)
    return ChargeOutcome(payment.status)


def intent_apply(payment: Payment, intent: stripe.PaymentIntent) -> ChargeOutcome:
    """Bring ``payment`` to where its PaymentIntent stands at Stripe."""
    status = intent.status
    if status == "succeeded":
        payment = payment_succeeded(payment, gateway_payment_id=intent.id)
        return ChargeOutcome(payment.status)
    if status == "requires_action":
        if getattr(payment, "stripe_charge", None) and not payment.stripe_charge.off_session:
            action = intent.next_action
            url = ""
            if action is not None and action.type == "redirect_to_url" and action.redirect_to_url:
                url = action.redirect_to_url.url or ""
            return ChargeOutcome(
                PaymentStatus.PROCESSING, redirect_url=url, client_secret=intent.client_secret or ""
            )
        payment = payment_failed(payment, message=ACTION_REQUIRED, action_required=True)
        return ChargeOutcome(payment.status)
    if status in ("requires_payment_method", "canceled"):
        error = getattr(intent, "last_payment_error", None)
        message = (error and (error.message or error.code)) or CARD_DECLINED
        payment = payment_failed(payment, message=str(message))
        return ChargeOutcome(payment.status)
    return ChargeOutcome(payment.status)  # processing, requires_confirmation: not known yet


def charges_reconcile(*, now: datetime | None = None) -> int:
    """Ask Stripe about every card payment still processing after RECONCILE_AFTER and settle
    it as its PaymentIntent stands; returns how many were settled. An off-session
    PaymentIntent left unconfirmed (the confirmation never reached Stripe) is confirmed now,
    with the same key; an on-session one the customer left unconfirmed past ABANDON_AFTER is
    canceled at Stripe, and the payment fails (the invoice can be paid again)."""
    now = now or timezone.now()
    settled = 0
    stale = StripeCharge.objects.filter(
        payment__status=PaymentStatus.PROCESSING,
        payment__gateway=GATEWAY,
        created_at__lt=now - RECONCILE_AFTER,
    ).select_related("payment__account", "payment__invoice")
    for charge in stale:
        payment = charge.payment
        abandoned = charge.created_at < now - ABANDON_AFTER
        if not charge.payment_intent:
            if abandoned:
                payment_failed(payment, message=NOT_STARTED)
                settled += 1
            continue
        client = stripe_client()
        try:
            intent = client.v1.payment_intents.retrieve(charge.payment_intent)
            waiting = intent.status in ("requires_confirmation", "requires_action")
            if waiting and charge.off_session and intent.status == "requires_confirmation":
                outcome = charge_confirm(payment.id)
            elif waiting and not charge.off_session:
                if not abandoned:
                    continue  # the customer may still be confirming it
                intent = client.v1.payment_intents.cancel(
                    charge.payment_intent, options={"idempotency_key": f"{payment.id}-cancel"}
                )
                outcome = intent_apply(payment, intent)
            else:
                outcome = intent_apply(payment, intent)
        except stripe.StripeError as unknown:
            logger.warning("stripe: cannot reconcile %s yet: %s", payment.id, unknown)
            continue
        settled += outcome.status != PaymentStatus.PROCESSING
    return settled

"""Property: however our confirmation call, its retry, Stripe's notifications and the
reconciliation interleave (and whether the call's answer is lost), the customer is charged at
most once and the invoice ends paid exactly when a charge succeeded.

Each example orders a plan on a fresh account with a saved card (one that pays, or one the bank
declines), then runs the steps hypothesis picks, in its order, against localstripe, and checks
at Stripe (every PaymentIntent of the payment, found by its metadata) and here."""

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from billing.models import Payment
from stripe_gateway.models import StripeCharge
from stripe_gateway.services.charges import charge_confirm, charges_reconcile
from stripe_gateway.services.notifications import stripe_event_process, stripe_event_receive
from tests.billing.test_subscriptions import plan
from tests.factories import AccountFactory, MembershipFactory
from tests.stripe_gateway.helpers import (
    DECLINED_AFTER_ATTACH,
    VISA,
    confirm_answer_lost,
    save_card,
)
from tests.stripe_gateway.test_notifications import event, intent_of

pytestmark = pytest.mark.django_db

STEPS = ["call", "call_answer_lost", "retry", "notify_succeeded", "notify_failed", "reconcile"]


def notify(payment, kind: str, serial: list[int]) -> None:
    """Stripe's notification of ``kind`` about the payment's PaymentIntent, signed and handled
    as the endpoint and the worker do (only once a PaymentIntent exists at Stripe)."""
    import stripe

    from tests.stripe_gateway.conftest import WEBHOOK_SECRET

    if not StripeCharge.objects.get(pk=payment.pk).payment_intent:
        return
    serial[0] += 1
    body = event(f"evt_{payment.id}_{serial[0]}", kind, intent_of(payment))
    header = stripe.WebhookSignature.generate_signature_header(body, WEBHOOK_SECRET)
    if stripe_event_receive(body.encode(), header):
        stripe_event_process.call(f"evt_{payment.id}_{serial[0]}")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# The cases that once went wrong, always tried: a retried confirmation after a lost answer.
@example(card=VISA, steps=["call_answer_lost", "retry"])
@example(card=VISA, steps=["call_answer_lost", "notify_failed", "retry"])
@given(
    card=st.sampled_from([VISA, DECLINED_AFTER_ATTACH]),
    steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=5),
)
def test_any_interleaving_charges_at_most_once_and_pays_exactly_when_charged(
    stripe_api, settings, card, steps
):
    from tests.billing.test_subscriptions import order

    account = AccountFactory()
    owner = MembershipFactory(account=account, role="owner").user
    save_card(stripe_api, account, owner, card)
    _, invoice = order(account, owner, plan(amount=700))
    payment = Payment.objects.get(invoice=invoice)
    serial = [0]
    later = timezone.now() + timedelta(minutes=6)
    for step in steps:
        if step in ("call", "retry"):
            charge_confirm(payment.id)
        elif step == "call_answer_lost":
            confirm_answer_lost(settings, payment)
        elif step == "notify_succeeded":
            notify(payment, "payment_intent.succeeded", serial)
        elif step == "notify_failed":
            notify(payment, "payment_intent.payment_failed", serial)
        else:
            charges_reconcile(now=later)
    charges_reconcile(now=later)  # housekeeping comes round in the end

    recent = stripe_api.v1.payment_intents.list(params={"limit": 100}).data
    intents = [
        intent for intent in recent if intent.metadata.to_dict().get("payment") == payment.id
    ]
    assert StripeCharge.objects.get(pk=payment.pk).payment_intent in {i.id for i in intents} | {""}
    charged = [intent for intent in intents if intent.status == "succeeded"]
    assert len(intents) <= 1 and len(charged) <= 1  # one PaymentIntent, charged at most once
    payment.refresh_from_db()
    invoice.refresh_from_db()
    assert (invoice.status == "paid") == bool(charged), (steps, payment.status)
    assert (payment.status == "succeeded") == bool(charged)
    if charged:
        assert invoice.amount_paid == 700

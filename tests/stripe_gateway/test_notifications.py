"""Stripe's notifications at ``/stripe/webhook``: signed with the library's own helper, checked,
each event id handled once by the worker, and the outcome read from Stripe, so a late, repeated
or out-of-order event ends in the right state."""

import json

import pytest
import stripe

from billing.models import Payment
from stripe_gateway.models import StripeCharge, StripeEvent
from tests.billing.test_subscriptions import order, plan
from tests.servers.helpers import run_worker
from tests.stripe_gateway.conftest import WEBHOOK_SECRET
from tests.stripe_gateway.helpers import confirm_answer_lost, save_card

pytestmark = pytest.mark.django_db
URL = "/stripe/webhook"


def event(event_id: str, kind: str, obj: dict) -> str:
    return json.dumps(
        {
            "id": event_id,
            "object": "event",
            "type": kind,
            "api_version": "2024-06-20",
            "created": 1795500000,
            "livemode": False,
            "data": {"object": obj},
        }
    )


def post(client, body: str, secret: str = WEBHOOK_SECRET):
    header = stripe.WebhookSignature.generate_signature_header(body, secret)
    return client.post(URL, body, content_type="application/json", HTTP_STRIPE_SIGNATURE=header)


def test_a_bad_signature_is_refused_and_changes_nothing(client, stripe_on):
    body = event(
        "evt_forged", "payment_intent.succeeded", {"id": "pi_x", "object": "payment_intent"}
    )

    answer = post(client, body, secret="whsec_someone_else")
    unsigned = client.post(URL, body, content_type="application/json")

    assert answer.status_code == unsigned.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_signature"
    assert not StripeEvent.objects.exists()


@pytest.fixture
def charged_unheard(stripe_api, account, owner, settings):
    """A card payment Stripe made whose answer never reached us: still processing here."""
    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))
    payment = Payment.objects.get(invoice=invoice)
    assert confirm_answer_lost(settings, payment).status == "processing"
    return payment


def intent_of(payment) -> dict:
    charge = StripeCharge.objects.get(pk=payment.pk)
    return {
        "id": charge.payment_intent,
        "object": "payment_intent",
        "metadata": {"payment": payment.id},
    }


def test_a_success_settles_the_payment_once_however_often_it_comes(client, charged_unheard):
    payment = charged_unheard
    body = event("evt_success_1", "payment_intent.succeeded", intent_of(payment))

    first, again = post(client, body), post(client, body)
    run_worker()
    late = post(client, body)
    run_worker()

    assert [first.status_code, again.status_code, late.status_code] == [200, 200, 200]
    assert [first.json()["duplicate"], again.json()["duplicate"]] == [False, True]
    assert StripeEvent.objects.filter(processed_at__isnull=False).count() == 1
    payment.refresh_from_db()
    assert payment.status == "succeeded"
    assert payment.invoice.status == "paid" and payment.invoice.amount_paid == 1500


def test_a_failure_reported_after_the_success_changes_nothing(client, charged_unheard):
    payment = charged_unheard
    failed_first = event("evt_failed_late", "payment_intent.payment_failed", intent_of(payment))
    succeeded = event("evt_succeeded", "payment_intent.succeeded", intent_of(payment))

    post(client, failed_first)  # out of order: Stripe says failed, but the intent succeeded
    post(client, succeeded)
    run_worker()

    payment.refresh_from_db()
    assert payment.status == "succeeded"
    assert payment.invoice.status == "paid"
    assert StripeEvent.objects.filter(processed_at__isnull=False).count() == 2

"""Saved cards and card charges end to end: the real ``stripe`` library against localstripe,
the real task worker confirming off-session charges, the billing engine settling them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.actors import Actor
from billing.models import Invoice, Payment, SubscriptionStatus
from events.models import Event
from hosting.errors import ValidationFailed
from stripe_gateway.models import PaymentMethod, StripeCharge
from stripe_gateway.services.charges import charge_confirm, charges_reconcile
from stripe_gateway.services.methods import (
    payment_method_remove,
    payment_method_set_default,
)
from tests.billing.mail import send_billing_mail
from tests.billing.test_subscriptions import order, plan
from tests.servers.helpers import run_worker
from tests.stripe_gateway.helpers import (
    DECLINED_AFTER_ATTACH,
    NEEDS_AUTHENTICATION,
    RECORDED,
    confirm_answer_lost,
    save_card,
    stripe_through_proxy,
)

pytestmark = pytest.mark.django_db


def test_a_saved_card_keeps_only_what_identifies_it(stripe_api, account, owner, other_account):
    first = save_card(stripe_api, account, owner)
    second = save_card(stripe_api, account, owner, "5555555555554444")

    assert (first.brand, first.last4, first.exp_month, first.exp_year) == ("visa", "4242", 12, 2034)
    assert first.is_default and not second.is_default
    assert second.last4 == "4444"
    payment_method_set_default(method=second, actor=Actor(user=owner))
    first.refresh_from_db()
    assert not first.is_default
    assert PaymentMethod.objects.get(pk=second.pk).is_default

    payment_method_remove(method=PaymentMethod.objects.get(pk=second.pk), actor=Actor(user=owner))
    assert PaymentMethod.objects.get(pk=first.pk).is_default  # the one left takes over
    assert stripe_api.v1.payment_methods.retrieve(second.stripe_id).customer is None
    types = list(Event.objects.filter(account=account, type__startswith="payment_method."))
    assert {event.type for event in types} == {
        "payment_method.attached",
        "payment_method.updated",
        "payment_method.detached",
    }
    assert not PaymentMethod.objects.filter(account=other_account).exists()


def test_a_setup_intent_of_another_account_is_not_found(stripe_api, account, owner, other_account):
    from stripe_gateway.services.methods import payment_method_save, setup_intent_create

    theirs = setup_intent_create(account=other_account)
    with pytest.raises(ValidationFailed) as refused:
        payment_method_save(account=account, setup_intent=theirs["id"], actor=Actor(user=owner))
    assert refused.value.details["fields"][0]["code"] == "not_found"


def test_an_order_is_charged_to_the_saved_card_by_the_worker(stripe_api, account, owner):
    save_card(stripe_api, account, owner)
    subscription, invoice = order(account, owner, plan(amount=1500))

    payment = Payment.objects.get(invoice=invoice)
    assert payment.status == "processing" and payment.gateway == "stripe"
    assert invoice.status == "open"
    run_worker()  # confirms the charge at Stripe, then creates the server

    payment.refresh_from_db()
    invoice.refresh_from_db()
    subscription.refresh_from_db()
    assert payment.status == "succeeded" and payment.gateway_payment_id.startswith("pi_")
    assert invoice.status == "paid" and invoice.amount_paid == 1500
    assert subscription.status == SubscriptionStatus.ACTIVE and subscription.server_id
    intent = stripe_api.v1.payment_intents.retrieve(payment.gateway_payment_id)
    assert intent.status == "succeeded" and intent.amount == 1500
    assert intent.metadata["payment"] == payment.id


def test_a_declined_card_fails_the_payment_and_dunning_goes_on(stripe_api, account, owner):
    save_card(stripe_api, account, owner, DECLINED_AFTER_ATTACH)
    _, invoice = order(account, owner, plan(amount=1500))
    run_worker()

    payment = Payment.objects.get(invoice=invoice)
    invoice.refresh_from_db()
    assert payment.status == "failed" and payment.failure_message
    assert invoice.status == "open"
    assert Event.objects.filter(type="invoice.payment_failed", object_id=invoice.id).exists()


def test_a_card_that_needs_the_customer_mails_a_link_to_pay(stripe_api, account, owner):
    save_card(stripe_api, account, owner, NEEDS_AUTHENTICATION)
    _, invoice = order(account, owner, plan(amount=1500))
    run_worker()

    payment = Payment.objects.get(invoice=invoice)
    assert payment.status == "failed"
    assert "confirm" in payment.failure_message
    subjects = [message.subject for message in send_billing_mail()]
    assert f"Confirm the payment of invoice {invoice.number}" in subjects


def test_a_charge_whose_answer_is_lost_is_settled_once_by_reconciliation(
    stripe_api, account, owner, settings
):
    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))
    payment = Payment.objects.get(invoice=invoice)
    outcome = confirm_answer_lost(settings, payment)  # the worker's call, its answer lost
    assert outcome.status == "processing"
    payment.refresh_from_db()
    assert payment.status == "processing"
    charge = StripeCharge.objects.get(pk=payment.pk)
    intent = stripe_api.v1.payment_intents.retrieve(charge.payment_intent)
    assert intent.status == "succeeded"  # Stripe did charge

    assert charges_reconcile() == 0  # too early: the call might still be on its way
    later = timezone.now() + timedelta(minutes=6)
    assert charges_reconcile(now=later) == 1
    assert charges_reconcile(now=later) == 0

    payment.refresh_from_db()
    invoice.refresh_from_db()
    assert payment.status == "succeeded"
    assert invoice.status == "paid" and invoice.amount_paid == 1500
    assert Payment.objects.filter(invoice=invoice, status="succeeded").count() == 1
    assert Invoice.objects.get(pk=invoice.pk).amount_remaining == 0


def test_staff_open_a_card_payment_at_stripe_from_admin(stripe_api, account, owner, admin_client):
    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))
    run_worker()
    payment = Payment.objects.get(invoice=invoice)

    page = admin_client.get(f"/admin/billing/payment/{payment.pk}/change/")
    found = admin_client.get("/admin/billing/payment/", {"q": payment.gateway_payment_id})

    assert page.status_code == 200
    link = f"https://dashboard.stripe.com/test/payments/{payment.gateway_payment_id}"
    assert link in page.content.decode()
    assert payment.id in found.content.decode()
    for model in ("paymentmethod", "stripecustomer", "stripecharge", "stripeevent"):
        assert admin_client.get(f"/admin/stripe_gateway/{model}/").status_code == 200


def test_a_confirmation_retried_after_its_answer_was_lost_keeps_the_charge(
    stripe_api, account, owner, settings
):
    """Stripe refuses to confirm a PaymentIntent twice (once its idempotency key has expired,
    or at localstripe always): the retry reads the PaymentIntent and the payment succeeds."""
    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))
    payment = Payment.objects.get(invoice=invoice)
    assert confirm_answer_lost(settings, payment).status == "processing"

    assert charge_confirm(payment.id).status == "succeeded"

    invoice.refresh_from_db()
    assert invoice.status == "paid" and invoice.amount_paid == 1500


def test_the_billing_job_does_not_charge_an_invoice_whose_card_payment_is_in_flight(
    stripe_api, account, owner, settings
):
    from billing.services.job.renewals import billing_run

    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))  # its charge queued, not confirmed
    Invoice.objects.filter(pk=invoice.pk).update(next_payment_attempt=timezone.now())

    report = billing_run()

    assert report.counts.get("collection_attempts") == 1
    assert Payment.objects.filter(invoice=invoice).count() == 1  # no second charge
    run_worker()
    invoice.refresh_from_db()
    assert invoice.status == "paid"


def test_credit_notes_refunded_give_the_money_back_to_the_card(stripe_api, account, owner):
    from billing.services import credit_note_create
    from stripe_gateway.models import StripeRefund

    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))
    run_worker()
    payment = Payment.objects.get(invoice=invoice)

    credit_note_create(
        invoice=invoice,
        amount=500,
        reason="order_change",
        refund_to="refunded",
        actor=Actor(user=owner),
    )
    payment.refresh_from_db()
    assert (payment.status, payment.amount_refunded) == ("succeeded", 500)  # booked at once
    run_worker()  # sends it to Stripe
    first = StripeRefund.objects.get(payment=payment)
    assert first.status == "succeeded" and first.refund_id.startswith("re_")
    assert stripe_api.v1.refunds.retrieve(first.refund_id).amount == 500

    credit_note_create(
        invoice=invoice,
        amount=1000,
        reason="order_change",
        refund_to="refunded",
        actor=Actor(user=owner),
    )
    run_worker()
    payment.refresh_from_db()
    assert (payment.status, payment.amount_refunded) == ("refunded", 1500)
    assert sorted(r.amount for r in StripeRefund.objects.filter(status="succeeded")) == [500, 1000]
    assert Event.objects.filter(type="payment.refunded", object_id=payment.id).count() == 2
    with pytest.raises(ValidationFailed):
        credit_note_create(
            invoice=invoice,
            amount=1,
            reason="order_change",
            refund_to="refunded",
            actor=Actor(user=owner),
        )


def test_a_refund_stripe_refuses_is_failed_and_told_to_integrations(
    stripe_api, settings, account, owner
):
    from billing.services import credit_note_create
    from stripe_gateway.models import StripeRefund

    save_card(stripe_api, account, owner)
    _, invoice = order(account, owner, plan(amount=1500))
    run_worker()
    payment = Payment.objects.get(invoice=invoice)
    credit_note_create(
        invoice=invoice,
        amount=500,
        reason="order_change",
        refund_to="refunded",
        actor=Actor(user=owner),
    )

    # Staff had already given it all back in Stripe's dashboard: Stripe refuses (its own
    # answer, recorded: localstripe refunds a charge any number of times).
    refused = (400, (RECORDED / "refund_charge_already_refunded.json").read_bytes())
    with stripe_through_proxy(settings, recorded={("POST", "/v1/refunds"): refused}):
        run_worker()

    refund = StripeRefund.objects.get(payment=payment)
    assert refund.status == "failed"
    assert refund.failure_message == "Charge ch_3QxR2mLkz8Wq4Tn71a9Vb3Hd has already been refunded."
    event = Event.objects.get(type="payment.refund_failed")
    assert (event.object_id, event.related_id) == (payment.id, refund.credit_note_id)
    run_worker()
    assert Event.objects.filter(type="payment.refund_failed").count() == 1  # not sent again
    assert not stripe_api.v1.refunds.list(
        params={"payment_intent": payment.gateway_payment_id}
    ).data

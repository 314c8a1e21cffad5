"""A card through the whole cycle, on a test clock: the renewal charged off-session by the
billing job and the worker, a declined card through dunning to suspension, then a good card
paying the invoice now and the server coming back."""

from datetime import timedelta

import pytest

from accounts.actors import Actor
from billing.clock import billing_clock_advance
from billing.models import BillingClock, Invoice, Payment, SubscriptionStatus
from billing.services.fulfilment import BILLING_SUSPENSION_REASON
from billing.services.gateways import card_gateway
from billing.services.job.renewals import billing_run
from billing.services.subscriptions import subscription_cancel
from events.models import Event
from servers.models import Server
from stripe_gateway.services.methods import payment_method_set_default
from tests.billing.test_subscriptions import START, credit, order, plan
from tests.servers.helpers import run_worker
from tests.stripe_gateway.helpers import DECLINED_AFTER_ATTACH, save_card

pytestmark = pytest.mark.django_db


def walk(account, until):
    """Day by day: the billing job, then the worker (card charges, the server's actions)."""
    at = BillingClock.objects.get(account=account).now
    while at < until:
        at = min(at + timedelta(days=1), until)
        billing_clock_advance(account=account, to=at)
        billing_run(account_id=account.id)
        run_worker()


def test_a_renewal_is_charged_to_the_card_by_the_billing_job(stripe_api, account, owner):
    billing_clock_advance(account=account, to=START)
    save_card(stripe_api, account, owner)
    subscription, first = order(account, owner, plan(amount=1000))
    run_worker()
    assert Invoice.objects.get(pk=first.pk).status == "paid"

    walk(account, subscription.current_period_end + timedelta(hours=1))

    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "paid"
    [payment] = Payment.objects.filter(invoice=renewal)
    assert payment.gateway == "stripe" and payment.status == "succeeded"
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.ACTIVE


def test_a_declined_card_is_dunned_to_suspension_and_a_good_card_brings_it_back(
    stripe_api, account, owner
):
    billing_clock_advance(account=account, to=START)
    credit(account, 1000)  # the order is paid from credit; the renewal falls on the card
    save_card(stripe_api, account, owner, DECLINED_AFTER_ATTACH)
    subscription, _ = order(account, owner, plan(amount=1000))
    run_worker()
    period_end = subscription.current_period_end

    walk(account, period_end + timedelta(days=7, hours=1))

    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    subscription.refresh_from_db()
    server = Server.objects.get(pk=subscription.server_id)
    assert renewal.status == "open"
    assert subscription.status == SubscriptionStatus.UNPAID and subscription.billing_suspended
    assert server.status == "suspended" and server.suspended_reason == BILLING_SUSPENSION_REASON
    declined = Payment.objects.filter(invoice=renewal, status="failed")
    assert declined.count() >= 4  # at issue, then on the retry days, each a declined charge
    assert not Payment.objects.filter(invoice=renewal, status="succeeded").exists()
    assert Event.objects.filter(type="invoice.payment_failed", object_id=renewal.id).count() >= 4

    good = save_card(stripe_api, account, owner)
    payment_method_set_default(method=good, actor=Actor(user=owner))
    started = card_gateway(account=account).pay_now(
        renewal, payment_method=None, return_url="http://testserver/back", actor=Actor(user=owner)
    )
    assert started.payment.status == "succeeded"
    run_worker()  # the unsuspension

    renewal.refresh_from_db()
    subscription.refresh_from_db()
    server.refresh_from_db()
    assert renewal.status == "paid"
    assert subscription.status == SubscriptionStatus.ACTIVE and not subscription.billing_suspended
    assert server.status == "stopped"


def test_a_renewal_is_charged_at_its_due_date_not_when_it_is_issued(stripe_api, account, owner):
    """Issue 27, case 5: issued three days ahead, the renewal waits for the period's start; the
    credit goes first (partly), the card is charged only for the rest, and only then."""
    billing_clock_advance(account=account, to=START)
    save_card(stripe_api, account, owner)
    credit(account, 1000 + 400)  # the order from credit, then 400 left for the renewal
    subscription, first = order(account, owner, plan(amount=1000))
    run_worker()
    assert Invoice.objects.get(pk=first.pk).status == "paid"
    period_end = subscription.current_period_end

    walk(account, period_end - timedelta(hours=1))
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "open"
    assert (renewal.amount_paid, renewal.amount_remaining) == (400, 600)
    assert not Payment.objects.filter(invoice=renewal, gateway="stripe").exists()

    walk(account, period_end + timedelta(hours=1))
    renewal.refresh_from_db()
    assert renewal.status == "paid"
    [card] = Payment.objects.filter(invoice=renewal, gateway="stripe")
    assert (card.amount, card.status) == (600, "succeeded")
    assert card.created_at >= period_end


def test_canceling_before_the_due_date_voids_the_renewal_and_nothing_is_charged(
    stripe_api, account, owner
):
    billing_clock_advance(account=account, to=START)
    save_card(stripe_api, account, owner)
    subscription, _ = order(account, owner, plan(amount=1000))
    run_worker()
    period_end = subscription.current_period_end
    walk(account, period_end - timedelta(days=1))
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "open"

    subscription_cancel(subscription=subscription, at_period_end=True, actor=Actor(user=owner))
    renewal.refresh_from_db()
    assert renewal.status == "void"
    walk(account, period_end + timedelta(days=2))
    assert not Payment.objects.filter(invoice=renewal).exists()
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.CANCELED

"""The billing job on a test clock: renewals over a year, trials, hourly plans, dunning to
suspension (and back on payment), dunning to termination, and runs that repeat or overlap."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from accounts.actors import SYSTEM, Actor
from billing.clock import billing_clock_advance
from billing.models import BillingClock, CreditNote, Invoice, SubscriptionStatus
from billing.services import balance_of, invoice_pay_with_credit
from billing.services.fulfilment import BILLING_SUSPENSION_REASON
from billing.services.job.renewals import billing_run
from billing.services.subscriptions import subscription_cancel, subscription_change
from events.models import Event
from servers.models import Action, Server
from servers.services import action_request, instance_suspend
from tests.billing.mail import send_billing_mail
from tests.billing.test_subscriptions import START, credit, order, plan
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(account):
    billing_clock_advance(account=account, to=START)
    return account


def walk(account, until, step=timedelta(days=1)):
    """Move the account's clock forward in steps, running the job at each, as cron would."""
    at = BillingClock.objects.get(account=account).now
    while at < until:
        at = min(at + step, until)
        billing_clock_advance(account=account, to=at)
        billing_run()
        if Action.objects.filter(status__in=["pending", "running"]).exists():
            run_worker()  # the lifecycle's worker, as it runs beside the job


def running_subscription(account, owner, price, *, prepay):
    credit(account, price.unit_amount + prepay)
    subscription, invoice = order(account, owner, price)
    assert invoice.status == "paid"
    run_worker()
    return subscription


def test_a_year_of_a_monthly_plan_paid_from_credit(clock, account, owner):
    price = plan(amount=1000)
    subscription = running_subscription(account, owner, price, prepay=12 * 1000)

    walk(account, START + timedelta(days=366))

    renewals = Invoice.objects.filter(
        subscription=subscription, billing_reason="subscription_cycle"
    )
    assert renewals.count() == 12
    assert {invoice.status for invoice in renewals} == {"paid"}
    starts = sorted(invoice.period_start for invoice in renewals)
    assert starts == [
        datetime(2031 + (1 + m) // 12, (1 + m) % 12 + 1, 15, 12, tzinfo=UTC) for m in range(12)
    ]
    numbers = sorted(Invoice.objects.values_list("number", flat=True))
    # The order and 12 renewals, numbered without a gap in each year's series.
    assert numbers == [f"TEST-INV-2031-{n:06d}" for n in range(1, 13)] + ["TEST-INV-2032-000001"]
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.ACTIVE
    assert subscription.current_period_start == datetime(2032, 1, 15, 12, tzinfo=UTC)
    assert balance_of(account) == 0


def test_an_hourly_plan_renews_every_hour(clock, account, owner):
    subscription = running_subscription(account, owner, plan(amount=3, interval="hour"), prepay=100)
    walk(account, START + timedelta(hours=24), step=timedelta(minutes=20))
    renewals = Invoice.objects.filter(
        subscription=subscription, billing_reason="subscription_cycle"
    )
    assert renewals.count() == 24  # the 24 hours after the first one, issued half an hour ahead
    assert balance_of(account) == 100 - 24 * 3


def test_a_trial_ends_into_a_paid_period_and_announces_itself(clock, account, owner):
    credit(account, 1000)
    subscription, _ = order(account, owner, plan(amount=1000, trial_days=14))
    walk(account, START + timedelta(days=15))
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.ACTIVE
    assert subscription.current_period_start == START + timedelta(days=14)
    assert Event.objects.filter(type="subscription.trial_will_end", account=account).count() == 1
    assert (
        Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle").total
        == 1000
    )


def test_dunning_suspends_and_a_payment_unsuspends(clock, account, owner):
    subscription = running_subscription(account, owner, plan(amount=1000), prepay=0)
    period_end = subscription.current_period_end

    walk(account, period_end + timedelta(hours=1))
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.PAST_DUE
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "open"
    assert any("overdue" in message.subject for message in send_billing_mail())

    walk(account, period_end + timedelta(days=7, hours=1))
    subscription.refresh_from_db()
    server = Server.objects.get(pk=subscription.server_id)
    assert subscription.status == SubscriptionStatus.UNPAID and subscription.billing_suspended
    assert server.status == "suspended" and server.suspended_reason == BILLING_SUSPENSION_REASON
    failed = Event.objects.filter(type="invoice.payment_failed", object_id=renewal.id).count()
    assert failed == 5  # the due date, then days 1, 3, 5 and 7
    assert any("suspended" in message.subject for message in send_billing_mail())

    credit(account, 1000)
    invoice_pay_with_credit(invoice=renewal, actor=Actor(user=owner))
    subscription.refresh_from_db()
    server.refresh_from_db()
    assert subscription.status == SubscriptionStatus.ACTIVE and not subscription.billing_suspended
    assert server.status == "stopped"


def test_a_payment_does_not_lift_a_suspension_staff_made(clock, account, owner):
    subscription = running_subscription(account, owner, plan(amount=1000), prepay=0)
    walk(account, subscription.current_period_end + timedelta(days=8))
    subscription.refresh_from_db()
    server = Server.objects.get(pk=subscription.server_id)
    assert server.status == "suspended"
    # Staff lift billing's suspension and suspend it themselves, for abuse.
    run_worker()
    action_request(instance=server, action_type="unsuspend", actor=SYSTEM)
    instance_suspend(instance=server, reason="Abuse report #42", actor=SYSTEM)

    credit(account, 1000)
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    invoice_pay_with_credit(invoice=renewal, actor=SYSTEM)
    server.refresh_from_db()
    assert server.status == "suspended" and server.suspended_reason == "Abuse report #42"


def test_dunning_ends_in_termination_with_a_warning_first(clock, account, owner):
    subscription = running_subscription(account, owner, plan(amount=1000), prepay=0)
    walk(account, subscription.current_period_end + timedelta(days=31))
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.CANCELED and subscription.ended_at
    assert Server.objects.get(pk=subscription.server_id).status == "deleting"
    subjects = [message.subject for message in send_billing_mail()]
    warning = next(i for i, s in enumerate(subjects) if "will be deleted" in s)
    deleted = next(i for i, s in enumerate(subjects) if "was deleted" in s)
    assert warning < deleted
    statuses = set(
        Invoice.objects.filter(subscription=subscription)
        .exclude(billing_reason="subscription_create")
        .values_list("status", flat=True)
    )
    assert statuses <= {"uncollectible", "void"} and "uncollectible" in statuses


def test_a_second_run_at_the_same_time_does_nothing(clock, account, owner):
    running_subscription(account, owner, plan(amount=1000), prepay=0)
    walk(account, START + timedelta(days=40))
    invoices, events = Invoice.objects.count(), Event.objects.count()
    assert billing_run().counts == {}
    assert (Invoice.objects.count(), Event.objects.count()) == (invoices, events)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's row locks")
def test_concurrent_runs_issue_each_renewal_once(account, owner):
    billing_clock_advance(account=account, to=START)
    subscriptions = [
        running_subscription(account, owner, plan(f"P{i}", 100), prepay=0) for i in range(6)
    ]
    billing_clock_advance(account=account, to=START + timedelta(days=30))
    barrier, failures = threading.Barrier(3), []

    def run():
        try:
            barrier.wait(timeout=10)
            billing_run()
        except BaseException as failure:
            failures.append(failure)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    for subscription in subscriptions:
        assert (
            Invoice.objects.filter(
                subscription=subscription, billing_reason="subscription_cycle"
            ).count()
            == 1
        )
    assert Event.objects.filter(type="invoice.finalized").count() == 12


def test_an_upgrade_credit_does_not_cover_is_collected_again_then_dunned(clock, account, owner):
    subscription = running_subscription(account, owner, plan("Iron", 1000), prepay=0)
    gold = plan("Gold", 3100)
    billing_clock_advance(account=account, to=START + timedelta(days=10))
    _, upgrade = subscription_change(subscription=subscription, price=gold, actor=Actor(user=owner))
    assert upgrade.status == "open"
    assert upgrade.next_payment_attempt == upgrade.due_date  # first tried again when due

    walk(account, upgrade.due_date)
    upgrade.refresh_from_db()
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.PAST_DUE
    assert upgrade.attempt_count == 1
    assert Event.objects.filter(type="invoice.payment_failed", object_id=upgrade.id).count() == 1

    credit(account, upgrade.total)
    walk(account, upgrade.due_date + timedelta(days=1))  # the first dunning retry
    upgrade.refresh_from_db()
    subscription.refresh_from_db()
    assert upgrade.status == "paid"
    assert subscription.status == SubscriptionStatus.ACTIVE


def test_ending_at_period_end_credits_back_a_renewal_already_paid(clock, account, owner):
    # Iron 1000 from 15 Jan: the 15 Feb renewal is issued (and paid from credit) on 12 Feb.
    subscription = running_subscription(account, owner, plan("Iron", 1000), prepay=1000)
    walk(account, START + timedelta(days=29))
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "paid" and balance_of(account) == 0

    subscription_cancel(subscription=subscription, at_period_end=True, actor=Actor(user=owner))
    walk(account, START + timedelta(days=36))

    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.CANCELED
    assert subscription.ended_at == subscription.current_period_end
    note = CreditNote.objects.get(invoice=renewal)
    assert (note.amount, note.refund_to) == (renewal.total, "balance")
    assert balance_of(account) == renewal.total  # the unserved period's money is credit again


def test_termination_at_a_periods_start_voids_that_periods_invoice(clock, account, owner):
    """Issue 27, case 6: termination falls exactly at the next period's start (Feb 15 + 28
    days = Mar 15): its renewal, issued ahead, is for a period never served: void, not owed."""
    price = plan(amount=1000)
    price.product.terminate_after_days = 28
    price.product.save()
    subscription = running_subscription(account, owner, price, prepay=0)
    march = datetime(2031, 3, 15, 12, tzinfo=UTC)
    walk(account, march + timedelta(days=1), step=timedelta(hours=6))
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.CANCELED
    assert subscription.ended_at == march
    renewals = {
        invoice.period_start: invoice.status
        for invoice in Invoice.objects.filter(
            subscription=subscription, billing_reason="subscription_cycle"
        )
    }
    assert renewals[datetime(2031, 2, 15, 12, tzinfo=UTC)] == "uncollectible"
    assert renewals[march] == "void"


def test_credit_pays_a_renewal_partly_at_issue(clock, account, owner):
    """Issue 27, case 4: 400 of credit and a 1,000 renewal: the credit is applied at once and
    600 remain owed, rather than the credit waiting for a day it covers everything."""
    subscription = running_subscription(account, owner, plan(amount=1000), prepay=400)
    walk(account, subscription.current_period_end - timedelta(hours=1))
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert (renewal.status, renewal.amount_paid, renewal.amount_remaining) == ("open", 400, 600)
    assert balance_of(account) == 0


def test_a_partly_paid_renewal_of_a_canceled_subscription_gives_the_credit_back(
    clock, account, owner
):
    subscription = running_subscription(account, owner, plan(amount=1000), prepay=400)
    walk(account, subscription.current_period_end - timedelta(hours=1))
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.amount_paid == 400
    subscription_cancel(subscription=subscription, at_period_end=True, actor=SYSTEM)
    renewal.refresh_from_db()
    assert renewal.amount_remaining == 0 and renewal.status == "paid"
    assert balance_of(account) == 400  # what was paid for a period never served comes back
    assert CreditNote.objects.filter(invoice=renewal, refund_to="balance").get().amount == 400

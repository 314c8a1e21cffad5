"""The daily MRR snapshot: what a subscription's MRR is (intervals, quantities, coupons, rounding),
which subscriptions count, and taking a day once, again, by housekeeping and by the command."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.urls import reverse

from analytics.models import MrrSnapshot, MrrSnapshotDay
from analytics.services.snapshots import mrr_snapshot_daily, mrr_snapshot_take, subscription_mrr
from analytics.upkeep import run as upkeep_run
from billing.models import BillingClock, Coupon, Price, Subscription
from tests.factories import AccountFactory, PriceFactory, SubscriptionFactory, UserFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)
TODAY = date(2026, 11, 24)


def price(amount: int, interval: str = "month", count: int = 1, currency: str = "EUR") -> Price:
    return PriceFactory(
        product__name=f"Plan {amount}",
        currency=currency,
        unit_amount=amount,
        interval=interval,
        interval_count=count,
    )


def subscribe(account, plan: Price, status: str = "active", **fields) -> Subscription:
    start = fields.pop("current_period_start", NOW - timedelta(days=3))
    return SubscriptionFactory(
        account=account, price=plan, status=status, billing_cycle_anchor=start, **fields
    )


def coupon(duration: str = "forever", **fields) -> Coupon:
    return Coupon.objects.create(name="Deal", duration=duration, **fields)


@pytest.mark.parametrize(
    ("amount", "interval", "count", "mrr"),
    [
        (1000, "month", 1, 1000),
        (12000, "year", 1, 1000),
        (10000, "year", 1, 833),  # 10000 / 12 = 833.33
        (1806, "year", 1, 151),  # 150.5: half up
        (2500, "month", 3, 833),  # a quarter: 2500 / 3 = 833.33
        (700, "week", 1, 3033),  # 700 * 52 / 12 = 3033.33
        (700, "week", 2, 1517),  # 700 * 52 / 24 = 1516.67
        (100, "day", 1, 3042),  # 100 * 365 / 12 = 3041.67
        (2, "hour", 1, 1460),  # 2 * 8760 / 12 = 1460
    ],
)
def test_it_brings_every_interval_to_a_month_rounding_once_half_up(
    account, amount, interval, count, mrr
):
    assert subscription_mrr(subscribe(account, price(amount, interval, count))) == mrr


def test_it_multiplies_by_the_quantity_before_rounding(account):
    # 3 * 10000 / 12 = 2500 exactly (rounding each one first would give 3 * 833 = 2499).
    assert subscription_mrr(subscribe(account, price(10000, "year"), quantity=3)) == 2500


def test_it_takes_off_a_recurring_coupon_in_force(account):
    plan = price(1000)
    forever = coupon(percent_off=Decimal("25"))
    repeating = coupon("repeating", percent_off=Decimal("10"), duration_in_months=3)
    amount_off = coupon(amount_off=300, currency="EUR")
    other_currency = coupon(amount_off=300, currency="USD")

    assert subscription_mrr(subscribe(account, plan, coupon=forever)) == 750  # 1000 - 25 %
    assert (
        subscription_mrr(
            subscribe(account, plan, coupon=repeating, discount_end=NOW + timedelta(days=60))
        )
        == 900
    )
    assert subscription_mrr(subscribe(account, plan, coupon=amount_off)) == 700
    assert subscription_mrr(subscribe(account, plan, coupon=other_currency)) == 1000
    # 300 off a year of 12000: (12000 - 300) / 12 = 975.
    assert subscription_mrr(subscribe(account, price(12000, "year"), coupon=amount_off)) == 975


def test_it_ignores_a_coupon_that_ended_or_applies_once(account):
    plan = price(1000)
    repeating = coupon("repeating", percent_off=Decimal("10"), duration_in_months=1)
    once = coupon("once", percent_off=Decimal("50"))
    # The current period started after the discount's end: this period is billed in full.
    ended = subscribe(account, plan, coupon=repeating, discount_end=NOW - timedelta(days=5))
    first_period = subscribe(account, plan, coupon=once, discount_end=NOW + timedelta(days=27))

    assert subscription_mrr(ended) == 1000
    assert subscription_mrr(first_period) == 1000


def test_it_records_active_and_past_due_subscriptions_per_account_and_currency(
    account, other_account
):
    plan, dollars = price(1000), price(2000, currency="USD")
    for status in ("active", "past_due", "trialing", "incomplete", "unpaid", "canceled"):
        subscribe(account, plan, status=status)
    subscribe(account, price(12000, "year"))
    subscribe(other_account, dollars)
    free = AccountFactory()
    subscribe(free, price(0))

    taken = mrr_snapshot_take(day=TODAY, now=NOW)

    # account: active 1000 + past_due 1000 + the yearly 1000; the others do not count.
    assert sorted(
        MrrSnapshot.objects.values_list("day", "account_id", "currency", "mrr", "subscriptions")
    ) == sorted([(TODAY, account.id, "EUR", 3000, 3), (TODAY, other_account.id, "USD", 2000, 1)])
    assert (taken.day, taken.taken_at, taken.accounts) == (TODAY, NOW, 2)


def test_it_leaves_out_accounts_on_a_billing_test_clock(account, other_account):
    subscribe(account, price(1000))
    subscribe(other_account, price(1000))
    BillingClock.objects.create(account=other_account, now=NOW + timedelta(days=400))

    mrr_snapshot_take(day=TODAY, now=NOW)

    assert list(MrrSnapshot.objects.values_list("account_id", flat=True)) == [account.id]


def test_taking_a_day_again_replaces_it(account, other_account):
    subscription = subscribe(account, price(1000))
    leaving = subscribe(other_account, price(500))
    mrr_snapshot_take(day=TODAY, now=NOW)
    Subscription.objects.filter(pk=subscription.pk).update(quantity=2)
    Subscription.objects.filter(pk=leaving.pk).update(status="canceled")

    later = NOW + timedelta(hours=2)
    taken = mrr_snapshot_take(day=TODAY, now=later)

    assert list(MrrSnapshot.objects.values_list("account_id", "mrr")) == [(account.id, 2000)]
    assert (taken.taken_at, taken.accounts) == (later, 1)
    assert MrrSnapshotDay.objects.count() == 1


def test_a_day_nobody_paid_is_still_a_taken_day(db):
    mrr_snapshot_take(day=TODAY, now=NOW)

    assert not MrrSnapshot.objects.exists()
    assert MrrSnapshotDay.objects.get().accounts == 0


def test_housekeeping_takes_the_day_once(account):
    subscribe(account, price(1000))

    with time_machine.travel(NOW, tick=False):
        first = upkeep_run()
        second = upkeep_run()
    assert first["MRR snapshots taken"] == 1
    assert second["MRR snapshots taken"] == 0
    assert any(name.startswith("analytics_usage_sample ") for name in first)  # still expired
    assert mrr_snapshot_daily(now=NOW + timedelta(days=1)) == 1  # the next UTC day
    assert sorted(MrrSnapshotDay.objects.values_list("day", flat=True)) == [
        TODAY,
        TODAY + timedelta(days=1),
    ]


def test_the_command_takes_a_given_day_or_today(account, capsys):
    subscribe(account, price(1000))

    with time_machine.travel(NOW, tick=False):
        call_command("mrr_snapshot", "--day", "2026-11-01")
        call_command("mrr_snapshot")
        with pytest.raises(CommandError, match="future"):
            call_command("mrr_snapshot", "--day", "2026-11-25")
        with pytest.raises(CommandError, match="YYYY-MM-DD"):
            call_command("mrr_snapshot", "--day", "1 Nov")

    assert sorted(MrrSnapshot.objects.values_list("day", "mrr")) == [
        (date(2026, 11, 1), 1000),
        (TODAY, 1000),
    ]
    assert "MRR of 2026-11-01: 1 paying accounts" in capsys.readouterr().out


def test_taking_a_day_reads_the_subscriptions_in_one_query(
    django_assert_max_num_queries, account, other_account
):
    subscribe(account, price(1000))
    mrr_snapshot_take(day=TODAY, now=NOW)
    for amount in range(1000, 1008):
        subscribe(other_account, price(amount), coupon=coupon(percent_off=Decimal("10")))

    # The day's row twice (made, then locked), the subscriptions with their prices, coupons
    # and accounts, the old rows deleted, the new ones written, the day's row saved, and the
    # savepoints around: however many subscriptions there are.
    with django_assert_max_num_queries(8):
        mrr_snapshot_take(day=TODAY, now=NOW)
    assert MrrSnapshot.objects.get(account_id=other_account.id).subscriptions == 8


def test_staff_see_the_snapshots_read_only_in_admin(client):
    snapshot_day = mrr_snapshot_take(day=TODAY, now=NOW)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    for model in ("mrrsnapshotday", "mrrsnapshot"):
        assert client.get(reverse(f"admin:analytics_{model}_changelist")).status_code == 200
        assert client.get(reverse(f"admin:analytics_{model}_add")).status_code == 403
    change = reverse("admin:analytics_mrrsnapshotday_change", args=[f"{snapshot_day.day}"])
    assert client.get(change).status_code == 200

"""The acceptance year: one account, one year of its test clock, with a monthly plan (upgraded
and downgraded on the way), a yearly plan, an hourly plan and a trial, taxed at 19 % (DE) and
paid from credit. Every number below is derived by hand in the comment beside it."""

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest

from accounts.actors import SYSTEM, Actor
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    DocumentSequence,
    Invoice,
    Price,
    Product,
    SubscriptionStatus,
)
from billing.services import balance_of
from billing.services.catalogue import tax_rate_create
from billing.services.profile import BillingProfileChanges, billing_profile_update
from billing.services.subscriptions import (
    subscription_cancel,
    subscription_change,
    subscription_change_preview,
    subscription_order,
)
from events.models import Event
from servers.models import Server
from tests.billing.test_renewals import walk
from tests.billing.test_subscriptions import START, credit, plan
from tests.servers.helpers import MINECRAFT, run_worker

pytestmark = pytest.mark.django_db

INITIAL_CREDIT = 100_000  # 1,000.00 EUR: more than the year costs (74,070 below)
YEAR_END = START + timedelta(days=365)  # 15 Jan 2032 12:00 (2031 has 365 days)
UPGRADE_AT = datetime(2031, 4, 25, 18, 0, tzinfo=UTC)
DOWNGRADE_AT = datetime(2031, 6, 5, 11, 52, 48, tzinfo=UTC)


def with_tax(net: int) -> int:
    """``net`` plus 19 % VAT rounded half away from zero, computed apart from hosting.money."""
    return net + int((Decimal(net) * Decimal("0.19")).quantize(Decimal(1), ROUND_HALF_UP))


def noon(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 12, 0, tzinfo=UTC)


def buy(account, owner, price, name):
    subscription, invoice = subscription_order(
        account=account, price=price.id, order=dict(MINECRAFT, name=name), actor=Actor(user=owner)
    )
    assert invoice.status == "paid"
    return subscription


def history(subscription) -> list[tuple[str, datetime, int]]:
    """(billing reason, period start, total) of the subscription's invoices, by period start."""
    return sorted(
        Invoice.objects.filter(subscription=subscription).values_list(
            "billing_reason", "period_start", "total"
        ),
        key=lambda row: (row[1], row[0]),
    )


def ledger_balance_by_its_entries(account) -> int:
    """The balance reached by following the ledger entry by entry from zero: each entry must
    start where another ended (its ``ending_balance - amount``) and all must be used."""
    by_start = defaultdict(list)
    entries = list(BalanceTransaction.objects.filter(account=account))
    for entry in entries:
        by_start[entry.ending_balance - entry.amount].append(entry)
    balance = 0
    for _ in entries:
        assert by_start[balance], f"no ledger entry continues from {balance}"
        balance = by_start[balance].pop().ending_balance
    return balance


def test_a_year_with_monthly_yearly_hourly_and_trial_plans_upgrades_and_tax(account, owner):
    billing_clock_advance(account=account, to=START)
    billing_profile_update(
        account=account,
        changes=BillingProfileChanges(legal_name="Muster GmbH", country="DE"),
        actor=SYSTEM,
    )
    tax_rate_create(country="DE", percentage=Decimal(19), actor=SYSTEM)
    credit(account, INITIAL_CREDIT)

    iron = plan("Iron", 1000)
    gold = Price.objects.create(
        product=Product.objects.create(
            name="Gold", kind="server", memory_mb=8192, cpu_percent=400, disk_mb=40960
        ),
        currency="EUR",
        unit_amount=3100,
        interval="month",
    )
    yearly = plan("Yearly", 12000, interval="year")
    hourly = plan("Hourly", 150, interval="hour")
    trial = plan("Trial", 1500, trial_days=14)

    monthly_sub = buy(account, owner, iron, "Monthly")
    yearly_sub = buy(account, owner, yearly, "Yearly")
    hourly_sub = buy(account, owner, hourly, "Hourly")
    trial_sub = buy(account, owner, trial, "Trial")
    run_worker()  # the servers are created
    assert trial_sub.status == SubscriptionStatus.TRIALING

    # A day of the hourly plan in hourly steps: each run at the hour issues the next hour's
    # renewal (half an hour ahead at most) and starts the hour, so 24 runs, 24 renewals.
    walk(account, START + timedelta(hours=24), step=timedelta(hours=1))
    # Its 25th hour (16 Jan 12:00 → 13:00) is paid; cancelled before the next is issued
    # (12:30), it ends at 13:00 with nothing more to pay.
    subscription_cancel(subscription=hourly_sub, at_period_end=True, actor=Actor(user=owner))

    walk(account, UPGRADE_AT)
    # Upgrade Iron → Gold in the period 15 Apr 12:00 → 15 May 12:00 (30 days = 2,592,000 s);
    # 19 days 18 h = 1,706,400 s remain.
    #   unused Iron:    1000 x 1,706,400 / 2,592,000 =  658.33 →  658 credited
    #   remaining Gold: 3100 x 1,706,400 / 2,592,000 = 2040.83 → 2041 charged
    #   net 1383, VAT 19 % = 262.77 → 263, total 1646
    monthly_sub, upgrade = subscription_change(
        subscription=monthly_sub, price=gold.id, actor=Actor(user=owner)
    )
    assert upgrade.billing_reason == "subscription_update" and upgrade.status == "paid"
    lines = list(upgrade.lines.all())
    assert [(line.amount, line.proration) for line in lines] == [(-658, True), (2041, True)]
    assert {(line.period_start, line.period_end) for line in lines} == {
        (UPGRADE_AT, noon(2031, 5, 15))
    }
    # 263 spread over the lines' amounts by largest remainder: exact shares 263 x -658 / 1383
    # = -125.13 and 263 x 2041 / 1383 = 388.13; floors -126 and 388 (remainders 0.87 and
    # 0.13) leave 1, which goes to the larger remainder: -125 and 388.
    assert [line.tax_amount for line in lines] == [-125, 388]
    assert (upgrade.subtotal, upgrade.tax, upgrade.total) == (1383, 263, 1646)
    assert upgrade.payments.get().gateway == "credit"
    assert Server.objects.get(pk=monthly_sub.server_id).memory_mb == 8192

    walk(account, DOWNGRADE_AT)
    # Downgrade Gold → Iron in the period 15 May 12:00 → 15 Jun 12:00 (31 days = 2,678,400 s);
    # 10 days 7 min 12 s = 864,432 s remain.
    #   unused Gold:    3100 x 864,432 / 2,678,400 = 1000.5 exactly → 1000 (half to even)
    #   remaining Iron: 1000 x 864,432 / 2,678,400 = 322.74 → 323
    #   net -677, VAT -128.63 → -129, total -806: credited to the balance, no invoice.
    monthly_sub.refresh_from_db()  # the walk started its May period
    preview = subscription_change_preview(subscription=monthly_sub, price=iron.id)
    assert [line["unit_amount"] for line in preview.priced.lines] == [-1000, 323]
    assert preview.total == -806
    invoices_before = Invoice.objects.count()
    monthly_sub, downgrade = subscription_change(
        subscription=monthly_sub, price=iron.id, actor=Actor(user=owner)
    )
    assert downgrade is None and Invoice.objects.count() == invoices_before
    proration = BalanceTransaction.objects.get(account=account, kind="proration")
    assert (proration.amount, proration.created_at) == (806, DOWNGRADE_AT)
    assert Server.objects.get(pk=monthly_sub.server_id).memory_mb == 3072

    walk(account, YEAR_END)

    # -- each subscription's invoices -------------------------------------------------------
    month_starts = [noon(2031 + m // 12, m % 12 + 1, 15) for m in range(1, 13)]  # Feb → Jan
    # Iron 1000 + 190 VAT; Gold 3100 + 589. Only the renewal of 15 May (issued 12 May, after
    # the upgrade and before the downgrade) is at the Gold price.
    assert history(monthly_sub) == sorted(
        [("subscription_create", START, 1190), ("subscription_update", UPGRADE_AT, 1646)]
        + [
            ("subscription_cycle", start, 3689 if start.month == 5 else 1190)
            for start in month_starts
        ],
        key=lambda row: (row[1], row[0]),
    )  # the order, 12 renewals and the upgrade: 14
    # 12000 + 2280 VAT; the renewal for 2032 was issued on 12 Jan 2032, 3 days ahead.
    assert history(yearly_sub) == [
        ("subscription_create", START, 14280),
        ("subscription_cycle", noon(2032, 1, 15), 14280),
    ]
    # 150 + VAT 28.5 → 29 (half away from zero; half to even would give 28) = 179 an hour.
    assert history(hourly_sub) == [("subscription_create", START, 179)] + [
        ("subscription_cycle", START + timedelta(hours=h), 179) for h in range(1, 25)
    ]
    # The trial (15 → 29 Jan) is invoiced at 0; then monthly from the trial's end, anchored on
    # the 29th: 28 Feb (2031 has no 29 Feb), back to the 29th from March, to 29 Dec (the 29 Jan
    # 2032 renewal is issued on 26 Jan, after the year). 1500 + 285 VAT.
    trial_end = START + timedelta(days=14)
    trial_starts = [noon(2031, 1, 29), noon(2031, 2, 28)]
    trial_starts += [noon(2031, month, 29) for month in range(3, 13)]
    assert history(trial_sub) == [("subscription_create", START, 0)] + [
        ("subscription_cycle", start, 1785) for start in trial_starts
    ]
    trial_sub.refresh_from_db()
    assert trial_sub.trial_end == trial_end == trial_starts[0]
    first_trial_invoice = Invoice.objects.get(
        subscription=trial_sub, billing_reason="subscription_create"
    )
    assert (first_trial_invoice.status, first_trial_invoice.period_end) == ("paid", trial_end)
    assert Event.objects.filter(type="subscription.trial_will_end").count() == 1

    # -- the subscriptions at the year's end ------------------------------------------------
    for subscription in (monthly_sub, yearly_sub, hourly_sub, trial_sub):
        subscription.refresh_from_db()
    assert (monthly_sub.status, monthly_sub.price_id) == (SubscriptionStatus.ACTIVE, iron.id)
    assert monthly_sub.current_period_start == noon(2032, 1, 15)
    assert yearly_sub.status == SubscriptionStatus.ACTIVE
    assert (yearly_sub.current_period_start, yearly_sub.current_period_end) == (
        noon(2032, 1, 15),
        noon(2033, 1, 15),
    )
    assert trial_sub.status == SubscriptionStatus.ACTIVE
    assert trial_sub.current_period_start == noon(2031, 12, 29)
    assert hourly_sub.status == SubscriptionStatus.CANCELED
    assert hourly_sub.ended_at == START + timedelta(hours=25)
    hourly_server = Server.objects.get(pk=hourly_sub.server_id)
    assert hourly_server.status == "deleting" and hourly_server.deleted_at is not None

    # -- every invoice: lines, totals, tax, payment --------------------------------------------
    invoices = list(Invoice.objects.filter(account=account).prefetch_related("lines", "payments"))
    assert len(invoices) == 14 + 2 + 25 + 13
    for invoice in invoices:
        lines = list(invoice.lines.all())
        assert invoice.subtotal == sum(line.amount for line in lines)
        assert invoice.discount == sum(line.discount_amount for line in lines) == 0
        assert invoice.tax == sum(line.tax_amount for line in lines)
        assert invoice.total == with_tax(invoice.subtotal - invoice.discount)
        assert invoice.total == invoice.subtotal - invoice.discount + invoice.tax
        assert (invoice.tax_percentage, invoice.tax_inclusive) == (Decimal(19), False)
        assert invoice.buyer["country"] == "DE" and invoice.buyer["name"] == "Muster GmbH"
        assert (invoice.status, invoice.amount_paid, invoice.amount_remaining) == (
            "paid",
            invoice.total,
            0,
        )
        payments = [(p.gateway, p.amount) for p in invoice.payments.all()]
        assert payments == ([("credit", invoice.total)] if invoice.total else [])

    # -- numbers: one gapless series per year, in the order the invoices were finalized -------
    series = defaultdict(list)
    for invoice in sorted(invoices, key=lambda invoice: invoice.number):
        prefix, number = invoice.number.rsplit("-", 1)
        assert prefix == f"TEST-INV-{invoice.finalized_at:%Y}"
        series[prefix].append((int(number), invoice.finalized_at))
    # Finalized in 2032: the monthly and the yearly renewals of 12 Jan; all else in 2031.
    assert {prefix: len(numbered) for prefix, numbered in series.items()} == {
        "TEST-INV-2031": 52,
        "TEST-INV-2032": 2,
    }
    for prefix, numbered in series.items():
        assert [number for number, _ in numbered] == list(range(1, len(numbered) + 1))
        finalized = [at for _, at in numbered]
        assert finalized == sorted(finalized)
        assert DocumentSequence.objects.get(series=prefix).next_number == len(numbered) + 1

    # -- the ledger ---------------------------------------------------------------------------
    # Paid from credit: monthly 12 x 1190 + 3689 + 1646 = 19,615; yearly 2 x 14,280 = 28,560;
    # hourly 25 x 179 = 4,475; trial 12 x 1785 = 21,420; in all 74,070.
    paid_from_credit = sum(invoice.total for invoice in invoices)
    assert paid_from_credit == 19_615 + 28_560 + 4_475 + 21_420
    applied = BalanceTransaction.objects.filter(account=account, kind="applied_to_invoice")
    assert sorted((entry.invoice_id, -entry.amount) for entry in applied) == sorted(
        (invoice.id, invoice.total) for invoice in invoices if invoice.total
    )
    assert balance_of(account) == ledger_balance_by_its_entries(account)
    assert balance_of(account) == INITIAL_CREDIT - paid_from_credit + 806 == 26_736

"""The MRR and churn reports: movements between daily snapshots across upgrades, downgrades,
cancellations and a reactivation, worked out by hand; the same from real subscriptions through
the snapshot service; staff only."""

from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine

from analytics.models import MrrSnapshot, MrrSnapshotDay
from analytics.selectors.reports_mrr import churn_report, mrr_report
from analytics.services.snapshots import mrr_snapshot_take
from billing.models import Subscription
from tests.factories import AccountFactory, PriceFactory, ProductFactory, SubscriptionFactory

pytestmark = pytest.mark.django_db
OCTOBER_20 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)


def snapshot(day: date, mrr: dict[str, tuple[str, int]]) -> None:
    """A taken day: ``{account id: (currency, mrr)}``."""
    MrrSnapshotDay.objects.create(
        day=day,
        taken_at=datetime(day.year, day.month, day.day, 0, 5, tzinfo=UTC),
        accounts=len(mrr),
    )
    MrrSnapshot.objects.bulk_create(
        MrrSnapshot(day=day, account_id=account, currency=currency, mrr=amount, subscriptions=1)
        for account, (currency, amount) in mrr.items()
    )


@pytest.fixture
def history(db):
    """Accounts A to D pay in EUR, F in USD. A upgrades then downgrades, B joins then leaves,
    C joins then grows, D leaves and comes back, F leaves."""
    eur = lambda amount: ("EUR", amount)  # noqa: E731
    usd = ("USD", 3000)
    snapshot(date(2026, 8, 20), {"acct_A": eur(1000), "acct_D": eur(500)})
    snapshot(date(2026, 9, 1), {"acct_A": eur(1000), "acct_D": eur(500), "acct_F": usd})
    # A upgrades (+500), D cancels (-500), B is new (+2000).
    snapshot(date(2026, 9, 10), {"acct_A": eur(1500), "acct_B": eur(2000), "acct_F": usd})
    # A downgrades (-300), C is new (+800).
    snapshot(
        date(2026, 9, 20),
        {"acct_A": eur(1200), "acct_B": eur(2000), "acct_C": eur(800), "acct_F": usd},
    )
    snapshot(
        date(2026, 10, 1),
        {"acct_A": eur(1200), "acct_B": eur(2000), "acct_C": eur(800), "acct_F": usd},
    )
    # D comes back (+700, it paid in August), B cancels (-2000), F cancels (-3000 USD).
    snapshot(date(2026, 10, 5), {"acct_A": eur(1200), "acct_C": eur(800), "acct_D": eur(700)})
    # C grows (+200).
    snapshot(date(2026, 10, 15), {"acct_A": eur(1200), "acct_C": eur(1000), "acct_D": eur(700)})


def report(api, path: str, **params) -> dict:
    with time_machine.travel(OCTOBER_20, tick=False):
        response = api.get(path, params)
    assert response.status_code == 200, response.content
    return response.json()["data"]["report"]


def test_it_reports_mrr_and_its_movements_per_month_and_currency(staff_api, history):
    answer = report(staff_api, "/v1/admin/reports/mrr", start_month="2026-09", end_month="2026-10")

    assert answer["name"] == "mrr"
    assert answer["parameters"] == {
        "start_month": "2026-09",
        "end_month": "2026-10",
        "currency": None,
    }
    assert [(column["name"], column["type"]) for column in answer["columns"]] == [
        ("month", "month"),
        ("currency", "string"),
        ("mrr_start", "money"),
        ("new", "money"),
        ("reactivation", "money"),
        ("expansion", "money"),
        ("contraction", "money"),
        ("churn", "money"),
        ("mrr_end", "money"),
    ]
    assert answer["columns"][2]["currency"] == "currency"
    assert answer["rows"] == [
        # September, EUR: at 1 Sep A 1000 + D 500 = 1500. 10 Sep: A +500 (expansion), D -500
        # (churn), B +2000 (new); 20 Sep: A -300 (contraction), C +800 (new). At 1 Oct:
        # A 1200 + B 2000 + C 800 = 4000 = 1500 + 2800 + 500 - 300 - 500.
        {
            "month": "2026-09",
            "currency": "EUR",
            "mrr_start": 1500,
            "new": 2800,
            "reactivation": 0,
            "expansion": 500,
            "contraction": -300,
            "churn": -500,
            "mrr_end": 4000,
        },
        {
            "month": "2026-09",
            "currency": "USD",
            "mrr_start": 3000,
            "new": 0,
            "reactivation": 0,
            "expansion": 0,
            "contraction": 0,
            "churn": 0,
            "mrr_end": 3000,
        },
        # October, EUR: 5 Oct D +700 (reactivation: it paid in August), B -2000 (churn);
        # 15 Oct C +200 (expansion). The latest snapshot (15 Oct): A 1200 + C 1000 + D 700
        # = 2900 = 4000 + 700 + 200 - 2000.
        {
            "month": "2026-10",
            "currency": "EUR",
            "mrr_start": 4000,
            "new": 0,
            "reactivation": 700,
            "expansion": 200,
            "contraction": 0,
            "churn": -2000,
            "mrr_end": 2900,
        },
        {
            "month": "2026-10",
            "currency": "USD",
            "mrr_start": 3000,
            "new": 0,
            "reactivation": 0,
            "expansion": 0,
            "contraction": 0,
            "churn": -3000,
            "mrr_end": 0,
        },
    ]


def test_every_row_reconciles(staff_api, history):
    answer = report(staff_api, "/v1/admin/reports/mrr", start_month="2026-07", end_month="2026-10")

    for row in answer["rows"]:
        moved = sum(
            row[name] for name in ("new", "reactivation", "expansion", "contraction", "churn")
        )
        assert row["mrr_start"] + moved == row["mrr_end"], row


def test_before_the_first_snapshot_mrr_counts_as_zero(staff_api, history):
    answer = report(
        staff_api,
        "/v1/admin/reports/mrr",
        start_month="2026-07",
        end_month="2026-08",
        currency="eur",
    )

    assert answer["parameters"]["currency"] == "EUR"
    assert answer["rows"] == [
        {
            "month": "2026-07",
            "currency": "EUR",
            "mrr_start": 0,
            "new": 0,
            "reactivation": 0,
            "expansion": 0,
            "contraction": 0,
            "churn": 0,
            "mrr_end": 0,
        },
        # The first snapshot (20 Aug) is all new: A 1000 + D 500; nothing else moves up to
        # the snapshot of 1 Sep, the end of August.
        {
            "month": "2026-08",
            "currency": "EUR",
            "mrr_start": 0,
            "new": 1500,
            "reactivation": 0,
            "expansion": 0,
            "contraction": 0,
            "churn": 0,
            "mrr_end": 1500,
        },
    ]


def test_it_reports_customer_and_revenue_churn(staff_api, history):
    answer = report(
        staff_api, "/v1/admin/reports/churn", start_month="2026-09", end_month="2026-10"
    )

    assert answer["name"] == "churn"
    assert answer["rows"] == [
        # Paying on 1 Sep: A, D; D pays nothing on 1 Oct: 1 of 2. Lost 500 + 300 of 1500
        # = 0.5333; less the expansion of 500: 300 / 1500 = 0.2.
        {
            "month": "2026-09",
            "currency": "EUR",
            "customers_start": 2,
            "customers_churned": 1,
            "customer_churn_rate": 0.5,
            "mrr_start": 1500,
            "churn": -500,
            "contraction": -300,
            "expansion": 500,
            "reactivation": 0,
            "gross_revenue_churn_rate": 0.5333,
            "net_revenue_churn_rate": 0.2,
        },
        {
            "month": "2026-09",
            "currency": "USD",
            "customers_start": 1,
            "customers_churned": 0,
            "customer_churn_rate": 0.0,
            "mrr_start": 3000,
            "churn": 0,
            "contraction": 0,
            "expansion": 0,
            "reactivation": 0,
            "gross_revenue_churn_rate": 0.0,
            "net_revenue_churn_rate": 0.0,
        },
        # Paying on 1 Oct: A, B, C; B pays nothing at the end (D came back but was not
        # paying at the start): 1 of 3 = 0.3333. Lost 2000 of 4000 = 0.5; less the
        # expansion (200) and the reactivation (700): 1100 / 4000 = 0.275.
        {
            "month": "2026-10",
            "currency": "EUR",
            "customers_start": 3,
            "customers_churned": 1,
            "customer_churn_rate": 0.3333,
            "mrr_start": 4000,
            "churn": -2000,
            "contraction": 0,
            "expansion": 200,
            "reactivation": 700,
            "gross_revenue_churn_rate": 0.5,
            "net_revenue_churn_rate": 0.275,
        },
        {
            "month": "2026-10",
            "currency": "USD",
            "customers_start": 1,
            "customers_churned": 1,
            "customer_churn_rate": 1.0,
            "mrr_start": 3000,
            "churn": -3000,
            "contraction": 0,
            "expansion": 0,
            "reactivation": 0,
            "gross_revenue_churn_rate": 1.0,
            "net_revenue_churn_rate": 1.0,
        },
    ]


def test_a_rate_over_nothing_is_null(staff_api, history):
    answer = report(
        staff_api, "/v1/admin/reports/churn", start_month="2026-08", end_month="2026-08"
    )

    # Nobody paid on 1 Aug (the first snapshot is of the 20th).
    assert [
        (
            row["currency"],
            row["customers_start"],
            row["customer_churn_rate"],
            row["gross_revenue_churn_rate"],
            row["net_revenue_churn_rate"],
        )
        for row in answer["rows"]
    ] == [("EUR", 0, None, None, None), ("USD", 0, None, None, None)]


def test_it_follows_real_subscriptions_through_the_daily_snapshots(staff_api, account):
    """Upgrades, downgrades, a cancellation and a trial that converts, one snapshot a day."""
    product = ProductFactory(name="Server")
    small, large = (PriceFactory(product=product, unit_amount=amount) for amount in (1000, 2500))
    now = datetime(2026, 10, 1, 0, 5, tzinfo=UTC)
    period = {
        "billing_cycle_anchor": now,
        "current_period_start": now,
        "current_period_end": now + timedelta(days=31),
    }
    other = AccountFactory()
    upgraded = SubscriptionFactory(account=account, price=small, **period)
    leaving = SubscriptionFactory(account=other, price=small, **period)
    trial = SubscriptionFactory(price=small, status="trialing", **period)

    def day(number: int) -> None:
        mrr_snapshot_take(day=date(2026, 10, number), now=now + timedelta(days=number - 1))

    day(1)  # account 1000, other 1000
    Subscription.objects.filter(pk=upgraded.pk).update(price=large)  # +1500
    day(2)
    Subscription.objects.filter(pk=upgraded.pk).update(quantity=2, price=small)  # 2500 -> 2000
    Subscription.objects.filter(pk=leaving.pk).update(status="canceled")  # -1000
    day(3)
    Subscription.objects.filter(pk=trial.pk).update(status="active")  # +1000, new
    day(4)

    answer = report(staff_api, "/v1/admin/reports/mrr", start_month="2026-10", end_month="2026-10")

    # 2000 on 1 Oct; +1500 expansion, -500 contraction, -1000 churn, +1000 new: 3000.
    assert answer["rows"] == [
        {
            "month": "2026-10",
            "currency": "EUR",
            "mrr_start": 2000,
            "new": 1000,
            "reactivation": 0,
            "expansion": 1500,
            "contraction": -500,
            "churn": -1000,
            "mrr_end": 3000,
        },
    ]


@pytest.mark.parametrize("path", ["/v1/admin/reports/mrr", "/v1/admin/reports/churn"])
def test_customers_cannot_read_staff_reports(owner_api, path):
    with time_machine.travel(OCTOBER_20, tick=False):
        response = owner_api.get(path)

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert response.json()["error"]["details"] == {"required_scopes": ["admin:read"]}


def test_the_reports_read_a_fixed_number_of_queries(django_assert_num_queries, history):
    # The baseline day, each account's first paying day, the days taken, their rows (a stream).
    for make in (mrr_report, churn_report):
        with django_assert_num_queries(4):
            make(first=date(2026, 7, 1), last=date(2026, 10, 1))

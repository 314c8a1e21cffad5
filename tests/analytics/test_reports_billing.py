"""The reports read from billing's documents: revenue by product and month (billed, credited,
collected, paid with credit), accounts receivable aging at a day, and a customer's spend with
the owner / teammate / outsider trio. Every figure is worked out by hand in the comments."""

from datetime import UTC, date, datetime

import pytest
import time_machine

from accounts.actors import SYSTEM
from accounts.roles import Role
from analytics.selectors.reports_billing import ar_aging_report, revenue_report, spend_report
from billing.clock import billing_clock_advance
from billing.models import Price
from billing.services import (
    balance_change,
    credit_note_create,
    invoice_create,
    invoice_finalize,
    invoice_mark_paid,
    invoice_mark_uncollectible,
    invoice_pay_with_credit,
    invoice_void,
)
from servers.models import Bot
from tests.factories import (
    AccountFactory,
    MembershipFactory,
    PriceFactory,
    ServerFactory,
    SubscriptionFactory,
)

pytestmark = pytest.mark.django_db
OCTOBER_20 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
JUNE_1 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def at(month: int, day: int, hour: int = 10) -> datetime:
    return datetime(2026, month, day, hour, 0, tzinfo=UTC)


def report(api, path: str, now: datetime = OCTOBER_20, **params) -> dict:
    with time_machine.travel(now, tick=False):
        response = api.get(path, params)
    assert response.status_code == 200, response.content
    return response.json()["data"]["report"]


def line(amount: int, price: Price | None = None, tax: int = 0, discount: int = 0) -> dict:
    return {
        "description": price.product.name if price else "Setup",
        "unit_amount": amount,
        "price": price,
        "tax_amount": tax,
        "discount_amount": discount,
    }


def issue(account, when: datetime, *lines: dict, currency="EUR", due=None, subscription=None):
    """An invoice finalized at ``when`` (its due date ``due``, else a week later)."""
    with time_machine.travel(when, tick=False):
        invoice = invoice_create(
            account=account, currency=currency, lines=list(lines), subscription=subscription
        )
        return invoice_finalize(invoice=invoice, due_date=due)


def then(when: datetime, service, **kwargs):
    with time_machine.travel(when, tick=False):
        return service(actor=SYSTEM, **kwargs)


def pay(invoice, when: datetime):
    return then(when, invoice_mark_paid, invoice=invoice, reference="SEPA")


def pay_with_credit(invoice, amount: int, when: datetime):
    with time_machine.travel(when, tick=False):
        balance_change(
            account=invoice.account,
            amount=amount,
            currency=invoice.currency,
            kind="adjustment",
            description="Goodwill",
            actor=SYSTEM,
        )
        return invoice_pay_with_credit(invoice=invoice, actor=SYSTEM)


def forgive(invoice, amount: int, when: datetime):
    return then(
        when, credit_note_create, invoice=invoice, amount=amount, reason="other", refund_to="none"
    )


@pytest.fixture
def plans(db):
    return (
        PriceFactory(product__name="Minecraft 4 GB", unit_amount=1000),
        PriceFactory(product__name="Discord Bot", unit_amount=500),
    )


# --- Revenue ----------------------------------------------------------------------------------


@pytest.fixture
def books(plans):
    """Two customers in EUR, one in USD, one demo account on a test clock."""
    minecraft, bot = plans
    x, y, w, demo = (AccountFactory() for _ in range(4))
    # 1190 + 595 + 357 = 2142: each line charges its amount plus 19 % tax.
    first = issue(x, at(9, 10), line(1000, minecraft, 190), line(500, bot, 95), line(300, None, 57))
    first = pay_with_credit(first, 1000, at(9, 20))
    pay(first, at(10, 3))  # the remaining 1142
    # 1000 - 100 discount + 171 tax = 1071; 500 of it forgiven in October.
    second = issue(x, at(9, 25), line(1000, minecraft, 171, discount=100))
    forgive(second, 500, at(10, 5))
    void = issue(y, at(10, 2), line(500, bot))
    then(at(10, 4), invoice_void, invoice=void)
    issue(w, at(10, 8), line(2000), currency="USD")
    billing_clock_advance(account=demo, to=at(10, 10))
    pay(issue(demo, at(10, 10), line(9000, minecraft)), at(10, 11))
    return minecraft.product, bot.product


def test_it_reports_revenue_by_product_and_month(staff_api, books):
    minecraft, bot = books

    answer = report(
        staff_api, "/v1/admin/reports/revenue", start_month="2026-09", end_month="2026-10"
    )

    assert answer["parameters"] == {
        "start_month": "2026-09",
        "end_month": "2026-10",
        "group_by": "product",
        "currency": None,
    }
    assert [column["name"] for column in answer["columns"]] == [
        "month",
        "currency",
        "product_id",
        "product_name",
        "billed",
        "tax",
        "credited",
        "collected",
        "credit_applied",
    ]
    eur, usd = {"currency": "EUR"}, {"currency": "USD"}
    b, m = (
        {"product_id": bot.id, "product_name": "Discord Bot"},
        {"product_id": minecraft.id, "product_name": "Minecraft 4 GB"},
    )
    other = {"product_id": None, "product_name": "Other"}
    nothing = {"billed": 0, "tax": 0, "credited": 0, "collected": 0, "credit_applied": 0}
    assert answer["rows"] == [
        # September: billed the first invoice (1190, 595, 357) and the second (1071, Minecraft).
        # The 1000 of credit paid on the first is spread over its 2142 by what its lines
        # charged: 555.6, 277.8, 166.7; the floors 555 + 277 + 166 = 998 leave 2 units for the
        # largest remainders, the bot's (.78) and the setup's (.67): 555, 278, 167.
        {
            "month": "2026-09",
            **eur,
            **b,
            **nothing,
            "billed": 595,
            "tax": 95,
            "credit_applied": 278,
        },
        {
            "month": "2026-09",
            **eur,
            **m,
            **nothing,
            "billed": 1190 + 1071,
            "tax": 190 + 171,
            "credit_applied": 555,
        },
        {
            "month": "2026-09",
            **eur,
            **other,
            **nothing,
            "billed": 357,
            "tax": 57,
            "credit_applied": 167,
        },
        # October: the bank transfer of 1142 spread the same way: 634.4, 317.2, 190.3 → the
        # one unit left goes to Minecraft: 635, 317, 190. The credit note of 500 is all the
        # second invoice's one product. The voided invoice and the demo account count nothing.
        {"month": "2026-10", **eur, **b, **nothing, "collected": 317},
        {"month": "2026-10", **eur, **m, **nothing, "credited": 500, "collected": 635},
        {"month": "2026-10", **eur, **other, **nothing, "collected": 190},
        {"month": "2026-10", **usd, **other, **nothing, "billed": 2000},
    ]


def test_it_reports_revenue_per_month_in_every_currency(staff_api, books):
    answer = report(
        staff_api,
        "/v1/admin/reports/revenue",
        start_month="2026-09",
        end_month="2026-10",
        group_by="month",
    )

    assert [column["name"] for column in answer["columns"]] == [
        "month",
        "currency",
        "billed",
        "tax",
        "credited",
        "collected",
        "credit_applied",
    ]
    assert answer["rows"] == [
        # 2142 + 1071 = 3213 billed, 190 + 95 + 57 + 171 = 513 of it tax.
        {
            "month": "2026-09",
            "currency": "EUR",
            "billed": 3213,
            "tax": 513,
            "credited": 0,
            "collected": 0,
            "credit_applied": 1000,
        },
        {
            "month": "2026-09",
            "currency": "USD",
            "billed": 0,
            "tax": 0,
            "credited": 0,
            "collected": 0,
            "credit_applied": 0,
        },
        {
            "month": "2026-10",
            "currency": "EUR",
            "billed": 0,
            "tax": 0,
            "credited": 500,
            "collected": 1142,
            "credit_applied": 0,
        },
        {
            "month": "2026-10",
            "currency": "USD",
            "billed": 2000,
            "tax": 0,
            "credited": 0,
            "collected": 0,
            "credit_applied": 0,
        },
    ]


def test_revenue_of_one_currency(staff_api, books):
    answer = report(
        staff_api,
        "/v1/admin/reports/revenue",
        start_month="2026-10",
        end_month="2026-10",
        currency="usd",
        group_by="month",
    )

    assert answer["parameters"]["currency"] == "USD"
    assert answer["rows"] == [
        {
            "month": "2026-10",
            "currency": "USD",
            "billed": 2000,
            "tax": 0,
            "credited": 0,
            "collected": 0,
            "credit_applied": 0,
        },
    ]


# --- Accounts receivable aging ----------------------------------------------------------------


@pytest.fixture
def receivables(db):
    """Invoices of P and Q (EUR) and U (USD), due on chosen days; as of 20 October."""
    p = AccountFactory(name="Pixel Realms")
    q = AccountFactory(name="Quarry Craft")
    u = AccountFactory(name="US Servers")

    def owed(account, amount, due, issued=JUNE_1, currency="EUR"):
        return issue(account, issued, line(amount), due=due, currency=currency)

    owed(p, 1000, at(6, 15))  # 127 days late on 20 Oct: over 90
    owed(p, 2000, at(8, 1))  # 80: 61-90
    part_paid = owed(p, 3000, at(9, 10))  # 40: 31-60, 1000 of it paid on 1 Oct
    pay_with_credit(part_paid, 1000, at(10, 1))
    owed(p, 400, at(10, 20))  # due that day: 0-30
    owed(p, 500, at(11, 5), issued=at(10, 6))  # not due yet: 0-30
    owed(p, 700, at(9, 20))  # 30 days: 0-30
    owed(p, 800, at(9, 19))  # 31 days: 31-60
    owed(q, 600, at(7, 22))  # 90 days: 61-90
    uncollectible = owed(q, 900, at(7, 21))  # 91 days: over 90, uncollectible still owed
    then(at(9, 1), invoice_mark_uncollectible, invoice=uncollectible)
    pay(owed(q, 250, at(10, 1)), at(10, 25))  # 19 days; paid only after 20 Oct
    then(at(10, 25), invoice_void, invoice=owed(q, 150, at(10, 15)))  # 5; voided after
    owed(q, 350, at(11, 21), issued=at(10, 22))  # finalized after 20 Oct: not yet owed then
    forgive(owed(q, 300, at(10, 5)), 100, at(10, 10))  # 15 days, 200 left after the credit
    pay(owed(q, 5000, at(9, 1)), at(9, 2))  # paid before: owes nothing
    owed(u, 5000, at(6, 1), currency="USD")  # 141 days: over 90
    demo = AccountFactory()
    billing_clock_advance(account=demo, to=at(6, 1))
    owed(demo, 7000, at(6, 2))
    return p, q, u


def test_it_ages_what_was_owed_at_the_end_of_a_day_by_bucket(staff_api, receivables):
    answer = report(staff_api, "/v1/admin/reports/ar-aging", as_of="2026-10-20")

    assert answer["parameters"] == {"as_of": "2026-10-20", "group_by": "bucket", "currency": None}
    assert answer["rows"] == [
        # 400 + 500 + 700 (P) + 250 + 150 + 200 (Q) = 2200 in 6 invoices.
        {"currency": "EUR", "bucket": "days_0_30", "invoices": 6, "amount": 2200},
        # 3000 - 1000 paid + 800.
        {"currency": "EUR", "bucket": "days_31_60", "invoices": 2, "amount": 2800},
        {"currency": "EUR", "bucket": "days_61_90", "invoices": 2, "amount": 2600},
        {"currency": "EUR", "bucket": "days_over_90", "invoices": 2, "amount": 1900},
        {"currency": "USD", "bucket": "days_0_30", "invoices": 0, "amount": 0},
        {"currency": "USD", "bucket": "days_31_60", "invoices": 0, "amount": 0},
        {"currency": "USD", "bucket": "days_61_90", "invoices": 0, "amount": 0},
        {"currency": "USD", "bucket": "days_over_90", "invoices": 1, "amount": 5000},
    ]


def test_it_ages_receivables_per_account(staff_api, receivables):
    p, q, u = receivables

    answer = report(staff_api, "/v1/admin/reports/ar-aging", as_of="2026-10-20", group_by="account")

    assert answer["rows"] == [
        {
            "account_id": p.id,
            "account_name": "Pixel Realms",
            "currency": "EUR",
            "invoices": 7,
            "days_0_30": 1600,
            "days_31_60": 2800,
            "days_61_90": 2000,
            "days_over_90": 1000,
            "total": 7400,
        },
        {
            "account_id": q.id,
            "account_name": "Quarry Craft",
            "currency": "EUR",
            "invoices": 5,
            "days_0_30": 600,
            "days_31_60": 0,
            "days_61_90": 600,
            "days_over_90": 900,
            "total": 2100,
        },
        {
            "account_id": u.id,
            "account_name": "US Servers",
            "currency": "USD",
            "invoices": 1,
            "days_0_30": 0,
            "days_31_60": 0,
            "days_61_90": 0,
            "days_over_90": 5000,
            "total": 5000,
        },
    ]


def test_it_ages_at_the_end_of_today_by_default(staff_api, receivables):
    answer = report(staff_api, "/v1/admin/reports/ar-aging", now=at(10, 26), currency="EUR")

    assert answer["parameters"] == {"as_of": "2026-10-26", "group_by": "bucket", "currency": "EUR"}
    assert answer["rows"] == [
        # Paid (250) and voided (150) on the 25th; finalized on the 22nd (350, due in November).
        # 0-30: 400 (6 days), 500 and 350 (not due), 200 (21 days).
        {"currency": "EUR", "bucket": "days_0_30", "invoices": 4, "amount": 1450},
        # 700 (36 days), 800 (37), 2000 (46).
        {"currency": "EUR", "bucket": "days_31_60", "invoices": 3, "amount": 3500},
        {"currency": "EUR", "bucket": "days_61_90", "invoices": 1, "amount": 2000},  # 86 days
        # 1000, 900 and 600 (96 days).
        {"currency": "EUR", "bucket": "days_over_90", "invoices": 3, "amount": 2500},
    ]


# --- A customer's spend -----------------------------------------------------------------------


@pytest.fixture
def spending(account, other_account, plans):
    minecraft, bot_plan = plans
    server = ServerFactory(account=account, name="Survival SMP")
    bot = Bot.objects.create(
        account=account,
        name="Mod bot",
        region_id="eu-central",
        runtime="python-3.13",
        start_command="python bot.py",
        token_encrypted="x",
        token_last4="abcd",
    )
    period = {
        "billing_cycle_anchor": at(9, 1),
        "current_period_start": at(9, 1),
        "current_period_end": at(10, 1),
    }
    on_server = SubscriptionFactory(account=account, price=minecraft, server=server, **period)
    on_bot = SubscriptionFactory(account=account, price=bot_plan, bot=bot, **period)
    pay(issue(account, at(9, 5), line(1000, minecraft, 190), subscription=on_server), at(9, 6))
    issue(account, at(9, 12), line(500, bot_plan), subscription=on_bot)
    renewal = issue(account, at(10, 5), line(1000, minecraft), subscription=on_server)
    forgive(renewal, 200, at(10, 6))
    then(at(10, 8), invoice_void, invoice=issue(account, at(10, 7), line(300)))
    pay(issue(account, at(10, 9), line(250)), at(10, 9, 12))
    with time_machine.travel(at(10, 10), tick=False):
        invoice_create(account=account, currency="EUR", lines=[line(400)])  # a draft
    issue(other_account, at(10, 1), line(999))
    return server, bot


@pytest.fixture
def mate_api(account, make_token, client_for):
    """A billing member of the account with a key holding analytics:read and billing:read."""
    mate = MembershipFactory(account=account, role=Role.BILLING).user
    return client_for(make_token(mate, account, ["analytics:read", "billing:read"]))


SPEND = "/v1/analytics/reports/spend"
AUGUST_TO_OCTOBER = {"start_month": "2026-08", "end_month": "2026-10"}


def test_owner_and_teammate_read_their_accounts_spend_by_month(owner_api, mate_api, spending):
    for api in (owner_api, mate_api):
        answer = report(api, SPEND, **AUGUST_TO_OCTOBER)

        assert answer["name"] == "spend"
        assert answer["parameters"] == AUGUST_TO_OCTOBER | {"group_by": "month"}
        assert answer["rows"] == [
            {
                "month": "2026-08",
                "currency": "EUR",
                "invoices": 0,
                "billed": 0,
                "paid": 0,
                "credited": 0,
                "outstanding": 0,
            },
            # 1190 (paid) + 500 (open).
            {
                "month": "2026-09",
                "currency": "EUR",
                "invoices": 2,
                "billed": 1690,
                "paid": 1190,
                "credited": 0,
                "outstanding": 500,
            },
            # 1000 (200 credited, 800 due) + 250 (paid); the void and the draft are not spend.
            {
                "month": "2026-10",
                "currency": "EUR",
                "invoices": 2,
                "billed": 1250,
                "paid": 250,
                "credited": 200,
                "outstanding": 800,
            },
        ]


def test_it_reports_spend_by_server_or_bot(owner_api, spending):
    server, bot = spending

    answer = report(owner_api, SPEND, group_by="server", **AUGUST_TO_OCTOBER)

    assert [column["name"] for column in answer["columns"]] == [
        "kind",
        "instance_id",
        "name",
        "currency",
        "invoices",
        "billed",
        "paid",
        "credited",
        "outstanding",
    ]
    assert answer["rows"] == [
        {
            "kind": "server",
            "instance_id": server.id,
            "name": "Survival SMP",
            "currency": "EUR",
            "invoices": 2,
            "billed": 2190,
            "paid": 1190,
            "credited": 200,
            "outstanding": 800,
        },
        {
            "kind": "bot",
            "instance_id": bot.id,
            "name": "Mod bot",
            "currency": "EUR",
            "invoices": 1,
            "billed": 500,
            "paid": 0,
            "credited": 0,
            "outstanding": 500,
        },
        {
            "kind": "other",
            "instance_id": None,
            "name": None,
            "currency": "EUR",
            "invoices": 1,
            "billed": 250,
            "paid": 250,
            "credited": 0,
            "outstanding": 0,
        },
    ]


def test_an_outsider_sees_only_their_own_spend(outsider_api, spending):
    answer = report(outsider_api, SPEND, start_month="2026-10", end_month="2026-10")

    assert answer["rows"] == [
        {
            "month": "2026-10",
            "currency": "EUR",
            "invoices": 1,
            "billed": 999,
            "paid": 0,
            "credited": 0,
            "outstanding": 999,
        },
    ]


def test_a_key_without_analytics_read_is_refused(teammate_api, spending):
    with time_machine.travel(OCTOBER_20, tick=False):
        response = teammate_api.get(SPEND)

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert response.json()["error"]["details"] == {
        "required_scopes": ["analytics:read", "billing:read"]
    }


def test_analytics_read_alone_sees_no_invoice_money(account, make_token, client_for, spending):
    developer = MembershipFactory(account=account, role=Role.DEVELOPER).user
    api = client_for(make_token(developer, account, ["analytics:read"]))
    with time_machine.travel(OCTOBER_20, tick=False):
        response = api.get(SPEND)

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"


@pytest.mark.parametrize("path", ["revenue", "ar-aging"])
def test_customers_cannot_read_staff_billing_reports(owner_api, path):
    with time_machine.travel(OCTOBER_20, tick=False):
        response = owner_api.get(f"/v1/admin/reports/{path}")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"


def test_the_reports_read_a_fixed_number_of_queries(django_assert_num_queries, books, account):
    september, october = date(2026, 9, 1), date(2026, 10, 1)
    # Lines billed, lines of the invoices paid or credited, payments, credit notes, products.
    with django_assert_num_queries(5):
        revenue_report(first=september, last=october)
    with django_assert_num_queries(4):
        revenue_report(first=september, last=october, group_by="month")
    with django_assert_num_queries(1):
        ar_aging_report(as_of=date(2026, 10, 20))
    with django_assert_num_queries(1):
        ar_aging_report(as_of=date(2026, 10, 20), group_by="account")
    for group_by in ("month", "server"):
        with django_assert_num_queries(1):
            spend_report(account_id=account.id, first=september, last=october, group_by=group_by)

"""The billing job's batches (``billing.services.job.renewal_batch``) against its one-at-a-time
path: the same subscriptions, walked through the same months, end in the same rows, events
and e-mails, whichever path renewed them.

Each case is a subscription of its own account (on its own test clock), built twice: once for
a job that takes every subscription one at a time (BILLING_BATCH_SIZE 0), once for one that
batches. Everything billing wrote for the two accounts is then compared, ids and invoice
numbers replaced by the order in which they first appear.
"""

import re
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_tasks_db.models import DBTaskResult

from accounts.actors import SYSTEM
from accounts.models import Account
from accounts.roles import Role
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    Coupon,
    Invoice,
    Payment,
    Subscription,
    SubscriptionStatus,
    TaxRate,
)
from billing.representations import (
    balance_transaction_representation,
    invoice_representation,
    payment_representation,
    subscription_representation,
)
from billing.services import balance_of
from billing.services.job.renewals import billing_clock_walk, billing_run, hash_shard
from billing.services.notices import billing_notices_send
from billing.services.profile import BillingProfileChanges, billing_profile_update
from billing.services.subscriptions import subscription_cancel, subscription_change
from events.models import Event
from tests.billing.test_subscriptions import START, credit, order, plan
from tests.factories import AccountFactory, MembershipFactory

pytestmark = pytest.mark.django_db

UNTIL = START + timedelta(days=80)  # three monthly renewals, dunning to suspension
IDS = re.compile(r"\b[a-z]{2,5}_[A-Za-z0-9]{8,}\b")
NUMBERS = re.compile(r"\bTEST-INV-\d{4}-\d{6}\b")


# --- the cases ------------------------------------------------------------------------------


def paid_from_credit(account, owner, prices):
    credit(account, 1000 * 4)
    return order(account, owner, prices["month"])


def unpaid_into_dunning(account, owner, prices):
    credit(account, 1000)  # the order only
    return order(account, owner, prices["month"])


def credit_runs_out(account, owner, prices):
    credit(account, 1000 * 2 + 300)  # the order and one renewal, then 3.00 EUR over
    return order(account, owner, prices["month"])


def taxed_with_a_coupon(account, owner, prices):
    billing_profile_update(
        account=account,
        actor=SYSTEM,
        changes=BillingProfileChanges(
            country="DE", legal_name="Kraft GmbH", email="billing@kraft.example"
        ),
    )
    credit(account, 5000)
    coupon = Coupon.objects.create(
        name="Quarter off",
        percent_off=Decimal("25"),
        duration="forever",
        directly_redeemable=True,
    )
    return order(account, owner, prices["month"], coupon=coupon.id)


def hourly_runs_late(account, owner, prices):
    # The job runs every five hours (``walk_all``): each run finds the period over and the
    # next one's invoice due at once, which the batch leaves to the one-at-a-time path.
    credit(account, 100 * 30)  # the order and 29 hours, then dunning
    return order(account, owner, prices["hour"])


def trialing(account, owner, prices):
    credit(account, 1000 * 3)
    return order(account, owner, prices["trial"])


def canceled_at_period_end(account, owner, prices):
    credit(account, 1000 * 3)
    subscription, invoice = order(account, owner, prices["month"])
    subscription_cancel(subscription=subscription, at_period_end=True, actor=SYSTEM)
    return subscription, invoice


def upgrade_left_unpaid(account, owner, prices):
    credit(account, 1000)
    subscription, invoice = order(account, owner, prices["month"])
    billing_clock_advance(account=account, to=START + timedelta(days=10))
    subscription_change(subscription=subscription, price=prices["big"].id, actor=SYSTEM)
    return subscription, invoice


def renewal_issued_ahead(account, owner, prices):
    # Walked in two steps by the test: first into the renewal window (the invoice is issued
    # ahead of the period's end), then past the end (the period starts).
    credit(account, 1000 * 4)
    return order(account, owner, prices["month"])


CASES = [
    paid_from_credit,
    unpaid_into_dunning,
    credit_runs_out,
    taxed_with_a_coupon,
    hourly_runs_late,
    trialing,
    canceled_at_period_end,
    upgrade_left_unpaid,
    renewal_issued_ahead,
]


@pytest.fixture
def prices():
    TaxRate.objects.create(display_name="USt", country="DE", percentage=Decimal("19"))
    return {
        "month": plan("Iron", 1000),
        "big": plan("Gold", 3000),
        "hour": plan("Hourly", 100, interval="hour"),
        "trial": plan("Trial", 1000, trial_days=7),
    }


def customer(name: str) -> tuple[Account, object]:
    account = AccountFactory(name=name)
    user = MembershipFactory(account=account, role=Role.OWNER).user
    billing_clock_advance(account=account, to=START)
    return account, user


def build(case, prices, label: str) -> Account:
    account, user = customer(case.__name__)  # one name: invoices are made out to it
    subscription, _ = case(account, user, prices)
    assert subscription.account_id == account.id
    return account


def walk_all(account: Account, batch_size: int, settings) -> Counter:
    """Walk the account's clock to UNTIL, the job running at each step (daily, or hourly for
    an hourly plan, as ``billing_clock_walk`` steps); the hourly case in five-hour jumps for
    three days instead. What the runs did, summed."""
    settings.BILLING_BATCH_SIZE = batch_size
    done = Counter()
    if account.name == "hourly_runs_late":
        for hours in range(5, 72, 5):
            billing_clock_advance(account=account, to=START + timedelta(hours=hours))
            done.update(billing_run(account_id=account.id).counts)
        return done
    if account.name == "renewal_issued_ahead":
        end = Subscription.objects.get(account=account).current_period_end
        _, _, report = billing_clock_walk(account=account, to=end - timedelta(days=2))
        done.update(report.counts)
    _, _, report = billing_clock_walk(account=account, to=UNTIL)
    done.update(report.counts)
    return done


# --- what billing wrote, without its ids ----------------------------------------------------


class Aliases:
    """Ids and invoice numbers, each replaced by its kind and the order it first appeared in."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def _alias(self, match: re.Match) -> str:
        token = match.group(0)
        if token not in self.seen:
            kind = "number" if token.startswith("TEST-") else token.split("_")[0]
            count = sum(1 for alias in self.seen.values() if alias.startswith(kind + "#"))
            self.seen[token] = f"{kind}#{count}"
        return self.seen[token]

    def __call__(self, value):
        if isinstance(value, dict):  # ``updated_at``: when the test ran
            return {key: self(item) for key, item in value.items() if key != "updated_at"}
        if isinstance(value, list | tuple):
            return [self(item) for item in value]
        if isinstance(value, str):
            return NUMBERS.sub(self._alias, IDS.sub(self._alias, value))
        return value


def written(account: Account) -> dict:
    """Everything billing wrote for ``account`` that a customer or staff can see."""
    alias = Aliases()
    subscription = Subscription.objects.get(account=account)
    events = [
        (event.type, event.related_id, event.data)
        for event in Event.objects.filter(account=account).order_by("created_at", "id")
        if event.type.split(".")[0] in ("invoice", "subscription", "payment", "customer")
    ]
    notices = [
        notice
        for task in DBTaskResult.objects.filter(
            task_path=billing_notices_send.module_path
        ).order_by("enqueued_at")
        for notice in task.args_kwargs["args"][0]
        if notice["account"] == account.id
    ]
    invoices = Invoice.objects.filter(account=account).order_by("created_at", "number", "id")
    return alias(
        {
            "subscription": subscription_representation(subscription),
            "events": events,
            "invoices": [
                (
                    invoice_representation(invoice),
                    invoice.attempt_count,
                    invoice.next_payment_attempt,
                )
                for invoice in invoices.prefetch_related("lines")
            ],
            "payments": [
                payment_representation(payment)
                for payment in Payment.objects.filter(account=account).order_by(
                    "created_at", "invoice__period_start"
                )
            ],
            "ledger": [
                balance_transaction_representation(entry)
                for entry in BalanceTransaction.objects.filter(account=account).order_by(
                    "created_at", "-ending_balance"
                )
            ],
            "notices": notices,
            "balance": balance_of(account),
        }
    )


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_a_batch_writes_what_the_one_at_a_time_path_writes(case, prices, settings):
    one_by_one = build(case, prices, "single")
    batched = build(case, prices, "batched")

    single_report = walk_all(one_by_one, 0, settings)
    batched_report = walk_all(batched, 200, settings)

    expected, got = written(one_by_one), written(batched)
    for part in expected:
        assert got[part] == expected[part], part
    assert batched_report == single_report


def test_the_cases_cover_both_paths_of_the_batch(prices, settings):
    """The cases above do reach the batch: renewals paid and unpaid, periods started, and
    subscriptions passed on to the one-at-a-time path."""
    import billing.services.job.renewal_batch as batch

    seen = Counter()
    original_write, original_plan = batch._write, batch._plan

    def plan(subscriptions, clocks):
        renewals, passed, balances = original_plan(subscriptions, clocks)
        seen["passed"] += len(passed)
        seen["paid_from_credit"] += sum(renewal.pay_from_credit for renewal in renewals)
        seen["left_open"] += sum(
            renewal.invoice is not None and not renewal.pay_from_credit for renewal in renewals
        )
        seen["issued_before"] += sum(renewal.issued is not None for renewal in renewals)
        return renewals, passed, balances

    def write(renewals, balances, report):
        more = original_write(renewals, balances, report)
        seen["more"] += len(more)
        return more

    settings.BILLING_BATCH_SIZE = 200
    batch._plan, batch._write = plan, write
    try:
        for case in CASES:
            walk_all(build(case, prices, "covered"), 200, settings)
    finally:
        batch._plan, batch._write = original_plan, original_write
    assert all(
        seen[key] > 0
        for key in ("passed", "paid_from_credit", "left_open", "issued_before", "more")
    ), seen


def test_one_account_s_credit_is_spent_in_order_across_a_batch(prices, settings):
    """Three subscriptions of one account in one batch, credit for two renewals: two are paid
    from it, in order, the ledger's running balance right; the third is left open."""
    settings.BILLING_BATCH_SIZE = 200
    account, user = customer("three")
    credit(account, 3000)
    subscriptions = [order(account, user, prices["month"])[0] for _ in range(3)]
    credit(account, 2000)
    billing_clock_advance(account=account, to=subscriptions[0].current_period_end)

    report = billing_run(account_id=account.id)

    assert report.counts == {"renewals": 3, "period_started": 3}
    renewals = Invoice.objects.filter(account=account, billing_reason="subscription_cycle")
    paid = renewals.filter(status="paid").order_by("subscription_id")
    assert paid.count() == 2 and renewals.filter(status="open").count() == 1
    assert [invoice.subscription_id for invoice in paid] == sorted(s.id for s in subscriptions)[:2]
    assert balance_of(account) == 0
    applied = BalanceTransaction.objects.filter(
        account=account, invoice__billing_reason="subscription_cycle"
    )
    assert sorted(applied.values_list("amount", "ending_balance")) == [
        (-1000, 0),
        (-1000, 1000),
    ]
    assert {entry.invoice_id for entry in applied} == {invoice.id for invoice in paid}
    statuses = Counter(
        Subscription.objects.filter(account=account).values_list("status", flat=True)
    )
    assert statuses == {SubscriptionStatus.ACTIVE: 2, SubscriptionStatus.PAST_DUE: 1}


def test_a_batch_takes_a_fixed_number_of_statements(prices, settings):
    """The statements of a batch do not grow with its size: 5 subscriptions and 40, each of its
    own account, renewed (half of them from credit) in one batch each."""
    settings.BILLING_BATCH_SIZE = 200

    def statements(count: int) -> int:
        accounts = []
        for index in range(count):
            account, user = customer(f"fixed-{count}-{index}")
            credit(account, 1000 * (2 if index % 2 else 1))
            order(account, user, prices["month"])
            billing_clock_advance(account=account, to=START + timedelta(days=31, hours=1))
            accounts.append(account)
        from billing.services.job.renewal_batch import renew_batch
        from billing.services.job.renewals import RunReport, _clocks

        ids = list(Subscription.objects.filter(account__in=accounts).values_list("id", flat=True))
        report = RunReport()
        with CaptureQueriesContext(connection) as queries:
            assert renew_batch(ids, _clocks(), report) == ([], [])
        assert report.counts == {"renewals": count, "period_started": count}
        return len(queries)

    assert statements(40) == statements(5)


@pytest.mark.parametrize("batch_size", [0, 200], ids=["one_at_a_time", "in_batches"])
def test_shards_split_renewals_and_retries_without_overlap(prices, settings, batch_size):
    """``--shard i/3`` runs together renew every subscription once, each its own share
    (``hash_shard`` of the subscription), and the collection retries of its invoices too."""
    settings.BILLING_BATCH_SIZE = batch_size
    subscriptions = []
    for index in range(12):
        account, user = customer(f"shard-{index}")
        credit(account, 1000 * (2 if index % 3 else 1))  # every third one cannot renew
        subscriptions.append(order(account, user, prices["month"])[0])
    renewed_at = subscriptions[0].current_period_end + timedelta(hours=1)
    for subscription in subscriptions:
        billing_clock_advance(account=subscription.account, to=renewed_at)

    reports = [billing_run(shard=(index, 3)).counts for index in range(3)]

    for index, counts in enumerate(reports):
        mine = [s for s in subscriptions if hash_shard(s.id, 3) == index]
        assert counts.get("renewals", 0) == len(mine), (index, counts)
    assert sum(counts.get("renewals", 0) for counts in reports) == 12
    assert Invoice.objects.filter(billing_reason="subscription_cycle").count() == 12

    # A day later the four unpaid renewals are retried, each by the run of its shard only.
    for subscription in subscriptions:
        billing_clock_advance(account=subscription.account, to=renewed_at + timedelta(days=1))
    reports = [billing_run(shard=(index, 3)).counts for index in range(3)]
    open_renewals = Invoice.objects.filter(billing_reason="subscription_cycle", status="open")
    unpaid = [s for s in subscriptions if s.id in {i.subscription_id for i in open_renewals}]
    for index, counts in enumerate(reports):
        mine = [s for s in unpaid if hash_shard(s.id, 3) == index]
        assert counts.get("collection_attempts", 0) == len(mine), (index, counts)
    assert sum(counts.get("collection_attempts", 0) for counts in reports) == 4
    assert all(not counts.get("renewals") for counts in reports)

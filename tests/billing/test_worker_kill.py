"""The billing job killed in the middle of a run: nothing is lost or doubled.

The job is the real ``manage.py billing_run`` in its own process on the test database, killed
with SIGKILL halfway through, while it holds an invoice number it has not committed yet; a
second run finishes the work. A subscription's renewal is one transaction (the invoice and its
number, the credit it takes, the payment, the events, the new period), or a batch of them is,
so the kill leaves each renewal either done or not begun, and the numbers of those cut short
are given back.
Only on PostgreSQL: a second process cannot open SQLite's in-memory test database.
"""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from accounts.models import Account
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    DocumentSequence,
    Invoice,
    Subscription,
    SubscriptionStatus,
)
from billing.services import balance_of
from billing.services.job.renewals import billing_run
from events.models import Event
from tests.billing.test_subscriptions import START, credit, plan
from tests.billing.test_year import ledger_balance_by_its_entries
from tests.servers.test_worker_killed import worker_database_url

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the job's process cannot open SQLite's in-memory test database",
    ),
]

# A renewal is tens of queries, so the job runs for seconds: polling every few milliseconds
# sees it halfway through. More would only make the test slower.
SUBSCRIPTIONS = 50
AMOUNT = 100  # 1.00 EUR a month; no tax rate is configured, so every invoice totals 100
RENEWED_AT = START + timedelta(days=31)  # 15 Feb 2031 12:00: the first period's end
SERIES = "TEST-INV-2031"


def renewals():
    return Invoice.objects.filter(billing_reason="subscription_cycle")


def _count(sql: str, params: tuple = ()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


# The job's sessions name themselves (libpq's PGAPPNAME), so that what is counted is the job's
# and nothing else this process holds open (under pytest-xdist a worker keeps connections of
# earlier tests, a live server's among them).
JOB_APPLICATION = "hms-billing-run-killed-by-a-test"


def job_sessions() -> int:
    """The killed job's connections to the test database still open."""
    return _count(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND application_name = %s",
        (JOB_APPLICATION,),
    )


def number_taken_uncommitted() -> bool:
    """Whether another session's open transaction has written the invoice sequence: it took a
    number and has not committed it (the lock is held until its transaction ends)."""
    return bool(
        _count(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE c.relname = 'billing_documentsequence' AND l.mode = 'RowExclusiveLock' "
            "AND l.granted AND l.pid <> pg_backend_pid() "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
    )


def kill_mid_run(tmp_path: Path, batch_size: int) -> None:
    """Start the job (renewing ``batch_size`` subscriptions per transaction, or one at a time
    with 0); once half the renewals are committed and it is inside the next transaction, past
    taking its numbers, SIGKILL it. Returns when its session is gone, so
    none of its transactions or row locks is left."""
    log_path = tmp_path / "billing_run.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "billing_run"],
            cwd=django_settings.BASE_DIR,
            env=os.environ
            | {
                "DATABASE_URL": worker_database_url(),
                "BILLING_BATCH_SIZE": str(batch_size),
                "PGAPPNAME": JOB_APPLICATION,
            },
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while renewals().count() < SUBSCRIPTIONS // 2 or not number_taken_uncommitted():
                assert process.poll() is None, f"the job ended first: {log_path.read_text()}"
                assert time.monotonic() < deadline, f"the job is stuck: {log_path.read_text()}"
                time.sleep(0.002)
            assert job_sessions() >= 1, "the job's session does not carry its name"
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=10) == -signal.SIGKILL
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    deadline = time.monotonic() + 20
    while job_sessions():
        assert time.monotonic() < deadline, "the killed job's session did not end"
        time.sleep(0.01)


def assert_consistent(account: Account) -> int:
    """Every invoice whole (numbered, paid, its line, its payment and the credit it took), the
    numbers without a gap, every subscription either renewed (its invoice and its new period)
    or untouched, the balance what the ledger says; returns how many are renewed."""
    invoices = list(Invoice.objects.prefetch_related("lines", "payments"))
    for invoice in invoices:
        assert invoice.number and invoice.status == "paid", invoice
        assert invoice.billing_reason == "subscription_cycle"
        assert invoice.period_start == RENEWED_AT
        assert [line.amount for line in invoice.lines.all()] == [AMOUNT]
        assert invoice.subtotal == invoice.total == invoice.amount_paid == AMOUNT
        assert [(p.gateway, p.amount) for p in invoice.payments.all()] == [("credit", AMOUNT)]
    applied = BalanceTransaction.objects.filter(kind="applied_to_invoice")
    assert sorted((entry.invoice_id, entry.amount) for entry in applied) == sorted(
        (invoice.id, -AMOUNT) for invoice in invoices
    )
    assert sorted(invoice.number for invoice in invoices) == [
        f"{SERIES}-{n:06d}" for n in range(1, len(invoices) + 1)
    ]
    assert DocumentSequence.objects.get(series=SERIES).next_number == len(invoices) + 1
    renewed = [invoice.subscription_id for invoice in invoices]
    assert len(set(renewed)) == len(renewed)  # one invoice per subscription
    for subscription in Subscription.objects.all():
        expected_start = RENEWED_AT if subscription.pk in renewed else START
        assert subscription.current_period_start == expected_start, subscription
        assert subscription.status == SubscriptionStatus.ACTIVE
    assert balance_of(account) == ledger_balance_by_its_entries(account)
    assert balance_of(account) == (SUBSCRIPTIONS - len(invoices)) * AMOUNT
    return len(renewed)


@pytest.mark.parametrize("batch_size", [0, 10], ids=["one_at_a_time", "in_batches"])
def test_a_job_killed_mid_run_loses_and_doubles_nothing(account, tmp_path, settings, batch_size):
    settings.BILLING_BATCH_SIZE = batch_size
    billing_clock_advance(account=account, to=START)
    # Exactly enough credit for one renewal each: a doubled renewal would leave the last one
    # unpaid, and a lost one would leave credit over.
    credit(account, SUBSCRIPTIONS * AMOUNT)
    price = plan("Iron", AMOUNT)
    # Straight into the database (ordering them through the services would take most of the
    # time this test may take): running, the first month (15 Jan → 15 Feb) paid. They have no
    # server: a renewal does not touch it.
    Subscription.objects.bulk_create(
        Subscription(
            account=account,
            price=price,
            status=SubscriptionStatus.ACTIVE,
            billing_cycle_anchor=START,
            current_period_start=START,
            current_period_end=RENEWED_AT,
            created_at=START,
        )
        for _ in range(SUBSCRIPTIONS)
    )
    billing_clock_advance(account=account, to=RENEWED_AT)
    events_before = set(Event.objects.values_list("id", flat=True))

    kill_mid_run(tmp_path, batch_size)

    done = assert_consistent(account)
    assert SUBSCRIPTIONS // 2 <= done < SUBSCRIPTIONS

    report = billing_run()
    assert report.counts == {
        "renewals": SUBSCRIPTIONS - done,
        "period_started": SUBSCRIPTIONS - done,
    }
    assert assert_consistent(account) == SUBSCRIPTIONS
    assert balance_of(account) == 0

    # Each renewal told once over both runs: its invoice created, finalized and paid, its
    # payment, the credit it took, the subscription's new period; nothing else.
    told = Counter(Event.objects.exclude(id__in=events_before).values_list("type", "object_id"))
    assert set(told.values()) == {1}
    expected = set()
    for invoice in renewals().prefetch_related("payments"):
        expected |= {(f"invoice.{what}", invoice.id) for what in ("created", "finalized", "paid")}
        expected.add(("payment.succeeded", invoice.payments.get().id))
        expected.add(("subscription.updated", invoice.subscription_id))
    expected |= {
        ("customer.balance_changed", entry.id)
        for entry in BalanceTransaction.objects.filter(kind="applied_to_invoice")
    }
    assert set(told) == expected

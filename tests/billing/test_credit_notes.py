"""Credit notes: what is owed can be forgiven, what was paid given back, never more than the
invoice; numbered from their own gapless series."""

from datetime import UTC, datetime

import pytest

from accounts.actors import SYSTEM
from billing.clock import billing_clock_advance
from billing.models import BalanceTransaction
from billing.services import (
    balance_change,
    balance_of,
    credit_note_create,
    invoice_create,
    invoice_finalize,
    invoice_mark_paid,
    invoice_pay_with_credit,
    invoice_void,
)
from events.models import Event
from hosting.errors import InvalidState, ValidationFailed

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 5, 4, 9, 30, tzinfo=UTC)
LINE = {"description": "Survival SMP, 4 GB (May)", "quantity": 1, "unit_amount": 1200}


@pytest.fixture(autouse=True)
def clock(account):
    return billing_clock_advance(account=account, to=NOW)


def finalized(account):
    draft = invoice_create(account=account, currency="EUR", lines=[LINE])
    return invoice_finalize(invoice=draft)


def credit(invoice, amount, refund_to, reason="order_change"):
    return credit_note_create(
        invoice=invoice, amount=amount, reason=reason, refund_to=refund_to, actor=SYSTEM
    )


def test_forgiving_what_is_owed_reduces_it_and_an_invoice_owing_nothing_is_paid(account):
    invoice = finalized(account)
    first = credit(invoice, 200, "none")
    invoice.refresh_from_db()
    assert (first.number, invoice.amount_remaining, invoice.status) == (
        "TEST-CN-2026-000001",
        1000,
        "open",
    )
    second = credit(invoice, 1000, "none")
    invoice.refresh_from_db()
    assert second.number == "TEST-CN-2026-000002"
    assert (invoice.status, invoice.amount_remaining, invoice.amount_credited) == ("paid", 0, 1200)
    assert Event.objects.filter(type="credit_note.created", related_id=invoice.id).count() == 2
    with pytest.raises(ValidationFailed) as refused:
        credit(invoice, 1, "balance")
    assert refused.value.details["fields"][0]["name"] == "amount"


def test_paid_money_goes_back_to_the_balance_or_is_recorded_refunded(account):
    invoice = invoice_mark_paid(invoice=finalized(account), reference="SEPA 1", actor=SYSTEM)
    note = credit(invoice, 500, "balance", reason="product_unsatisfactory")
    assert balance_of(account) == 500
    entry = BalanceTransaction.objects.get(credit_note=note)
    assert (entry.kind, entry.invoice_id) == ("credit_note", invoice.id)
    credit(invoice, 700, "refunded")
    assert balance_of(account) == 500  # given back outside, not as credit
    with pytest.raises(ValidationFailed):
        credit(invoice, 1, "refunded")  # all 1200 credited


def test_only_what_is_still_owed_can_be_forgiven(account):
    invoice = finalized(account)
    balance_change(
        account=account,
        amount=300,
        currency="EUR",
        kind="adjustment",
        description="Goodwill",
        actor=SYSTEM,
    )
    invoice = invoice_pay_with_credit(invoice=invoice, actor=SYSTEM)  # 300 paid, 900 owed
    with pytest.raises(ValidationFailed) as refused:
        credit(invoice, 1000, "none")
    assert refused.value.details["fields"][0]["name"] == "refund_to"
    with pytest.raises(ValidationFailed):
        credit(invoice, 400, "balance")  # only 300 was paid
    credit(invoice, 300, "balance")
    credit(invoice, 900, "none")
    invoice.refresh_from_db()
    assert invoice.status == "paid" and balance_of(account) == 300


def test_drafts_and_void_invoices_have_nothing_to_credit(account):
    draft = invoice_create(account=account, currency="EUR", lines=[LINE])
    with pytest.raises(InvalidState):
        credit(draft, 100, "none")
    voided = invoice_void(invoice=invoice_finalize(invoice=draft), actor=SYSTEM)
    with pytest.raises(InvalidState):
        credit(voided, 100, "none")


@pytest.mark.parametrize(
    ("amount", "reason", "refund_to", "field"),
    [
        (0, "other", "none", "amount"),
        (True, "other", "none", "amount"),
        (100, "because", "none", "reason"),
        (100, "other", "cash", "refund_to"),
    ],
)
def test_bad_input_names_its_field(account, amount, reason, refund_to, field):
    invoice = finalized(account)
    with pytest.raises(ValidationFailed) as refused:
        credit(invoice, amount, refund_to, reason=reason)
    assert refused.value.details["fields"][0]["name"] == field

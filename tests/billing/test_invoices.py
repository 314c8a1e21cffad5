"""Invoices and the credit ledger: numbered once finalized, frozen, paid with credit or by
transfer, voided only while nobody paid; the balance is the ledger's sum and never negative."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from accounts.actors import SYSTEM, Actor
from billing.clock import billing_clock_advance, billing_now
from billing.models import BalanceTransaction, BillingProfile, Invoice, Payment
from billing.services import (
    balance_change,
    balance_of,
    invoice_create,
    invoice_finalize,
    invoice_mark_paid,
    invoice_mark_uncollectible,
    invoice_pay_with_credit,
    invoice_void,
)
from events.models import Event
from hosting.errors import Conflict, InvalidState, ValidationFailed

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PLAN = {"description": "Survival SMP, 4 GB (March)", "quantity": 1, "unit_amount": 1200}


@pytest.fixture
def clock(account):
    return billing_clock_advance(account=account, to=NOW)


def credit(account, amount, actor=SYSTEM):
    return balance_change(
        account=account,
        amount=amount,
        currency="EUR",
        kind="adjustment",
        description="Goodwill credit",
        actor=actor,
    )


def draft(account, *lines):
    return invoice_create(account=account, currency="EUR", lines=list(lines) or [PLAN])


def test_a_draft_has_no_number_and_its_totals_are_its_lines_sums(account, clock):
    invoice = draft(
        account,
        PLAN,
        {
            "description": "Setup",
            "quantity": 2,
            "unit_amount": 250,
            "discount_amount": 100,
            "tax_amount": 281,
        },
    )
    assert (invoice.status, invoice.number) == ("draft", None)
    assert (invoice.subtotal, invoice.discount, invoice.tax) == (1700, 100, 281)
    assert invoice.total == invoice.amount_remaining == 1881
    assert Event.objects.filter(type="invoice.created", object_id=invoice.id).exists()


def test_finalizing_numbers_freezes_and_snapshots_the_buyer_and_seller(account, clock, settings):
    BillingProfile.objects.update_or_create(
        account=account,
        defaults={
            "legal_name": "Creeper Hosting BV",
            "country": "NL",
            "vat_id": "NL123456789B01",
            "city": "Utrecht",
        },
    )
    first = invoice_finalize(invoice=draft(account))
    second = invoice_finalize(invoice=draft(account))
    assert (first.number, second.number) == ("TEST-INV-2026-000001", "TEST-INV-2026-000002")
    assert first.status == "open" and first.finalized_at == NOW
    assert first.due_date == NOW + timedelta(days=7)
    assert first.buyer["name"] == "Creeper Hosting BV" and first.buyer["vat_id"] == "NL123456789B01"
    assert first.seller == settings.BILLING_SELLER
    BillingProfile.objects.filter(account=account).update(legal_name="Renamed BV")
    first.refresh_from_db()
    assert first.buyer["name"] == "Creeper Hosting BV"  # what it was on the day
    with pytest.raises(InvalidState):
        invoice_finalize(invoice=first)


def test_a_rolled_back_finalization_gives_its_number_back(account, clock):
    invoice = draft(account)
    with pytest.raises(RuntimeError), transaction.atomic():
        invoice_finalize(invoice=invoice)
        raise RuntimeError("the rest of the run failed")
    assert invoice_finalize(invoice=invoice).number == "TEST-INV-2026-000001"  # no gap


def test_the_balance_is_the_ledgers_sum_and_cannot_go_below_zero(account, clock):
    credit(account, 500)
    credit(account, 300)
    assert balance_of(account) == 800
    with pytest.raises(Conflict) as refused:
        credit(account, -900)
    assert refused.value.details == {"balance": 800}
    with pytest.raises(ValidationFailed):
        credit(account, 0)
    entries = list(BalanceTransaction.objects.order_by("ending_balance"))
    assert [(e.amount, e.ending_balance) for e in entries] == [(500, 500), (300, 800)]
    assert Event.objects.filter(type="customer.balance_changed").count() == 2


def test_credit_pays_what_it_covers_and_the_invoice_is_paid_once_nothing_remains(account, clock):
    invoice = invoice_finalize(invoice=draft(account))
    credit(account, 700)
    invoice = invoice_pay_with_credit(invoice=invoice, actor=SYSTEM)
    assert (invoice.status, invoice.amount_paid, invoice.amount_remaining) == ("open", 700, 500)
    assert balance_of(account) == 0
    with pytest.raises(Conflict):
        invoice_pay_with_credit(invoice=invoice, actor=SYSTEM)  # no credit left
    credit(account, 1000)
    invoice = invoice_pay_with_credit(invoice=invoice, actor=SYSTEM)
    assert (invoice.status, invoice.amount_remaining, invoice.paid_at) == ("paid", 0, NOW)
    assert balance_of(account) == 500  # only what was owed was taken
    payments = Payment.objects.filter(invoice=invoice, gateway="credit", status="succeeded")
    assert sorted(payments.values_list("amount", flat=True)) == [500, 700]
    assert Event.objects.filter(type="invoice.paid", object_id=invoice.id).count() == 1


def test_staff_mark_a_transfer_paid_with_its_reference(account, clock, owner):
    invoice = invoice_finalize(invoice=draft(account))
    with pytest.raises(ValidationFailed):
        invoice_mark_paid(invoice=invoice, reference=" ", actor=Actor(user=owner))
    invoice = invoice_mark_paid(
        invoice=invoice, reference="SEPA 2026-03-02", actor=Actor(user=owner)
    )
    payment = Payment.objects.get(invoice=invoice)
    assert (payment.gateway, payment.amount, payment.reference) == (
        "bank_transfer",
        1200,
        "SEPA 2026-03-02",
    )
    assert invoice.status == "paid"
    with pytest.raises(InvalidState):
        invoice_mark_paid(invoice=invoice, reference="again", actor=SYSTEM)


def test_an_invoice_paid_in_part_is_not_voided_but_an_unpaid_one_is(account, clock):
    paid_in_part = invoice_finalize(invoice=draft(account))
    credit(account, 100)
    invoice_pay_with_credit(invoice=paid_in_part, actor=SYSTEM)
    with pytest.raises(Conflict):
        invoice_void(invoice=paid_in_part, actor=SYSTEM)
    unpaid = invoice_mark_uncollectible(
        invoice=invoice_finalize(invoice=draft(account)), actor=SYSTEM
    )
    assert unpaid.status == "uncollectible"
    voided = invoice_void(invoice=unpaid, actor=SYSTEM)
    assert (voided.status, voided.amount_remaining, voided.voided_at) == ("void", 0, NOW)
    with pytest.raises(InvalidState) as refused:
        invoice_pay_with_credit(invoice=voided, actor=SYSTEM)
    assert refused.value.details["status"] == "void"


def test_a_free_invoice_is_paid_when_finalized(account, clock):
    invoice = invoice_finalize(invoice=draft(account, {"description": "Trial", "unit_amount": 0}))
    assert invoice.status == "paid"


def test_an_account_is_billed_in_one_currency(account, clock):
    draft(account)
    with pytest.raises(Conflict) as refused:
        invoice_create(account=account, currency="USD", lines=[PLAN])
    assert refused.value.details == {"currency": "EUR"}


def test_the_billing_clock_only_moves_forward(account, clock):
    assert billing_now(account) == NOW
    billing_clock_advance(account=account, to=NOW + timedelta(days=31))
    assert billing_now(account) == NOW + timedelta(days=31)
    with pytest.raises(ValidationFailed):
        billing_clock_advance(account=account, to=NOW)
    assert Invoice.objects.count() == 0


def test_without_a_test_clock_documents_take_the_legal_series(other_account):
    invoice = invoice_finalize(invoice=draft(other_account))
    assert invoice.number == f"INV-{invoice.finalized_at:%Y}-000001"


def test_the_currency_is_an_iso_code_and_a_negative_total_is_refused(account, clock):
    invoice = invoice_create(account=account, currency="eur", lines=[PLAN])
    assert invoice.currency == "EUR"
    with pytest.raises(ValidationFailed) as refused:
        invoice_create(account=account, currency="XYZ", lines=[PLAN])
    assert refused.value.details["fields"][0] == {
        "name": "currency",
        "code": "unsupported_currency",
        "message": refused.value.details["fields"][0]["message"],
    }
    with pytest.raises(ValidationFailed) as refused:
        draft(account, PLAN, {"description": "Unused time", "unit_amount": -1500})
    assert refused.value.details["fields"][0]["code"] == "negative_total"


def test_ledger_entries_are_dated_by_the_billing_clock(account, clock):
    assert credit(account, 100).created_at == NOW


def test_a_draft_is_never_voided(account, clock):
    with pytest.raises(InvalidState):
        invoice_void(invoice=draft(account), actor=SYSTEM)

"""Invoices: drafting, finalizing (numbered and frozen), and settling them.

A number comes from a gapless sequence per series (``INV-2026``), taken under the sequence's row
lock in the transaction that finalizes the invoice: a rollback gives the number back, so the
series has no holes (EU invoicing rules). Once finalized, an invoice's lines, totals, buyer and
seller never change; a correction is a credit note.
"""

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils.translation import gettext as _

from accounts.actors import SYSTEM, Actor
from accounts.models import Account
from accounts.services import account_lock
from billing import transitions
from billing.clock import billing_now, on_test_clock
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    Coupon,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    InvoiceStatus,
    Payment,
    PaymentStatus,
    Subscription,
)
from billing.representations import invoice_representation, payment_representation
from billing.rules.tax import TaxDecision
from billing.services.fulfilment import subscription_invoice_paid
from billing.services.ledger import balance_change, balance_of, billing_currency_fix
from billing.services.notices import notify
from events.services import record_event
from hosting.errors import Conflict, ValidationFailed


def document_series(
    account: Account, prefix: str, at: datetime, *, test_clock: bool | None = None
) -> str:
    """The series a document of ``account`` issued at ``at`` is numbered in: ``INV-2026``; on
    a test clock ``TEST-INV-2031``, so demo and test documents never take a legal number.
    ``test_clock``: whether the account is on one, when the caller knows (else it is read)."""
    series = f"{prefix}-{at:%Y}"
    if test_clock is None:
        test_clock = on_test_clock(account)
    return f"TEST-{series}" if test_clock else series


def document_number(series: str, *, account: Account) -> str:
    """The next number of ``series`` (``INV-2026-000042``) for a document of ``account``; call
    it inside the transaction that issues the document, so that a rollback returns the number.

    The account's row is locked first. Locks are always taken in this order, account before
    series (the billing job's batches too, ``renewal_batch``), so that two transactions can
    never each hold one and wait for the other."""
    account_lock(account.pk)
    return document_numbers(series, 1)[0]


def document_numbers(series: str, count: int) -> list[str]:
    """The next ``count`` numbers of ``series``, in order, in one statement: the sequence's
    row is moved on with ``UPDATE … RETURNING``, which holds its lock until the transaction
    ends (call it as late in the transaction as possible; a rollback returns the numbers)."""
    table = connection.ops.quote_name(DocumentSequence._meta.db_table)
    for _attempt in range(2):
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET next_number = next_number + %s "  # noqa: S608
                "WHERE series = %s RETURNING next_number",
                [count, series],
            )
            row = cursor.fetchone()
        if row is not None:
            after = row[0]
            return [f"{series}-{number:06d}" for number in range(after - count, after)]
        # The series' first document: its row, unless another transaction just made it.
        DocumentSequence.objects.bulk_create(
            [DocumentSequence(series=series)], ignore_conflicts=True
        )
    raise RuntimeError(f"the sequence of {series} could not be created")  # pragma: no cover


def invoice_event_record(invoice: Invoice, event: str, actor: Actor) -> None:
    """Record ``invoice.<event>`` with the invoice as it is now."""
    record_event(
        type=f"invoice.{event}",
        account=invoice.account,
        object_type="invoice",
        obj=invoice_representation(invoice),
        actor=actor,
        related_id=invoice.subscription_id or "",
    )


def _locked(invoice: Invoice) -> Invoice:
    return Invoice.objects.select_for_update().get(pk=invoice.pk)


def _set_status(invoice: Invoice, new: InvoiceStatus, *, verb: str, at: datetime) -> None:
    transitions.check("invoice", invoice.status, new, verb=verb)
    invoice.status = new
    stamp = {
        InvoiceStatus.OPEN: "finalized_at",
        InvoiceStatus.PAID: "paid_at",
        InvoiceStatus.VOID: "voided_at",
        InvoiceStatus.UNCOLLECTIBLE: "marked_uncollectible_at",
    }[new]
    setattr(invoice, stamp, at)


@transaction.atomic
def invoice_create(
    *,
    account: Account,
    currency: str,
    lines: list[dict[str, Any]],
    billing_reason: str = "manual",
    subscription: Subscription | None = None,
    period_start: datetime | None = None,
    period_end: datetime | None = None,
    tax: TaxDecision | None = None,
    coupon: Coupon | None = None,
    actor: Actor = SYSTEM,
) -> Invoice:
    """A draft invoice with its lines (``description``, ``quantity``, ``unit_amount``, and
    optionally ``price``, ``period_start``/``period_end``, ``proration``, ``discount_amount``,
    ``tax_amount``); totals are computed from the lines. ``tax`` is the decision the lines were
    priced with (``billing.rules.pricing``): its rate, whether it is inclusive, its note."""
    if not lines:
        raise ValidationFailed.field("lines", "required", _("An invoice needs at least one line."))
    currency = billing_currency_fix(account, currency)
    invoice = Invoice.objects.create(
        account=account,
        currency=currency,
        billing_reason=billing_reason,
        subscription=subscription,
        period_start=period_start,
        period_end=period_end,
        created_at=billing_now(account),
        coupon=coupon,
        tax_percentage=tax.percentage if tax else 0,
        tax_inclusive=bool(tax and tax.inclusive),
        notes=[tax.note] if tax and tax.note else [],
    )
    for position, line in enumerate(lines):
        quantity = line.get("quantity", 1)
        InvoiceLine.objects.create(
            invoice=invoice,
            position=position,
            description=line["description"][:500],
            price=line.get("price"),
            quantity=quantity,
            unit_amount=line["unit_amount"],
            amount=quantity * line["unit_amount"],
            discount_amount=line.get("discount_amount", 0),
            tax_amount=line.get("tax_amount", 0),
            period_start=line.get("period_start"),
            period_end=line.get("period_end"),
            proration=line.get("proration", False),
        )
    _total_up(invoice)
    if invoice.total < 0:
        # A credit larger than the charges is credit for the customer's balance, not an
        # invoice: the plan-change service books it there (a negative invoice would be lost).
        raise ValidationFailed.field(
            "lines", "negative_total", _("An invoice cannot total below 0.")
        )
    invoice.save()
    invoice_event_record(invoice, "created", actor)
    return invoice


def _total_up(invoice: Invoice) -> None:
    """A draft's totals from its lines: the invoice's numbers are always its lines' sums."""
    lines = list(invoice.lines.all())
    invoice.subtotal = sum(line.amount for line in lines)
    invoice.discount = sum(line.discount_amount for line in lines)
    invoice.tax = sum(line.tax_amount for line in lines)
    # Inclusive tax is inside the amounts already; exclusive tax is added on top.
    invoice.total = (
        invoice.subtotal - invoice.discount + (0 if invoice.tax_inclusive else invoice.tax)
    )
    invoice.amount_remaining = max(0, invoice.total - invoice.amount_paid - invoice.amount_credited)


def buyer_snapshot(account: Account, profile: BillingProfile | None = None) -> dict[str, Any]:
    """Who an invoice finalized now is made out to: the billing profile (read, unless given)
    as it is, the account's name when the profile has no legal name."""
    if profile is None:
        profile = BillingProfile.objects.filter(account=account).first() or BillingProfile(
            account=account
        )
    town = " ".join(filter(None, [profile.postal_code, profile.city]))
    address = [profile.address_line1, profile.address_line2, town, profile.region]
    return {
        "name": profile.legal_name or account.name,
        "email": profile.email,
        "address_lines": [line for line in address if line],
        "country": profile.country,
        "vat_id": profile.vat_id,
        "tax_exempt": profile.tax_exempt,
    }


@transaction.atomic
def invoice_finalize(
    *, invoice: Invoice, actor: Actor = SYSTEM, due_date: datetime | None = None
) -> Invoice:
    """Number and freeze a draft: the buyer's and seller's details as they are today, a due
    date (``due_date``, else BILLING_DAYS_UNTIL_DUE from now), ``open`` to be paid. An invoice
    of nothing to pay is paid at once."""
    invoice = _locked(invoice)
    now = billing_now(invoice.account)
    _set_status(invoice, InvoiceStatus.OPEN, verb="finalize this invoice", at=now)
    _total_up(invoice)
    invoice.number = document_number(
        document_series(invoice.account, settings.BILLING_INVOICE_PREFIX, now),
        account=invoice.account,
    )
    invoice.buyer = buyer_snapshot(invoice.account)
    invoice.seller = dict(settings.BILLING_SELLER)
    invoice.due_date = due_date or now + timedelta(days=settings.BILLING_DAYS_UNTIL_DUE)
    if due_date is not None:
        invoice.next_payment_attempt = due_date  # dunning's first retry is the day after
    invoice.save()
    invoice_event_record(invoice, "finalized", actor)
    if invoice.total > 0:
        notify("invoice_issued", account=invoice.account, invoice=invoice)
    if invoice.amount_remaining == 0:
        settle_paid(invoice, actor=actor, at=now)
    return invoice


def settle_paid(invoice: Invoice, *, actor: Actor, at: datetime) -> None:
    """Mark an invoice that owes nothing more paid, with its ``invoice.paid`` event."""
    _set_status(invoice, InvoiceStatus.PAID, verb="mark this invoice paid", at=at)
    invoice.amount_remaining = 0
    invoice.next_payment_attempt = None
    invoice.save()
    invoice_event_record(invoice, "paid", actor)
    subscription_invoice_paid(invoice, actor=actor, at=at)


def _record_payment(
    invoice: Invoice, *, gateway: str, amount: int, actor: Actor, at: datetime, reference: str = ""
) -> Payment:
    payment = Payment.objects.create(
        account=invoice.account,
        invoice=invoice,
        gateway=gateway,
        amount=amount,
        currency=invoice.currency,
        reference=reference,
        status=PaymentStatus.SUCCEEDED,
        created_by=actor.user,
        created_at=at,
        succeeded_at=at,
    )
    record_event(
        type="payment.succeeded",
        account=invoice.account,
        object_type="payment",
        obj=payment_representation(payment),
        actor=actor,
        related_id=invoice.id,
    )
    apply_payment(invoice, payment, amount=amount, actor=actor, at=at)
    return payment


def apply_payment(
    invoice: Invoice, payment: Payment, *, amount: int, actor: Actor, at: datetime
) -> None:
    """``amount`` of a succeeded ``payment`` pays ``invoice`` (never more than remains: the
    callers take at most that): its amounts, the e-mail, and ``invoice.paid`` once nothing
    remains. The caller holds the invoice's row lock."""
    invoice.amount_paid += amount
    invoice.amount_remaining -= amount
    invoice.save()
    notify(
        "payment_received",
        account=invoice.account,
        invoice=invoice,
        amount=amount,  # formatted in the e-mail, in its recipient's language
        gateway=payment.gateway,
    )
    if invoice.amount_remaining == 0:
        settle_paid(invoice, actor=actor, at=at)


@transaction.atomic
def invoice_pay_with_credit(*, invoice: Invoice, actor: Actor) -> Invoice:
    """Apply the account's credit to the invoice, as much as it has up to what is owed; the
    invoice is paid once nothing remains. Refused (409) when there is no credit."""
    invoice = _locked(invoice)
    transitions.check("invoice", invoice.status, InvoiceStatus.PAID, verb="pay this invoice")
    if balance_of(invoice.account) <= 0:
        raise Conflict(_("The account has no credit to pay with."), details={"balance": 0})
    _apply_credit(invoice, actor=actor)
    return invoice


@transaction.atomic
def invoice_apply_credit(*, invoice: Invoice, actor: Actor = SYSTEM) -> int:
    """The collection's first step: the account's credit, partly if it does not cover all, on
    an invoice still owed. Returns what was applied (0 without credit: nothing to refuse)."""
    invoice = _locked(invoice)
    if invoice.status not in (InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE):
        return 0
    return _apply_credit(invoice, actor=actor)


def _apply_credit(invoice: Invoice, *, actor: Actor) -> int:
    applied = min(balance_of(invoice.account), invoice.amount_remaining)
    if applied <= 0:
        return 0
    now = billing_now(invoice.account)
    balance_change(
        account=invoice.account,
        amount=-applied,
        currency=invoice.currency,
        kind=BalanceTransaction.Kind.APPLIED_TO_INVOICE,
        description=f"Applied to invoice {invoice.number}",
        actor=actor,
        invoice=invoice,
    )
    _record_payment(invoice, gateway="credit", amount=applied, actor=actor, at=now)
    return applied


@transaction.atomic
def invoice_mark_paid(*, invoice: Invoice, reference: str, actor: Actor) -> Invoice:
    """Staff record a bank transfer (or any payment outside) of what remains to be paid."""
    invoice = _locked(invoice)
    transitions.check("invoice", invoice.status, InvoiceStatus.PAID, verb="mark this invoice paid")
    if not reference.strip():
        raise ValidationFailed.field(
            "reference", "required", _("Give the transfer's reference, so it can be found again.")
        )
    now = billing_now(invoice.account)
    _record_payment(
        invoice,
        gateway="bank_transfer",
        amount=invoice.amount_remaining,
        actor=actor,
        at=now,
        reference=reference.strip()[:200],
    )
    return invoice


@transaction.atomic
def invoice_void(*, invoice: Invoice, actor: Actor) -> Invoice:
    """Cancel an invoice that nobody has paid any of; one that was paid in part is corrected
    with a credit note instead."""
    invoice = _locked(invoice)
    if invoice.amount_paid:
        raise Conflict(
            _("Part of this invoice is paid: issue a credit note instead of voiding it."),
            details={"amount_paid": invoice.amount_paid},
        )
    _set_status(
        invoice, InvoiceStatus.VOID, verb="void this invoice", at=billing_now(invoice.account)
    )
    invoice.amount_remaining = 0
    invoice.next_payment_attempt = None
    invoice.save()
    invoice_event_record(invoice, "voided", actor)
    return invoice


@transaction.atomic
def invoice_mark_uncollectible(*, invoice: Invoice, actor: Actor) -> Invoice:
    """Give up collecting an open invoice (it can still be paid later)."""
    invoice = _locked(invoice)
    _set_status(
        invoice,
        InvoiceStatus.UNCOLLECTIBLE,
        verb="mark this invoice uncollectible",
        at=billing_now(invoice.account),
    )
    invoice.next_payment_attempt = None
    invoice.save()
    invoice_event_record(invoice, "marked_uncollectible", actor)
    return invoice

"""Credit notes: the only way to correct a finalized invoice.

On an invoice still owed (``open``, ``uncollectible``) a credit note reduces what is owed
(``refund_to="none"``), and an invoice that then owes nothing is paid. On money already received
it gives that money back, to the customer's balance (``"balance"``) or refunded
(``"refunded"``): to the card it came from when a card paid it (the gateway sends it back),
else recorded as refunded outside (a bank transfer back). Never more than the invoice's total
in all.
Numbered like invoices, from their own gapless series (``CN-2026-000001``).
"""

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.actors import Actor
from billing.clock import billing_now
from billing.models import BalanceTransaction, CreditNote, Invoice, InvoiceStatus, PaymentStatus
from billing.representations import credit_note_representation
from billing.services.gateways import GATEWAYS
from billing.services.invoices import document_number, document_series, settle_paid
from billing.services.ledger import balance_change
from billing.services.payments import payment_refund_record
from events.services import record_event
from hosting.errors import InvalidState, ValidationFailed
from hosting.money import format_amount

OWED = (InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE)


def _refund_to_origin(invoice: Invoice, credit_note: CreditNote, actor: Actor) -> None:
    """A credit note refunded to the customer gives the money back through the gateways that
    can do it by themselves (a card: ``refunds_to_origin``), newest payment first, each up to
    what is left of it; the rest is recorded as refunded outside (a bank transfer back)."""
    left = credit_note.amount
    payments = invoice.payments.filter(status=PaymentStatus.SUCCEEDED).order_by("-created_at")
    for payment in payments:
        gateway = GATEWAYS.get(payment.gateway)
        part = min(left, payment.amount - payment.amount_refunded)
        if gateway is None or not gateway.refunds_to_origin or part <= 0:
            continue
        payment_refund_record(payment, amount=part, actor=actor)
        gateway.refund_start(payment, amount=part, credit_note=credit_note, actor=actor)
        left -= part
        if left == 0:
            return


@transaction.atomic
def credit_note_create(
    *,
    invoice: Invoice,
    amount: int,
    reason: str,
    refund_to: str,
    actor: Actor,
    memo: str = "",
) -> CreditNote:
    """Credit ``amount`` of a finalized invoice (see the module's docstring)."""
    invoice = Invoice.objects.select_for_update().get(pk=invoice.pk)
    if invoice.status in (InvoiceStatus.DRAFT, InvoiceStatus.VOID):
        raise InvalidState(
            _("A draft invoice has nothing to credit: edit or drop the draft instead.")
            if invoice.status == InvoiceStatus.DRAFT
            else _("A void invoice has nothing to credit: edit or drop the draft instead."),
            details={"status": invoice.status, "allowed_statuses": []},
        )
    if reason not in CreditNote.Reason.values:
        raise ValidationFailed.field("reason", "invalid_choice", _("Unknown credit note reason."))
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        raise ValidationFailed.field("amount", "invalid", _("amount must be a positive integer."))
    # What was paid and not given back yet: the total less what is still owed and all credited.
    paid_back_left = invoice.total - invoice.amount_credited - invoice.amount_remaining
    if refund_to == CreditNote.RefundTo.NONE:
        if amount > invoice.amount_remaining:
            owed = format_amount(invoice.amount_remaining, invoice.currency)
            raise ValidationFailed.field(
                "refund_to",
                "invalid_choice",
                # Translators: %(owed)s is an amount with its currency, e.g. 12.50 EUR.
                _(
                    "Only what is still owed (%(owed)s) can simply be forgiven; "
                    "give what was paid back to the balance or as a refund."
                )
                % {"owed": owed},
            )
    elif refund_to in (CreditNote.RefundTo.BALANCE, CreditNote.RefundTo.REFUNDED):
        if amount > paid_back_left:
            raise ValidationFailed.field(
                "amount",
                "out_of_range",
                # Translators: %(left)s is an amount with its currency, e.g. 12.50 EUR.
                _("Only %(left)s of what was paid is left to give back.")
                % {"left": format_amount(paid_back_left, invoice.currency)},
            )
    else:
        raise ValidationFailed.field("refund_to", "invalid_choice", _("Unknown refund_to."))
    now = billing_now(invoice.account)
    credit_note = CreditNote.objects.create(
        account=invoice.account,
        invoice=invoice,
        amount=amount,
        currency=invoice.currency,
        reason=reason,
        refund_to=refund_to,
        memo=memo.strip()[:500],
        buyer=invoice.buyer,
        seller=dict(settings.BILLING_SELLER),
        created_by=actor.user,
        created_at=now,
        number=document_number(
            document_series(invoice.account, settings.BILLING_CREDIT_NOTE_PREFIX, now),
            account=invoice.account,
        ),
    )
    invoice.amount_credited += amount
    if refund_to == CreditNote.RefundTo.NONE:
        invoice.amount_remaining -= amount
    invoice.save()
    record_event(
        type="credit_note.created",
        account=invoice.account,
        object_type="credit_note",
        obj=credit_note_representation(credit_note),
        actor=actor,
        related_id=invoice.id,
    )
    if refund_to == CreditNote.RefundTo.BALANCE:
        balance_change(
            account=invoice.account,
            amount=amount,
            currency=invoice.currency,
            kind=BalanceTransaction.Kind.CREDIT_NOTE,
            description=f"Credit note {credit_note.number} for invoice {invoice.number}",
            actor=actor,
            invoice=invoice,
            credit_note=credit_note,
        )
    if refund_to == CreditNote.RefundTo.REFUNDED:
        _refund_to_origin(invoice, credit_note, actor)
    if invoice.status in OWED and invoice.amount_remaining == 0:
        settle_paid(invoice, actor=actor, at=now)
    return credit_note

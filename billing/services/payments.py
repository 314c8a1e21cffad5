"""Payments that settle later: a gateway that charges outside (a card) opens a ``processing``
payment in the transaction that decides to charge, and reports the outcome once it knows it,
``payment_succeeded`` or ``payment_failed``. Both may be told twice, late, or in either order
(a gateway's own notifications cross our calls): each takes the payment's row lock and does
nothing when the payment is already where it is told to go, and a success is never undone by
a failure reported after it.

A success applies the money to the invoice up to what it still owes; what the invoice no
longer owes (it was paid meanwhile by other means, or voided) becomes account credit, an
``overpayment`` entry, never lost.
"""

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.actors import SYSTEM, Actor
from billing import transitions
from billing.clock import billing_now
from billing.models import BalanceTransaction, Invoice, InvoiceStatus, Payment, PaymentStatus
from billing.representations import payment_representation
from billing.services.invoices import apply_payment
from billing.services.job.dunning import collection_failed
from billing.services.ledger import balance_change
from events.services import record_event
from hosting.errors import Conflict

PAYABLE = (InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE)
# Stored as the payment's ``failure_message``, which the API returns as stored: kept in English
# (gettext_noop only marks it for the catalogue; a page showing it translates it).
PAYMENT_FAILED = gettext_noop("The payment failed.")


def _invoice_locked(invoice_id: str) -> Invoice:
    return Invoice.objects.select_for_update().select_related("account").get(pk=invoice_id)


def payment_event_record(payment: Payment, event: str, actor: Actor) -> None:
    record_event(
        type=f"payment.{event}",
        account=payment.account,
        object_type="payment",
        obj=payment_representation(payment),
        actor=actor,
        related_id=payment.invoice_id,
    )


@transaction.atomic
def payment_open(
    *, invoice: Invoice, gateway: str, reference: str = "", actor: Actor = SYSTEM
) -> Payment:
    """A ``processing`` payment of what remains on ``invoice`` through ``gateway``, to be
    settled by ``payment_succeeded`` / ``payment_failed``. One at a time per invoice: while one
    is in flight, another is refused (409), so two clicks or a click and the billing job cannot
    both charge."""
    invoice = _invoice_locked(invoice.pk)
    transitions.check("invoice", invoice.status, InvoiceStatus.PAID, verb="pay this invoice")
    if invoice.amount_remaining <= 0:
        raise Conflict(_("Nothing remains to be paid on this invoice."))
    in_flight = invoice.payments.filter(status=PaymentStatus.PROCESSING).first()
    if in_flight is not None:
        raise Conflict(
            _("A payment of this invoice is already in progress."),
            details={"payment": in_flight.id},
        )
    payment = Payment.objects.create(
        account=invoice.account,
        invoice=invoice,
        gateway=gateway,
        amount=invoice.amount_remaining,
        currency=invoice.currency,
        reference=reference[:200],
        status=PaymentStatus.PROCESSING,
        created_by=actor.user,
        created_at=billing_now(invoice.account),
    )
    payment_event_record(payment, "processing", actor)
    return payment


@transaction.atomic
def payment_gateway_id_set(payment: Payment, gateway_payment_id: str) -> None:
    """Note the gateway's own id of a payment under way (a Stripe PaymentIntent), by which its
    notifications find it again."""
    Payment.objects.filter(pk=payment.pk).update(gateway_payment_id=gateway_payment_id)
    payment.gateway_payment_id = gateway_payment_id


def payment_succeeded(
    payment: Payment, *, gateway_payment_id: str = "", actor: Actor = SYSTEM
) -> Payment:
    """The gateway took the money: the payment succeeds and pays the invoice (the rest, if the
    invoice no longer owes it, goes to the account's credit). Idempotent."""
    payment = Payment.objects.select_for_update().select_related("account").get(pk=payment.pk)
    if payment.status in (PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED):
        return payment
    transitions.check(
        "payment", payment.status, PaymentStatus.SUCCEEDED, verb="settle this payment"
    )
    at = billing_now(payment.account)
    payment.status = PaymentStatus.SUCCEEDED
    payment.succeeded_at = at
    payment.failure_message = ""
    payment.gateway_payment_id = gateway_payment_id or payment.gateway_payment_id
    payment.save()
    payment_event_record(payment, "succeeded", actor)
    invoice = (
        Invoice.objects.select_for_update().select_related("account").get(pk=payment.invoice_id)
    )
    owed = invoice.amount_remaining if invoice.status in PAYABLE else 0
    applied = min(payment.amount, owed)
    if applied:
        apply_payment(invoice, payment, amount=applied, actor=actor, at=at)
    if payment.amount > applied:
        balance_change(
            account=payment.account,
            amount=payment.amount - applied,
            currency=payment.currency,
            kind=BalanceTransaction.Kind.OVERPAYMENT,
            invoice=invoice,
            actor=actor,
            description=f"Payment {payment.id} beyond what invoice {invoice.number} owed",
        )
    return payment


@transaction.atomic
def payment_failed(
    payment: Payment, *, message: str, action_required: bool = False, actor: Actor = SYSTEM
) -> Payment:
    """The gateway could not take the money: the payment fails and dunning goes on
    (``dunning.collection_failed``). Only a payment still in flight fails: a success reported
    first stands. ``action_required``: the customer must confirm it (3-D Secure)."""
    payment = Payment.objects.select_for_update().select_related("account").get(pk=payment.pk)
    if payment.status != PaymentStatus.PROCESSING:
        return payment
    at = billing_now(payment.account)
    payment.status = PaymentStatus.FAILED
    payment.failed_at = at
    payment.failure_message = message.strip()[:500] or PAYMENT_FAILED
    payment.save()
    payment_event_record(payment, "failed", actor)
    invoice = (
        Invoice.objects.select_for_update().select_related("account").get(pk=payment.invoice_id)
    )
    if invoice.status == InvoiceStatus.OPEN:
        collection_failed(invoice, at, action_required=action_required)
    return payment


def payment_refund_record(payment: Payment, *, amount: int, actor: Actor = SYSTEM) -> Payment:
    """``amount`` of a succeeded ``payment`` is given back: ``amount_refunded`` grows, and the
    payment is ``refunded`` once all of it is, with its ``payment.refunded`` event. The
    caller (a credit note) holds the invoice's lock and has checked what is left."""
    payment = Payment.objects.select_for_update().select_related("account").get(pk=payment.pk)
    left = payment.amount - payment.amount_refunded
    if payment.status != PaymentStatus.SUCCEEDED or not 0 < amount <= left:
        raise Conflict(
            # Translators: %(left)s is an amount in the currency's smallest unit (cents).
            _("Only %(left)s of payment %(payment)s can be given back.")
            % {"left": max(left, 0), "payment": payment.id},
            details={"payment": payment.id, "refundable": max(left, 0)},
        )
    payment.amount_refunded += amount
    if payment.amount_refunded == payment.amount:
        transitions.check("payment", payment.status, PaymentStatus.REFUNDED, verb="refund it")
        payment.status = PaymentStatus.REFUNDED
        payment.refunded_at = billing_now(payment.account)
    payment.save()
    payment_event_record(payment, "refunded", actor)
    return payment

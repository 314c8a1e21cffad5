"""What follows a failed attempt to collect an invoice: its ``invoice.payment_failed`` event and
the customer's reminder. One place for both ways an attempt fails: at once (no credit, no
saved card) in the billing job, or later, when a gateway reports a card payment failed
(``payments.payment_failed``)."""

from datetime import datetime, timedelta

from accounts.actors import SYSTEM
from billing.models import Invoice
from billing.rules.cycle import dunning_days
from billing.services.invoices import invoice_event_record
from billing.services.notices import notify


def collection_failed(invoice: Invoice, now: datetime, *, action_required: bool = False) -> None:
    """Record that collecting ``invoice`` failed, and remind the customer: from the second
    attempt on (the first is the due date's), a reminder, the last one before the suspension a
    suspension warning. ``action_required``: the bank wants the customer to confirm the payment
    (3-D Secure), so they get the link to pay whatever the attempt."""
    invoice_event_record(invoice, "payment_failed", SYSTEM)
    if action_required:
        notify("payment_action_required", account=invoice.account, invoice=invoice)
        return
    if invoice.attempt_count <= 1 or not invoice.subscription_id:
        return
    due = invoice.due_date or now
    assert invoice.subscription is not None  # its id is set
    suspend_days, _ = dunning_days(invoice.subscription)
    suspend_at = due + timedelta(days=suspend_days)
    last_before = invoice.next_payment_attempt is None or invoice.next_payment_attempt >= suspend_at
    if now < suspend_at:
        notify(
            "suspension_warning" if last_before else "payment_overdue",
            account=invoice.account,
            invoice=invoice,
            suspend_at=suspend_at,
        )
    else:
        notify("payment_overdue", account=invoice.account, invoice=invoice)

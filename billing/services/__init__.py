"""Write-side operations of billing. The modules: ``ledger`` (the customer's credit),
``invoices`` (drafting, finalizing, settling), ``credit_notes`` (corrections). Other apps and
the API use the names below."""

from billing.services.credit_notes import credit_note_create
from billing.services.invoices import (
    document_number,
    invoice_create,
    invoice_finalize,
    invoice_mark_paid,
    invoice_mark_uncollectible,
    invoice_pay_with_credit,
    invoice_void,
)
from billing.services.ledger import balance_change, balance_of

__all__ = [
    "balance_change",
    "balance_of",
    "credit_note_create",
    "document_number",
    "invoice_create",
    "invoice_finalize",
    "invoice_mark_paid",
    "invoice_mark_uncollectible",
    "invoice_pay_with_credit",
    "invoice_void",
]

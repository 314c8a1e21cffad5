"""The states of subscriptions, invoices and payments, in one table each.

``billing.services`` writes a status only along these edges (``check``), and the API answers a
forbidden one with 409 ``invalid_state``, naming the status and what it may become.

Subscriptions (Stripe's states):

    incomplete  → active (first invoice paid), trialing (a trial starts at once), canceled
    trialing    → active (trial over, invoice paid), past_due (trial over, unpaid), canceled
    active      → past_due (a renewal is not paid when due), canceled
    past_due    → active (paid), unpaid (dunning exhausted: the instance is suspended),
                  canceled (terminated, or canceled by the customer)
    unpaid      → active (paid: billing's suspension is lifted), canceled (terminated)
    canceled    (final)

Invoices:

    draft  → open (finalized: numbered, frozen); a draft is never voided, only dropped
    open   → paid, void, uncollectible
    uncollectible → paid (paid after all), void
    paid, void (final)

Payments:

    processing → succeeded, failed
    succeeded  → refunded
    failed, refunded (final)
"""

from django.utils.translation import gettext, gettext_noop

from billing.models import InvoiceStatus as I
from billing.models import PaymentStatus as P
from billing.models import SubscriptionStatus as S
from hosting.errors import InvalidState

SUBSCRIPTION_EDGES: dict[str, set[str]] = {
    S.INCOMPLETE: {S.ACTIVE, S.TRIALING, S.CANCELED},
    S.TRIALING: {S.ACTIVE, S.PAST_DUE, S.CANCELED},
    S.ACTIVE: {S.PAST_DUE, S.CANCELED},
    S.PAST_DUE: {S.ACTIVE, S.UNPAID, S.CANCELED},
    S.UNPAID: {S.ACTIVE, S.CANCELED},
    S.CANCELED: set(),
}

INVOICE_EDGES: dict[str, set[str]] = {
    I.DRAFT: {I.OPEN},
    I.OPEN: {I.PAID, I.VOID, I.UNCOLLECTIBLE},
    I.UNCOLLECTIBLE: {I.PAID, I.VOID},
    I.PAID: set(),
    I.VOID: set(),
}

PAYMENT_EDGES: dict[str, set[str]] = {
    P.PROCESSING: {P.SUCCEEDED, P.FAILED},
    P.SUCCEEDED: {P.REFUNDED},
    # A card payment reported failed that the gateway later reports succeeded (the customer
    # confirmed it after all): the money moved, so the payment counts.
    P.FAILED: {P.SUCCEEDED},
    P.REFUNDED: set(),
}

_TABLES = {"subscription": SUBSCRIPTION_EDGES, "invoice": INVOICE_EDGES, "payment": PAYMENT_EDGES}


def allowed(kind: str, status: str) -> list[str]:
    """What a ``kind`` ("subscription", "invoice", "payment") in ``status`` may become, sorted."""
    return sorted(_TABLES[kind][status])


# The refusals people meet, each a whole sentence for the translators (the page's language; the
# API's English is the same sentence): (kind, verb) → "Cannot <verb>: the <kind> is %(status)s."
_REFUSALS: dict[tuple[str, str], str] = {
    ("invoice", "finalize this invoice"): gettext_noop(
        "Cannot finalize this invoice: the invoice is %(status)s."
    ),
    ("invoice", "mark paid"): gettext_noop("Cannot mark paid: the invoice is %(status)s."),
    ("invoice", "mark this invoice paid"): gettext_noop(
        "Cannot mark this invoice paid: the invoice is %(status)s."
    ),
    ("invoice", "pay this invoice"): gettext_noop(
        "Cannot pay this invoice: the invoice is %(status)s."
    ),
    ("invoice", "void this invoice"): gettext_noop(
        "Cannot void this invoice: the invoice is %(status)s."
    ),
    ("invoice", "mark this invoice uncollectible"): gettext_noop(
        "Cannot mark this invoice uncollectible: the invoice is %(status)s."
    ),
    ("payment", "settle this payment"): gettext_noop(
        "Cannot settle this payment: the payment is %(status)s."
    ),
    ("payment", "refund it"): gettext_noop("Cannot refund it: the payment is %(status)s."),
    ("payment", "refund this payment"): gettext_noop(
        "Cannot refund this payment: the payment is %(status)s."
    ),
    ("subscription", "cancel this subscription"): gettext_noop(
        "Cannot cancel this subscription: the subscription is %(status)s."
    ),
    ("subscription", "change the plan of this subscription"): gettext_noop(
        "Cannot change the plan of this subscription: the subscription is %(status)s."
    ),
}


def refusal(kind: str, status: str, verb: str) -> InvalidState:
    """409 ``invalid_state``: "Cannot <verb>: the <kind> is <status>.", naming what the
    status may become (for a refusal that is not one edge, e.g. changing a canceled plan)."""
    sentence = _REFUSALS.get((kind, verb))
    if sentence is not None:
        message = gettext(sentence) % {"status": status}
    else:  # a staff-side or internal move ("move to paid"): said in English as it is
        message = f"Cannot {verb}: the {kind.replace('_', ' ')} is {status}."
    return InvalidState(
        message, details={"status": status, "allowed_statuses": allowed(kind, status)}
    )


def check(kind: str, old: str, new: str, *, verb: str | None = None) -> None:
    """Refuse (``InvalidState``) a change that is not an edge of the table."""
    if new not in _TABLES[kind][old]:
        raise refusal(kind, old, verb or f"move to {new}")

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


def refusal(kind: str, status: str, verb: str) -> InvalidState:
    """409 ``invalid_state``: "Cannot <verb>: the <kind> is <status>.", naming what the
    status may become (for a refusal that is not one edge, e.g. changing a canceled plan)."""
    return InvalidState(
        f"Cannot {verb}: the {kind.replace('_', ' ')} is {status}.",
        details={"status": status, "allowed_statuses": allowed(kind, status)},
    )


def check(kind: str, old: str, new: str, *, verb: str | None = None) -> None:
    """Refuse (``InvalidState``) a change that is not an edge of the table."""
    if new not in _TABLES[kind][old]:
        raise refusal(kind, old, verb or f"move to {new}")

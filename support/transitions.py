"""What a ticket's status may become, in one table.

``support.services`` writes a status only along these edges (``check``); the API answers a
forbidden one with 409 ``invalid_state``, naming the status and what it may become.

    open             → pending_customer (staff answered), on_hold, resolved, closed
    pending_customer → pending_staff (the customer replied), on_hold, resolved, closed
    pending_staff    → pending_customer (staff answered), on_hold, resolved, closed
    on_hold          → open, pending_customer, pending_staff, resolved, closed
    resolved         → pending_staff (the customer replied), open (reopened), closed
    closed           (final: a reply to a closed ticket opens a follow-up ticket)

The SLA clock runs while the ticket waits on staff (``open``, ``pending_staff``) and is paused
otherwise (``SLA_RUNNING``).
"""

from hosting.errors import InvalidState
from support.models import TicketStatus as T

TICKET_EDGES: dict[str, set[str]] = {
    T.OPEN: {T.PENDING_CUSTOMER, T.ON_HOLD, T.RESOLVED, T.CLOSED},
    T.PENDING_CUSTOMER: {T.PENDING_STAFF, T.ON_HOLD, T.RESOLVED, T.CLOSED},
    T.PENDING_STAFF: {T.PENDING_CUSTOMER, T.ON_HOLD, T.RESOLVED, T.CLOSED},
    T.ON_HOLD: {T.OPEN, T.PENDING_CUSTOMER, T.PENDING_STAFF, T.RESOLVED, T.CLOSED},
    T.RESOLVED: {T.PENDING_STAFF, T.OPEN, T.CLOSED},
    T.CLOSED: set(),
}

# Where the ticket waits on staff: the SLA clocks run.
SLA_RUNNING = frozenset({T.OPEN, T.PENDING_STAFF})
# Where the conversation is over for now: a customer's reply moves it back to staff.
FINISHED = frozenset({T.RESOLVED, T.CLOSED})


def allowed(status: str) -> list[str]:
    """What a ticket in ``status`` may become, sorted."""
    return sorted(TICKET_EDGES[status])


def refusal(status: str, verb: str) -> InvalidState:
    """409 ``invalid_state``: "Cannot <verb>: the ticket is <status>."."""
    return InvalidState(
        f"Cannot {verb}: the ticket is {T(status).label.lower()}.",
        details={"status": status, "allowed_statuses": allowed(status)},
    )


def check(old: str, new: str, *, verb: str | None = None) -> None:
    """Refuse (``InvalidState``) a change that is not an edge of the table."""
    if new not in TICKET_EDGES[old]:
        raise refusal(old, verb or f"move it to {new}")

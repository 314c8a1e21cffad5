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

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

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


# "Cannot <verb>: the ticket is <status>.", one whole sentence per verb for translators.
_REFUSALS = {
    "reply": gettext_noop("Cannot reply: the ticket is %(status)s."),
    "answer it": gettext_noop("Cannot answer it: the ticket is %(status)s."),
    "reopen it": gettext_noop("Cannot reopen it: the ticket is %(status)s."),
    "rate it before it is resolved": gettext_noop(
        "Cannot rate it before it is resolved: the ticket is %(status)s."
    ),
    "merge into it": gettext_noop("Cannot merge into it: the ticket is %(status)s."),
}


def refusal(status: str, verb: str) -> InvalidState:
    """409 ``invalid_state``: "Cannot <verb>: the ticket is <status>."."""
    shown = str(T(status).label).lower()
    if verb in _REFUSALS:
        message = _(_REFUSALS[verb]) % {"status": shown}
    elif verb.startswith("move it to "):
        message = _("Cannot move it to %(new)s: the ticket is %(status)s.") % {
            "new": verb.removeprefix("move it to "),
            "status": shown,
        }
    else:
        message = _("Cannot %(action)s: the ticket is %(status)s.") % {
            "action": verb,
            "status": shown,
        }
    return InvalidState(message, details={"status": status, "allowed_statuses": allowed(status)})


def check(old: str, new: str, *, verb: str | None = None) -> None:
    """Refuse (``InvalidState``) a change that is not an edge of the table."""
    if new not in TICKET_EDGES[old]:
        raise refusal(old, verb or f"move it to {new}")

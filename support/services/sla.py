"""SLA clocks: when a ticket's first response and resolution are due, in business hours.

The first response is due ``first_response_minutes`` of business time after the ticket is
opened. The resolution clock runs only while the ticket waits on staff
(``transitions.SLA_RUNNING``): its business seconds are banked in ``sla_seconds_used`` whenever
it pauses, and on resuming the due time is the rest of the target counted from then. A breach is
flagged once (``tickets_sla_check``) and recorded as ``ticket.sla_breached``.
"""

from datetime import datetime

from django.db import transaction

from accounts.actors import SYSTEM
from events.services import record_event
from support.business_hours import (
    BusinessCalendar,
    add_business_time,
    business_seconds_between,
)
from support.models import SlaPolicy, Ticket, TicketStatus
from support.representations import ticket_representation
from support.transitions import SLA_RUNNING


def calendar_of(policy: SlaPolicy | None) -> BusinessCalendar:
    if policy is None or not policy.calendar:
        return BusinessCalendar.always()
    return BusinessCalendar.from_json(policy.calendar)


def targets_of(policy: SlaPolicy | None, priority: str) -> tuple[int | None, int | None]:
    """(first response, resolution) in business minutes for ``priority``; None: no target."""
    target = (policy.targets or {}).get(priority) or {} if policy is not None else {}
    return target.get("first_response_minutes"), target.get("resolution_minutes")


def sla_start(ticket: Ticket, now: datetime) -> None:
    """A new ticket's clocks (the caller saves it)."""
    policy = ticket.department.sla_policy
    calendar = calendar_of(policy)
    first, resolution = targets_of(policy, ticket.priority)
    ticket.first_response_due_at = (
        add_business_time(calendar, now, first) if first is not None else None
    )
    ticket.sla_seconds_used = 0
    ticket.sla_running_since = now
    ticket.resolution_due_at = (
        add_business_time(calendar, now, resolution) if resolution is not None else None
    )


def sla_follow(ticket: Ticket, old_status: str, now: datetime) -> None:
    """The resolution clock after a status change from ``old_status`` (the caller saves):
    paused when the ticket stops waiting on staff, resumed when it waits again."""
    since = ticket.sla_running_since if old_status in SLA_RUNNING else None
    running_before = since is not None
    running_now = ticket.status in SLA_RUNNING
    policy = ticket.department.sla_policy
    calendar = calendar_of(policy)
    if since is not None and not running_now:
        ticket.sla_seconds_used += business_seconds_between(calendar, since, now)
        ticket.sla_running_since = None
    elif running_now and not running_before:
        ticket.sla_running_since = now
        _, resolution = targets_of(policy, ticket.priority)
        if resolution is not None:
            left = max(resolution * 60 - ticket.sla_seconds_used, 0)
            ticket.resolution_due_at = add_business_time(calendar, now, -(-left // 60))


def sla_retarget(ticket: Ticket, now: datetime) -> None:
    """Due times again after the priority or department changed (the caller saves)."""
    policy = ticket.department.sla_policy
    calendar = calendar_of(policy)
    first, resolution = targets_of(policy, ticket.priority)
    if ticket.first_response_at is None:
        ticket.first_response_due_at = (
            add_business_time(calendar, ticket.created_at, first) if first is not None else None
        )
    if resolution is None:
        ticket.resolution_due_at = None
        return
    used = ticket.sla_seconds_used
    if ticket.sla_running_since is not None:
        used += business_seconds_between(calendar, ticket.sla_running_since, now)
        ticket.sla_seconds_used, ticket.sla_running_since = used, now
    left = max(resolution * 60 - used, 0)
    ticket.resolution_due_at = add_business_time(calendar, now, -(-left // 60))


def tickets_sla_check(*, now: datetime) -> int:
    """Flag each ticket whose first response or resolution is now late, once, with a
    ``ticket.sla_breached`` event; how many breaches were found."""
    found = 0
    waiting = Ticket.objects.exclude(status__in=[TicketStatus.RESOLVED, TicketStatus.CLOSED])
    late_first = waiting.filter(
        first_response_breached=False,
        first_response_at__isnull=True,
        first_response_due_at__lte=now,
    )
    late_resolution = waiting.filter(
        resolution_breached=False, sla_running_since__isnull=False, resolution_due_at__lte=now
    )
    for which, candidates in (("first_response", late_first), ("resolution", late_resolution)):
        for ticket_id in list(candidates.values_list("id", flat=True)[:1000]):
            found += _breach(ticket_id, which, now)
    return found


@transaction.atomic
def _breach(ticket_id: str, which: str, now: datetime) -> int:
    ticket = (
        Ticket.objects.select_for_update(of=("self",)).select_related("account").get(pk=ticket_id)
    )
    flag = f"{which}_breached"
    due = getattr(ticket, f"{which}_due_at")
    if getattr(ticket, flag) or due is None or due > now:
        return 0
    setattr(ticket, flag, True)
    ticket.save(update_fields=[flag])
    # The customer's view of the ticket, and which target was missed.
    record_event(
        type="ticket.sla_breached",
        account=ticket.account,
        object_type="ticket",
        obj={**ticket_representation(ticket), "breached": which},
        actor=SYSTEM,
    )
    return 1

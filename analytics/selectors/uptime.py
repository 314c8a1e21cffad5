"""Uptime of servers and bots, worked out from their status changes and crashes (the events).

Uptime is the share of the time an instance was meant to run during which it ran. The event
log is replayed as a state machine of three states:

- **up**: the instance is ``running``;
- **down**: it was meant to run and is not. Only a crash starts this, and the incident lasts
  until it runs again, or until someone decides it should not run any more (stop, kill, a
  reinstall, a suspension, deletion). Restarts after a crash, failed or not, stay down;
- **off**: nobody means it to run. This covers stopped by a person, a clean exit (``stop``
  typed in the console), suspended, installing, deleting, and never started.

``off`` time counts neither way, so a server stopped for the night keeps 100 %.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from analytics.models import UptimeDay, UptimeRecordedDay
from analytics.selectors.ranges import asked_range
from events.selectors import lifecycle_events

UP, DOWN, OFF = "up", "down", "off"
# Statuses that say nobody means the instance to run, whoever set them.
_OFF_STATUSES = frozenset(
    {"stopping", "suspended", "deleting", "installing", "provisioning", "install_failed"}
)
MAX_RANGE = timedelta(days=400)
DEFAULT_RANGE = timedelta(days=30)


@dataclass(frozen=True)
class Change:
    """One event of the log, as the state machine reads it."""

    at: datetime
    kind: str  # "status_changed" or "crashed"
    status: str
    previous: str | None
    by_person: bool
    reason: str = ""


@dataclass
class Incident:
    started_at: datetime
    ended_at: datetime | None
    reason: str


@dataclass
class Day:
    date: datetime  # midnight UTC
    up_seconds: float = 0
    down_seconds: float = 0
    incidents: int = 0  # that began this day
    known: bool = True  # False: before the event log, and not recorded


@dataclass
class Uptime:
    start: datetime
    end: datetime
    days: list[Day] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)

    @property
    def up_seconds(self) -> float:
        return sum(day.up_seconds for day in self.days)

    @property
    def down_seconds(self) -> float:
        return sum(day.down_seconds for day in self.days)

    @property
    def known(self) -> bool:
        """Whether any of its days is known (recorded, or in the event log)."""
        return any(day.known for day in self.days)


def next_state(state: str, change: Change) -> str:
    """The state after one event."""
    if change.kind == "crashed":
        return DOWN
    if change.status == "running":
        return UP
    if change.status in _OFF_STATUSES:
        return OFF
    if change.by_person and change.status != "starting":
        return OFF  # a person stopped or killed it
    if change.previous == "running" and change.status == "stopped":
        return OFF  # it exited on its own; a crash is a separate event, right after
    return state  # a restart after a crash that failed, a person's start: no change


def state_before(changes: list[Change], status_now: str) -> str:
    """The state before the first event kept (the log is pruned), from what that event says
    the status was; with no event at all, from the status now."""
    if not changes:
        return UP if status_now == "running" else OFF
    return UP if changes[0].previous == "running" else OFF


def uptime_of(
    changes: list[Change],
    *,
    status_now: str,
    start: datetime,
    end: datetime,
    created_at: datetime | None = None,
) -> Uptime:
    """Replay ``changes`` (oldest first) over ``[start, end)``, cut into UTC days; nothing
    counts before the instance was created."""
    result = Uptime(start=start, end=end)
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    while day < end:
        result.days.append(Day(date=day))
        day += timedelta(days=1)

    counted_from = max(start, created_at) if created_at is not None else start

    def credit(state: str, since: datetime, until: datetime) -> None:
        since, until = max(since, counted_from), min(until, end)
        for bucket in result.days:
            lo = max(since, bucket.date)
            hi = min(until, bucket.date + timedelta(days=1))
            if hi > lo:
                seconds = (hi - lo).total_seconds()
                if state == UP:
                    bucket.up_seconds += seconds
                elif state == DOWN:
                    bucket.down_seconds += seconds

    state = state_before(changes, status_now)
    since = start if not changes else min(start, changes[0].at)
    incident: Incident | None = None
    for change in changes:
        if change.at >= end:
            break
        credit(state, since, change.at)
        new = next_state(state, change)
        if new == DOWN and state != DOWN:
            incident = Incident(change.at, None, change.reason or "Crashed")
            for day in result.days:
                if day.date <= change.at < day.date + timedelta(days=1) and change.at >= start:
                    day.incidents += 1
        elif new != DOWN and incident is not None:
            incident.ended_at = change.at
            if change.at > start:
                result.incidents.append(incident)
            incident = None
        state, since = new, change.at
    credit(state, since, end)
    if incident is not None:
        result.incidents.append(incident)
    return result


def _changes(events) -> dict[str, list[Change]]:
    found: dict[str, list[Change]] = {}
    for event in events:
        data = event.data or {}
        obj = data.get("object") or {}
        previous = (data.get("previous_attributes") or {}).get("status")
        found.setdefault(event.object_id, []).append(
            Change(
                at=event.created_at,
                kind=event.type.split(".", 1)[1],
                status=obj.get("status", ""),
                previous=previous,
                by_person=event.actor_user_id is not None or event.actor_api_key_id is not None,
                reason=obj.get("status_reason") or "",
            )
        )
    return found


def uptime_range(
    start: datetime | None, end: datetime | None, *, now: datetime | None = None
) -> tuple[datetime, datetime]:
    """The range asked for, or the last 30 days; never past now, nor before 1970 (nothing ran
    before the Unix epoch, and a year below 1000 has no 4-digit timestamp); a bound at the
    calendar's edge is a 400 naming it (``analytics.selectors.ranges``)."""
    now = now or timezone.now()
    return asked_range(start, end, default=DEFAULT_RANGE, longest=MAX_RANGE, latest=now, now=now)


def log_start(now: datetime | None = None) -> datetime:
    """The first midnight the event log covers whole: before it, uptime comes from the recorded
    days (``UptimeDay``)."""
    now = now or timezone.now()
    horizon = now - timedelta(days=settings.EVENT_RETENTION_DAYS)
    return horizon.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)


def instances_uptime(
    instances: Iterable, *, start: datetime, end: datetime, now: datetime | None = None
) -> dict[str, Uptime]:
    """Each instance's uptime over ``[start, end)``: from the event log (one query per
    account) where it covers the range, and from the recorded days (whole UTC days) before."""
    instances = list(instances)
    cutoff = max(start, min(end, log_start(now)))
    recorded = _recorded(instances, start, cutoff) if start < cutoff else {}
    by_account: dict[str, list] = {}
    for instance in instances:
        by_account.setdefault(instance.account_id, []).append(instance)
    changes: dict[str, list[Change]] = {}
    if cutoff < end:
        for account_id, members in by_account.items():
            events = lifecycle_events(account_id=account_id, object_ids=[i.pk for i in members])
            changes |= _changes(events.filter(created_at__lt=end))
    answers = {}
    for instance in instances:
        logged = uptime_of(
            changes.get(instance.pk, []),
            status_now=instance.status,
            start=cutoff,
            end=end,
            created_at=instance.created_at,
        )
        days = recorded.get(instance.pk, [])
        answers[instance.pk] = Uptime(
            start=start, end=end, days=days + logged.days, incidents=logged.incidents
        )
    return answers


def _recorded(instances: list, start: datetime, end: datetime) -> dict[str, list[Day]]:
    """The recorded days of ``[start, end)`` (whole days), per instance; a day not recorded is
    not known."""
    first, last = start.date(), (end - timedelta(microseconds=1)).date()
    taken = set(
        UptimeRecordedDay.objects.filter(day__gte=first, day__lte=last).values_list(
            "day", flat=True
        )
    )
    rows = {
        (row.instance_id, row.day): row
        for row in UptimeDay.objects.filter(
            instance_id__in=[i.pk for i in instances], day__gte=first, day__lte=last
        )
    }
    found: dict[str, list[Day]] = {}
    for instance in instances:
        days, day = [], first
        while day <= last:
            row = rows.get((instance.pk, day))
            midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
            days.append(
                Day(
                    date=midnight,
                    up_seconds=row.up_seconds if row else 0,
                    down_seconds=row.down_seconds if row else 0,
                    incidents=row.incidents if row else 0,
                    known=day in taken,
                )
            )
            day += timedelta(days=1)
        found[instance.pk] = days
    return found

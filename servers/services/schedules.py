"""Schedules: tasks that run on their own for a server or bot (issue 31).

A schedule is a cron line (five fields, parsed by cronsim, healthchecks' parser) read in an IANA
time zone, and an ordered list of 1 to 20 tasks: a power action (through the actions service,
as a person's would be), a console command (written to the process's input by its agent), or a
backup (``backup_create``, with the plan's limits and rotation), each ``offset_seconds`` (0 to
900) after the run began, each stopping the run when it fails unless ``continue_on_failure``.

Execution, exactly once per tick:

- ``schedules_dispatch`` (every minute: ``manage.py schedules_dispatch --every 60``, and the
  ``housekeeping`` loop too) claims the due schedules (``next_run_at`` passed, one index) in
  batches with ``SELECT … FOR UPDATE SKIP LOCKED``, so that several dispatchers share them
  instead of waiting; for each it records the run of its tick and moves ``next_run_at`` on in
  the same transaction. The run's row is unique per schedule and tick: whatever the workers,
  dispatchers and restarts do, a tick is run at most once.
- A run's tasks are queued steps of the task worker, one after the other: the first is queued
  with the run (``run_after`` its offset), and each step, once done, queues the next at the run's
  start plus its offset (or at once when that has passed). No worker ever sleeps for an offset.

The missed ticks rule: a pass takes the latest tick that has passed. Less than a minute late,
it runs on time. Later (the dispatchers were all down), it runs once, late, when it is less than
``SCHEDULE_CATCH_UP_MINUTES`` (15) late and less than the schedule's own period (so an
hourly schedule catches up within 15 minutes, an every-five-minutes one within 5); otherwise it
is recorded as skipped. The ticks before it that passed meanwhile are neither run nor recorded,
so an outage is at most one catch-up run per schedule. A tick while the server is not running,
for a schedule "only when running", is recorded as skipped.

Lost steps: a step still running ``SCHEDULE_STEP_TIMEOUT_SECONDS`` (600) after it began (its
worker died), or not started that long after its time (its queued row or the workers were lost),
is failed with that reason by ``schedule_steps_recover`` (the dispatch command's loop and
housekeeping) or by the worker that takes it that late, once; the run goes on or ends as after
any failed task, and a worker finishing it afterwards leaves that outcome as it is.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import batched
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet, prefetch_related_objects
from django.tasks import task
from django.utils import timezone
from django.utils.dates import WEEKDAYS as DJANGO_WEEKDAYS
from django.utils.text import get_text_list
from django.utils.translation import get_language, gettext_noop, ngettext
from django.utils.translation import gettext as _

from accounts.actors import SYSTEM, Actor
from events.services import EventDraft, record_event, record_events
from hosting.errors import ApplicationError, NotFound, ServiceUnavailable, ValidationFailed
from hosting.representations import timestamp
from servers.drivers import DriverError
from servers.drivers.agent import agent_request
from servers.models import (
    Bot,
    Instance,
    Schedule,
    ScheduleRun,
    ScheduleRunStatus,
    ScheduleRunTrigger,
    ScheduleTask,
    ScheduleTaskAction,
    Server,
)
from servers.models import ServerStatus as S
from servers.services.actions import action_request
from servers.services.backups import backup_create
from servers.services.files import FileCall, agent_error, instance_node
from servers.services.records import instance_locked

MAX_TASKS = 20
MAX_OFFSET_SECONDS = 900
MAX_COMMAND_BYTES = 4096
POWER_ACTIONS = ("start", "stop", "restart", "kill")
ON_TIME = timedelta(minutes=1)
DISPATCH_BATCH = 500
# Runs whose step is due at the same moment go to the workers together: up to STEP_BATCH runs a
# queued task (so 10,000 runs of a minute are 200 tasks, not 10,000), claimed and settled
# STEP_CLAIM at a time (a step's row says running only while its chunk is being carried out).
STEP_BATCH = 50
STEP_CLAIM = 10
PENDING, RUNNING, SUCCEEDED, FAILED, SKIPPED = (
    "pending",
    "running",
    "succeeded",
    "failed",
    "skipped",
)


class ScheduleLimitReached(ApplicationError):
    status, code = 409, "schedule_limit_reached"
    message = gettext_noop("This server has as many schedules as its plan allows.")


# --- The cron line and its time zone ----------------------------------------------------------


def cron_check(cron: Any) -> str:
    """The cron line with its spaces made single; 400 naming the field and what is wrong."""
    if not isinstance(cron, str) or not cron.strip():
        raise ValidationFailed.field("cron", "required", _("cron is required."))
    fields = cron.split()
    if len(fields) != 5:
        raise ValidationFailed.field(
            "cron",
            "invalid",
            _(
                "A cron line has five fields (minute hour day month weekday); this one has "
                "%(count)s."
            )
            % {"count": len(fields)},
        )
    line = " ".join(fields)
    try:
        CronSim(line, datetime(2026, 1, 1))
    except CronSimError as error:
        raise ValidationFailed.field(
            "cron",
            "invalid",
            _("The cron line is not valid: %(error)s.") % {"error": str(error).lower()},
        ) from None
    return line


def zone_check(name: Any) -> ZoneInfo:
    """The IANA time zone of that name; 400 otherwise."""
    if isinstance(name, str) and name in _zones():
        return ZoneInfo(name)
    raise ValidationFailed.field(
        "timezone",
        "invalid",
        _("timezone is an IANA time zone name, like Europe/Berlin or UTC."),
    )


def _zones() -> set[str]:
    global _ZONES
    if _ZONES is None:
        _ZONES = available_timezones() | {"UTC"}
    return _ZONES


_ZONES: set[str] | None = None


def tick_after(cron: str, zone: str, moment: datetime) -> datetime:
    """The first tick strictly after ``moment``, in UTC."""
    return next(CronSim(cron, moment.astimezone(ZoneInfo(zone)))).astimezone(UTC)


def tick_at_or_before(cron: str, zone: str, moment: datetime) -> datetime:
    """The latest tick at or before ``moment``, in UTC (cronsim's reverse is strict)."""
    start = moment.astimezone(ZoneInfo(zone)).replace(microsecond=0) + timedelta(seconds=1)
    return next(CronSim(cron, start, reverse=True)).astimezone(UTC)


# Cron's days (0 and 7: Sunday) by Django's own translated names (its 0 is Monday).
WEEKDAYS = tuple(DJANGO_WEEKDAYS[(day - 1) % 7] for day in range(7))
_NUMBER = re.compile(r"^\d{1,2}$")


def _weekdays(field: str) -> str | None:
    """``1`` → "Monday", ``1-5`` → "Monday to Friday", ``1,3`` → "Monday and Wednesday"."""
    names = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

    def day(value: str) -> int | None:
        value = value.lower()
        if value in names:
            return names[value]
        if _NUMBER.match(value) and int(value) <= 7:
            return int(value) % 7
        return None

    if "-" in field and "," not in field:
        first, _dash, last = field.partition("-")
        a, b = day(first), day(last)
        if a is None or b is None:
            return None
        # Translators: a range of weekdays, "Monday to Friday".
        return _("%(first)s to %(last)s") % {"first": WEEKDAYS[a], "last": WEEKDAYS[b]}
    days = [day(part) for part in field.split(",")]
    if any(value is None for value in days):
        return None
    words = [str(WEEKDAYS[value]) for value in days if value is not None]
    # Translators: the last word of a list of days, "Monday, Wednesday and Friday".
    return str(get_text_list(words, _("and")))


def schedule_describe(cron: str, zone: str = "UTC") -> str:
    """The cron line in words with its time zone, in the active language: "every day at 04:00
    (Europe/Berlin)".

    The common shapes are phrased here; others take cronsim's own explanation (in English, so
    in another language the line itself is shown with its zone), and a line neither can phrase
    is shown as it is."""
    suffix = f" ({zone})"
    try:
        explained = CronSim(cron, datetime(2026, 1, 1)).explain()
        minute, hour, dom, month, dow = cron.split()
    except (CronSimError, ValueError, KeyError, IndexError):
        return cron
    every_day = dom == "*" and month == "*"
    if every_day and dow == "*" and hour == "*":
        if minute == "*":
            return _("every minute")
        if minute.startswith("*/") and minute[2:].isdigit():
            count = int(minute[2:])
            return ngettext("every %(count)s minute", "every %(count)s minutes", count) % {
                "count": count
            }
        if _NUMBER.match(minute):
            return _("every hour at minute %(minute)s") % {"minute": int(minute)}
    if (
        every_day
        and dow == "*"
        and _NUMBER.match(minute)
        and hour.startswith("*/")
        and hour[2:].isdigit()
    ):
        count = int(hour[2:])
        return (
            ngettext(
                "every %(count)s hour at minute %(minute)s",
                "every %(count)s hours at minute %(minute)s",
                count,
            )
            % {"count": count, "minute": int(minute)}
            + suffix
        )
    if every_day and _NUMBER.match(minute) and _NUMBER.match(hour):
        at = f"{int(hour):02d}:{int(minute):02d}"
        if dow == "*":
            return _("every day at %(time)s") % {"time": at} + suffix
        if (days := _weekdays(dow)) is not None:
            # Translators: "at 06:00 on Monday to Friday".
            return _("at %(time)s on %(days)s") % {"time": at, "days": days} + suffix
    if (
        _NUMBER.match(minute)
        and _NUMBER.match(hour)
        and _NUMBER.match(dom)
        and month == "*"
        and dow == "*"
    ):
        return (
            _("at %(time)s on day %(day)s of every month")
            % {"time": f"{int(hour):02d}:{int(minute):02d}", "day": int(dom)}
            + suffix
        )
    if not (get_language() or "en").startswith("en"):
        return cron + suffix
    return explained[:1].lower() + explained[1:] + suffix


# --- Reading ----------------------------------------------------------------------------------


def schedule_limit(instance: Instance) -> int:
    """How many schedules the instance may have: its plan's, or the settings' default."""
    return (instance.plan or {}).get("schedule_limit", settings.SCHEDULE_DEFAULT_LIMIT)


def schedules_of(instance: Instance) -> QuerySet[Schedule]:
    return Schedule.objects.filter(**{instance.kind: instance}).prefetch_related("tasks")


def schedule_of(instance: Instance, schedule_id: str) -> Schedule:
    schedule = schedules_of(instance).filter(pk=schedule_id).first()
    if schedule is None:
        raise NotFound(_("No such schedule."))
    return schedule


def schedule_runs_of(schedule: Schedule) -> QuerySet[ScheduleRun]:
    return ScheduleRun.objects.filter(schedule=schedule)


def schedule_run_of(schedule: Schedule, run_id: str) -> ScheduleRun:
    run = schedule_runs_of(schedule).filter(pk=run_id).first()
    if run is None:
        raise NotFound(_("No such run."))
    return run


def task_representation(task: ScheduleTask) -> dict[str, Any]:
    return {
        "action": task.action,
        "payload": task.payload,
        "offset_seconds": task.offset_seconds,
        "continue_on_failure": task.continue_on_failure,
    }


def schedule_representation(schedule: Schedule) -> dict[str, Any]:
    """A schedule as the API shows it and its events carry it."""
    return {
        "id": schedule.id,
        "name": schedule.name,
        "target": {
            "type": "server" if schedule.server_id else "bot",
            "id": schedule.instance_id,
        },
        "cron": schedule.cron,
        "timezone": schedule.time_zone,
        "description": schedule_describe(schedule.cron, schedule.time_zone),
        "active": schedule.active,
        "only_when_running": schedule.only_when_running,
        "next_run_at": timestamp(schedule.next_run_at),
        "last_run_at": timestamp(schedule.last_run_at),
        "tasks": [task_representation(task) for task in schedule.tasks.all()],
        "created_at": timestamp(schedule.created_at),
        "updated_at": timestamp(schedule.updated_at),
    }


def schedule_run_representation(run: ScheduleRun) -> dict[str, Any]:
    """A run as the API shows it and ``schedule.run_failed`` carries it."""
    return {
        "id": run.id,
        "schedule_id": run.schedule_id,
        "tick": timestamp(run.tick),
        "trigger": run.trigger,
        "status": run.status,
        "reason": run.reason or None,
        "tasks": [
            {
                "action": entry["action"],
                "payload": entry["payload"],
                "offset_seconds": entry["offset_seconds"],
                "continue_on_failure": entry["continue_on_failure"],
                "status": entry["status"],
                "error": entry.get("error") or None,
                "action_id": entry.get("action_id"),
                "backup_id": entry.get("backup_id"),
                "started_at": entry.get("started_at"),
                "completed_at": entry.get("completed_at"),
            }
            for entry in run.tasks
        ],
        "started_at": timestamp(run.started_at),
        "completed_at": timestamp(run.completed_at),
    }


# --- Writing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSpec:
    action: str
    payload: str = ""
    offset_seconds: int = 0
    continue_on_failure: bool = False


def tasks_check(tasks: Any) -> list[TaskSpec]:
    """The tasks as given (a list of objects), checked; 400 naming the task's field."""
    if not isinstance(tasks, list) or not 1 <= len(tasks) <= MAX_TASKS:
        raise ValidationFailed.field(
            "tasks",
            "invalid",
            _("A schedule has 1 to %(max)s tasks, in the order they run.") % {"max": MAX_TASKS},
        )
    specs = []
    for index, item in enumerate(tasks):
        name = f"tasks.{index}"
        if isinstance(item, TaskSpec):
            item = item.__dict__
        if not isinstance(item, dict):
            raise ValidationFailed.field(name, "invalid", _("Each task is an object."))
        action = item.get("action")
        if action not in ScheduleTaskAction.values:
            raise ValidationFailed.field(
                f"{name}.action", "invalid_choice", _("action is power, command or backup.")
            )
        payload = item.get("payload") or ""
        if not isinstance(payload, str):
            raise ValidationFailed.field(f"{name}.payload", "invalid", _("payload is a string."))
        payload = payload.strip()
        if action == ScheduleTaskAction.POWER and payload not in POWER_ACTIONS:
            raise ValidationFailed.field(
                f"{name}.payload",
                "invalid_choice",
                _("A power task's payload is start, stop, restart or kill."),
            )
        if action == ScheduleTaskAction.COMMAND and (
            not payload
            or "\n" in payload
            or "\r" in payload
            or len(payload.encode()) > MAX_COMMAND_BYTES
        ):
            raise ValidationFailed.field(
                f"{name}.payload",
                "invalid",
                _("A command task's payload is one line of 1 to %(max)s bytes.")
                % {"max": MAX_COMMAND_BYTES},
            )
        if action == ScheduleTaskAction.BACKUP and len(payload) > 100:
            raise ValidationFailed.field(
                f"{name}.payload",
                "max_length",
                _("A backup task's payload is the backup's name, of at most 100 characters."),
            )
        offset = item.get("offset_seconds", 0)
        if (
            isinstance(offset, bool)
            or not isinstance(offset, int)
            or not 0 <= offset <= MAX_OFFSET_SECONDS
        ):
            raise ValidationFailed.field(
                f"{name}.offset_seconds",
                "invalid",
                _("offset_seconds is a whole number of seconds from 0 to %(max)s.")
                % {"max": MAX_OFFSET_SECONDS},
            )
        keep_going = item.get("continue_on_failure", False)
        if not isinstance(keep_going, bool):
            raise ValidationFailed.field(
                f"{name}.continue_on_failure",
                "invalid",
                _("continue_on_failure is true or false."),
            )
        specs.append(TaskSpec(action, payload, offset, keep_going))
    return specs


def _name_check(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed.field("name", "required", _("name is required."))
    if len(name.strip()) > 100:
        raise ValidationFailed.field("name", "max_length", _("A name has at most 100 characters."))
    return name.strip()


def _record(schedule: Schedule, change: str, actor: Actor, previous: dict | None = None) -> None:
    record_event(
        type=f"schedule.{change}",
        account=schedule.account,
        object_type="schedule",
        obj=schedule_representation(schedule),
        previous_attributes=previous,
        actor=actor,
        related_id=schedule.instance_id,
    )


def _tasks_replace(schedule: Schedule, specs: Iterable[TaskSpec]) -> None:
    schedule.tasks.all().delete()
    ScheduleTask.objects.bulk_create(
        ScheduleTask(
            schedule=schedule,
            position=position,
            action=spec.action,
            payload=spec.payload,
            offset_seconds=spec.offset_seconds,
            continue_on_failure=spec.continue_on_failure,
        )
        for position, spec in enumerate(specs)
    )
    # The prefetched tasks (if any) are stale now.
    getattr(schedule, "_prefetched_objects_cache", {}).pop("tasks", None)


def _next_run(schedule: Schedule, now: datetime) -> datetime | None:
    return tick_after(schedule.cron, schedule.time_zone, now) if schedule.active else None


def schedule_create(
    *,
    instance: Instance,
    actor: Actor,
    name: str,
    cron: str,
    tasks: Any,
    time_zone: str = "UTC",
    active: bool = True,
    only_when_running: bool = False,
) -> Schedule:
    """A new schedule of the instance with its tasks; ``schedule.created``. 409
    ``schedule_limit_reached`` when it has as many as its plan allows."""
    name = _name_check(name)
    cron = cron_check(cron)
    zone_check(time_zone)
    specs = tasks_check(tasks)
    with transaction.atomic():
        instance = instance_locked(instance)
        limit = schedule_limit(instance)
        if Schedule.objects.filter(**{instance.kind: instance}).count() >= limit:
            raise ScheduleLimitReached(
                (
                    _(
                        "This server has %(limit)s schedules, as many as its plan allows; "
                        "delete one first."
                    )
                    if instance.kind == "server"
                    else _(
                        "This bot has %(limit)s schedules, as many as its plan allows; "
                        "delete one first."
                    )
                )
                % {"limit": limit},
                details={"limit": limit},
            )
        schedule = Schedule(
            account=instance.account,
            server=instance if isinstance(instance, Server) else None,
            bot=instance if isinstance(instance, Bot) else None,
            name=name,
            cron=cron,
            time_zone=time_zone,
            active=active,
            only_when_running=only_when_running,
        )
        schedule.next_run_at = _next_run(schedule, timezone.now())
        schedule.save()
        _tasks_replace(schedule, specs)
        _record(schedule, "created", actor)
    return schedule


UPDATABLE = ("name", "cron", "time_zone", "active", "only_when_running")


def schedule_update(*, schedule: Schedule, actor: Actor, **changes: Any) -> Schedule:
    """Change a schedule: any of ``name``, ``cron``, ``time_zone``, ``active`` (pause or
    resume), ``only_when_running``, and ``tasks`` (replaces them all). The next run is
    computed again from now; ``schedule.updated`` with what was before."""
    unknown = set(changes) - {*UPDATABLE, "tasks"}
    if unknown:
        raise ValidationFailed.field(sorted(unknown)[0], "unknown", _("Unknown field."))
    if "name" in changes:
        changes["name"] = _name_check(changes["name"])
    if "cron" in changes:
        changes["cron"] = cron_check(changes["cron"])
    if "time_zone" in changes:
        zone_check(changes["time_zone"])
    for flag in ("active", "only_when_running"):
        if flag in changes and not isinstance(changes[flag], bool):
            raise ValidationFailed.field(
                flag, "invalid", _("%(flag)s is true or false.") % {"flag": flag}
            )
    specs = tasks_check(changes.pop("tasks")) if "tasks" in changes else None
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
        before = schedule_representation(schedule)
        for field, value in changes.items():
            setattr(schedule, field, value)
        schedule.next_run_at = _next_run(schedule, timezone.now())
        schedule.save()
        if specs is not None:
            _tasks_replace(schedule, specs)
        after = schedule_representation(schedule)
        previous = {
            key: value
            for key, value in before.items()
            if after[key] != value and key != "updated_at"
        }
        _record(schedule, "updated", actor, previous)
    return schedule


def schedule_delete(*, schedule: Schedule, actor: Actor) -> None:
    """Delete a schedule with its runs; a run under way stops before its next step.
    ``schedule.deleted`` carries it as it was."""
    with transaction.atomic():
        _record(schedule, "deleted", actor)
        schedule.delete()


# --- Runs -------------------------------------------------------------------------------------


def _entries(schedule: Schedule) -> list[dict[str, Any]]:
    """The run's copy of the schedule's tasks (from the dispatcher's prefetch when it made one)."""
    cache = getattr(schedule, "_prefetched_objects_cache", {})
    tasks = (
        sorted(cache["tasks"], key=lambda task: task.position)
        if "tasks" in cache
        else ScheduleTask.objects.filter(schedule=schedule).order_by("position")
    )
    return [task_representation(task) | {"status": PENDING} for task in tasks]


class _Steps:
    """Steps to queue once the transaction's work is done, in as few tasks as the work allows:
    one ``schedule_steps`` task per STEP_BATCH runs whose step (the same task number) is due at
    the same moment. Queued in the caller's transaction, so they exist only if it commits."""

    def __init__(self) -> None:
        self._due: dict[tuple[int, datetime], list[str]] = {}

    def add(self, run: ScheduleRun, index: int) -> None:
        due = run.started_at + timedelta(seconds=run.tasks[index]["offset_seconds"])
        self._due.setdefault((index, due), []).append(run.id)

    def enqueue(self) -> None:
        now = timezone.now()
        for (index, due), run_ids in self._due.items():
            step = schedule_steps if due <= now else schedule_steps.using(run_after=due)
            for chunk in batched(run_ids, STEP_BATCH):
                step.enqueue(list(chunk), index)
        self._due.clear()


def _run_begin(
    schedule: Schedule, *, tick: datetime | None, trigger: str, now: datetime, steps: _Steps
) -> ScheduleRun:
    """The run row, its first step added to ``steps`` (inside the caller's transaction)."""
    run = ScheduleRun.objects.create(
        schedule=schedule, tick=tick, trigger=trigger, tasks=_entries(schedule), started_at=now
    )
    if run.tasks:
        steps.add(run, 0)
    else:
        run.status = ScheduleRunStatus.SUCCEEDED
        run.completed_at = now
        run.save(update_fields=["status", "completed_at"])
    return run


def schedule_run_now(*, schedule: Schedule, actor: Actor) -> ScheduleRun:
    """Run the tasks now, whether the schedule is paused or its server running (the person
    asked); a run of no tick, recorded as the others are. The schedule's ticks are unchanged."""
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
        now = timezone.now()
        steps = _Steps()
        run = _run_begin(
            schedule, tick=None, trigger=ScheduleRunTrigger.MANUAL, now=now, steps=steps
        )
        schedule.last_run_at = now
        schedule.save(update_fields=["last_run_at"])
        steps.enqueue()
    return run


def _period(schedule: Schedule, tick: datetime) -> timedelta:
    return tick_after(schedule.cron, schedule.time_zone, tick) - tick


def _skipped(schedule: Schedule, tick: datetime, trigger: str, reason: str, now: datetime) -> None:
    ScheduleRun.objects.create(
        schedule=schedule,
        tick=tick,
        trigger=trigger,
        status=ScheduleRunStatus.SKIPPED,
        reason=reason,
        tasks=[entry | {"status": SKIPPED} for entry in _entries(schedule)],
        started_at=now,
        completed_at=now,
    )


def _dispatch_one(schedule: Schedule, now: datetime, steps: _Steps) -> str:
    """Take one due schedule's latest passed tick (under its row lock): run, late run,
    skipped, or nothing (its instance is gone); ``next_run_at`` moves past now."""
    instance = schedule.instance
    if instance.deleted_at is not None or instance.status == S.DELETING:
        schedule.next_run_at = None
        schedule.save(update_fields=["next_run_at"])
        return "gone"
    tick = tick_at_or_before(schedule.cron, schedule.time_zone, now)
    late = now - tick
    trigger = ScheduleRunTrigger.TICK if late < ON_TIME else ScheduleRunTrigger.LATE
    schedule.next_run_at = tick_after(schedule.cron, schedule.time_zone, now)
    schedule.last_run_at = now
    schedule.save(update_fields=["next_run_at", "last_run_at"])
    catch_up = min(timedelta(minutes=settings.SCHEDULE_CATCH_UP_MINUTES), _period(schedule, tick))
    if trigger == ScheduleRunTrigger.LATE and late >= catch_up:
        minutes = int(catch_up.total_seconds() // 60)
        _skipped(
            schedule,
            tick,
            trigger,
            f"Missed: no dispatcher ran while it was due; a missed tick runs late only within "
            f"{minutes} minute{'s' if minutes != 1 else ''}.",
            now,
        )
        return "skipped"
    if schedule.only_when_running and instance.status != S.RUNNING:
        _skipped(
            schedule, tick, trigger, f"The {instance.kind} was {instance.status}, not running.", now
        )
        return "skipped"
    _run_begin(schedule, tick=tick, trigger=trigger, now=now, steps=steps)
    return "started"


def schedules_dispatch(*, now: datetime | None = None, batch: int = DISPATCH_BATCH) -> dict:
    """Start the runs of every schedule due at ``now`` (the clock's by default), in batches of
    rows no other dispatcher holds; how many runs started, were skipped or found their tick
    already run. Safe to run in any number of processes at once."""
    counts = {"started": 0, "skipped": 0, "gone": 0, "already run": 0}
    while True:
        moment = now or timezone.now()
        with transaction.atomic():
            due = list(
                Schedule.objects.filter(active=True, next_run_at__lte=moment)
                .order_by("next_run_at")
                .select_related("server", "bot")
                .select_for_update(skip_locked=True, of=("self",))[:batch]
            )
            prefetch_related_objects(due, "tasks")
            steps = _Steps()
            for schedule in due:
                try:
                    with transaction.atomic():
                        counts[_dispatch_one(schedule, moment, steps)] += 1
                except IntegrityError:
                    # Its tick has a run already (the unique row): never twice. Move it on.
                    counts["already run"] += 1
                    Schedule.objects.filter(pk=schedule.pk).update(
                        next_run_at=tick_after(schedule.cron, schedule.time_zone, moment)
                    )
            steps.enqueue()
        if len(due) < batch:
            return counts


# --- The steps --------------------------------------------------------------------------------


@task
def schedule_steps(run_ids: list[str], index: int) -> None:
    """The worker's entry point for task ``index`` of several runs due at the same moment
    (queued by the dispatcher, a manual run, or the steps before them)."""
    schedule_steps_run(run_ids=run_ids, index=index)


@task
def schedule_step(run_id: str, index: int) -> None:
    """One run's step, as releases before the grouped steps queued them."""
    schedule_steps_run(run_ids=[run_id], index=index)


def console_command_send(*, instance: Instance, command: str) -> None:
    """Write one line to the process's standard input through its agent; 409 ``invalid_state``
    when it is not running, 503 when the node cannot be reached."""
    node = instance_node(instance)
    try:
        status, answer, _headers = agent_request(
            node, "POST", f"servers/{instance.pk}/commands", body={"command": command}
        )
    except DriverError as unreachable:
        raise ServiceUnavailable(str(unreachable)) from None
    if status >= 400:
        raise agent_error(instance, FileCall("POST", "", field="payload"), status, answer)


def _perform(instance: Instance, entry: dict[str, Any]) -> dict[str, Any]:
    """Carry out one task as the system; what it made (an action's or backup's id)."""
    if entry["action"] == ScheduleTaskAction.POWER:
        action = action_request(instance=instance, action_type=entry["payload"], actor=SYSTEM)
        return {"action_id": action.id}
    if entry["action"] == ScheduleTaskAction.COMMAND:
        console_command_send(instance=instance, command=entry["payload"])
        return {}
    backup = backup_create(instance=instance, actor=SYSTEM, name=entry["payload"])
    return {"backup_id": backup.id}


def _now_text() -> str:
    return timezone.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Settlement:
    """What settling steps leaves for the end of their transaction, done together: the runs'
    rows written in one statement, the failed runs' events recorded at once (with their
    webhooks' deliveries), and the next steps queued as grouped tasks."""

    def __init__(self) -> None:
        self.runs: dict[str, ScheduleRun] = {}
        self.events: list[EventDraft] = []
        self.steps = _Steps()

    def flush(self) -> None:
        if self.runs:
            ScheduleRun.objects.bulk_update(
                list(self.runs.values()), ["tasks", "status", "reason", "completed_at"]
            )
        record_events(self.events)
        self.steps.enqueue()
        self.runs, self.events = {}, []


def _locked_runs(run_ids: Iterable[str]) -> list[ScheduleRun]:
    """The runs under way among these, with their schedules and instances, under their row
    locks, taken in id order (as every other holder of several takes them)."""
    return list(
        ScheduleRun.objects.select_for_update(of=("self",))
        .select_related("schedule__server", "schedule__bot")
        .filter(pk__in=list(run_ids), status=ScheduleRunStatus.RUNNING)
        .order_by("pk")
    )


def schedule_step_run(*, run_id: str, index: int) -> None:
    """``schedule_steps_run`` of one run."""
    schedule_steps_run(run_ids=[run_id], index=index)


def schedule_steps_run(*, run_ids: list[str], index: int) -> None:
    """Carry out task ``index`` of each of these runs once, STEP_CLAIM runs at a time: its
    outcome recorded on the run, then the run's next step queued, or the run ended (``failed``
    when a task failed; ``schedule.run_failed``).

    A step taken later than ``SCHEDULE_STEP_TIMEOUT_SECONDS`` after its time is failed without
    being run, as the recovery pass would have (``schedule_steps_recover``); a step the recovery
    pass failed while this worker was in it keeps that outcome."""
    for chunk in batched(run_ids, STEP_CLAIM):
        _steps_chunk(chunk, index)


def _steps_chunk(run_ids: Iterable[str], index: int) -> None:
    settlement = _Settlement()
    with transaction.atomic():
        claimed = []
        now = timezone.now()
        for run in _locked_runs(run_ids):
            if run.tasks[index]["status"] != PENDING:
                continue  # taken already: a step queued twice does its work once
            if now - _step_since(run, index) > _step_timeout():
                _step_give_up(run, index, _lost_reason(), now, settlement)
                continue
            run.tasks[index] |= {"status": RUNNING, "started_at": _now_text()}
            claimed.append(run)
        if claimed:
            ScheduleRun.objects.bulk_update(claimed, ["tasks"])
        settlement.flush()
    outcomes = {run.pk: _outcome(run.schedule.instance, run.tasks[index]) for run in claimed}
    if not outcomes:
        return
    with transaction.atomic():
        for run in _locked_runs(outcomes):
            if run.tasks[index]["status"] != RUNNING:
                continue  # failed by the recovery pass meanwhile: that outcome stands
            run.tasks[index] |= outcomes[run.pk] | {"completed_at": _now_text()}
            _step_settle(run, index, settlement)
        settlement.flush()


def _outcome(instance: Instance, entry: dict[str, Any]) -> dict[str, Any]:
    """Carry out one task; its entry's outcome fields (what it made, status, error)."""
    try:
        made = _perform(instance, entry)
    except ApplicationError as refused:
        return {"status": FAILED, "error": refused.message[:500]}
    except Exception as crash:  # a task's failure is its run's, not the worker's
        return {"status": FAILED, "error": f"Unexpected error: {type(crash).__name__}."}
    return made | {"status": SUCCEEDED, "error": ""}


def _step_settle(run: ScheduleRun, index: int, settlement: _Settlement) -> None:
    """After task ``index`` has its outcome (under the run's row lock): the next step queued,
    or the run ended, ``failed`` when a task failed (the rest skipped unless it continues)."""
    settlement.runs[run.pk] = run
    entry = run.tasks[index]
    if entry["status"] == FAILED and not entry["continue_on_failure"]:
        for later in run.tasks[index + 1 :]:
            later["status"] = SKIPPED
        _run_end(
            run, f"Task {index + 1} ({entry['action']}) failed: {entry['error']}"[:500], settlement
        )
    elif index + 1 < len(run.tasks):
        settlement.steps.add(run, index + 1)
    else:
        failed = [n for n, task in enumerate(run.tasks, 1) if task["status"] == FAILED]
        _run_end(run, f"Task {failed[0]} failed." if failed else "", settlement)


def _run_end(run: ScheduleRun, failure: str, settlement: _Settlement) -> None:
    run.status = ScheduleRunStatus.FAILED if failure else ScheduleRunStatus.SUCCEEDED
    run.reason = failure
    run.completed_at = timezone.now()
    if failure:
        schedule = run.schedule
        settlement.events.append(
            EventDraft(
                type="schedule.run_failed",
                account_id=schedule.account_id,
                object_type="schedule_run",
                obj=schedule_run_representation(run),
                related_id=schedule.instance_id,
            )
        )


# --- Steps whose worker was lost --------------------------------------------------------------
#
# A worker that dies in the middle of a step leaves it ``running``; a queued step's row can be
# lost. Either way nothing would ever finish the run, so the recovery pass (the dispatch
# command's loop and housekeeping) fails a step still running ``SCHEDULE_STEP_TIMEOUT_SECONDS``
# after it began, or still pending that long after it was due (its offset, or when the step
# before it ended if later: when it was queued), and the run goes on or ends as after any failed
# task. The run's row lock, taken by the pass and by both halves of a step, and the pass's
# check of the task's status under it make that happen once whatever the number of passes, and
# a worker that finishes the step afterwards finds it failed and leaves it so.


def _step_timeout() -> timedelta:
    return timedelta(seconds=settings.SCHEDULE_STEP_TIMEOUT_SECONDS)


def _lost_reason() -> str:
    return (
        f"Not started within {settings.SCHEDULE_STEP_TIMEOUT_SECONDS} seconds of its time: the "
        "queued step or its worker was lost; it was not run."
    )


def _died_reason() -> str:
    return (
        f"No outcome within {settings.SCHEDULE_STEP_TIMEOUT_SECONDS} seconds of its start: the "
        "worker running it stopped; it may or may not have taken effect."
    )


def _parsed(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _step_since(run: ScheduleRun, index: int) -> datetime:
    """When pending task ``index`` was queued to run: its time (the run's start plus its
    offset), or when the task before it ended if that was later."""
    since = run.started_at + timedelta(seconds=run.tasks[index]["offset_seconds"])
    before = run.tasks[index - 1].get("completed_at") if index else None
    return max(since, _parsed(before)) if before else since


def _step_stuck(run: ScheduleRun, now: datetime) -> tuple[int, str] | None:
    """The run's step under way (its first task neither done nor skipped) and why it is
    given up on, when it is past the bound."""
    for index, entry in enumerate(run.tasks):
        if entry["status"] == RUNNING:
            started = _parsed(entry["started_at"])
            return (index, _died_reason()) if now - started > _step_timeout() else None
        if entry["status"] == PENDING:
            late = now - _step_since(run, index) > _step_timeout()
            return (index, _lost_reason()) if late else None
    return None


def _step_give_up(
    run: ScheduleRun, index: int, reason: str, now: datetime, settlement: _Settlement
) -> None:
    run.tasks[index] |= {
        "status": FAILED,
        "error": reason,
        "completed_at": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    _step_settle(run, index, settlement)


def schedule_steps_recover(*, now: datetime | None = None) -> int:
    """Fail the steps of runs under way that are past ``SCHEDULE_STEP_TIMEOUT_SECONDS`` (their
    worker or queued row was lost) and carry their runs on; how many. Safe to run in any number
    of processes at once: each step is failed once."""
    now = now or timezone.now()
    candidates = (
        ScheduleRun.objects.filter(
            status=ScheduleRunStatus.RUNNING, started_at__lt=now - _step_timeout()
        )
        .only("id", "started_at", "tasks")
        .order_by("started_at", "id")
    )
    stuck = [run.pk for run in candidates.iterator(chunk_size=500) if _step_stuck(run, now)]
    failed = 0
    for run_id in stuck:
        with transaction.atomic():
            run = (
                ScheduleRun.objects.select_for_update(skip_locked=True)
                .filter(pk=run_id, status=ScheduleRunStatus.RUNNING)
                .first()
            )
            found = _step_stuck(run, now) if run is not None else None
            if run is None or found is None:
                continue  # ended, moved on, or held by a worker or another pass meanwhile
            settlement = _Settlement()
            _step_give_up(run, *found, now, settlement)
            settlement.flush()
            failed += 1
    return failed

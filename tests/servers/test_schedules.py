"""Schedules on a frozen and moved clock: the cron line checked and put in words, the ticks in a
time zone across its DST changes, the dispatcher's runs (once per tick, late or skipped by the
missed ticks rule, skipped while not running), the steps queued at their offsets and not slept
for, a failed task ending the run unless it continues, and the plan's limit."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import IntegrityError, transaction
from django.utils import translation
from django_tasks_db.models import DBTaskResult

from accounts.actors import SYSTEM
from events.models import Event
from hosting.errors import ValidationFailed
from servers.models import Action, Backup, Schedule, ScheduleRun, ServerStatus
from servers.services.schedules import (
    ScheduleLimitReached,
    cron_check,
    schedule_create,
    schedule_delete,
    schedule_describe,
    schedule_run_now,
    schedule_step_run,
    schedule_update,
    schedules_dispatch,
    tick_after,
)
from tests.factories import ServerFactory
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db

STEP = "servers.services.schedules.schedule_steps"
NOON = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def steps() -> list[tuple[list, datetime | None]]:
    """The queued steps of schedules, one per run: ``([run id, index], run_after)``, oldest
    first (a queued task carries the runs due at the same moment)."""
    return [
        ([run_id, row.args_kwargs["args"][1]], row.run_after if row.run_after.year < 9999 else None)
        for row in DBTaskResult.objects.filter(task_path=STEP, status="READY").order_by(
            "enqueued_at"
        )
        for run_id in row.args_kwargs["args"][0]
    ]


class Console:
    """A stand-in for the agent's console input: records each command, or refuses them."""

    def __init__(self):
        self.commands: list[str] = []
        self.refuse = False

    def __call__(self, node, method, path, *, body=None, headers=None, timeout=None):
        if self.refuse:
            error = {"code": "invalid_state", "message": "The server is not running."}
            return 409, {"error": error}, {}
        self.commands.append(body["command"])
        return 200, {"status": "running"}, {}


@pytest.fixture
def console(monkeypatch) -> Console:
    fake = Console()
    monkeypatch.setattr("servers.services.schedules.agent_request", fake)
    return fake


def make(instance, cron="0 4 * * *", zone="UTC", tasks=None, **fields) -> Schedule:
    return schedule_create(
        instance=instance,
        actor=SYSTEM,
        name=fields.pop("name", "Nightly"),
        cron=cron,
        time_zone=zone,
        tasks=tasks or [{"action": "command", "payload": "say hi"}],
        **fields,
    )


# --- The cron line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cron,zone,words",
    [
        ("* * * * *", "UTC", "every minute"),
        ("*/15 * * * *", "UTC", "every 15 minutes"),
        ("5 * * * *", "UTC", "every hour at minute 5"),
        ("0 4 * * *", "Europe/Berlin", "every day at 04:00 (Europe/Berlin)"),
        ("30 23 * * *", "UTC", "every day at 23:30 (UTC)"),
        ("0 6 * * 1", "UTC", "at 06:00 on Monday (UTC)"),
        ("0 6 * * MON", "UTC", "at 06:00 on Monday (UTC)"),
        ("0 6 * * 0", "UTC", "at 06:00 on Sunday (UTC)"),
        ("0 6 * * 7", "UTC", "at 06:00 on Sunday (UTC)"),
        ("0 6 * * 1-5", "America/New_York", "at 06:00 on Monday to Friday (America/New_York)"),
        ("0 6 * * 6,0", "UTC", "at 06:00 on Saturday and Sunday (UTC)"),
        ("0 6 * * 1,3,5", "UTC", "at 06:00 on Monday, Wednesday and Friday (UTC)"),
        ("15 3 1 * *", "UTC", "at 03:15 on day 1 of every month (UTC)"),
        ("0 4,16 1 * *", "UTC", "at 04:00 and 16:00 on the first day of every month (UTC)"),
        ("0 */2 * * *", "UTC", "every 2 hours at minute 0 (UTC)"),
        ("0 12 * 1 *", "UTC", "at 12:00 every day in January (UTC)"),
    ],
)
def test_a_cron_line_reads_in_words_with_its_time_zone(cron, zone, words):
    assert schedule_describe(cron, zone) == words


def test_a_line_no_one_can_phrase_is_shown_as_it_is():
    assert schedule_describe("not a cron line") == "not a cron line"
    assert schedule_describe("61 * * * *") == "61 * * * *"


@pytest.mark.parametrize(
    "cron,message",
    [
        ("", "cron is required."),
        ("* * * *", "A cron line has five fields (minute hour day month weekday); this one has 4."),
        (
            "0 0 * * * *",
            "A cron line has five fields (minute hour day month weekday); this one has 6.",
        ),
        ("61 * * * *", "The cron line is not valid: bad minute."),
        ("0 25 * * *", "The cron line is not valid: bad hour."),
        ("0 0 32 * *", "The cron line is not valid: bad day-of-month."),
        ("0 0 * 13 *", "The cron line is not valid: bad month."),
        ("0 0 * * FUNDAY", "The cron line is not valid: bad day-of-week."),
    ],
)
def test_a_bad_cron_line_is_refused_naming_the_field(cron, message):
    with pytest.raises(ValidationFailed) as refused:
        cron_check(cron)
    assert refused.value.details["fields"][0]["name"] == "cron"
    assert refused.value.message == message


def test_spaces_in_a_cron_line_are_made_single():
    assert cron_check("  0   4 * *\t* ") == "0 4 * * *"


# --- Ticks in a time zone ---------------------------------------------------------------------


def test_the_next_run_is_the_next_tick_in_the_time_zone(server):
    with time_machine.travel(NOON, tick=False):
        berlin = make(server, zone="Europe/Berlin")
        utc = make(server)
    assert berlin.next_run_at == datetime(2026, 11, 29, 3, 0, tzinfo=UTC)  # CET is UTC+1
    assert utc.next_run_at == datetime(2026, 11, 29, 4, 0, tzinfo=UTC)


def test_ticks_follow_the_zone_across_its_summer_time_changes():
    # 04:00 in Berlin is 03:00 UTC in winter, 02:00 UTC in summer.
    assert tick_after("0 4 * * *", "Europe/Berlin", datetime(2026, 3, 28, 12, tzinfo=UTC)) == (
        datetime(2026, 3, 29, 2, 0, tzinfo=UTC)
    )
    assert tick_after("0 4 * * *", "Europe/Berlin", datetime(2026, 10, 24, 12, tzinfo=UTC)) == (
        datetime(2026, 10, 25, 3, 0, tzinfo=UTC)
    )
    # 02:30 does not exist on 29 March: the tick is at 03:00 CEST, once.
    spring = tick_after("30 2 * * *", "Europe/Berlin", datetime(2026, 3, 28, 12, tzinfo=UTC))
    assert spring == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    # 02:30 happens twice on 25 October: it ticks once.
    autumn = tick_after("30 2 * * *", "Europe/Berlin", datetime(2026, 10, 24, 12, tzinfo=UTC))
    assert tick_after("30 2 * * *", "Europe/Berlin", autumn) == autumn + timedelta(hours=25)


def test_a_daily_run_crosses_a_dst_change_once_each_day(server, console):
    at = datetime(2026, 10, 24, 0, 0, tzinfo=UTC)
    with time_machine.travel(at, tick=False):
        schedule = make(server, cron="30 2 * * *", zone="Europe/Berlin")
    started = []
    while at < datetime(2026, 10, 27, tzinfo=UTC):
        with time_machine.travel(at, tick=False):
            started.append(schedules_dispatch()["started"])
        at += timedelta(minutes=1)
    ticks = sorted(run.tick for run in ScheduleRun.objects.filter(schedule=schedule))
    assert ticks == [
        datetime(2026, 10, 24, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # the first 02:30, still summer time
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),
    ]
    assert sum(started) == 3


# --- The dispatcher ---------------------------------------------------------------------------


def test_a_due_schedule_runs_once_in_its_minute_and_moves_on(server, console):
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="0 12 * * *")
    with time_machine.travel(NOON - timedelta(seconds=1), tick=False):
        assert schedules_dispatch()["started"] == 0
    with time_machine.travel(NOON + timedelta(seconds=3), tick=False):
        assert schedules_dispatch() == {"started": 1, "skipped": 0, "gone": 0, "already run": 0}
        assert schedules_dispatch()["started"] == 0
    run = ScheduleRun.objects.get(schedule=schedule)
    assert (run.tick, run.trigger, run.status) == (NOON, "tick", "running")
    schedule.refresh_from_db()
    assert schedule.next_run_at == NOON + timedelta(days=1)
    assert schedule.last_run_at == NOON + timedelta(seconds=3)
    with time_machine.travel(NOON + timedelta(seconds=4), tick=False):
        run_worker()
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert console.commands == ["say hi"]


def test_the_database_refuses_a_second_run_of_a_tick(server):
    schedule = make(server)
    ScheduleRun.objects.create(schedule=schedule, tick=NOON, trigger="tick")
    with pytest.raises(IntegrityError), transaction.atomic():
        ScheduleRun.objects.create(schedule=schedule, tick=NOON, trigger="late")
    # Runs now have no tick: as many as asked.
    schedule_run_now(schedule=schedule, actor=SYSTEM)
    schedule_run_now(schedule=schedule, actor=SYSTEM)
    assert ScheduleRun.objects.filter(schedule=schedule, tick=None).count() == 2


def test_a_tick_already_run_is_not_run_again_whatever_next_run_at_says(server):
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="0 12 * * *")
    ScheduleRun.objects.create(schedule=schedule, tick=NOON, trigger="tick")
    with time_machine.travel(NOON + timedelta(seconds=5), tick=False):
        assert schedules_dispatch() == {"started": 0, "skipped": 0, "gone": 0, "already run": 1}
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at == NOON + timedelta(days=1)


def test_a_missed_tick_runs_once_late_within_the_catch_up_window(server, console):
    with time_machine.travel(NOON - timedelta(hours=3), tick=False):
        schedule = make(server, cron="0 * * * *")  # hourly: 15 minutes to catch up
    # The dispatchers were down from 10:00 to 12:10: 10:00, 11:00 and 12:00 passed.
    with time_machine.travel(NOON + timedelta(minutes=10), tick=False):
        assert schedules_dispatch()["started"] == 1
    runs = list(ScheduleRun.objects.filter(schedule=schedule))
    assert [(run.tick, run.trigger, run.status) for run in runs] == [(NOON, "late", "running")]
    schedule.refresh_from_db()
    assert schedule.next_run_at == NOON + timedelta(hours=1)


def test_a_tick_missed_by_longer_than_the_window_is_recorded_as_skipped(server):
    with time_machine.travel(NOON - timedelta(hours=3), tick=False):
        schedule = make(server, cron="0 * * * *")
    with time_machine.travel(NOON + timedelta(minutes=20), tick=False):
        assert schedules_dispatch()["skipped"] == 1
    run = ScheduleRun.objects.get(schedule=schedule)
    assert (run.tick, run.trigger, run.status) == (NOON, "late", "skipped")
    assert run.reason == (
        "Missed: no dispatcher ran while it was due; a missed tick runs late only within "
        "15 minutes."
    )
    assert {task["status"] for task in run.tasks} == {"skipped"}
    assert steps() == []


def test_the_window_is_never_longer_than_the_schedules_own_period(server):
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="*/5 * * * *")
    with time_machine.travel(NOON + timedelta(minutes=4, seconds=30), tick=False):
        schedules_dispatch()  # 12:00 is 4.5 minutes late: within 5
    with time_machine.travel(NOON + timedelta(minutes=14, seconds=50), tick=False):
        schedules_dispatch()  # 12:10 is 4m50s late
    with time_machine.travel(NOON + timedelta(minutes=20, seconds=30), tick=False):
        schedules_dispatch()  # 12:20 is 30 s late: on time
    runs = ScheduleRun.objects.filter(schedule=schedule).order_by("tick")
    assert [(run.tick.minute, run.trigger, run.status) for run in runs] == [
        (0, "late", "running"),
        (10, "late", "running"),
        (20, "tick", "running"),
    ]
    with time_machine.travel(NOON + timedelta(minutes=30, seconds=5), tick=False):
        schedules_dispatch()  # on time again
    with time_machine.travel(NOON + timedelta(minutes=40), tick=False):
        schedules_dispatch()  # 12:40 on time; 12:35 neither run nor recorded
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 5


def test_only_when_running_skips_a_tick_while_the_server_is_stopped(server):
    assert server.status == ServerStatus.STOPPED
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="0 12 * * *", only_when_running=True)
    with time_machine.travel(NOON, tick=False):
        assert schedules_dispatch()["skipped"] == 1
    run = ScheduleRun.objects.get(schedule=schedule)
    assert (run.status, run.reason) == ("skipped", "The server was stopped, not running.")
    server.status = ServerStatus.RUNNING
    server.save()
    with time_machine.travel(NOON + timedelta(days=1), tick=False):
        assert schedules_dispatch()["started"] == 1


def test_a_paused_schedule_has_no_next_run_and_resumes_from_now(server):
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="0 12 * * *")
        schedule = schedule_update(schedule=schedule, actor=SYSTEM, active=False)
    assert schedule.next_run_at is None
    with time_machine.travel(NOON + timedelta(days=2, seconds=1), tick=False):
        assert schedules_dispatch()["started"] == 0
        schedule = schedule_update(schedule=schedule, actor=SYSTEM, active=True)
    assert schedule.next_run_at == NOON + timedelta(days=3)
    assert not ScheduleRun.objects.exists()


def test_a_deleted_servers_schedules_stop(server):
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="0 12 * * *")
    server.deleted_at = NOON
    server.save()
    with time_machine.travel(NOON, tick=False):
        assert schedules_dispatch()["gone"] == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at is None
    assert not ScheduleRun.objects.exists()


def test_the_dispatcher_takes_every_due_schedule_in_batches(account, node):
    servers = [ServerFactory(account=account, node=node) for _ in range(7)]
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        for instance in servers:
            make(instance, cron="0 12 * * *")
    with time_machine.travel(NOON, tick=False):
        assert schedules_dispatch(batch=3)["started"] == 7
    assert ScheduleRun.objects.count() == 7
    assert len(steps()) == 7


def test_runs_due_together_go_to_the_workers_together(account, node, console, monkeypatch):
    """A task of the queue per STEP_BATCH runs whose step is due at the same moment; each run's
    step is its own all the same: one refused command fails its run alone, and a late step
    of the same runs is queued at its own time, grouped again."""
    monkeypatch.setattr("servers.services.schedules.STEP_BATCH", 3)
    monkeypatch.setattr("servers.services.schedules.STEP_CLAIM", 2)
    tasks = [
        {"action": "command", "payload": "say hi"},
        {"action": "command", "payload": "save-all", "offset_seconds": 60},
    ]
    servers = [ServerFactory(account=account, node=node) for _ in range(7)]
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        for instance in servers:
            make(instance, cron="0 12 * * *", tasks=tasks)
    with time_machine.travel(NOON, tick=False):
        assert schedules_dispatch()["started"] == 7
        queued = DBTaskResult.objects.filter(task_path=STEP, status="READY")
        assert sorted(len(row.args_kwargs["args"][0]) for row in queued) == [1, 3, 3]
        refused = ScheduleRun.objects.get(schedule__server=servers[3])
        original = console.__call__

        def refuse_one(node, method, path, **kwargs):
            if servers[3].pk in path:
                return 409, {"error": {"code": "invalid_state", "message": "Stopped."}}, {}
            return original(node, method, path, **kwargs)

        monkeypatch.setattr("servers.services.schedules.agent_request", refuse_one)
        run_worker()
    assert console.commands == ["say hi"] * 6
    refused.refresh_from_db()
    assert refused.status == "failed" and refused.tasks[1]["status"] == "skipped"
    assert Event.objects.filter(type="schedule.run_failed").count() == 1
    assert sorted(run_id for (run_id, index), _ in steps()) == sorted(
        ScheduleRun.objects.exclude(pk=refused.pk).values_list("pk", flat=True)
    )
    assert {(index, after) for (_, index), after in steps()} == {(1, NOON + timedelta(seconds=60))}
    with time_machine.travel(NOON + timedelta(seconds=60), tick=False):
        run_worker()
    assert console.commands == ["say hi"] * 6 + ["save-all"] * 6
    assert ScheduleRun.objects.filter(status="succeeded").count() == 6


# --- The steps --------------------------------------------------------------------------------


def test_each_task_is_queued_at_its_offset_and_nothing_sleeps(server, console):
    tasks = [
        {"action": "command", "payload": "say Restart in 5 minutes"},
        {"action": "command", "payload": "say Restart in 1 minute", "offset_seconds": 240},
        {"action": "command", "payload": "save-all", "offset_seconds": 290},
    ]
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        schedule = make(server, cron="0 12 * * *", tasks=tasks)
    with time_machine.travel(NOON, tick=False):
        schedules_dispatch()
        run = ScheduleRun.objects.get(schedule=schedule)
        assert steps() == [([run.id, 0], None)]
        run_worker()
    assert console.commands == ["say Restart in 5 minutes"]
    assert steps() == [([run.id, 1], NOON + timedelta(seconds=240))]
    with time_machine.travel(NOON + timedelta(seconds=239), tick=False):
        run_worker()  # not due yet: the worker leaves it
    assert len(console.commands) == 1
    with time_machine.travel(NOON + timedelta(seconds=240), tick=False):
        run_worker()
    assert steps() == [([run.id, 2], NOON + timedelta(seconds=290))]
    with time_machine.travel(NOON + timedelta(seconds=300), tick=False):
        run_worker()
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert console.commands == ["say Restart in 5 minutes", "say Restart in 1 minute", "save-all"]
    assert [task["status"] for task in run.tasks] == ["succeeded"] * 3


def test_a_failed_task_ends_the_run_unless_it_continues(server, console):
    console.refuse = True
    tasks = [
        {"action": "command", "payload": "say one", "continue_on_failure": True},
        {"action": "command", "payload": "say two"},
        {"action": "command", "payload": "say three"},
    ]
    schedule = make(server, tasks=tasks)
    run = schedule_run_now(schedule=schedule, actor=SYSTEM)
    run_worker()
    run.refresh_from_db()
    assert [task["status"] for task in run.tasks] == ["failed", "failed", "skipped"]
    assert run.tasks[0]["error"] == "The server is not running."
    assert run.status == "failed"
    assert run.reason == "Task 2 (command) failed: The server is not running."
    event = Event.objects.get(type="schedule.run_failed")
    assert event.data["object"]["id"] == run.id
    assert event.related_id == server.pk


def test_a_power_task_asks_the_actions_service_and_a_backup_task_backs_up(server, fake_agent):
    tasks = [
        {"action": "backup", "payload": "Nightly"},
        {"action": "power", "payload": "start"},
        {"action": "power", "payload": "start"},
    ]
    schedule = make(server, tasks=tasks)
    run = schedule_run_now(schedule=schedule, actor=SYSTEM)
    schedule_step_run(run_id=run.id, index=0)
    schedule_step_run(run_id=run.id, index=0)  # queued twice: done once
    backup = Backup.objects.get(server=server)
    assert backup.name == "Nightly"
    schedule_step_run(run_id=run.id, index=1)
    schedule_step_run(run_id=run.id, index=2)  # starting already: refused
    run.refresh_from_db()
    action = Action.objects.get(server=server, type="start")
    assert run.tasks[0]["backup_id"] == backup.id
    assert (run.tasks[1]["status"], run.tasks[1]["action_id"]) == ("succeeded", action.id)
    assert run.tasks[2]["status"] == "failed"
    assert run.tasks[2]["error"].startswith("Cannot start a server that is starting")
    assert run.status == "failed"


def test_a_run_of_a_deleted_schedule_stops_before_its_next_step(server, console):
    schedule = make(server)
    schedule_run_now(schedule=schedule, actor=SYSTEM)
    schedule_delete(schedule=schedule, actor=SYSTEM)
    run_worker()
    assert console.commands == []


# --- The plan's limit -------------------------------------------------------------------------


def test_the_plans_schedule_limit_is_kept(server, settings):
    settings.SCHEDULE_DEFAULT_LIMIT = 2
    make(server)
    make(server)
    with pytest.raises(ScheduleLimitReached) as refused:
        make(server)
    assert refused.value.details == {"limit": 2}
    server.plan = {"schedule_limit": 3}
    server.save()
    make(server)
    assert Schedule.objects.filter(server=server).count() == 3


def test_changes_are_events_with_what_was_before(server):
    schedule = make(server)
    schedule_update(schedule=schedule, actor=SYSTEM, cron="0 5 * * *", name="Early")
    schedule_delete(schedule=schedule, actor=SYSTEM)
    events = list(Event.objects.filter(type__startswith="schedule.").order_by("created_at"))
    assert [event.type for event in events] == [
        "schedule.created",
        "schedule.updated",
        "schedule.deleted",
    ]
    previous = events[1].data["previous_attributes"]
    assert previous["cron"] == "0 4 * * *" and previous["name"] == "Nightly"
    assert previous["description"] == "every day at 04:00 (UTC)"


@pytest.mark.parametrize(
    "language,cron,words",
    [
        ("de", "0 6 * * 1-5", "um 06:00 am Montag bis Freitag (UTC)"),
        ("fr", "0 6 * * 6,0", "à 06:00, samedi et dimanche (UTC)"),
        ("es", "*/15 * * * *", "cada 15 minutos"),
        ("de", "0 4,16 1 * *", "0 4,16 1 * * (UTC)"),  # cronsim's English is not shown
    ],
)
def test_a_cron_line_reads_in_the_pages_language(language, cron, words):
    """The days by Django's own translated names, the sentence from the catalogue; a shape only
    cronsim phrases (in English) shows the line itself."""
    with translation.override(language):
        assert schedule_describe(cron, "UTC") == words

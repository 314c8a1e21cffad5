"""Schedule steps whose worker died, on a frozen and moved clock: a step left running, or queued
and not started, longer than ``SCHEDULE_STEP_TIMEOUT_SECONDS`` is failed with its reason by the
dispatcher's and housekeeping's recovery pass, once; its run goes on or ends by the rules of any
failed task; a worker that wakes up afterwards neither runs it again nor changes its outcome."""

from datetime import timedelta
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from accounts.actors import SYSTEM
from events.models import Event
from servers import upkeep
from servers.models import ScheduleRun
from servers.services import schedules
from servers.services.schedules import (
    schedule_run_now,
    schedule_step_run,
    schedule_steps_recover,
)
from tests.servers.helpers import run_worker
from tests.servers.test_schedules import NOON, STEP, console, make, steps  # noqa: F401

pytestmark = pytest.mark.django_db

TIMEOUT = 600
LOST = (
    "Not started within 600 seconds of its time: the queued step or its worker was lost; "
    "it was not run."
)
DIED = (
    "No outcome within 600 seconds of its start: the worker running it stopped; it may or may "
    "not have taken effect."
)


class Killed(BaseException):
    """The worker's process dying in the middle of a task (not an error the step catches)."""


def die(instance, entry):
    raise Killed


@pytest.fixture(autouse=True)
def timeout(settings):
    settings.SCHEDULE_STEP_TIMEOUT_SECONDS = TIMEOUT


def started_and_killed(schedule, monkeypatch):
    """Run now at NOON; the worker takes its first step and dies in the middle of it."""
    with time_machine.travel(NOON, tick=False):
        run = schedule_run_now(schedule=schedule, actor=SYSTEM)
        DBTaskResult.objects.filter(task_path=STEP).delete()  # the worker had claimed it
        with monkeypatch.context() as patch:
            patch.setattr(schedules, "_perform", die)
            with pytest.raises(Killed):
                schedule_step_run(run_id=run.id, index=0)
    run.refresh_from_db()
    assert [task["status"] for task in run.tasks][:1] == ["running"]
    return run


def recover_at(seconds: float) -> int:
    with time_machine.travel(NOON + timedelta(seconds=seconds), tick=False):
        return schedule_steps_recover()


def test_a_step_whose_worker_died_fails_after_the_timeout_and_the_run_goes_on(
    server,
    console,  # noqa: F811
    monkeypatch,
):
    tasks = [
        {"action": "command", "payload": "say one", "continue_on_failure": True},
        {"action": "command", "payload": "say two"},
    ]
    run = started_and_killed(make(server, tasks=tasks), monkeypatch)
    assert recover_at(TIMEOUT - 1) == 0
    assert recover_at(TIMEOUT + 1) == 1
    assert recover_at(TIMEOUT + 2) == 0  # once
    run.refresh_from_db()
    assert run.status == "running"
    assert (run.tasks[0]["status"], run.tasks[0]["error"]) == ("failed", DIED)
    assert run.tasks[0]["completed_at"] == "2026-11-28T12:10:01Z"
    assert steps() == [([run.id, 1], None)]  # its offset has passed: at once
    with time_machine.travel(NOON + timedelta(seconds=TIMEOUT + 3), tick=False):
        run_worker()
    run.refresh_from_db()
    assert console.commands == ["say two"]
    assert [task["status"] for task in run.tasks] == ["failed", "succeeded"]
    assert (run.status, run.reason) == ("failed", "Task 1 failed.")
    assert Event.objects.filter(type="schedule.run_failed").count() == 1


def test_a_step_whose_worker_died_ends_its_run_without_continue_on_failure(
    server,
    console,  # noqa: F811
    monkeypatch,
):
    tasks = [
        {"action": "command", "payload": "say one"},
        {"action": "command", "payload": "say two"},
    ]
    run = started_and_killed(make(server, tasks=tasks), monkeypatch)
    assert recover_at(TIMEOUT + 1) == 1
    assert recover_at(TIMEOUT * 3) == 0
    run.refresh_from_db()
    assert [task["status"] for task in run.tasks] == ["failed", "skipped"]
    assert (run.status, run.reason) == ("failed", f"Task 1 (command) failed: {DIED}"[:500])
    assert steps() == []
    event = Event.objects.get(type="schedule.run_failed")
    assert event.data["object"]["id"] == run.id
    assert event.data["object"]["status"] == "failed"


def test_a_worker_that_wakes_up_after_the_recovery_changes_nothing(
    server,
    console,  # noqa: F811
    monkeypatch,
):
    tasks = [
        {"action": "command", "payload": "say one", "continue_on_failure": True},
        {"action": "command", "payload": "say two", "offset_seconds": 60},
    ]
    schedule = make(server, tasks=tasks)
    with time_machine.travel(NOON, tick=False):
        run = schedule_run_now(schedule=schedule, actor=SYSTEM)
    DBTaskResult.objects.filter(task_path=STEP).delete()
    recovered = []

    def hang(instance, entry):
        # The worker hangs in the task; meanwhile the recovery pass of another process runs.
        recovered.append(recover_at(TIMEOUT + 5))
        return {"action_id": "act_late"}

    monkeypatch.setattr(schedules, "_perform", hang)
    with time_machine.travel(NOON, tick=False):
        schedule_step_run(run_id=run.id, index=0)
    assert recovered == [1]
    run.refresh_from_db()
    assert (run.tasks[0]["status"], run.tasks[0]["error"]) == ("failed", DIED)
    assert "action_id" not in run.tasks[0]
    assert steps() == [([run.id, 1], None)]  # queued by the recovery alone, not again
    # The late worker's step again, as a duplicate delivery would: still nothing.
    schedule_step_run(run_id=run.id, index=0)
    assert steps() == [([run.id, 1], None)]


def test_a_lost_queued_step_fails_after_the_timeout_past_its_time_and_never_runs(
    server,
    console,  # noqa: F811
):
    tasks = [{"action": "command", "payload": "say one", "offset_seconds": 120}]
    schedule = make(server, tasks=tasks)
    with time_machine.travel(NOON, tick=False):
        run = schedule_run_now(schedule=schedule, actor=SYSTEM)
    DBTaskResult.objects.filter(task_path=STEP).delete()  # the queued row is gone
    assert recover_at(120 + TIMEOUT - 1) == 0  # its time was 12:02: not overdue yet
    assert recover_at(120 + TIMEOUT + 1) == 1
    run.refresh_from_db()
    assert (run.tasks[0]["status"], run.tasks[0]["error"]) == ("failed", LOST)
    assert (run.status, run.reason) == ("failed", f"Task 1 (command) failed: {LOST}")
    # The row was not lost after all: a worker takes it late, and does nothing.
    with time_machine.travel(NOON + timedelta(hours=1), tick=False):
        schedule_step_run(run_id=run.id, index=0)
    assert console.commands == []
    run.refresh_from_db()
    assert run.tasks[0]["error"] == LOST
    assert Event.objects.filter(type="schedule.run_failed").count() == 1


def test_a_worker_that_takes_a_step_past_the_timeout_fails_it_by_the_same_rule(
    server,
    console,  # noqa: F811
):
    tasks = [
        {"action": "command", "payload": "say one", "continue_on_failure": True},
        {"action": "command", "payload": "say two", "offset_seconds": 30},
    ]
    schedule = make(server, tasks=tasks)
    with time_machine.travel(NOON, tick=False):
        run = schedule_run_now(schedule=schedule, actor=SYSTEM)
    # Every worker was down for 20 minutes; no recovery pass ran either.
    with time_machine.travel(NOON + timedelta(minutes=20), tick=False):
        run_worker()
    run.refresh_from_db()
    assert console.commands == ["say two"]  # queued anew when the first failed: in time
    assert [(task["status"], task.get("error")) for task in run.tasks] == [
        ("failed", LOST),
        ("succeeded", ""),
    ]
    assert run.status == "failed"


def test_the_next_step_has_its_own_window_from_when_it_was_queued(
    server,
    console,  # noqa: F811
    monkeypatch,
):
    tasks = [
        {"action": "command", "payload": "say one", "continue_on_failure": True},
        {"action": "command", "payload": "say two"},  # offset 0: long past when queued
    ]
    run = started_and_killed(make(server, tasks=tasks), monkeypatch)
    assert recover_at(TIMEOUT + 1) == 1
    DBTaskResult.objects.filter(task_path=STEP).delete()  # and that step is lost too
    assert recover_at(2 * TIMEOUT) == 0  # queued at 12:10:01: 599 s ago
    assert recover_at(2 * TIMEOUT + 2) == 1
    run.refresh_from_db()
    assert [task["error"] for task in run.tasks] == [DIED, LOST]
    assert (run.status, run.reason) == ("failed", f"Task 2 (command) failed: {LOST}")
    assert Event.objects.filter(type="schedule.run_failed").count() == 1


def test_a_long_offset_is_not_taken_for_a_lost_step(server, console):  # noqa: F811
    tasks = [
        {"action": "command", "payload": "say one"},
        {"action": "command", "payload": "say two", "offset_seconds": 900},
    ]
    schedule = make(server, tasks=tasks)
    with time_machine.travel(NOON, tick=False):
        run = schedule_run_now(schedule=schedule, actor=SYSTEM)
        run_worker()
    assert recover_at(900 + TIMEOUT - 5) == 0  # waiting for its time, then within the bound
    with time_machine.travel(NOON + timedelta(seconds=900), tick=False):
        run_worker()
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert console.commands == ["say one", "say two"]


def test_the_dispatch_command_and_housekeeping_run_the_recovery(
    server,
    console,  # noqa: F811
    monkeypatch,
):
    first = started_and_killed(make(server), monkeypatch)
    second = started_and_killed(make(server, name="Other"), monkeypatch)
    out = StringIO()
    with time_machine.travel(NOON + timedelta(seconds=TIMEOUT + 1), tick=False):
        call_command("schedules_dispatch", stdout=out)
    assert ScheduleRun.objects.filter(pk__in=[first.id, second.id], status="failed").count() == 2
    assert "steps timed out 2" in out.getvalue()
    third = started_and_killed(make(server, name="Third"), monkeypatch)
    with time_machine.travel(NOON + timedelta(seconds=TIMEOUT + 1), tick=False):
        assert upkeep.run()["schedule steps timed out"] == 1
    third.refresh_from_db()
    assert third.status == "failed"

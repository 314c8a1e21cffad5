"""Dispatchers racing for the same due schedules, on PostgreSQL where the row locks are real
(SQLite serializes every writer anyway): every due schedule is run once, none twice, and the
dispatchers share the work rather than wait for each other; recovery passes racing for the same
lost steps fail each once."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django_tasks_db.models import DBTaskResult

from accounts.actors import SYSTEM
from events.models import Event
from servers.models import ScheduleRun
from servers.services.schedules import (
    schedule_create,
    schedule_run_now,
    schedule_steps_recover,
    schedules_dispatch,
)
from tests.concurrency import race
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

NOON = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's row locks")
def test_two_dispatchers_run_each_due_tick_once(account, node):
    with time_machine.travel(NOON - timedelta(hours=1), tick=False):
        for _ in range(60):
            schedule_create(
                instance=ServerFactory(account=account, node=node),
                actor=SYSTEM,
                name="Noon",
                cron="0 12 * * *",
                tasks=[{"action": "command", "payload": "say noon"}],
            )

    def dispatcher():
        with time_machine.travel(NOON + timedelta(seconds=2), tick=False):
            return schedules_dispatch(batch=7)

    for _ in range(3):  # again and again: the second and third rounds find nothing due
        results, failures = race(dispatcher, dispatcher, dispatcher)
        assert not failures, failures
        assert sum(result["already run"] for result in results) == 0
    assert ScheduleRun.objects.count() == 60
    assert ScheduleRun.objects.values("schedule_id").distinct().count() == 60


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's row locks")
def test_three_recovery_passes_fail_each_lost_step_once(account, node, settings):
    settings.SCHEDULE_STEP_TIMEOUT_SECONDS = 600
    with time_machine.travel(NOON, tick=False):
        for _ in range(30):
            schedule = schedule_create(
                instance=ServerFactory(account=account, node=node),
                actor=SYSTEM,
                name="Noon",
                cron="0 12 * * *",
                tasks=[{"action": "command", "payload": "say noon"}],
            )
            schedule_run_now(schedule=schedule, actor=SYSTEM)
    DBTaskResult.objects.all().delete()  # every queued step lost

    def recovery():
        with time_machine.travel(NOON + timedelta(seconds=601), tick=False):
            return schedule_steps_recover()

    results, failures = race(recovery, recovery, recovery)
    assert not failures, failures
    assert sum(results) == 30
    assert ScheduleRun.objects.filter(status="failed").count() == 30
    assert Event.objects.filter(type="schedule.run_failed").count() == 30
    results, failures = race(recovery, recovery)
    assert (results, failures) == ([0, 0], [])

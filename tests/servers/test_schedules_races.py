"""Two dispatchers racing for the same due schedules, on PostgreSQL where the row locks are real
(SQLite serializes every writer anyway): every due schedule is run once, none twice, and the
dispatchers share the work rather than wait for each other."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection

from accounts.actors import SYSTEM
from servers.models import ScheduleRun
from servers.services.schedules import schedule_create, schedules_dispatch
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

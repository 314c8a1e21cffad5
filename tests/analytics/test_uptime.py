"""Uptime from a known event history: what counts as up, down and neither, per day and over
the range, and the incidents."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from analytics.models import UptimeDay, UptimeRecordedDay
from analytics.services.uptime import uptime_days_record
from events.models import Event
from tests.factories import BotFactory, ServerFactory

pytestmark = pytest.mark.django_db
D = datetime(2026, 11, 10, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _ten_days_later():
    """The history below is well inside the event log's 30 days."""
    with time_machine.travel(D + timedelta(days=10), tick=False):
        yield


MS = timedelta(milliseconds=1)


def at(day: int, hhmm: str, seconds: int = 0) -> datetime:
    hours, minutes = map(int, hhmm.split(":"))
    return D + timedelta(days=day, hours=hours, minutes=minutes, seconds=seconds)


# (when, event, previous status, new status, by a person, status reason)
HISTORY = [
    (at(0, "08:00"), "status_changed", "stopped", "starting", True, ""),  # the owner starts it
    (at(0, "08:01"), "status_changed", "starting", "running", False, ""),
    (at(0, "12:00"), "status_changed", "running", "stopped", False, "Crashed: exit 1"),
    (at(0, "12:00") + MS, "crashed", None, "stopped", False, "Crashed: exit 1"),
    (at(0, "12:00", 1), "status_changed", "stopped", "starting", False, ""),  # auto-restart
    (at(0, "12:00", 31), "status_changed", "starting", "stopped", False, "Start failed"),
    (at(0, "12:10"), "status_changed", "stopped", "starting", True, ""),  # the owner tries
    (at(0, "12:20"), "status_changed", "starting", "running", False, ""),
    (at(0, "22:00"), "status_changed", "running", "stopping", True, ""),  # stopped for the night
    (at(0, "22:01"), "status_changed", "stopping", "stopped", False, ""),
    (at(1, "06:00"), "status_changed", "stopped", "starting", True, ""),
    (at(1, "06:01"), "status_changed", "starting", "running", False, ""),
    (at(1, "18:00"), "status_changed", "running", "stopped", False, "Crashed: killed (OOM)"),
    (at(1, "18:00") + MS, "crashed", None, "stopped", False, "Crashed: killed (OOM)"),
    (at(1, "20:00"), "status_changed", "stopped", "starting", True, ""),
    (at(1, "20:01"), "status_changed", "starting", "running", False, ""),
    (at(2, "09:00"), "status_changed", "running", "stopped", False, ""),  # `stop` in its console
]


def _log(instance, owner, history=HISTORY):
    for when, event, previous, status, by_person, reason in history:
        Event.objects.create(
            account=instance.account,
            type=f"{instance.kind}.{event}",
            object_type=instance.kind,
            object_id=instance.pk,
            data={
                "object": {"id": instance.pk, "status": status, "status_reason": reason},
                "previous_attributes": {"status": previous} if previous else {},
            },
            actor_user=owner if by_person else None,
            created_at=when,
        )


def _day(date: str, percent: float, up: int, down: int, incidents: int) -> dict:
    return {
        "date": date,
        "uptime_percent": percent,
        "up_seconds": up,
        "down_seconds": down,
        "incidents": incidents,
    }


@pytest.fixture
def server(account):
    return ServerFactory(account=account, created_at=D - timedelta(days=5), status="stopped")


def test_uptime_per_day_and_over_the_range_with_its_incidents(owner_api, owner, server):
    _log(server, owner)
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "2026-11-10T00:00:00Z", "end": "2026-11-13T00:00:00Z"},
    )
    assert answer.status_code == 200, answer.content
    # Day 0: up 08:01-12:00 (14,340 s) and 12:20-22:00 (34,800 s); down 12:00-12:20 (1,200 s,
    #   the failed auto-restart and the owner's retry included); off before 08:01, after 22:00.
    #   49,140 / 50,340 = 97.616 %.
    # Day 1: up 06:01-18:00 (43,140 s) and 20:01-24:00 (14,340 s); down 18:00-20:01 (7,260 s).
    #   57,480 / 64,740 = 88.786 %.
    # Day 2: up 00:00-09:00 (32,400 s), then it stopped on its own: off. 100 %.
    # Total: 139,020 up, 8,460 down: 139,020 / 147,480 = 94.264 %.
    assert answer.json()["data"]["uptime"] == {
        "start": "2026-11-10T00:00:00Z",
        "end": "2026-11-13T00:00:00Z",
        "uptime_percent": 94.264,
        "up_seconds": 139020,
        "down_seconds": 8460,
        "days": [
            _day("2026-11-10", 97.616, 49140, 1200, 1),
            _day("2026-11-11", 88.786, 57480, 7260, 1),
            _day("2026-11-12", 100.0, 32400, 0, 0),
        ],
        "incidents": [
            {
                "started_at": "2026-11-10T12:00:00Z",
                "ended_at": "2026-11-10T12:20:00Z",
                "duration_seconds": 1200,
                "reason": "Crashed: exit 1",
            },
            {
                "started_at": "2026-11-11T18:00:00Z",
                "ended_at": "2026-11-11T20:01:00Z",
                "duration_seconds": 7260,
                "reason": "Crashed: killed (OOM)",
            },
        ],
    }


def test_a_crash_without_a_restart_is_an_incident_until_someone_acts(owner_api, owner, account):
    bot = BotFactory(account=account, created_at=D - timedelta(days=1), status="stopped")
    _log(
        bot,
        owner,
        [
            (at(0, "10:00"), "status_changed", "starting", "running", False, ""),
            (at(0, "11:00"), "status_changed", "running", "stopped", False, "Crashed: exit 2"),
            (at(0, "11:00") + MS, "crashed", None, "stopped", False, "Crashed: exit 2"),
        ],
    )
    answer = owner_api.get(
        f"/v1/bots/{bot.id}/uptime",
        {"start": "2026-11-10T00:00:00Z", "end": "2026-11-10T12:00:00Z"},
    )
    uptime = answer.json()["data"]["uptime"]
    assert (uptime["up_seconds"], uptime["down_seconds"]) == (3600, 3600)
    assert uptime["incidents"] == [
        {
            "started_at": "2026-11-10T11:00:00Z",
            "ended_at": None,
            "duration_seconds": None,
            "reason": "Crashed: exit 2",
        }
    ]


def test_an_instance_never_meant_to_run_has_no_percentage(owner_api, server):
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "2026-11-10T00:00:00Z", "end": "2026-11-11T00:00:00Z"},
    )
    uptime = answer.json()["data"]["uptime"]
    assert uptime["uptime_percent"] is None and uptime["days"][0]["uptime_percent"] is None


def test_time_before_the_instance_existed_is_not_counted(owner_api, account):
    server = ServerFactory(account=account, created_at=D + timedelta(hours=12))  # running
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "2026-11-10T00:00:00Z", "end": "2026-11-11T00:00:00Z"},
    )
    assert answer.json()["data"]["uptime"]["up_seconds"] == 12 * 3600


def test_uptime_is_the_accounts_own(outsider_api, owner, make_token, client_for, account, server):
    assert outsider_api.get(f"/v1/servers/{server.id}/uptime").status_code == 404
    no_analytics = client_for(make_token(owner, account, ["servers:read"]))
    assert no_analytics.get(f"/v1/servers/{server.id}/uptime").status_code == 403


def test_a_backwards_range_is_refused(owner_api, server):
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "2026-11-12T00:00:00Z", "end": "2026-11-10T00:00:00Z"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["details"]["parameters"][0]["name"] == "end"


# --- Recorded days: uptime beyond the event log -----------------------------------------------


def test_housekeeping_records_each_finished_day_once(owner, server):
    _log(server, owner)
    # Now 2026-11-20 12:00: the log covers whole days from 2026-10-22 to yesterday, the 19th.
    assert uptime_days_record() == 29
    assert uptime_days_record() == 0
    assert UptimeRecordedDay.objects.count() == 29
    rows = {
        row.day.isoformat(): (row.up_seconds, row.down_seconds, row.incidents)
        for row in UptimeDay.objects.filter(instance_id=server.id)
    }
    # Before the 10th it was stopped (off): no rows; the 12th it ran until 09:00.
    assert rows == {
        "2026-11-10": (49140, 1200, 1),
        "2026-11-11": (57480, 7260, 1),
        "2026-11-12": (32400, 0, 0),
    }


def test_uptime_before_the_event_log_comes_from_the_recorded_days(
    owner_api, owner, server, settings
):
    _log(server, owner)
    uptime_days_record()
    # The log shrinks to 5 days and its old events go: the 10th to 12th are recorded days now.
    settings.EVENT_RETENTION_DAYS = 5
    Event.objects.filter(created_at__lt=D + timedelta(days=5)).delete()
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "2026-11-09T00:00:00Z", "end": "2026-11-13T00:00:00Z"},
    )
    uptime = answer.json()["data"]["uptime"]
    days = [(d["date"], d["up_seconds"], d["down_seconds"], d["incidents"]) for d in uptime["days"]]
    assert days == [
        ("2026-11-09", 0, 0, 0),  # recorded: not meant to run
        ("2026-11-10", 49140, 1200, 1),
        ("2026-11-11", 57480, 7260, 1),
        ("2026-11-12", 32400, 0, 0),
    ]
    assert (uptime["up_seconds"], uptime["down_seconds"]) == (139020, 8460)
    assert uptime["incidents"] == []  # their details went with the events


def test_days_before_the_log_that_were_not_recorded_are_unknown(owner_api, server, settings):
    settings.EVENT_RETENTION_DAYS = 5
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "2026-11-09T00:00:00Z", "end": "2026-11-10T00:00:00Z"},
    )
    day = answer.json()["data"]["uptime"]["days"][0]
    assert day == {
        "date": "2026-11-09",
        "uptime_percent": None,
        "up_seconds": None,
        "down_seconds": None,
        "incidents": None,
    }


def test_a_range_before_1970_starts_in_1970_or_is_refused(owner_api, server):
    answer = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "0209-11-10T19:19:08Z", "end": "1970-01-03T00:00:00Z"},
    )
    assert answer.status_code == 200
    assert answer.json()["data"]["uptime"]["start"] == "1970-01-01T00:00:00Z"
    refused = owner_api.get(
        f"/v1/servers/{server.id}/uptime",
        {"start": "0209-11-10T19:19:08Z", "end": "0209-12-10T19:19:08Z"},
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_parameter"

"""The customer's usage and uptime reports: per month and server or bot, against hand-worked
figures, in JSON and CSV, the account's own only."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from analytics.models import UsageDay
from events.models import Event
from tests.factories import BotFactory, ServerFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 15, 12, tzinfo=UTC)


def day_row(
    instance,
    day: datetime,
    samples: int,
    cpu_sum: float,
    cpu_max: float,
    memory_sum: int,
    memory_max: int,
    disk_max: int,
    rx,
    tx,
    players_max: int | None = None,
) -> None:
    """A day rollup as the ingest would have left it (only the columns the report reads
    matter; the others are filled consistently enough)."""
    UsageDay.objects.create(
        instance_id=instance.id,
        bucket=day,
        samples=samples,
        last_at=day + timedelta(hours=23),
        cpu_percent_min=0,
        cpu_percent_sum=cpu_sum,
        cpu_percent_max=cpu_max,
        cpu_percent_last=0,
        memory_bytes_min=0,
        memory_bytes_sum=memory_sum,
        memory_bytes_max=memory_max,
        memory_bytes_last=0,
        disk_bytes_min=0,
        disk_bytes_sum=disk_max * samples,
        disk_bytes_max=disk_max,
        disk_bytes_last=disk_max,
        uptime_seconds_min=0,
        uptime_seconds_sum=0,
        uptime_seconds_max=0,
        uptime_seconds_last=0,
        network_rx_bytes=rx,
        network_tx_bytes=tx,
        players_samples=0 if players_max is None else samples,
        players_max=players_max,
    )


def get(api, path: str, **params):
    with time_machine.travel(NOW, tick=False):
        return api.get(path, params)


def test_usage_per_month_and_server(owner_api, account, other_account):
    server = ServerFactory(account=account, name="Survival")
    bot = BotFactory(account=account, name="Mod bot")
    theirs = ServerFactory(account=other_account, name="Theirs")
    day_row(server, datetime(2026, 10, 5, tzinfo=UTC), 100, 1000, 50, 100 * 200, 300, 7, 10, 20, 12)
    day_row(
        server, datetime(2026, 10, 20, tzinfo=UTC), 300, 6000, 80, 300 * 100, 250, 9, 5, None, 17
    )
    day_row(bot, datetime(2026, 11, 2, tzinfo=UTC), 10, 15, 3, 10 * 64, 64, 1, None, None)
    day_row(theirs, datetime(2026, 10, 5, tzinfo=UTC), 1, 1, 1, 1, 1, 1, 1, 1)

    answer = get(
        owner_api, "/v1/analytics/reports/usage", start_month="2026-10", end_month="2026-11"
    )
    assert answer.status_code == 200, answer.content
    report = answer.json()["data"]["report"]
    assert report["name"] == "usage"
    assert report["rows"] == [
        # October: 400 samples; CPU (1,000 + 6,000) / 400 = 17.5, peak 80; memory
        # (20,000 + 30,000) / 400 = 125, peak 300; disk at most 9; at most 17 players (its
        # game's query); received 10 + 5; sent 20.
        {
            "month": "2026-10",
            "kind": "server",
            "instance_id": server.id,
            "name": "Survival",
            "samples": 400,
            "cpu_percent_avg": 17.5,
            "cpu_percent_max": 80.0,
            "memory_bytes_avg": 125,
            "memory_bytes_max": 300,
            "disk_bytes_max": 9,
            "players_max": 17,
            "network_rx_bytes": 15,
            "network_tx_bytes": 20,
            "deleted_at": None,
        },
        {
            "month": "2026-11",
            "kind": "bot",
            "instance_id": bot.id,
            "name": "Mod bot",
            "samples": 10,
            "cpu_percent_avg": 1.5,
            "cpu_percent_max": 3.0,
            "memory_bytes_avg": 64,
            "memory_bytes_max": 64,
            "disk_bytes_max": 1,
            "players_max": None,  # a bot answers no game query
            "network_rx_bytes": None,
            "network_tx_bytes": None,
            "deleted_at": None,
        },
    ]
    csv = get(
        owner_api,
        "/v1/analytics/reports/usage",
        start_month="2026-10",
        end_month="2026-11",
        format="csv",
    )
    assert csv["Content-Type"].startswith("text/csv")
    lines = csv.content.decode().splitlines()
    assert lines[0].startswith("month,kind,instance_id,name,samples,cpu_percent_avg")
    assert lines[1] == f"2026-10,server,{server.id},Survival,400,17.5,80.0,125,300,9,17,15,20,"
    assert lines[2] == f"2026-11,bot,{bot.id},Mod bot,10,1.5,3.0,64,64,1,,,,"


def _event(instance, when, event, previous, status):
    Event.objects.create(
        account=instance.account,
        type=f"{instance.kind}.{event}",
        object_type=instance.kind,
        object_id=instance.pk,
        created_at=when,
        data={
            "object": {"id": instance.pk, "status": status, "status_reason": "Crashed: exit 1"},
            "previous_attributes": {"status": previous} if previous else {},
        },
    )


def test_uptime_per_month_within_the_event_log(owner_api, account, settings):
    settings.EVENT_RETENTION_DAYS = 30  # the log covers whole days from 2026-10-17 on
    server = ServerFactory(
        account=account, name="Survival", created_at=datetime(2026, 10, 1, tzinfo=UTC)
    )
    crash = datetime(2026, 11, 10, 8, tzinfo=UTC)
    _event(server, crash, "status_changed", "running", "stopped")
    _event(server, crash + timedelta(milliseconds=1), "crashed", None, "stopped")
    _event(server, crash + timedelta(minutes=20), "status_changed", "stopped", "starting")
    _event(server, crash + timedelta(minutes=21), "status_changed", "starting", "running")

    answer = get(
        owner_api, "/v1/analytics/reports/uptime", start_month="2026-09", end_month="2026-11"
    )
    assert answer.json()["data"]["report"]["rows"] == [
        # September: before the server existed, no row. October: the 1st to the 16th are
        # before the log and were not recorded (not known); from the 17th to November, 15
        # days running = 1,296,000 s.
        {
            "month": "2026-10",
            "kind": "server",
            "instance_id": server.id,
            "name": "Survival",
            "uptime": 1.0,
            "up_seconds": 1296000,
            "down_seconds": 0,
            "incidents": 0,
            "deleted_at": None,
        },
        # November to now (14.5 days = 1,252,800 s): down 21 minutes (1,260 s) after the
        # crash; 1,251,540 / 1,252,800 = 0.99899 → 0.999.
        {
            "month": "2026-11",
            "kind": "server",
            "instance_id": server.id,
            "name": "Survival",
            "uptime": 0.999,
            "up_seconds": 1251540,
            "down_seconds": 1260,
            "incidents": 1,
            "deleted_at": None,
        },
    ]


def test_months_before_the_event_log_have_no_uptime(owner_api, account, settings):
    settings.EVENT_RETENTION_DAYS = 30
    server = ServerFactory(account=account, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    rows = get(
        owner_api, "/v1/analytics/reports/uptime", start_month="2026-09", end_month="2026-09"
    ).json()["data"]["report"]["rows"]
    assert rows == [
        {
            "month": "2026-09",
            "kind": "server",
            "instance_id": server.id,
            "name": server.name,
            "uptime": None,
            "up_seconds": None,
            "down_seconds": None,
            "incidents": None,
            "deleted_at": None,
        },
    ]


def test_the_reports_are_the_accounts_own_and_need_analytics_read(
    outsider_api, teammate_api, account
):
    ServerFactory(account=account, name="Mine")
    assert get(outsider_api, "/v1/analytics/reports/uptime").json()["data"]["report"]["rows"] == []
    for path in ("usage", "uptime"):
        refused = get(teammate_api, f"/v1/analytics/reports/{path}")  # servers:read only
        assert refused.status_code == 403
        assert refused.json()["error"]["details"] == {"required_scopes": ["analytics:read"]}

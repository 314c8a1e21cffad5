"""History keeps deleted servers and bots: after a deletion through the lifecycle, account
usage and the usage and uptime reports of a past range still show their rows, with their
name, marked deleted (``deleted_at``)."""

from datetime import UTC, datetime, timedelta

import pytest

from analytics.models import UptimeDay
from analytics.services.uptime import uptime_day_record
from analytics.services.usage import Measurement, usage_record
from servers.models import Bot, Server
from tests.dashboard import signed_in
from tests.factories import BotFactory, ServerFactory
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db
NOW = datetime.now(UTC)
TODAY = NOW.replace(hour=0, minute=0, second=0, microsecond=0)
YESTERDAY = TODAY - timedelta(days=1)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _sample(instance_id: str, at: datetime, cpu: float) -> Measurement:
    return Measurement(
        instance_id=instance_id,
        at=at,
        cpu_percent=cpu,
        memory_bytes=100,
        disk_bytes=7,
        uptime_seconds=3600,
        network_rx_bytes=None,
        network_tx_bytes=None,
    )


@pytest.fixture
def gone(owner_api, account):
    """A server and a bot that ran and reported yesterday, deleted today through the API and
    the worker; and a server that stays."""
    server = ServerFactory(account=account, name="Old SMP", created_at=YESTERDAY)
    bot = BotFactory(account=account, name="Old bot", created_at=YESTERDAY)
    kept = ServerFactory(account=account, name="Kept", created_at=YESTERDAY)
    usage_record(
        measurements=[
            _sample(server.id, YESTERDAY + timedelta(hours=2), 40),
            _sample(bot.id, YESTERDAY + timedelta(hours=3), 4),
            _sample(kept.id, YESTERDAY + timedelta(hours=4), 10),
        ],
        now=YESTERDAY + timedelta(hours=5),
    )
    assert owner_api.delete(f"/v1/servers/{server.id}").status_code == 202
    assert owner_api.delete(f"/v1/bots/{bot.id}").status_code == 202
    run_worker()
    server, bot = Server.objects.get(pk=server.pk), Bot.objects.get(pk=bot.pk)
    assert server.deleted_at is not None and bot.deleted_at is not None
    assert owner_api.get(f"/v1/servers/{server.id}").status_code == 404
    return server, bot, kept


def test_account_usage_of_a_past_range_keeps_deleted_instances_marked(owner_api, gone):
    server, bot, kept = gone
    answer = owner_api.get(
        "/v1/analytics/usage", {"start": _iso(YESTERDAY - timedelta(days=7)), "end": _iso(TODAY)}
    )
    assert answer.status_code == 200, answer.content
    usage = answer.json()["data"]["usage"]
    assert usage["totals"]["instances"] == 3
    rows = {row["id"]: row for row in usage["consumers"]}
    assert set(rows) == {server.id, bot.id, kept.id}
    assert (rows[server.id]["name"], rows[server.id]["deleted_at"]) == (
        "Old SMP",
        _iso(server.deleted_at),
    )
    assert (rows[bot.id]["kind"], rows[bot.id]["deleted_at"]) == ("bot", _iso(bot.deleted_at))
    assert rows[kept.id]["deleted_at"] is None
    assert rows[server.id]["cpu_percent"] == 40.0


def test_the_usage_report_keeps_deleted_instances_marked(owner_api, gone):
    server, bot, kept = gone
    month = f"{YESTERDAY:%Y-%m}"
    answer = owner_api.get(
        "/v1/analytics/reports/usage", {"start_month": month, "end_month": f"{TODAY:%Y-%m}"}
    )
    assert answer.status_code == 200, answer.content
    report = answer.json()["data"]["report"]
    assert {"name": "deleted_at", "type": "time", "label": "Deleted"} in report["columns"]
    rows = {row["instance_id"]: row for row in report["rows"] if row["month"] == month}
    assert set(rows) == {server.id, bot.id, kept.id}
    assert (rows[server.id]["name"], rows[server.id]["deleted_at"]) == (
        "Old SMP",
        _iso(server.deleted_at),
    )
    assert rows[bot.id]["deleted_at"] == _iso(bot.deleted_at)
    assert rows[kept.id]["deleted_at"] is None
    csv = owner_api.get(
        "/v1/analytics/reports/usage",
        {"start_month": month, "end_month": month, "format": "csv"},
    ).content.decode()
    assert csv.splitlines()[0].endswith(",deleted_at")
    assert f"Old SMP,{rows[server.id]['samples']}" in csv and _iso(server.deleted_at) in csv


def test_the_uptime_report_keeps_deleted_instances_marked(owner_api, gone):
    server, bot, kept = gone
    answer = owner_api.get(
        "/v1/analytics/reports/uptime",
        {"start_month": f"{YESTERDAY:%Y-%m}", "end_month": f"{TODAY:%Y-%m}"},
    )
    assert answer.status_code == 200, answer.content
    rows = answer.json()["data"]["report"]["rows"]
    marked = {row["instance_id"]: row["deleted_at"] for row in rows}
    assert marked == {
        server.id: _iso(server.deleted_at),
        bot.id: _iso(bot.deleted_at),
        kept.id: None,
    }
    assert {row["name"] for row in rows} == {"Old SMP", "Old bot", "Kept"}


def test_an_instance_deleted_before_the_range_is_not_listed_in_uptime(owner_api, account):
    long_gone = ServerFactory(
        account=account, name="Long gone", created_at=TODAY - timedelta(days=90)
    )
    Server.objects.filter(pk=long_gone.pk).update(deleted_at=TODAY - timedelta(days=80))
    answer = owner_api.get(
        "/v1/analytics/reports/uptime",
        {"start_month": f"{TODAY:%Y-%m}", "end_month": f"{TODAY:%Y-%m}"},
    )
    assert answer.json()["data"]["report"]["rows"] == []


def test_the_day_of_a_deletion_is_recorded_for_uptime(account):
    """Housekeeping records yesterday for an instance deleted since: its day stays known."""
    server = ServerFactory(account=account, created_at=YESTERDAY - timedelta(days=2))
    Server.objects.filter(pk=server.pk).update(deleted_at=TODAY + timedelta(hours=1))
    uptime_day_record(day=YESTERDAY.date(), now=TODAY + timedelta(hours=2))
    assert UptimeDay.objects.filter(instance_id=server.id, day=YESTERDAY.date()).exists()


def test_the_overview_lists_a_deleted_consumer_marked_without_a_link(owner, gone):
    server, _, _ = gone
    page = signed_in(owner).get("/overview").content.decode()
    assert f"server, deleted {server.deleted_at:%Y-%m-%d}" in page
    assert f"/servers/{server.id}" not in page

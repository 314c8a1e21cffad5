"""GET /v1/analytics/usage: an account's totals and largest consumers over a range."""

from datetime import UTC, datetime, timedelta

import pytest

from analytics.services.usage import Measurement, usage_record
from tests.factories import BotFactory, ServerFactory

pytestmark = pytest.mark.django_db
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _sample(instance_id, at, *, cpu, memory, disk, rx):
    return Measurement(
        instance_id=instance_id,
        at=at,
        cpu_percent=cpu,
        memory_bytes=memory,
        disk_bytes=disk,
        uptime_seconds=int((at - TODAY).total_seconds()) + 86400 * 2,
        network_rx_bytes=rx,
        network_tx_bytes=None,
    )


@pytest.fixture
def fleet(account, other_account):
    server = ServerFactory(account=account, name="Survival")
    bot = BotFactory(account=account, name="Mod bot")
    theirs = ServerFactory(account=other_account, name="Not yours")
    yesterday = TODAY - timedelta(days=1)
    usage_record(
        measurements=[
            _sample(server.id, yesterday + timedelta(hours=1), cpu=50, memory=100, disk=7, rx=10),
            _sample(server.id, yesterday + timedelta(hours=9), cpu=150, memory=300, disk=9, rx=40),
            _sample(bot.id, yesterday + timedelta(hours=2), cpu=5, memory=1000, disk=1, rx=None),
            _sample(theirs.id, yesterday + timedelta(hours=3), cpu=99, memory=9, disk=9, rx=999),
        ]
    )
    return server, bot


def test_totals_and_the_largest_consumers(owner_api, fleet):
    server, bot = fleet
    answer = owner_api.get(
        "/v1/analytics/usage",
        {"start": _iso(TODAY - timedelta(days=8)), "end": _iso(TODAY), "top": "memory_bytes"},
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["usage"] == {
        "start": _iso(TODAY - timedelta(days=8)),
        "end": _iso(TODAY),
        "resolution": "day",
        "totals": {
            "instances": 2,
            "cpu_percent": 105.0,  # (50 + 150) / 2 + 5
            "memory_bytes": 1200,  # (100 + 300) / 2 + 1000
            "disk_bytes": 10,  # 9 + 1, the most each used
            # the first sample found its process running for days: only the 30 bytes after it
            "network_rx_bytes": 30,
            "network_tx_bytes": None,
        },
        "top": "memory_bytes",
        "consumers": [
            {
                "id": bot.id,
                "kind": "bot",
                "name": "Mod bot",
                "samples": 1,
                "cpu_percent": 5.0,
                "cpu_percent_max": 5.0,
                "memory_bytes": 1000,
                "memory_bytes_max": 1000,
                "disk_bytes": 1,
                "network_rx_bytes": None,
                "network_tx_bytes": None,
                "deleted_at": None,
            },
            {
                "id": server.id,
                "kind": "server",
                "name": "Survival",
                "samples": 2,
                "cpu_percent": 100.0,
                "cpu_percent_max": 150.0,
                "memory_bytes": 200,
                "memory_bytes_max": 300,
                "disk_bytes": 9,
                "network_rx_bytes": 30,
                "network_tx_bytes": None,
                "deleted_at": None,
            },
        ],
    }


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_short_range_is_read_from_minute_rows_widened_to_whole_minutes(owner_api, fleet):
    yesterday = TODAY - timedelta(days=1)
    answer = owner_api.get(
        "/v1/analytics/usage",
        {
            "start": _iso(yesterday + timedelta(minutes=59, seconds=30)),
            "end": _iso(yesterday + timedelta(hours=1, seconds=1)),
            "limit": 1,
        },
    )
    usage = answer.json()["data"]["usage"]
    assert usage["resolution"] == "minute"
    assert usage["start"] == _iso(yesterday + timedelta(minutes=59))
    assert usage["end"] == _iso(yesterday + timedelta(hours=1, minutes=1))
    assert usage["totals"]["instances"] == 1 and len(usage["consumers"]) == 1


def test_an_outsider_sees_only_their_own(outsider_api, fleet):
    usage = outsider_api.get("/v1/analytics/usage").json()["data"]["usage"]
    assert [c["name"] for c in usage["consumers"]] == ["Not yours"]


def test_a_teammate_with_analytics_read_sees_the_account(
    account, teammate, make_token, client_for, fleet
):
    client = client_for(make_token(teammate, account, ["analytics:read"]))
    assert client.get("/v1/analytics/usage").json()["data"]["usage"]["totals"]["instances"] == 2
    no_scope = client_for(make_token(teammate, account, ["servers:read"]))
    assert no_scope.get("/v1/analytics/usage").status_code == 403


@pytest.mark.parametrize(
    "params, name",
    [({"top": "players"}, "top"), ({"limit": "0"}, "limit"), ({"end": "soon"}, "end")],
)
def test_bad_parameters_are_refused(owner_api, params, name):
    answer = owner_api.get("/v1/analytics/usage", params)
    assert answer.status_code == 400
    assert answer.json()["error"]["details"]["parameters"][0]["name"] == name

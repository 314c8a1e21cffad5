"""GET /v1/servers/{id}/metrics and /v1/bots/{id}/metrics: the step, the table read, the
shape, the parameters refused, and who may read them."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.roles import Role
from analytics.selectors.usage import metrics_plan
from analytics.services.usage import Measurement, usage_record
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db
NOW = datetime.now(UTC).replace(microsecond=0)
HOUR = timedelta(hours=1)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    "span, step, expected_step, level",
    [
        (HOUR, None, 10, "raw"),  # 360 points
        (timedelta(hours=24), None, 300, "minute"),  # 86,400 / 500 = 172.8 → 5 min
        (timedelta(days=7), None, 1800, "minute"),  # 1,209.6 → 30 min
        (timedelta(days=30), None, 7200, "hour"),  # 5,184 → 2 h
        (timedelta(days=365), None, 86400, "day"),  # 63,072 → 1 day
        (HOUR, 60, 60, "minute"),  # asked for, and it fits
        (HOUR, 45, 45, "raw"),  # any step of 10 s or more, from the raw samples
        (timedelta(days=30), 60, 7200, "hour"),  # 43,200 points: grown to fit
        (timedelta(hours=24), 3600, 3600, "hour"),
    ],
)
def test_the_step_grows_to_fit_500_points_and_picks_its_table(span, step, expected_step, level):
    plan = metrics_plan(start=NOW - span, end=NOW, step=step, now=NOW)
    assert (plan.step, plan.level.name) == (expected_step, level)
    assert (plan.end - plan.start).total_seconds() / plan.step <= 500
    assert plan.start <= NOW - span and plan.end >= NOW
    assert plan.start.timestamp() % plan.step == 0


def test_a_range_past_a_tables_retention_is_read_from_a_coarser_one():
    # An hour 40 days ago: raw samples (3 days) and minute rows (30 days) are gone.
    start = NOW - timedelta(days=40)
    plan = metrics_plan(start=start, end=start + HOUR, now=NOW)
    assert (plan.level.name, plan.step) == ("hour", 3600)


def _record(instance_id: str, *, at: datetime, cpu: float, memory: int, rx: int | None = None):
    """One sample of a process started at midnight the day before (its uptime grows with
    ``at``, and is never so short that a sample just after midnight reads as a restart)."""
    midnight = at.replace(hour=0, minute=0, second=0) - timedelta(days=1)
    usage_record(
        measurements=[
            Measurement(
                instance_id=instance_id,
                at=at,
                cpu_percent=cpu,
                memory_bytes=memory,
                disk_bytes=10 * 2**30,
                uptime_seconds=int((at - midnight).total_seconds()),
                network_rx_bytes=rx,
                network_tx_bytes=None,
            )
        ]
    )


@pytest.fixture
def server(account):
    return ServerFactory(account=account)


@pytest.fixture
def measured(server):
    """Three samples in the minute 12:00 of today's past hour, one in 12:01."""
    minute = (NOW - HOUR).replace(minute=0, second=0)
    _record(server.id, at=minute + timedelta(seconds=5), cpu=10, memory=100, rx=1000)
    _record(server.id, at=minute + timedelta(seconds=25), cpu=20, memory=300, rx=1500)
    _record(server.id, at=minute + timedelta(seconds=45), cpu=60, memory=200, rx=1600)
    _record(server.id, at=minute + timedelta(seconds=65), cpu=5, memory=50, rx=1700)
    return minute


def test_it_answers_the_documented_shape(owner_api, server, measured):
    answer = owner_api.get(
        f"/v1/servers/{server.id}/metrics",
        {
            "metrics": "cpu_percent,memory_bytes,network_rx_bytes",
            "start": _iso(measured),
            "end": _iso(measured + timedelta(minutes=2)),
            "step": 60,
        },
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["metrics"] == {
        "start": _iso(measured),
        "end": _iso(measured + timedelta(minutes=2)),
        "step": 60,
        "series": [
            {
                "metric": "cpu_percent",
                "unit": "percent",
                "aggregate": "avg",
                # (10 + 20 + 60) / 3 = 30; then 5
                "points": [[_iso(measured), 30.0], [_iso(measured + timedelta(minutes=1)), 5.0]],
            },
            {
                "metric": "memory_bytes",
                "unit": "bytes",
                "aggregate": "avg",
                "points": [[_iso(measured), 200], [_iso(measured + timedelta(minutes=1)), 50]],
            },
            {
                "metric": "network_rx_bytes",
                "unit": "bytes",
                "aggregate": "sum",
                # 0 for the first sample (its process ran for hours before: not ours to
                # count) + 500 + 100; then 100
                "points": [[_iso(measured), 600], [_iso(measured + timedelta(minutes=1)), 100]],
            },
        ],
    }


def test_max_and_last_come_from_the_same_rows(owner_api, server, measured):
    answer = owner_api.get(
        f"/v1/servers/{server.id}/metrics",
        {
            "metrics": "cpu_percent",
            "aggregate": "max",
            "start": _iso(measured),
            "end": _iso(measured + timedelta(minutes=2)),
            "step": 120,
        },
    )
    assert answer.json()["data"]["metrics"]["series"][0]["points"] == [[_iso(measured), 60.0]]
    answer = owner_api.get(
        f"/v1/servers/{server.id}/metrics",
        {
            "metrics": "memory_bytes",
            "aggregate": "last",
            "start": _iso(measured),
            "end": _iso(measured + timedelta(minutes=2)),
            "step": 120,
        },
    )
    assert answer.json()["data"]["metrics"]["series"][0]["points"] == [[_iso(measured), 50]]


def test_bots_have_metrics_too(owner_api, account):
    bot = BotFactory(account=account)
    _record(bot.id, at=NOW - timedelta(minutes=5), cpu=1.5, memory=64 * 2**20)
    answer = owner_api.get(f"/v1/bots/{bot.id}/metrics", {"metrics": "memory_bytes"})
    assert answer.status_code == 200
    assert answer.json()["data"]["metrics"]["series"][0]["points"][0][1] == 64 * 2**20


def test_the_owner_and_a_teammate_read_it_and_an_outsider_gets_404(
    owner_api, account, make_token, client_for, outsider_api, server, measured
):
    teammate = MembershipFactory(account=account, role=Role.DEVELOPER).user
    teammate_api = client_for(make_token(teammate, account, ["analytics:read", "servers:read"]))
    for client in (owner_api, teammate_api):
        assert client.get(f"/v1/servers/{server.id}/metrics").status_code == 200
    answer = outsider_api.get(f"/v1/servers/{server.id}/metrics")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"
    # and a bot's id is not a server
    assert owner_api.get(f"/v1/bots/{server.id}/metrics").status_code == 404


def test_it_needs_analytics_and_servers_read(account, owner, make_token, client_for, server):
    for scopes in (["servers:read"], ["analytics:read"]):
        answer = client_for(make_token(owner, account, scopes)).get(
            f"/v1/servers/{server.id}/metrics"
        )
        assert answer.status_code == 403
        assert answer.json()["error"]["details"]["required_scopes"] == [
            "analytics:read",
            "servers:read",
        ]


@pytest.mark.parametrize(
    "params, name",
    [
        ({"metrics": "cpu_percent,bogus"}, "metrics"),
        ({"aggregate": "median"}, "aggregate"),
        ({"step": "5"}, "step"),
        ({"step": "ten"}, "step"),
        ({"start": "yesterday"}, "start"),
        ({"start": "2026-11-24T10:00:00Z", "end": "2026-11-24T09:00:00Z"}, "end"),
        ({"start": "2010-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "start"),
        ({"metrics": ["cpu_percent", "memory_bytes"]}, "metrics"),  # given twice
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(owner_api, server, params, name):
    answer = owner_api.get(f"/v1/servers/{server.id}/metrics", params)
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert error["details"]["parameters"][0]["name"] == name


def test_the_default_is_the_last_24_hours_of_cpu_memory_disk_and_network(owner_api, server):
    answer = owner_api.get(f"/v1/servers/{server.id}/metrics")
    body = answer.json()["data"]["metrics"]
    assert body["step"] == 300
    assert [s["metric"] for s in body["series"]] == [
        "cpu_percent",
        "memory_bytes",
        "disk_bytes",
        "network_rx_bytes",
        "network_tx_bytes",
    ]
    assert all(s["points"] == [] for s in body["series"])

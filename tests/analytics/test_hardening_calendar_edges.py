"""Dates at the calendar's edges (year 1, year 9999, with the largest offsets) on every analytics
endpoint and page that takes a range: never a 500; a refusal is 400 ``invalid_parameter`` in
the envelope, naming a parameter that was sent."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from analytics.services.usage import Measurement, usage_record
from tests.analytics.conftest import staff_key
from tests.dashboard import signed_in
from tests.factories import BotFactory, ServerFactory, UserFactory

pytestmark = pytest.mark.django_db

LOW = (
    "0001-01-01",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T00:00:00-12:00",
)
HIGH = (
    "9999-12-31",
    "9999-12-31T23:59:59",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59.999999+00:00",
    "9999-12-31T23:59:59+14:00",
    "9999-12-31T23:59:59-12:00",
)
EDGES = LOW + HIGH
# Only one end, both ends either way round, and one edge beside an ordinary moment.
RANGES = (
    [{"start": value} for value in EDGES]
    + [{"end": value} for value in EDGES]
    + [{"start": low, "end": high} for low in LOW for high in HIGH[:3]]
    + [{"start": high, "end": low} for low in LOW[:2] for high in HIGH]
    + [{"start": "2026-01-01T00:00:00Z", "end": value} for value in EDGES]
    + [{"start": value, "end": "2026-01-01T00:00:00Z"} for value in EDGES]
)
MONTHS = ("0001-01", "0000-01", "9999-12", "1969-12", "1970-01")
MONTH_RANGES = (
    [{"start_month": value} for value in MONTHS]
    + [{"end_month": value} for value in MONTHS]
    + [{"start_month": "0001-01", "end_month": "9999-12"}]
    + [{"start_month": "1970-01", "end_month": "1970-01"}]
)
DAYS = ("0001-01-01", "1970-01-01", "9999-12-30", "9999-12-31", "0000-01-01")


def _ids(params: dict) -> str:
    return "&".join(f"{name}={value}" for name, value in params.items())


def assert_answered(response, params: dict) -> None:
    """Not a 500: a 200, or a 400 ``invalid_parameter`` that names a parameter sent."""
    assert response.status_code < 500, response.content
    if response.status_code == 200:
        return
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == "invalid_parameter"
    assert body["error"]["request_id"].startswith("req_")
    assert {p["name"] for p in body["error"]["details"]["parameters"]} <= set(params), body


@pytest.fixture
def instances(account):
    server, bot = ServerFactory(account=account), BotFactory(account=account)
    now = datetime.now(UTC)
    usage_record(
        measurements=[
            Measurement(
                instance_id=instance.id,
                at=now - timedelta(minutes=5),
                cpu_percent=1.0,
                memory_bytes=1,
                disk_bytes=1,
                uptime_seconds=60,
            )
            for instance in (server, bot)
        ]
    )
    return server, bot


RANGE_PATHS = (
    "/v1/servers/{server}/metrics",
    "/v1/bots/{bot}/metrics",
    "/v1/servers/{server}/uptime",
    "/v1/bots/{bot}/uptime",
    "/v1/analytics/usage",
)


@pytest.mark.parametrize("path", RANGE_PATHS)
@pytest.mark.parametrize("params", RANGES, ids=_ids)
def test_a_range_at_the_calendars_edges_is_answered_or_refused(owner_api, instances, path, params):
    server, bot = instances
    response = owner_api.get(path.format(server=server.id, bot=bot.id), params)
    assert_answered(response, params)


@pytest.mark.parametrize("path", RANGE_PATHS)
@pytest.mark.parametrize("value", LOW)
def test_an_end_before_anything_was_measured_is_refused_naming_end(
    owner_api, instances, path, value
):
    server, bot = instances
    response = owner_api.get(path.format(server=server.id, bot=bot.id), {"end": value})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"]["parameters"][0]["name"] == "end"


CUSTOMER_REPORTS = ("usage", "uptime", "spend")
STAFF_REPORTS = ("mrr", "revenue", "churn", "tickets")


@pytest.mark.parametrize("name", CUSTOMER_REPORTS)
@pytest.mark.parametrize("params", MONTH_RANGES, ids=_ids)
def test_a_customer_reports_months_at_the_edges(owner_api, instances, name, params):
    response = owner_api.get(f"/v1/analytics/reports/{name}", params)
    assert_answered(response, params)


@pytest.mark.parametrize("name", STAFF_REPORTS)
@pytest.mark.parametrize("params", MONTH_RANGES, ids=_ids)
def test_a_staff_reports_months_at_the_edges(make_token, client_for, name, params):
    _, staff_api = staff_key(make_token, client_for)
    response = staff_api.get(f"/v1/admin/reports/{name}", params)
    assert_answered(response, params)


@pytest.mark.parametrize("day", DAYS)
def test_ar_aging_as_of_at_the_edges(make_token, client_for, day):
    _, staff_api = staff_key(make_token, client_for)
    response = staff_api.get("/v1/admin/reports/ar-aging", {"as_of": day})
    assert_answered(response, {"as_of": day})


@pytest.mark.parametrize("params", MONTH_RANGES, ids=_ids)
def test_the_staff_reports_page_takes_months_at_the_edges(params):
    staff = UserFactory(is_staff=True)
    client = signed_in(staff)
    assert client.get("/staff/reports", params).status_code == 200
    csv = client.get("/staff/reports/mrr.csv", params)
    assert csv.status_code == 200
    assert csv["Content-Type"].startswith("text/csv")


@pytest.mark.parametrize("value", EDGES)
def test_samples_at_the_edges_are_counted_out_of_range(instances, value):
    """An agent's timestamp with an offset at the calendar's edge (the ingest's own check)."""
    server, _ = instances
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    recorded = usage_record(
        measurements=[
            Measurement(
                instance_id=server.id,
                at=moment,
                cpu_percent=1.0,
                memory_bytes=1,
                disk_bytes=1,
                uptime_seconds=1,
            )
        ]
    )
    assert (recorded.stored, recorded.out_of_range) == (0, 1)


@pytest.mark.parametrize("day", ["0001-01-01", "1969-12-31", "9999-12-31", "0000-01-01"])
def test_the_mrr_snapshot_command_refuses_days_outside_the_reports(day):
    with pytest.raises(CommandError):
        call_command("mrr_snapshot", "--day", day)

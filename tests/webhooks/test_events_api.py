"""``GET /v1/events`` and ``GET /v1/events/{id}``: the account's event log over the API."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.roles import Role
from events.models import Event
from tests.conftest import auth_queries
from tests.factories import MembershipFactory
from tests.test_openapi import response_schema_validator

BASE = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _event(account, type, minutes, object_id="srv_4Xb9Qe2LmT0sWc8RkP1nZa7Y", related_id=""):
    return Event.objects.create(
        account=account,
        type=type,
        object_type=type.split(".")[0],
        object_id=object_id,
        related_id=related_id,
        data={"object": {"id": object_id}, "previous_attributes": {}},
        created_at=BASE + timedelta(minutes=minutes),
    )


# Each event also needs the right to see its object (events.visibility): these see the log below.
READER_SCOPES = ["webhooks:read", "servers:read", "bots:read"]


@pytest.fixture
def reader_api(owner, account, make_token, client_for):
    return client_for(make_token(owner, account, READER_SCOPES))


@pytest.fixture
def webhooks_teammate_api(teammate, account, make_token, client_for):
    return client_for(make_token(teammate, account, READER_SCOPES))


@pytest.fixture
def log(account, other_account, reader_api, webhooks_teammate_api, outsider_api):
    # Creating the keys logged api_key.created events; start from an empty log instead.
    Event.objects.all().delete()
    ours = [
        _event(account, "server.created", 0),
        _event(account, "server.status_changed", 1),
        _event(account, "bot.created", 2, object_id="bot_7Hc2Lm9QxT4nW8pR1sK3vZbY"),
        _event(
            account,
            "action.failed",
            3,
            object_id="act_1Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy",
            related_id="srv_4Xb9Qe2LmT0sWc8RkP1nZa7Y",
        ),
        _event(account, "webhook_endpoint.created", 4, object_id="whe_5Rk8Tz2Qm7Lx4Wc9Nb1Hd6Fy"),
    ]
    theirs = _event(other_account, "server.created", 0, object_id="srv_theirs")
    return ours, theirs


def types(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [event["type"] for event in response.json()["data"]["events"]]


def test_the_list_is_the_accounts_log_newest_first(reader_api, log):
    ours, _ = log

    body = reader_api.get("/v1/events").json()

    assert body["success"] is True
    assert [event["id"] for event in body["data"]["events"]] == [e.id for e in reversed(ours)]
    assert body["data"]["pagination"] == {"page": 1, "per_page": 25, "total": 5, "total_pages": 1}
    assert body["data"]["events"][-1] == {
        "id": ours[0].id,
        "type": "server.created",
        "created_at": "2026-11-01T12:00:00Z",
        "data": {"object": {"id": "srv_4Xb9Qe2LmT0sWc8RkP1nZa7Y"}, "previous_attributes": {}},
        "actor": {"user": None, "api_key": None, "ip": None, "staff": False},
    }


def test_owner_and_teammate_see_the_log_and_the_outsider_only_their_own(
    reader_api, webhooks_teammate_api, outsider_api, log
):
    ours, theirs = log
    expected = [e.id for e in reversed(ours)]

    for api in (reader_api, webhooks_teammate_api):
        assert [e["id"] for e in api.get("/v1/events").json()["data"]["events"]] == expected
    assert [e["id"] for e in outsider_api.get("/v1/events").json()["data"]["events"]] == [theirs.id]


def test_an_event_is_read_under_data_event(reader_api, log):
    ours, _ = log

    response = reader_api.get(f"/v1/events/{ours[1].id}")

    assert response.status_code == 200
    event = response.json()["data"]["event"]
    assert event["id"] == ours[1].id
    assert event["type"] == "server.status_changed"


def test_an_event_of_another_account_or_no_event_is_not_found(reader_api, outsider_api, log):
    ours, theirs = log
    for api, url in (
        (reader_api, f"/v1/events/{theirs.id}"),
        (outsider_api, f"/v1/events/{ours[0].id}"),
        (reader_api, "/v1/events/evt_000000000000000000000000"),
    ):
        response = api.get(url)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_it_records_the_actor_of_an_api_change(owner_api, owner):
    owner_api.post(
        "/v1/webhooks",
        {"url": "https://93.184.215.14/hook", "enabled_events": ["*"]},
        format="json",
    )

    event = owner_api.get("/v1/events?type=webhook_endpoint.created").json()["data"]["events"][0]

    assert event["actor"]["user"] == owner.id
    assert event["actor"]["api_key"].startswith("key_")
    assert event["actor"]["ip"] == "127.0.0.1"


def test_a_staff_actor_is_shown_as_staff_without_who_or_where(owner_api, owner, account):
    """Issue 28: what customers see of staff is one rule (the desk's): the hosting company's
    staff act as "staff", never by user id, key or address, in the API and the Activity page."""
    from accounts.actors import Actor
    from accounts.services import account_update
    from tests.dashboard import signed_in
    from tests.factories import UserFactory

    staff = UserFactory(email="sam@hosting.example", is_staff=True)
    account_update(account=account, actor=Actor(user=staff, ip="198.51.100.9"), max_api_keys=30)

    event = owner_api.get("/v1/events?type=account.updated").json()["data"]["events"][0]
    assert event["actor"] == {"user": None, "api_key": None, "ip": None, "staff": True}
    page = signed_in(owner, account).get("/settings/activity").content.decode()
    assert "Hosting staff" in page
    assert "sam@hosting.example" not in page and "198.51.100.9" not in page


@pytest.mark.parametrize("path", ["/v1/events", "/v1/events/evt_000000000000000000000000"])
def test_it_needs_the_webhooks_read_scope(owner, account, make_token, client_for, path):
    api = client_for(make_token(owner, account, ["servers:read", "account:read"]))

    response = api.get(path)

    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["webhooks:read"]


def test_a_viewer_key_may_read_the_log_but_not_its_key_events(account, make_token, client_for, log):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    api = client_for(make_token(viewer, account, ["webhooks:read"]))

    # Its own creation (api_key.created) is not among them: viewers may not read API keys.
    assert types(api.get("/v1/events")) == ["webhook_endpoint.created"]


def test_it_needs_a_key(client_for, log):
    response = client_for(None).get("/v1/events")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_required"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("type=server.created", ["server.created"]),
        ("type=server.*", ["server.status_changed", "server.created"]),
        ("type=bot.created,action.failed", ["action.failed", "bot.created"]),
        (
            "type=server.*, action.failed",
            ["action.failed", "server.status_changed", "server.created"],
        ),
        ("type=webhook_endpoint.*", ["webhook_endpoint.created"]),
        ("type=webhook.*", []),
        (
            "type=*",
            [
                "webhook_endpoint.created",
                "action.failed",
                "bot.created",
                "server.status_changed",
                "server.created",
            ],
        ),
        ("object_id=bot_7Hc2Lm9QxT4nW8pR1sK3vZbY", ["bot.created"]),
        ("object_id=srv_theirs", []),
        (
            "created_after=2026-11-01T12:02:00Z",
            ["webhook_endpoint.created", "action.failed", "bot.created"],
        ),
        ("created_before=2026-11-01T12:02:00Z", ["server.status_changed", "server.created"]),
        ("type=server.*&created_after=2026-11-01T12:01:00Z", ["server.status_changed"]),
    ],
)
def test_filters(reader_api, log, query, expected):
    response = reader_api.get(f"/v1/events?{query}")

    assert types(response) == expected
    assert response.json()["data"]["pagination"]["total"] == len(expected)


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("type=server.exploded", "type"),
        ("type=", "type"),
        ("type=server.*,", "type"),
        ("type=server.created&type=", "type"),
        ("type=server.created,bogus", "type"),
        ("type=nothing.*", "type"),
        ("type=server.created*", "type"),
        ("type=server", "type"),
        ("created_after=yesterday", "created_after"),
        ("created_before=2026-13-45", "created_before"),
        ("per_page=101", "per_page"),
        ("page=0", "page"),
    ],
)
def test_a_bad_filter_value_gets_invalid_parameter(reader_api, log, query, parameter):
    response = reader_api.get(f"/v1/events?{query}")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert [p["name"] for p in error["details"]["parameters"]] == [parameter]


def test_it_paginates(reader_api, log):
    ours, _ = log

    first = reader_api.get("/v1/events?per_page=2").json()["data"]
    last = reader_api.get("/v1/events?per_page=2&page=3").json()["data"]
    past = reader_api.get("/v1/events?per_page=2&page=9").json()["data"]

    assert [e["id"] for e in first["events"]] == [ours[4].id, ours[3].id]
    assert first["pagination"] == {"page": 1, "per_page": 2, "total": 5, "total_pages": 3}
    assert [e["id"] for e in last["events"]] == [ours[0].id]
    assert past["events"] == []
    assert past["pagination"]["total"] == 5


@pytest.mark.parametrize("per_page", [1, 25, 100])
def test_the_list_runs_a_fixed_number_of_queries_whatever_the_page_size(
    reader_api, account, per_page
):
    Event.objects.bulk_create(
        Event(
            account=account,
            type="server.updated",
            object_type="server",
            object_id=f"srv_{n}",
            created_at=BASE + timedelta(seconds=n),
        )
        for n in range(120)
    )
    reader_api.get("/v1/events")  # the first call records last use; steady state follows

    with CaptureQueriesContext(connection) as queries:
        response = reader_api.get(f"/v1/events?per_page={per_page}&type=server.*")

    assert len(response.json()["data"]["events"]) == per_page
    # 1: the key with its user, account and role; 2: the count; 3: the page.
    assert len(queries) == 2 + auth_queries(), [q["sql"] for q in queries]


@pytest.mark.parametrize("path", ["/v1/events", "/v1/events/{id}"])
def test_responses_match_the_documented_schemas(reader_api, log, path):
    document = APIClient().get("/v1/openapi.json").json()
    ours, _ = log

    response = reader_api.get(path.replace("{id}", ours[0].id))

    assert response.status_code == 200
    validator = response_schema_validator(document, path, "200")
    assert [error.message for error in validator.iter_errors(response.json())] == []

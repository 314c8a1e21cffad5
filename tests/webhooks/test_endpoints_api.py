"""``/v1/webhooks``: endpoints, secrets, test events, deliveries and retries over the API."""

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from events.models import Event
from hosting.secrets_box import decrypt_secret
from tests.conftest import auth_queries
from tests.envelopes import error_of, field_errors
from tests.test_openapi import validator_for
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint

URL = "https://93.184.215.14/hook"
SECRET = re.compile(r"^whsec_[A-Za-z0-9+/]+={0,2}$")
ENDPOINT_FIELDS = {
    "id",
    "url",
    "description",
    "enabled_events",
    "enabled",
    "disabled_reason",
    "failure_streak",
    "failing_since",
    "last_delivery_at",
    "last_delivery_status",
    "secret_rotating_until",
    "created_by",
    "created_at",
    "updated_at",
}


def create(api, **body):
    return api.post("/v1/webhooks", {"url": URL, "enabled_events": ["*"], **body}, format="json")


@pytest.fixture
def webhooks_teammate_api(teammate, account, make_token, client_for) -> APIClient:
    return client_for(make_token(teammate, account, ["webhooks:read", "webhooks:write"]))


@pytest.fixture
def reader_api(owner, account, make_token, client_for) -> APIClient:
    return client_for(make_token(owner, account, ["webhooks:read"]))


@pytest.fixture
def endpoint(owner_api) -> WebhookEndpoint:
    response = create(owner_api, description="Chat bot", enabled_events=["server.*"])
    assert response.status_code == 201, response.content
    return WebhookEndpoint.objects.get(pk=response.json()["data"]["webhook"]["id"])


@pytest.fixture
def deliveries(endpoint) -> list[WebhookDelivery]:
    """Three deliveries, newest last: one delivered, one failed twice, one not yet tried."""
    now = timezone.now().replace(microsecond=0)
    events = [
        Event.objects.create(
            account=endpoint.account,
            type="server.updated",
            object_type="server",
            object_id=f"srv_{n}",
        )
        for n in range(3)
    ]
    made = [
        WebhookDelivery.objects.create(
            endpoint=endpoint,
            event=event,
            status=state,
            attempt_count=tries,
            created_at=now - timedelta(minutes=10 - n),
        )
        for n, (event, state, tries) in enumerate(
            zip(
                events,
                [DeliveryStatus.SUCCEEDED, DeliveryStatus.FAILED, DeliveryStatus.PENDING],
                [1, 2, 0],
                strict=True,
            )
        )
    ]
    WebhookAttempt.objects.create(
        delivery=made[0],
        status_code=200,
        duration_ms=40,
        response_excerpt="ok",
        created_at=now - timedelta(minutes=9),
    )
    WebhookAttempt.objects.create(
        delivery=made[1],
        status_code=503,
        duration_ms=120,
        response_excerpt="x" * 1024,
        created_at=now - timedelta(minutes=8),
        next_retry_at=now - timedelta(minutes=7),
    )
    WebhookAttempt.objects.create(
        delivery=made[1],
        status_code=None,
        duration_ms=15000,
        error="No answer within 15 seconds.",
        created_at=now - timedelta(minutes=7),
    )
    return made


# --- Create ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (["*", "bot.crashed"], ["*"]),
        (["server.*", "server.crashed", "bot.crashed"], ["bot.crashed", "server.*"]),
        (["server.crashed", "bot.*", "*"], ["*"]),
    ],
)
def test_patterns_a_wildcard_covers_are_kept_once_in_the_shortest_form(owner_api, sent, kept):
    """As the dashboard's form saves them: what is sent is the same either way."""
    response = create(owner_api, enabled_events=sent)
    assert response.status_code == 201, response.content
    assert response.json()["data"]["webhook"]["enabled_events"] == kept


def test_create_answers_the_endpoint_and_its_secret_once(owner_api, account, owner):
    response = create(
        owner_api,
        description="  Chat bot ",
        enabled_events=["server.status_changed", "action.failed", "server.status_changed"],
    )

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert set(data) == {"webhook", "secret"}
    assert SECRET.match(data["secret"])
    webhook = data["webhook"]
    assert set(webhook) == ENDPOINT_FIELDS
    assert webhook["url"] == URL
    assert webhook["description"] == "Chat bot"
    assert webhook["enabled_events"] == ["action.failed", "server.status_changed"]
    assert webhook["enabled"] is True
    assert webhook["secret_rotating_until"] is None
    assert webhook["created_by"] == owner.id
    stored = WebhookEndpoint.objects.get(pk=webhook["id"])
    assert stored.account == account
    assert stored.created_by == owner
    assert decrypt_secret(stored.secret_encrypted) == data["secret"]
    assert data["secret"] not in stored.secret_encrypted


def test_create_records_an_event_without_the_secret(owner_api):
    data = create(owner_api).json()["data"]

    event = Event.objects.get(type="webhook_endpoint.created")

    assert event.object_id == data["webhook"]["id"]
    assert event.data["object"]["id"] == data["webhook"]["id"]
    assert data["secret"] not in json.dumps(event.data)


def test_a_teammate_with_webhooks_write_may_create(webhooks_teammate_api):
    response = create(webhooks_teammate_api, enabled=False)

    assert response.status_code == 201
    assert response.json()["data"]["webhook"]["enabled"] is False


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"enabled_events": ["server.exploded"]}, [("enabled_events.0", "invalid_choice")]),
        ({"enabled_events": ["server.*", "nothing.*"]}, [("enabled_events.1", "invalid_choice")]),
        ({"enabled_events": ["server"]}, [("enabled_events.0", "invalid_choice")]),
        ({"enabled_events": []}, [("enabled_events", "required")]),
        ({"enabled_events": "server.*"}, [("enabled_events", "not_a_list")]),
        ({"url": "not a url"}, [("url", "invalid")]),
        ({"url": "ftp://93.184.215.14/hook"}, [("url", "unsafe_target")]),
        ({"url": "http://93.184.215.14/hook"}, [("url", "unsafe_target")]),
        ({"url": "https://127.0.0.1/hook"}, [("url", "unsafe_target")]),
        ({"url": "https://10.1.2.3/hook"}, [("url", "unsafe_target")]),
        ({"url": "https://[::1]/hook"}, [("url", "unsafe_target")]),
        ({"url": "https://169.254.169.254/latest"}, [("url", "unsafe_target")]),
        ({"url": "https://user:pw@93.184.215.14/hook"}, [("url", "unsafe_target")]),
        ({"secret": "whsec_mine"}, [("secret", "unknown_field")]),
        ({"enabled": "maybe"}, [("enabled", "invalid")]),
        ({"description": "x" * 501}, [("description", "max_length")]),
    ],
)
def test_create_refuses_invalid_bodies(owner_api, body, expected):
    response = create(owner_api, **body)

    assert field_errors(response) == expected
    assert not WebhookEndpoint.objects.exists()


def test_create_needs_url_and_enabled_events(owner_api):
    response = owner_api.post("/v1/webhooks", {}, format="json")

    assert sorted(field_errors(response)) == [("enabled_events", "required"), ("url", "required")]


@override_settings(WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE_TARGETS=True)
def test_local_http_targets_are_allowed_when_the_settings_say_so(owner_api):
    response = create(owner_api, url="http://127.0.0.1:8999/hook")

    assert response.status_code == 201, response.content
    assert response.json()["data"]["webhook"]["url"] == "http://127.0.0.1:8999/hook"


@override_settings(WEBHOOKS_MAX_ENDPOINTS=2)
def test_the_endpoint_limit_is_a_quota(owner_api):
    assert create(owner_api).status_code == 201
    assert create(owner_api).status_code == 201

    error = error_of(create(owner_api), 422)

    assert error["code"] == "quota_exceeded"
    assert error["details"]["limit"] == 2
    assert WebhookEndpoint.objects.count() == 2


def test_create_refuses_another_media_type(owner_api):
    response = owner_api.post("/v1/webhooks", "url=x", content_type="text/plain")

    assert error_of(response, 415)["code"] == "unsupported_media_type"


# --- Read ------------------------------------------------------------------------------------


def test_list_and_detail_show_the_accounts_endpoints_newest_first(owner_api, outsider_api):
    first = create(owner_api).json()["data"]["webhook"]
    second = create(owner_api, enabled_events=["bot.*"]).json()["data"]["webhook"]
    create(outsider_api)

    body = owner_api.get("/v1/webhooks").json()
    detail = owner_api.get(f"/v1/webhooks/{first['id']}")

    assert [w["id"] for w in body["data"]["webhooks"]] == [second["id"], first["id"]]
    assert body["data"]["pagination"]["total"] == 2
    assert detail.status_code == 200
    assert detail.json()["data"]["webhook"] == first


def test_a_teammate_sees_the_accounts_endpoints(webhooks_teammate_api, endpoint):
    response = webhooks_teammate_api.get("/v1/webhooks")

    assert [w["id"] for w in response.json()["data"]["webhooks"]] == [endpoint.id]


def test_the_secret_is_only_in_the_create_and_rotate_answers(owner_api, deliveries):
    endpoint = deliveries[0].endpoint
    secrets = [decrypt_secret(endpoint.secret_encrypted)]
    rotated = owner_api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret", format="json")
    secrets.append(rotated.json()["data"]["secret"])
    owner_api.post(f"/v1/webhooks/{endpoint.id}/test", format="json")

    answers = [
        owner_api.get("/v1/webhooks"),
        owner_api.get(f"/v1/webhooks/{endpoint.id}"),
        owner_api.patch(f"/v1/webhooks/{endpoint.id}", {"description": "New"}, format="json"),
        owner_api.get(f"/v1/webhooks/{endpoint.id}/deliveries"),
        owner_api.get("/v1/events?per_page=100"),
    ]

    for answer in answers:
        assert answer.status_code == 200
        text = answer.content.decode()
        assert "whsec_" not in text
        assert "secret_encrypted" not in text
    logged = json.dumps([e.data for e in Event.objects.filter(type__startswith="webhook")])
    assert Event.objects.filter(type__startswith="webhook_endpoint.").count() == 3
    assert "whsec_" not in logged
    assert not any(secret in logged for secret in secrets)


# --- Change and delete -----------------------------------------------------------------------


def test_patch_changes_the_endpoint_and_records_what_changed(owner_api, endpoint):
    response = owner_api.patch(
        f"/v1/webhooks/{endpoint.id}",
        {"url": "https://93.184.215.15/new", "enabled_events": ["bot.*"], "description": "B"},
        format="json",
    )

    assert response.status_code == 200, response.content
    webhook = response.json()["data"]["webhook"]
    assert (webhook["url"], webhook["enabled_events"], webhook["description"]) == (
        "https://93.184.215.15/new",
        ["bot.*"],
        "B",
    )
    endpoint.refresh_from_db()
    assert endpoint.url == "https://93.184.215.15/new"
    event = Event.objects.get(type="webhook_endpoint.updated")
    assert event.data["previous_attributes"]["url"] == URL
    assert event.data["previous_attributes"]["enabled_events"] == ["server.*"]


def test_re_enabling_clears_the_failure_streak(owner_api, endpoint):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False,
        disabled_reason="The endpoint answered 410 Gone.",
        failure_streak=7,
        failing_since=timezone.now(),
    )

    webhook = owner_api.patch(
        f"/v1/webhooks/{endpoint.id}", {"enabled": True}, format="json"
    ).json()["data"]["webhook"]

    assert webhook["enabled"] is True
    assert (webhook["disabled_reason"], webhook["failure_streak"], webhook["failing_since"]) == (
        "",
        0,
        None,
    )


def test_an_empty_patch_changes_nothing(owner_api, endpoint):
    response = owner_api.patch(f"/v1/webhooks/{endpoint.id}", {}, format="json")

    assert response.status_code == 200
    assert not Event.objects.filter(type="webhook_endpoint.updated").exists()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"enabled_events": ["server.created", "server.nope"]},
            [("enabled_events.1", "invalid_choice")],
        ),
        ({"url": "https://192.168.1.10/hook"}, [("url", "unsafe_target")]),
        ({"url": "http://93.184.215.14/hook"}, [("url", "unsafe_target")]),
        ({"url": ""}, [("url", "blank")]),
        ({"id": "whe_mine"}, [("id", "unknown_field")]),
        ({"failure_streak": 0}, [("failure_streak", "unknown_field")]),
    ],
)
def test_patch_refuses_invalid_bodies(owner_api, endpoint, body, expected):
    response = owner_api.patch(f"/v1/webhooks/{endpoint.id}", body, format="json")

    assert field_errors(response) == expected
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.enabled_events) == (URL, ["server.*"])


def test_delete_removes_the_endpoint(owner_api, endpoint, deliveries):
    response = owner_api.delete(f"/v1/webhooks/{endpoint.id}")

    assert response.status_code == 200
    assert response.json()["data"] == {"id": endpoint.id, "deleted": True}
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert not WebhookDelivery.objects.exists()
    assert Event.objects.get(type="webhook_endpoint.deleted").object_id == endpoint.id
    assert error_of(owner_api.get(f"/v1/webhooks/{endpoint.id}"), 404)["code"] == "not_found"


# --- Rotate, test, deliveries, retry ----------------------------------------------------------


def test_rotate_answers_a_new_secret_and_keeps_the_old_one_for_a_day(owner_api, endpoint):
    old_secret = decrypt_secret(endpoint.secret_encrypted)
    before = timezone.now()

    response = owner_api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret", format="json")

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert set(data) == {"webhook", "secret"}
    assert SECRET.match(data["secret"]) and data["secret"] != old_secret
    endpoint.refresh_from_db()
    assert decrypt_secret(endpoint.secret_encrypted) == data["secret"]
    assert decrypt_secret(endpoint.previous_secret_encrypted) == old_secret
    overlap = endpoint.previous_secret_expires_at - before
    assert timedelta(hours=23, minutes=59) < overlap <= timedelta(hours=24, seconds=5)
    assert data["webhook"]["secret_rotating_until"] == (
        endpoint.previous_secret_expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    )


def test_rotate_takes_no_body(owner_api, endpoint):
    response = owner_api.post(
        f"/v1/webhooks/{endpoint.id}/rotate-secret", {"secret": "whsec_mine"}, format="json"
    )

    assert field_errors(response) == [("secret", "unknown_field")]


def test_send_test_queues_a_test_delivery_to_this_endpoint(owner_api, endpoint):
    response = owner_api.post(f"/v1/webhooks/{endpoint.id}/test", format="json")

    assert response.status_code == 202, response.content
    delivery = response.json()["data"]["delivery"]
    assert delivery["endpoint"] == endpoint.id
    assert delivery["event_type"] == "webhook.test"
    assert (delivery["status"], delivery["attempt_count"], delivery["attempts"]) == (
        "pending",
        0,
        [],
    )
    stored = WebhookDelivery.objects.get(pk=delivery["id"])
    assert stored.event.type == "webhook.test"
    assert stored.event_id == delivery["event"]


def test_deliveries_are_listed_newest_first_with_their_attempts(owner_api, deliveries):
    endpoint = deliveries[0].endpoint

    data = owner_api.get(f"/v1/webhooks/{endpoint.id}/deliveries").json()["data"]

    assert [d["id"] for d in data["deliveries"]] == [d.id for d in reversed(deliveries)]
    assert data["pagination"]["total"] == 3
    failed = data["deliveries"][1]
    assert failed["status"] == "failed"
    assert failed["event_type"] == "server.updated"
    assert [(a["status_code"], a["duration_ms"], a["error"]) for a in failed["attempts"]] == [
        (503, 120, ""),
        (None, 15000, "No answer within 15 seconds."),
    ]
    assert failed["attempts"][0]["response_excerpt"] == "x" * 1024
    assert failed["attempts"][0]["next_retry_at"] is not None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=failed", [1]),
        ("status=succeeded,pending", [2, 0]),
        ("status=succeeded&status=pending", [2, 0]),
        ("", [2, 1, 0]),
    ],
)
def test_deliveries_filter_by_status(owner_api, deliveries, query, expected):
    endpoint = deliveries[0].endpoint

    response = owner_api.get(f"/v1/webhooks/{endpoint.id}/deliveries?{query}")

    assert [d["id"] for d in response.json()["data"]["deliveries"]] == [
        deliveries[n].id for n in expected
    ]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=exploded", "status"),
        ("status=", "status"),
        ("status=failed,", "status"),
        ("per_page=0", "per_page"),
    ],
)
def test_deliveries_refuse_bad_query_values(owner_api, deliveries, query, parameter):
    endpoint = deliveries[0].endpoint

    error = error_of(owner_api.get(f"/v1/webhooks/{endpoint.id}/deliveries?{query}"), 400)

    assert error["code"] == "invalid_parameter"
    assert [p["name"] for p in error["details"]["parameters"]] == [parameter]


def test_deliveries_list_only_this_endpoints(owner_api, deliveries):
    response = create(owner_api, enabled_events=["bot.*"])
    other = WebhookEndpoint.objects.get(pk=response.json()["data"]["webhook"]["id"])

    response = owner_api.get(f"/v1/webhooks/{other.id}/deliveries")

    assert response.json()["data"]["deliveries"] == []


@pytest.mark.parametrize("per_page", [1, 25, 100])
def test_the_deliveries_list_runs_a_fixed_number_of_queries_whatever_the_page_size(
    owner_api, endpoint, per_page
):
    event = Event.objects.create(
        account=endpoint.account, type="server.updated", object_type="server"
    )
    made = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=endpoint, event=event, attempt_count=2) for _ in range(120)
    )
    WebhookAttempt.objects.bulk_create(
        WebhookAttempt(delivery=delivery, status_code=500) for delivery in made for _ in range(2)
    )
    owner_api.get("/v1/webhooks")  # the first call records last use; steady state follows

    with CaptureQueriesContext(connection) as queries:
        response = owner_api.get(f"/v1/webhooks/{endpoint.id}/deliveries?per_page={per_page}")

    deliveries = response.json()["data"]["deliveries"]
    assert len(deliveries) == per_page
    assert all(len(delivery["attempts"]) == 2 for delivery in deliveries)
    # The key; the endpoint; the count; the page with its events; the page's attempts.
    assert len(queries) == 4 + auth_queries(), [q["sql"] for q in queries]


def test_retry_sends_an_attempted_delivery_again(owner_api, deliveries):
    failed = deliveries[1]

    response = owner_api.post(
        f"/v1/webhooks/{failed.endpoint_id}/deliveries/{failed.id}/retry", format="json"
    )

    assert response.status_code == 202, response.content
    delivery = response.json()["data"]["delivery"]
    assert (delivery["id"], delivery["status"]) == (failed.id, "pending")
    assert len(delivery["attempts"]) == 2
    failed.refresh_from_db()
    assert failed.status == DeliveryStatus.PENDING
    assert failed.next_attempt_at is not None


def test_retry_of_a_never_attempted_delivery_is_a_conflict(owner_api, deliveries):
    fresh = deliveries[2]

    response = owner_api.post(
        f"/v1/webhooks/{fresh.endpoint_id}/deliveries/{fresh.id}/retry", format="json"
    )

    assert error_of(response, 409)["code"] == "conflict"


def test_retry_finds_a_delivery_only_under_its_own_endpoint(owner_api, deliveries):
    other = create(owner_api).json()["data"]["webhook"]["id"]

    response = owner_api.post(
        f"/v1/webhooks/{other}/deliveries/{deliveries[1].id}/retry", format="json"
    )

    assert error_of(response, 404)["code"] == "not_found"


# --- Access ----------------------------------------------------------------------------------


def _urls(endpoint_id: str, delivery_id: str) -> list[tuple[str, str]]:
    return [
        ("get", f"/v1/webhooks/{endpoint_id}"),
        ("patch", f"/v1/webhooks/{endpoint_id}"),
        ("delete", f"/v1/webhooks/{endpoint_id}"),
        ("post", f"/v1/webhooks/{endpoint_id}/rotate-secret"),
        ("post", f"/v1/webhooks/{endpoint_id}/test"),
        ("get", f"/v1/webhooks/{endpoint_id}/deliveries"),
        ("post", f"/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry"),
    ]


def test_the_outsider_gets_not_found_everywhere(outsider_api, deliveries):
    endpoint = deliveries[1].endpoint
    before = decrypt_secret(WebhookEndpoint.objects.get(pk=endpoint.pk).secret_encrypted)

    for method, url in _urls(endpoint.id, deliveries[1].id):
        response = getattr(outsider_api, method)(url, {}, format="json")
        assert error_of(response, 404)["code"] == "not_found", (method, url)

    assert outsider_api.get("/v1/webhooks").json()["data"]["webhooks"] == []
    endpoint.refresh_from_db()
    assert decrypt_secret(endpoint.secret_encrypted) == before
    assert endpoint.description == "Chat bot"
    assert WebhookDelivery.objects.get(pk=deliveries[1].pk).status == DeliveryStatus.FAILED


def test_unknown_ids_get_not_found(owner_api, deliveries):
    endpoint = deliveries[1].endpoint
    missing = [
        *_urls("whe_000000000000000000000000", deliveries[1].id),
        ("post", f"/v1/webhooks/{endpoint.id}/deliveries/whd_000000000000000000000000/retry"),
    ]

    for method, url in missing:
        response = getattr(owner_api, method)(url, {}, format="json")
        assert error_of(response, 404)["code"] == "not_found", (method, url)


def test_a_read_key_cannot_write(reader_api, deliveries):
    endpoint = deliveries[1].endpoint
    writes = [("post", "/v1/webhooks")] + [
        (method, url) for method, url in _urls(endpoint.id, deliveries[1].id) if method != "get"
    ]

    for method, url in writes:
        response = getattr(reader_api, method)(url, {}, format="json")
        error = error_of(response, 403)
        assert error["code"] == "insufficient_scope", (method, url)
        assert error["details"]["required_scopes"] == ["webhooks:write"]
    assert reader_api.get(f"/v1/webhooks/{endpoint.id}").status_code == 200
    assert reader_api.get(f"/v1/webhooks/{endpoint.id}/deliveries").status_code == 200
    assert WebhookEndpoint.objects.count() == 1


def test_a_key_without_webhook_scopes_cannot_read(teammate_api, deliveries):
    endpoint = deliveries[1].endpoint

    for url in (
        "/v1/webhooks",
        f"/v1/webhooks/{endpoint.id}",
        f"/v1/webhooks/{endpoint.id}/deliveries",
    ):
        error = error_of(teammate_api.get(url), 403)
        assert error["code"] == "insufficient_scope"
        assert error["details"]["required_scopes"] == ["webhooks:read"]


# --- Against the OpenAPI document -------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("get", "/v1/webhooks", "200"),
        ("get", "/v1/webhooks/{id}", "200"),
        ("post", "/v1/webhooks/{id}/rotate-secret", "200"),
        ("post", "/v1/webhooks/{id}/test", "202"),
        ("get", "/v1/webhooks/{webhook_id}/deliveries", "200"),
    ],
)
def test_responses_match_the_documented_schemas(owner_api, deliveries, method, path, status):
    document = APIClient().get("/v1/openapi.json").json()
    endpoint = deliveries[1].endpoint
    url = path.replace("{id}", endpoint.id).replace("{webhook_id}", endpoint.id)

    response = getattr(owner_api, method)(url, format="json")

    assert response.status_code == int(status)
    validator = validator_for(
        document,
        "paths",
        path,
        method,
        "responses",
        status,
        "content",
        "application/json",
        "schema",
    )
    assert [error.message for error in validator.iter_errors(response.json())] == []


def test_the_create_response_matches_the_documented_schema(owner_api):
    document = APIClient().get("/v1/openapi.json").json()

    response = create(owner_api)

    validator = validator_for(
        document,
        "paths",
        "/v1/webhooks",
        "post",
        "responses",
        "201",
        "content",
        "application/json",
        "schema",
    )
    assert [error.message for error in validator.iter_errors(response.json())] == []


def test_the_create_operation_documents_the_catalogue_and_signing(db):
    document = APIClient().get("/v1/openapi.json").json()

    description = document["paths"]["/v1/webhooks"]["post"]["description"]

    for needle in (
        "server.status_changed",
        "webhook_endpoint.disabled",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "v1,",
        "previous_attributes",
    ):
        assert needle in description

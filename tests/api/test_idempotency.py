"""``Idempotency-Key`` on POSTs: replays, conflicts, what is kept, and the OpenAPI document."""

import json
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test import Client
from django.utils import timezone

from accounts.keys import TOKEN_PREFIX, _checksum, parse_token
from accounts.models import ApiKey, Membership, User
from accounts.roles import Role
from accounts.services import api_key_revoke
from idempotency.models import IdempotencyRecord
from idempotency.services import RequestFingerprint
from servers.api import views as server_views
from servers.models import Server
from tests.envelopes import error_of

SERVERS = "/v1/servers"
REPLAYED = "Idempotent-Replayed"
SERVER = {
    "name": "A",
    "game": "minecraft-java",
    "region": "eu-central",
    "variables": {"EULA": True},
}


def post(api, path: str, body: dict, key: str | None = "key-1", **extra):
    """POST exact JSON bytes, so a test can compute the same fingerprint."""
    if key is not None:
        extra["HTTP_IDEMPOTENCY_KEY"] = key
    return api.post(path, json.dumps(body), content_type="application/json", **extra)


def key_id_of(token: str) -> str:
    return parse_token(token).key_id


def in_progress_record(token: str, key: str, body: dict, **fields) -> IdempotencyRecord:
    fingerprint = RequestFingerprint.of(method="POST", path=SERVERS, body=json.dumps(body).encode())
    return IdempotencyRecord.objects.create(
        api_key_id=key_id_of(token),
        key=key,
        request_method=fingerprint.method,
        request_path=fingerprint.path,
        request_body_sha256=fingerprint.body_sha256,
        **fields,
    )


@pytest.fixture
def token(owner, account, make_token) -> str:
    return make_token(owner, account)


@pytest.fixture
def api(token, client_for):
    return client_for(token)


# --- Replays ----------------------------------------------------------------------------------


def test_a_retry_gets_the_first_answer_and_creates_nothing(api):
    first = post(api, SERVERS, SERVER)
    retry = post(api, SERVERS, SERVER)

    assert first.status_code == 201
    assert REPLAYED not in first
    assert retry.status_code == 201
    assert retry.content == first.content
    assert retry["Location"] == first["Location"]
    assert retry["Content-Type"] == "application/json"
    assert retry[REPLAYED] == "true"
    assert retry["X-Request-Id"].startswith("req_")
    assert retry["X-Request-Id"] != first["X-Request-Id"]
    assert Server.objects.count() == 1
    assert first.json()["data"]["server"]["id"] == Server.objects.get().id


def test_a_retried_key_creation_gives_the_same_key_and_token(api, account):
    body = {"name": "CI", "scopes": ["servers:read"]}
    first = post(api, "/v1/api-keys", body)
    retry = post(api, "/v1/api-keys", body)

    assert first.status_code == retry.status_code == 201
    assert retry.json() == first.json()
    assert retry[REPLAYED] == "true"
    assert ApiKey.objects.filter(account=account, name="CI").count() == 1


def test_a_replay_needs_the_rights_the_request_needs_now(teammate, account, make_token, client_for):
    api = client_for(make_token(teammate, account, ["api_keys:write", "servers:read"]))
    body = {"name": "CI", "scopes": ["servers:read"]}
    first = post(api, "/v1/api-keys", body)
    token = first.json()["data"]["token"]
    membership = Membership.objects.get(user=teammate, account=account)
    membership.role = Role.VIEWER  # may not hold api_keys:write
    membership.save()

    retry = post(api, "/v1/api-keys", body)

    assert first.status_code == 201
    error = error_of(retry, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["api_keys:write"]}
    assert token not in retry.content.decode()
    assert REPLAYED not in retry
    assert ApiKey.objects.filter(account=account, name="CI").count() == 1
    assert IdempotencyRecord.objects.get().required_scopes == ["api_keys:write"]

    membership.role = Role.DEVELOPER
    membership.save()
    restored = post(api, "/v1/api-keys", body)

    assert restored.status_code == 201
    assert restored[REPLAYED] == "true"
    assert restored.json() == first.json()


def test_an_answer_kept_without_its_required_scopes_is_never_replayed(api, account):
    body = {"name": "CI", "scopes": ["servers:read"]}
    first = post(api, "/v1/api-keys", body)
    IdempotencyRecord.objects.update(required_scopes=None)  # kept before scopes were

    retry = post(api, "/v1/api-keys", body)

    assert error_of(retry, 409)["code"] == "conflict"
    assert first.json()["data"]["token"] not in retry.content.decode()
    assert REPLAYED not in retry
    assert ApiKey.objects.filter(account=account, name="CI").count() == 1
    assert IdempotencyRecord.objects.get().response_status == 201


def test_kept_answers_are_encrypted_at_rest(api):
    created = post(api, "/v1/api-keys", {"name": "CI", "scopes": ["servers:read"]}).json()

    record = IdempotencyRecord.objects.get()
    assert record.response_status == 201
    for secret in (created["data"]["token"], created["data"]["api_key"]["id"]):
        assert secret.encode() not in bytes(record.response_body)


def test_a_replay_counts_against_the_rate_limit(api, rate_limit_clock):
    assert post(api, SERVERS, SERVER)["X-RateLimit-Remaining"] == "599"
    assert post(api, SERVERS, SERVER)["X-RateLimit-Remaining"] == "598"


def test_a_client_error_is_kept_and_replayed_with_its_first_request_id(api):
    first = post(api, SERVERS, {**SERVER, "name": ""})
    retry = post(api, SERVERS, {**SERVER, "name": ""})

    assert error_of(first, 400)["code"] == "validation_failed"
    assert retry.status_code == 400
    assert retry[REPLAYED] == "true"
    assert retry.content == first.content
    assert retry.json()["error"]["request_id"] == first["X-Request-Id"]
    assert retry["X-Request-Id"] != first["X-Request-Id"]


def test_posts_without_the_header_are_not_recorded(api):
    assert post(api, SERVERS, SERVER, key=None).status_code == 201
    assert post(api, SERVERS, SERVER, key=None).status_code == 201

    assert Server.objects.count() == 2
    assert not IdempotencyRecord.objects.exists()


def test_get_requests_ignore_the_header(api):
    response = api.get(SERVERS, HTTP_IDEMPOTENCY_KEY="x" * 300)

    assert response.status_code == 200
    assert REPLAYED not in response
    assert not IdempotencyRecord.objects.exists()


# --- Conflicts --------------------------------------------------------------------------------


def test_the_same_key_with_another_request_is_refused(api):
    assert post(api, SERVERS, SERVER).status_code == 201

    other_body = post(api, SERVERS, {**SERVER, "name": "B"})
    other_path = post(api, "/v1/bots", SERVER)

    for response in (other_body, other_path):
        error = error_of(response, 422)
        assert error["code"] == "idempotency_key_reused"
        assert error["request_id"] == response["X-Request-Id"]
    assert Server.objects.count() == 1


def test_keys_belong_to_the_api_key_that_sent_them(
    api, owner, account, outsider_api, make_token, client_for
):
    second_key_api = client_for(make_token(owner, account))

    first = post(api, SERVERS, SERVER)
    same_user = post(second_key_api, SERVERS, {**SERVER, "name": "B"})
    other_account = post(outsider_api, SERVERS, SERVER)

    for response in (first, same_user, other_account):
        assert response.status_code == 201
        assert REPLAYED not in response
    assert Server.objects.count() == 3


def test_a_request_still_in_progress_gets_409(api, token):
    in_progress_record(token, "key-1", SERVER)

    error = error_of(post(api, SERVERS, SERVER), 409)

    assert error["code"] == "idempotency_request_in_progress"
    assert not Server.objects.exists()


def test_another_request_with_a_key_in_progress_gets_422(api, token):
    in_progress_record(token, "key-1", SERVER)

    assert error_of(post(api, SERVERS, {**SERVER, "name": "B"}), 422)["code"] == (
        "idempotency_key_reused"
    )


def test_a_claim_left_by_a_dead_request_is_taken_over(api, token):
    in_progress_record(token, "key-1", SERVER, created_at=timezone.now() - timedelta(minutes=6))

    response = post(api, SERVERS, SERVER)

    assert response.status_code == 201
    assert REPLAYED not in response
    assert IdempotencyRecord.objects.get().response_status == 201


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_first_requests_run_the_endpoint_once(
    owner, account, make_token, client_for, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("needs a database that serves several connections at once (PostgreSQL)")
    token = make_token(owner, account)
    entered, release = threading.Event(), threading.Event()
    calls = []
    original = server_views.server_create

    def slow_server_create(**kwargs):
        calls.append(kwargs["name"])
        entered.set()
        assert release.wait(10)
        return original(**kwargs)

    monkeypatch.setattr(server_views, "server_create", slow_server_create)
    start = threading.Barrier(2)
    responses = []

    def send():
        try:
            start.wait(5)
            responses.append(post(client_for(token), SERVERS, SERVER, key="together"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(2)]
    for thread in threads:
        thread.start()
    assert entered.wait(10)
    deadline = time.monotonic() + 10
    while not responses and time.monotonic() < deadline:  # the loser answers while the winner waits
        time.sleep(0.01)
    release.set()
    for thread in threads:
        thread.join(10)

    loser, winner = responses
    assert error_of(loser, 409)["code"] == "idempotency_request_in_progress"
    assert winner.status_code == 201
    assert calls == ["A"]
    assert Server.objects.count() == 1
    retry = post(client_for(token), SERVERS, SERVER, key="together")
    assert retry[REPLAYED] == "true"
    assert retry.content == winner.content


# --- What is not kept -------------------------------------------------------------------------


def test_server_errors_are_not_kept_so_a_retry_runs_again(api, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("driver unreachable")

    with monkeypatch.context() as patch:
        patch.setattr(server_views, "server_create", broken)
        assert error_of(post(api, SERVERS, SERVER), 500)["code"] == "internal_error"
    assert not IdempotencyRecord.objects.exists()

    retry = post(api, SERVERS, SERVER)

    assert retry.status_code == 201
    assert REPLAYED not in retry
    assert Server.objects.count() == 1


def test_refusals_before_the_endpoint_runs_are_not_kept(
    owner, teammate_api, account, make_token, client_for
):
    revoked = make_token(owner, account)
    api_key_revoke(api_key=ApiKey.objects.get(key_id=key_id_of(revoked)))

    assert error_of(post(teammate_api, SERVERS, SERVER), 403)["code"] == "insufficient_scope"
    assert error_of(post(client_for(revoked), SERVERS, SERVER), 401)["code"] == "api_key_revoked"
    assert not IdempotencyRecord.objects.exists()


def test_a_kept_answer_never_reaches_a_caller_who_fails_authentication(api, token, client_for):
    assert post(api, SERVERS, SERVER).status_code == 201
    body = f"{TOKEN_PREFIX}{key_id_of(token)}{'x' * 32}"
    forged = body + _checksum(body)  # the right key id and checksum, a wrong secret

    response = post(client_for(forged), SERVERS, SERVER)

    assert error_of(response, 401)["code"] == "invalid_api_key"
    assert REPLAYED not in response
    api_key_revoke(api_key=ApiKey.objects.get(key_id=key_id_of(token)))
    assert error_of(post(api, SERVERS, SERVER), 401)["code"] == "api_key_revoked"
    assert IdempotencyRecord.objects.get().response_status == 201


# --- The header -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "code"),
    [("", "blank"), ("x" * 256, "max_length"), ("clé", "invalid"), ("a\tb", "invalid")],
)
def test_an_invalid_key_is_refused(api, key, code):
    error = error_of(post(api, SERVERS, SERVER, key=key), 400)

    assert error["code"] == "invalid_parameter"
    assert error["details"]["parameters"] == [
        {
            "name": "Idempotency-Key",
            "code": code,
            "message": "Header 'Idempotency-Key' must be 1 to 255 printable ASCII characters.",
        }
    ]
    assert not Server.objects.exists()
    assert not IdempotencyRecord.objects.exists()


def test_the_longest_key_and_any_printable_character_are_accepted(api):
    assert post(api, SERVERS, SERVER, key="k" * 255).status_code == 201
    assert post(api, SERVERS, SERVER, key=" !~{}\"'").status_code == 201


def test_the_header_is_checked_after_authentication(db, client_for):
    body = f"{TOKEN_PREFIX}{'k' * 12}{'x' * 32}"

    response = post(client_for(body + _checksum(body)), SERVERS, SERVER, key="")

    assert error_of(response, 401)["code"] == "invalid_api_key"


# --- Retention --------------------------------------------------------------------------------


def test_expired_records_are_not_replayed(api):
    assert post(api, SERVERS, SERVER).status_code == 201
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))

    retry = post(api, SERVERS, SERVER)

    assert retry.status_code == 201
    assert REPLAYED not in retry
    assert Server.objects.count() == 2
    assert IdempotencyRecord.objects.get().created_at > timezone.now() - timedelta(minutes=1)


def test_housekeeping_deletes_expired_records(api, token, capsys):
    in_progress_record(token, "old", SERVER, created_at=timezone.now() - timedelta(hours=25))
    in_progress_record(token, "fresh", SERVER)

    call_command("housekeeping")

    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["fresh"]
    assert "idempotency records pruned 1" in capsys.readouterr().out


# --- Admin and the OpenAPI document -----------------------------------------------------------


def test_staff_see_records_in_admin_without_bodies(api):
    created = post(api, "/v1/api-keys", {"name": "CI", "scopes": ["servers:read"]}).json()
    record = IdempotencyRecord.objects.get()
    staff = Client()
    staff.force_login(User.objects.create_superuser(email="staff@hosting.test", password="pw-1"))

    listing = staff.get("/admin/idempotency/idempotencyrecord/")
    detail = staff.get(f"/admin/idempotency/idempotencyrecord/{record.pk}/change/")

    assert listing.status_code == detail.status_code == 200
    assert b"key-1" in listing.content
    assert b'<div class="readonly">201</div>' in detail.content
    assert created["data"]["token"].encode() not in detail.content


def test_the_openapi_document_offers_the_header_on_every_post(db):
    document = Client().get("/v1/openapi.json").json()

    posts = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            headers = [p for p in operation.get("parameters", []) if p["in"] == "header"]
            # A conditional write's If-Match (a file's contents) is the one other header.
            if_match = [p for p in headers if p["name"] == "If-Match"]
            assert not if_match or (method, path.rsplit("/", 2)[-2:]) == (
                "put",
                ["files", "contents"],
            ), (method, path)
            headers = [p for p in headers if p["name"] != "If-Match"]
            # API keys' POSTs only: the node agent's endpoints (its token) never read the header.
            by_api_key = any("BearerAuth" in each for each in operation.get("security", []))
            if method != "post" or not by_api_key:
                assert headers == [], (method, path)
                continue
            posts += 1
            assert [p["name"] for p in headers] == ["Idempotency-Key"], path
            assert headers[0]["required"] is False
            assert headers[0]["schema"]["maxLength"] == 255
            responses = operation["responses"]
            assert "idempotency_request_in_progress" in responses["409"]["description"], path
            assert "idempotency_key_reused" in responses["422"]["description"], path
            assert "Idempotency-Key" in responses["400"]["description"], path
            success = next(r for status, r in responses.items() if status.startswith("2"))
            assert "Idempotent-Replayed" in success["headers"], path
    assert posts >= 5

"""/v1/api-keys: creating, listing, revoking and rotating API keys."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.roles import SCOPES, Role, grantable_scopes
from events.models import Event
from tests.conftest import auth_queries
from tests.envelopes import error_of
from tests.factories import MembershipFactory
from tests.test_openapi import validator_for

KEYS = "/v1/api-keys"
TOKEN = re.compile(r"^hms_[0-9A-Za-z]{50}$")
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


def key_of(api) -> ApiKey:
    """The key an APIClient authenticates with."""
    token = api._credentials["HTTP_AUTHORIZATION"].removeprefix("Bearer ")
    return ApiKey.objects.get(key_id=token[4:16])


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [key["id"] for key in response.json()["data"]["api_keys"]]


@pytest.fixture
def member_of(account, make_token, client_for):
    """A new member of ``account`` with ``role``, and a client with a key of ``scopes``."""

    def make(role: str, scopes: list[str] | None = None):
        user = MembershipFactory(account=account, role=role).user
        granted = grantable_scopes(role, is_staff=False) if scopes is None else scopes
        return user, client_for(make_token(user, account, granted))

    return make


@pytest.fixture
def teammate_keys_api(teammate, account, make_token, client_for):
    """The developer teammate with a key that may read and write keys."""
    return client_for(make_token(teammate, account, ["api_keys:write", "servers:read"]))


# --- Creating ------------------------------------------------------------------------------


def test_the_owner_creates_a_key_and_sees_its_token_once(owner_api, owner, account, client_for):
    response = owner_api.post(
        KEYS,
        {
            "name": " CI deploy ",
            "scopes": ["servers:power", "servers:read", "servers:power"],
            "expires_at": "2027-02-19T15:04:05Z",
            "allowed_ips": ["127.0.0.1", "10.0.0.0/8"],
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert set(data) == {"api_key", "token"}
    assert TOKEN.match(data["token"])
    api_key = ApiKey.objects.get(pk=data["api_key"]["id"])
    assert data["api_key"] == {
        "id": api_key.id,
        "name": "CI deploy",
        "prefix": f"hms_{api_key.key_id}",
        "scopes": ["servers:power", "servers:read"],
        "status": "active",
        "user": owner.id,
        "created_by": owner.id,
        "allowed_ips": ["127.0.0.1/32", "10.0.0.0/8"],
        "created_at": api_key.created_at.strftime(TIMESTAMP),
        "expires_at": "2027-02-19T15:04:05Z",
        "revoked_at": None,
        "last_used_at": None,
        "last_used_ip": None,
    }
    assert data["token"][4:16] == api_key.key_id
    assert api_key.account == account
    assert api_key.expires_at == datetime(2027, 2, 19, 15, 4, 5, tzinfo=UTC)
    # The token works, and is never shown again.
    assert client_for(data["token"]).get("/v1/servers").status_code == 200
    assert data["token"] not in owner_api.get(KEYS).content.decode()
    assert data["token"] not in owner_api.get(f"{KEYS}/{api_key.id}").content.decode()
    event = Event.objects.get(type="api_key.created", object_id=api_key.id)
    assert event.account == account
    assert event.actor_api_key == key_of(owner_api)
    assert event.actor_user == owner
    assert data["token"] not in str(event.data)


def test_a_key_without_expiry_never_expires(owner_api):
    response = owner_api.post(
        KEYS, {"name": "Forever", "scopes": ["servers:read"], "expires_at": None}, format="json"
    )

    assert response.status_code == 201
    assert response.json()["data"]["api_key"]["expires_at"] is None
    assert response.json()["data"]["api_key"]["allowed_ips"] == []


def test_a_member_creates_keys_for_themselves(teammate_keys_api, teammate):
    response = teammate_keys_api.post(
        KEYS, {"name": "Mine", "scopes": ["servers:read"]}, format="json"
    )

    assert response.status_code == 201
    assert ApiKey.objects.get(pk=response.json()["data"]["api_key"]["id"]).user == teammate


def test_a_viewer_cannot_create_keys(member_of):
    _, viewer_api = member_of(Role.VIEWER)

    response = viewer_api.post(KEYS, {"name": "Sneaky", "scopes": ["servers:write"]}, format="json")

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["api_keys:write"]}
    assert not ApiKey.objects.filter(name="Sneaky").exists()


def test_a_role_cannot_grant_scopes_beyond_itself(member_of):
    _, support_api = member_of(Role.SUPPORT)

    response = support_api.post(
        KEYS, {"name": "Deployer", "scopes": ["servers:read", "servers:write"]}, format="json"
    )

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["servers:write"]
    assert not ApiKey.objects.filter(name="Deployer").exists()


def test_a_narrow_key_cannot_mint_a_broader_key(owner, account, make_token, client_for):
    narrow_api = client_for(make_token(owner, account, ["api_keys:write"]))

    broader = narrow_api.post(KEYS, {"name": "Wider", "scopes": ["servers:read"]}, format="json")
    implied = narrow_api.post(KEYS, {"name": "Reader", "scopes": ["api_keys:read"]}, format="json")

    error = error_of(broader, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["servers:read"]
    assert not ApiKey.objects.filter(name="Wider").exists()
    assert implied.status_code == 201


def test_creating_needs_api_keys_write(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account, ["api_keys:read"]))

    error = error_of(api.post(KEYS, {"name": "x", "scopes": ["servers:read"]}, format="json"), 403)

    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["api_keys:write"]}


def test_the_key_limit_is_a_quota(owner_api, account):
    account.max_api_keys = 2
    account.save()
    assert (
        owner_api.post(KEYS, {"name": "Two", "scopes": ["servers:read"]}, format="json").status_code
        == 201
    )

    response = owner_api.post(KEYS, {"name": "Three", "scopes": ["servers:read"]}, format="json")

    error = error_of(response, 422)
    assert error["code"] == "quota_exceeded"
    assert error["details"] == {"limit": 2}
    assert ApiKey.objects.filter(account=account).count() == 2


VALID = {"name": "k", "scopes": ["servers:read"]}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, [("name", "required"), ("scopes", "required")]),
        ({**VALID, "name": ""}, [("name", "blank")]),
        ({**VALID, "name": "x" * 101}, [("name", "max_length")]),
        ({**VALID, "scopes": []}, [("scopes", "empty")]),
        ({**VALID, "scopes": "servers:read"}, [("scopes", "not_a_list")]),
        ({**VALID, "scopes": ["servers:fly"]}, [("scopes.0", "invalid_choice")]),
        ({**VALID, "expires_at": "soon"}, [("expires_at", "invalid")]),
        ({**VALID, "expires_at": "2020-01-01T00:00:00Z"}, [("expires_at", "in_past")]),
        ({**VALID, "allowed_ips": ["nope"]}, [("allowed_ips.0", "invalid")]),
        ({**VALID, "allowed_ips": "1.2.3.4"}, [("allowed_ips", "not_a_list")]),
        ({**VALID, "expires_in_days": 30}, [("expires_in_days", "unknown_field")]),
        ({**VALID, "user": "usr_x"}, [("user", "unknown_field")]),
    ],
)
def test_an_invalid_key_is_refused(owner_api, body, fields):
    error = error_of(owner_api.post(KEYS, body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    assert ApiKey.objects.count() == 1


def test_malformed_json_is_refused(owner_api):
    response = owner_api.generic("POST", KEYS, "{", content_type="application/json")

    assert error_of(response, 400)["code"] == "invalid_json"


# --- Listing and reading -------------------------------------------------------------------


@pytest.fixture
def keys(owner, teammate, account, outsider, other_account, make_token):
    """Keys of the owner, the teammate and the outsider, oldest first."""
    make_token(owner, account, ["servers:read"], name="Owner's")
    make_token(teammate, account, ["servers:read"], name="Teammate's")
    make_token(outsider, other_account, ["servers:read"], name="Outsider's")
    return {key.name: key for key in ApiKey.objects.all()}


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_owners_and_admins_see_every_key_of_the_account(member_of, keys, role):
    _, api = member_of(role, ["api_keys:read"])

    listed = ids(api.get(KEYS))

    expected = ApiKey.objects.exclude(name="Outsider's").order_by("-created_at", "-id")
    assert listed == [key.id for key in expected]
    assert len(listed) == 3  # the owner's, the teammate's and the caller's


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT])
def test_other_members_see_only_their_own_keys(member_of, keys, role):
    _, api = member_of(role, ["api_keys:read"])

    assert ids(api.get(KEYS)) == [key_of(api).id]
    for name in ("Owner's", "Teammate's", "Outsider's"):
        response = api.get(f"{KEYS}/{keys[name].id}")
        assert error_of(response, 404)["code"] == "not_found"


def test_a_viewer_cannot_read_keys_at_all(member_of, keys):
    _, viewer_api = member_of(Role.VIEWER)

    error = error_of(viewer_api.get(KEYS), 403)

    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["api_keys:read"]}


@pytest.mark.parametrize(("method", "suffix"), [("get", ""), ("delete", ""), ("post", "/rotate")])
def test_a_key_of_another_account_is_not_found(owner_api, outsider_api, keys, method, suffix):
    for api, key in ((outsider_api, keys["Owner's"]), (owner_api, keys["Outsider's"])):
        response = getattr(api, method)(f"{KEYS}/{key.id}{suffix}", format="json")
        assert error_of(response, 404)["code"] == "not_found"
    for key in keys.values():
        key.refresh_from_db()
        assert key.status == "active"
    assert ApiKey.objects.count() == 5
    assert "Owner's" not in outsider_api.get(KEYS).content.decode()


def test_one_key_is_shown_as_data_api_key(owner_api, keys):
    key = keys["Teammate's"]

    response = owner_api.get(f"{KEYS}/{key.id}")

    assert response.status_code == 200
    shown = response.json()["data"]["api_key"]
    assert (shown["id"], shown["name"], shown["prefix"]) == (
        key.id,
        "Teammate's",
        f"hms_{key.key_id}",
    )
    assert "digest" not in shown and "token" not in shown


def test_keys_can_be_filtered_by_status(owner_api, keys):
    now = timezone.now()
    ApiKey.objects.filter(name="Owner's").update(revoked_at=now)
    ApiKey.objects.filter(name="Teammate's").update(expires_at=now)
    caller = key_of(owner_api)

    assert ids(owner_api.get(f"{KEYS}?status=revoked")) == [keys["Owner's"].id]
    assert ids(owner_api.get(f"{KEYS}?status=expired")) == [keys["Teammate's"].id]
    assert ids(owner_api.get(f"{KEYS}?status=active")) == [caller.id]
    assert len(ids(owner_api.get(f"{KEYS}?status=active,revoked"))) == 2
    error = error_of(owner_api.get(f"{KEYS}?status=lost"), 400)
    assert error["code"] == "invalid_parameter"


def test_a_rotated_key_in_its_grace_period_is_active(owner_api, keys):
    ApiKey.objects.filter(name="Owner's").update(revoked_at=timezone.now() + timedelta(hours=1))

    assert keys["Owner's"].id in ids(owner_api.get(f"{KEYS}?status=active"))
    assert ids(owner_api.get(f"{KEYS}?status=revoked")) == []


def test_the_key_list_runs_a_fixed_number_of_queries(
    owner, account, owner_api, make_token, django_assert_num_queries
):
    for number in range(20):
        make_token(owner, account, ["servers:read"], name=f"Key {number}")
    owner_api.get(KEYS)

    # The key with its context, the count, the page.
    with django_assert_num_queries(2 + auth_queries()):
        response = owner_api.get(f"{KEYS}?per_page=100")

    assert len(response.json()["data"]["api_keys"]) == 21


# --- Revoking ------------------------------------------------------------------------------


def test_revoking_a_key_keeps_it_listed_as_revoked(
    owner_api, owner, teammate, account, make_token, client_for
):
    token = make_token(teammate, account, ["servers:read"], name="Theirs")
    api_key = ApiKey.objects.get(name="Theirs")

    response = owner_api.delete(f"{KEYS}/{api_key.id}")

    assert response.status_code == 200
    shown = response.json()["data"]["api_key"]
    api_key.refresh_from_db()
    assert shown["id"] == api_key.id
    assert shown["status"] == "revoked"
    assert shown["revoked_at"] == api_key.revoked_at.strftime(TIMESTAMP)
    assert api_key.status == "revoked"
    assert error_of(client_for(token).get("/v1/servers"), 401)["code"] == "api_key_revoked"
    assert api_key.id in ids(owner_api.get(f"{KEYS}?status=revoked"))
    event = Event.objects.get(type="api_key.revoked")
    assert (event.account, event.object_id) == (account, api_key.id)
    assert event.actor_api_key == key_of(owner_api)

    again = owner_api.delete(f"{KEYS}/{api_key.id}")

    assert again.status_code == 200
    assert again.json()["data"]["api_key"]["revoked_at"] == shown["revoked_at"]
    assert Event.objects.filter(type="api_key.revoked").count() == 1


def test_a_member_revokes_only_their_own_keys(
    teammate_keys_api, teammate, owner, account, make_token
):
    make_token(teammate, account, ["servers:read"], name="Spare")
    make_token(owner, account, ["servers:read"], name="Owner's")
    spare, owners = ApiKey.objects.get(name="Spare"), ApiKey.objects.get(name="Owner's")

    assert teammate_keys_api.delete(f"{KEYS}/{spare.id}").status_code == 200
    assert error_of(teammate_keys_api.delete(f"{KEYS}/{owners.id}"), 404)["code"] == "not_found"
    owners.refresh_from_db()
    assert owners.status == "active"


def test_revoking_needs_api_keys_write(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account, ["api_keys:read"]))

    error = error_of(api.delete(f"{KEYS}/{key_of(api).id}"), 403)

    assert error["code"] == "insufficient_scope"
    assert key_of(api).status == "active"


# --- Rotating ------------------------------------------------------------------------------


def test_rotating_without_grace_kills_the_old_token_at_once(owner, account, make_token, client_for):
    old_token = make_token(owner, account, ["api_keys:write", "servers:read"], name="Deploy")
    old_api = client_for(old_token)
    old_key = key_of(old_api)

    response = old_api.post(f"{KEYS}/{old_key.id}/rotate", {}, format="json")

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    new_key = ApiKey.objects.get(pk=data["api_key"]["id"])
    assert TOKEN.match(data["token"]) and data["token"] != old_token
    assert (new_key.name, new_key.scopes, new_key.user) == ("Deploy", old_key.scopes, owner)
    assert data["api_key"]["status"] == "active"
    assert error_of(old_api.get("/v1/servers"), 401)["code"] == "api_key_revoked"
    assert client_for(data["token"]).get("/v1/servers").status_code == 200
    old_key.refresh_from_db()
    assert old_key.status == "revoked"
    rotated = Event.objects.get(type="api_key.rotated")
    assert rotated.object_id == new_key.id
    assert rotated.data["previous_attributes"]["id"] == old_key.id
    assert rotated.actor_api_key == old_key
    assert Event.objects.get(type="api_key.revoked").object_id == old_key.id


def test_rotating_with_grace_keeps_the_old_token_until_the_grace_ends(
    owner_api, owner, account, make_token, client_for
):
    old_token = make_token(owner, account, ["servers:read"], name="Bot")
    old_key = ApiKey.objects.get(name="Bot")

    response = owner_api.post(
        f"{KEYS}/{old_key.id}/rotate", {"grace_period_seconds": 3600}, format="json"
    )

    assert response.status_code == 201
    new_token = response.json()["data"]["token"]
    old_key.refresh_from_db()
    assert timedelta(minutes=59) < old_key.revoked_at - timezone.now() <= timedelta(hours=1)
    assert client_for(old_token).get("/v1/servers").status_code == 200
    assert owner_api.get(f"{KEYS}/{old_key.id}").json()["data"]["api_key"]["status"] == "active"
    # The grace period ends.
    old_key.refresh_from_db()
    old_key.revoked_at = timezone.now() - timedelta(seconds=1)  # the grace period is over
    old_key.save()
    assert error_of(client_for(old_token).get("/v1/servers"), 401)["code"] == "api_key_revoked"
    assert client_for(new_token).get("/v1/servers").status_code == 200


def test_a_key_in_its_grace_period_can_be_revoked_at_once(
    owner_api, owner, account, make_token, client_for
):
    old_token = make_token(owner, account, ["servers:read"], name="Bot")
    old_key = ApiKey.objects.get(name="Bot")
    owner_api.post(f"{KEYS}/{old_key.id}/rotate", {"grace_period_seconds": 3600}, format="json")

    response = owner_api.delete(f"{KEYS}/{old_key.id}")

    assert response.json()["data"]["api_key"]["status"] == "revoked"
    assert error_of(client_for(old_token).get("/v1/servers"), 401)["code"] == "api_key_revoked"


def test_only_an_active_key_can_be_rotated(owner_api, owner, account, make_token):
    make_token(owner, account, ["servers:read"], name="Old")
    old_key = ApiKey.objects.get(name="Old")
    owner_api.delete(f"{KEYS}/{old_key.id}")

    response = owner_api.post(f"{KEYS}/{old_key.id}/rotate", {}, format="json")

    assert error_of(response, 409)["code"] == "conflict"
    assert ApiKey.objects.filter(name="Old").count() == 1


def test_nobody_rotates_someone_elses_key(owner_api, teammate, account, make_token):
    make_token(teammate, account, ["servers:read"], name="Theirs")
    theirs = ApiKey.objects.get(name="Theirs")

    response = owner_api.post(f"{KEYS}/{theirs.id}/rotate", {}, format="json")

    assert error_of(response, 403)["code"] == "permission_denied"
    theirs.refresh_from_db()
    assert theirs.status == "active"
    assert ApiKey.objects.filter(name="Theirs").count() == 1


def test_a_narrow_key_cannot_rotate_a_broader_key(owner, account, make_token, client_for):
    make_token(owner, account, ["servers:write", "billing:read"], name="Broad")
    broad = ApiKey.objects.get(name="Broad")
    narrow_api = client_for(make_token(owner, account, ["api_keys:write"], name="Narrow"))

    response = narrow_api.post(f"{KEYS}/{broad.id}/rotate", {}, format="json")

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["billing:read", "servers:write"]
    broad.refresh_from_db()
    assert broad.status == "active"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"grace_period_seconds": -1}, [("grace_period_seconds", "min_value")]),
        ({"grace_period_seconds": 86401}, [("grace_period_seconds", "max_value")]),
        ({"grace_period_seconds": "an hour"}, [("grace_period_seconds", "invalid")]),
        ({"grace": 60}, [("grace", "unknown_field")]),
    ],
)
def test_an_invalid_rotation_is_refused(owner_api, body, fields):
    caller = key_of(owner_api)

    error = error_of(owner_api.post(f"{KEYS}/{caller.id}/rotate", body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    assert ApiKey.objects.count() == 1


def test_the_longest_grace_is_a_day(owner_api):
    caller = key_of(owner_api)

    response = owner_api.post(
        f"{KEYS}/{caller.id}/rotate", {"grace_period_seconds": 86400}, format="json"
    )

    assert response.status_code == 201
    caller.refresh_from_db()
    assert caller.revoked_at - timezone.now() > timedelta(hours=23, minutes=59)


def test_every_scope_in_the_table_can_be_granted_by_an_owner(owner_api):
    response = owner_api.post(KEYS, {"name": "All", "scopes": list(SCOPES)}, format="json")

    assert response.status_code == 201
    assert sorted(response.json()["data"]["api_key"]["scopes"]) == sorted(SCOPES)


def test_the_answers_match_the_documented_schema(owner_api, owner, account):
    document = APIClient().get("/v1/openapi.json").json()
    one, rotate = f"{KEYS}/{{id}}", f"{KEYS}/{{id}}/rotate"
    created = owner_api.post(KEYS, {"name": "Doc", "scopes": ["servers:read"]}, format="json")
    doc_key = created.json()["data"]["api_key"]["id"]
    account.max_api_keys = 2
    account.save()

    for path, method, response in (
        (KEYS, "post", created),
        (
            KEYS,
            "post",
            owner_api.post(KEYS, {"name": "3", "scopes": ["servers:read"]}, format="json"),
        ),
        (KEYS, "get", owner_api.get(KEYS)),
        (one, "get", owner_api.get(f"{KEYS}/{doc_key}")),
        (rotate, "post", owner_api.post(f"{KEYS}/{doc_key}/rotate", {}, format="json")),
        (rotate, "post", owner_api.post(f"{KEYS}/{doc_key}/rotate", {}, format="json")),
        (one, "delete", owner_api.delete(f"{KEYS}/{doc_key}")),
    ):
        status = str(response.status_code)
        assert status in {"200", "201", "409", "422"}, (path, method, response.content)
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
        assert [e.message for e in validator.iter_errors(response.json())] == [], (path, method)

"""GET and PATCH /v1/account: the calling key's own account."""

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.roles import Role, grantable_scopes
from events.models import Event
from tests.envelopes import error_of
from tests.factories import MembershipFactory
from tests.test_openapi import validator_for

ACCOUNT = "/v1/account"


@pytest.fixture
def api_as(account, make_token, client_for):
    """A client for a new member of ``account`` with ``role`` and a key of ``scopes``."""

    def make(role: str, scopes: list[str] | None = None):
        user = MembershipFactory(account=account, role=role).user
        granted = grantable_scopes(role, is_staff=False) if scopes is None else scopes
        return client_for(make_token(user, account, granted))

    return make


def test_it_shows_the_calling_keys_account(owner_api, account):
    response = owner_api.get(ACCOUNT)

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "data": {
            "account": {
                "id": account.id,
                "name": "Owner's Hosting",
                "status": "active",
                "suspended_at": None,
                "suspended_reason": "",
                "rate_limit_per_minute": None,
                "max_api_keys": 25,
                "require_second_factor": False,
                "unbilled_allowance": {
                    "instances": account.unbilled_instances,
                    "memory_mb": account.unbilled_memory_mb,
                    "cpu_percent": account.unbilled_cpu_percent,
                    "disk_mb": account.unbilled_disk_mb,
                },
                "created_at": account.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "updated_at": account.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        },
    }


# A guest (invited for one server) reads nothing of the account: tests/servers/test_server_users.py
@pytest.mark.parametrize("role", [role for role in Role.values if role != Role.GUEST])
def test_every_role_can_read_the_account(api_as, account, role):
    response = api_as(role, ["account:read"]).get(ACCOUNT)

    assert response.status_code == 200
    assert response.json()["data"]["account"]["id"] == account.id


def test_the_outsider_sees_only_their_own_account(owner_api, outsider_api, account, other_account):
    response = outsider_api.get(ACCOUNT)

    assert response.status_code == 200
    assert response.json()["data"]["account"]["id"] == other_account.id
    assert response.json()["data"]["account"]["name"] == "Someone Else's Hosting"
    assert owner_api.get(ACCOUNT).json()["data"]["account"]["id"] == account.id


def test_reading_needs_account_read(teammate_api):
    error = error_of(teammate_api.get(ACCOUNT), 403)

    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["account:read"]}


def test_it_needs_a_key(db, client_for):
    assert error_of(client_for(None).get(ACCOUNT), 401)["code"] == "authentication_required"


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_owners_and_admins_rename_the_account(api_as, account, role):
    api = api_as(role)

    response = api.patch(ACCOUNT, {"name": "  Creeper Hosting "}, format="json")

    assert response.status_code == 200
    assert response.json()["data"]["account"]["name"] == "Creeper Hosting"
    account.refresh_from_db()
    assert account.name == "Creeper Hosting"
    event = Event.objects.get(type="account.updated")
    assert event.account == account
    assert event.object_id == account.id
    assert event.data["object"]["name"] == "Creeper Hosting"
    assert event.data["previous_attributes"] == {"name": "Owner's Hosting"}
    caller_key = ApiKey.objects.filter(account=account).latest("created_at")
    assert event.actor_api_key == caller_key
    assert event.actor_user == caller_key.user


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT, Role.VIEWER])
def test_other_roles_cannot_rename_the_account(api_as, account, role):
    response = api_as(role).patch(ACCOUNT, {"name": "Mine now"}, format="json")

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["account:write"]}
    account.refresh_from_db()
    assert account.name == "Owner's Hosting"
    assert not Event.objects.filter(type="account.updated").exists()


def test_a_key_without_account_write_cannot_rename_even_for_an_owner(
    owner, account, make_token, client_for
):
    api = client_for(make_token(owner, account, ["account:read"]))

    error = error_of(api.patch(ACCOUNT, {"name": "Nope"}, format="json"), 403)

    assert error["code"] == "insufficient_scope"
    account.refresh_from_db()
    assert account.name == "Owner's Hosting"


@pytest.mark.parametrize(
    "body",
    [
        {"rate_limit_per_minute": 100000},
        {"max_api_keys": 1000},
        {"name": "Sneaky", "max_api_keys": 1000},
        {"status": "active"},
    ],
)
def test_customers_cannot_change_limits_or_read_only_fields(owner_api, account, body):
    error = error_of(owner_api.patch(ACCOUNT, body, format="json"), 400)

    assert error["code"] == "validation_failed"
    rejected = sorted(set(body) - {"name"})
    assert error["details"]["fields"] == [
        {"name": name, "code": "unknown_field", "message": "This field is not accepted here."}
        for name in rejected
    ]
    account.refresh_from_db()
    assert (account.name, account.rate_limit_per_minute, account.max_api_keys) == (
        "Owner's Hosting",
        None,
        25,
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": ""}, "blank"),
        ({"name": "   "}, "blank"),
        ({"name": None}, "null"),
        ({"name": "x" * 151}, "max_length"),
        ({"name": ["a list"]}, "invalid"),
    ],
)
def test_an_invalid_name_is_refused(owner_api, account, body, code):
    error = error_of(owner_api.patch(ACCOUNT, body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == [("name", code)]
    account.refresh_from_db()
    assert account.name == "Owner's Hosting"


def test_an_empty_patch_changes_nothing(owner_api, account):
    updated_at = account.updated_at

    response = owner_api.patch(ACCOUNT, {}, format="json")

    assert response.status_code == 200
    assert response.json()["data"]["account"]["name"] == "Owner's Hosting"
    account.refresh_from_db()
    assert account.updated_at == updated_at
    assert not Event.objects.filter(type="account.updated").exists()


def test_a_body_that_is_not_an_object_is_refused(owner_api):
    error = error_of(owner_api.patch(ACCOUNT, ["name"], format="json"), 400)

    assert error["code"] == "validation_failed"
    assert error["details"]["fields"][0]["name"] == "non_field_errors"


def test_malformed_json_and_other_media_types_are_refused(owner_api):
    malformed = owner_api.generic("PATCH", ACCOUNT, '{"name": ', content_type="application/json")
    form = owner_api.generic("PATCH", ACCOUNT, "name=x", content_type="text/plain")

    assert error_of(malformed, 400)["code"] == "invalid_json"
    assert error_of(form, 415)["code"] == "unsupported_media_type"


@pytest.mark.parametrize("method", ["put", "post", "delete"])
def test_other_methods_are_not_allowed(owner_api, method):
    response = getattr(owner_api, method)(ACCOUNT, {}, format="json")

    assert error_of(response, 405)["code"] == "method_not_allowed"


def test_a_trailing_slash_is_not_found(owner_api):
    assert error_of(owner_api.get(ACCOUNT + "/"), 404)["code"] == "not_found"


def test_the_answers_match_the_documented_schema(owner_api):
    document = APIClient().get("/v1/openapi.json").json()

    for method, response in (
        ("get", owner_api.get(ACCOUNT)),
        ("patch", owner_api.patch(ACCOUNT, {"name": "Renamed"}, format="json")),
        ("patch", owner_api.patch(ACCOUNT, {"max_api_keys": 9}, format="json")),
    ):
        status = str(response.status_code)
        validator = validator_for(
            document,
            "paths",
            "/v1/account",
            method,
            "responses",
            status,
            "content",
            "application/json",
            "schema",
        )
        assert [e.message for e in validator.iter_errors(response.json())] == [], (method, status)

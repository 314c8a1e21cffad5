"""Settings → API Keys: listing, creating (token shown once), presets, limits and revoking."""

import json
import re
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.utils import timezone

from accounts.models import ApiKey
from accounts.roles import SCOPES, Role, grantable_scopes
from hosting.dashboard.secrets_once import SHOWN_FOR_SECONDS
from tests.dashboard import (
    api_status,
    field_errors,
    html_id_text,
    messages_of,
    shown_once,
    signed_in,
)
from tests.factories import MembershipFactory

NEW_KEY = {"name": "CI deploys", "scopes": ["servers:read", "servers:power"], "expiry": "90"}


@pytest.fixture
def viewer(account):
    return MembershipFactory(account=account, role=Role.VIEWER).user


@pytest.fixture
def owner_key(owner, account, make_token) -> tuple[ApiKey, str]:
    token = make_token(owner, account, ["servers:read"], name="Owner's key")
    return ApiKey.objects.get(name="Owner's key"), token


@pytest.fixture
def teammate_key(teammate, account, make_token) -> tuple[ApiKey, str]:
    token = make_token(teammate, account, ["servers:read"], name="Teammate's key")
    return ApiKey.objects.get(name="Teammate's key"), token


def test_a_new_key_is_shown_once_and_works(owner, account):
    client = signed_in(owner)
    token, created = shown_once(client, "/settings/api-keys", NEW_KEY, "new-token")
    assert token.startswith("hms_")
    assert 'id="copy-token"' in created.content.decode()

    api_key = ApiKey.objects.get(account=account)
    assert api_key.name == "CI deploys"
    assert api_key.user == owner
    assert api_key.scopes == ["servers:power", "servers:read"]
    assert api_status(token) == (200, None)

    listing = client.get("/settings/api-keys")
    body = listing.content.decode()
    assert token not in body
    assert token[:-6] not in body
    assert f"hms_{api_key.key_id}…" in body


def test_the_new_token_waits_in_the_session_table_only_encrypted(owner):
    client = signed_in(owner)
    client.post("/settings/api-keys/new", NEW_KEY)
    session = Session.objects.get(session_key=client.cookies[settings.SESSION_COOKIE_NAME].value)
    stored = session.session_data + json.dumps(session.get_decoded())

    token = html_id_text(client.get("/settings/api-keys/created"), "new-token")

    assert token.startswith("hms_")
    assert token not in stored
    assert token[4:-6] not in stored  # not even the key id and secret without prefix or checksum


def test_a_new_token_is_not_shown_after_five_minutes(owner, account):
    client = signed_in(owner)
    client.post("/settings/api-keys/new", NEW_KEY)

    with mock.patch("cryptography.fernet.time") as fernet_clock:
        fernet_clock.time.return_value = time.time() + SHOWN_FOR_SECONDS + 5
        response = client.get("/settings/api-keys/created", follow=True)

    assert response.redirect_chain == [("/settings/api-keys", 302)]
    assert 'id="new-token"' not in response.content.decode()
    assert messages_of(response) == [
        "The token of the key “CI deploys” is no longer shown: it is shown only within 5 minutes "
        "of creating the key. Revoke that key and create a new one."
    ]
    assert client.get("/settings/api-keys/created")["Location"] == "/settings/api-keys"
    assert ApiKey.objects.get(account=account).status == "active"


def test_the_list_shows_each_keys_details(owner, owner_key):
    api_key, _ = owner_key
    ApiKey.objects.filter(pk=api_key.pk).update(
        last_used_at=timezone.now(), last_used_ip="203.0.113.9"
    )
    body = signed_in(owner).get("/settings/api-keys").content.decode()
    assert 'id="api-keys"' in body
    for column in ["Key", "Scopes", "Created by", "Status"]:
        assert f'<th scope="col">{column}</th>' in body
    for sort, column in [
        ("name", "Name"),
        ("last_used_at", "Last used"),
        ("expires_at", "Expires"),
    ]:
        assert f'<a class="sort-link" href="?sort={sort}">{column}</a></th>' in body
    assert '<a class="sort-link" href="?sort=created_at">Created <span' in body
    assert "203.0.113.9" in body
    assert f'href="/settings/api-keys/{api_key.id}/revoke">Revoke</a>' in body


def test_statuses_and_only_active_keys_offer_revoke(owner, account, make_token):
    make_token(owner, account, ["servers:read"], name="Active")
    make_token(owner, account, ["servers:read"], name="Expired")
    make_token(owner, account, ["servers:read"], name="Revoked")
    past = timezone.now() - timedelta(minutes=1)
    ApiKey.objects.filter(name="Expired").update(expires_at=past)
    ApiKey.objects.filter(name="Revoked").update(revoked_at=past)
    body = signed_in(owner).get("/settings/api-keys").content.decode()
    for status in ["active", "expired", "revoked"]:
        assert f'<span class="badge badge-key-{status}">{status}</span>' in body
    assert body.count(">Revoke</a>") == 1


def test_the_list_costs_a_fixed_number_of_queries(
    owner, teammate, account, make_token, django_assert_max_num_queries
):
    for number in range(10):
        make_token(teammate if number % 2 else owner, account, ["servers:read"])
    client = signed_in(owner)
    with django_assert_max_num_queries(6):
        response = client.get("/settings/api-keys")
    assert len(response.context["api_keys"]) == 10


def test_a_form_error_keeps_what_was_typed(owner, account):
    response = signed_in(owner).post(
        "/settings/api-keys/new",
        {"name": "Keep me", "expiry": "30", "allowed_ips": "10.0.0.0/8"},
    )
    assert response.status_code == 200
    assert field_errors(response, "scopes") == ["Choose at least one scope."]
    body = response.content.decode()
    assert 'value="Keep me"' in body
    assert '<option value="30" selected>' in body
    assert "10.0.0.0/8</textarea>" in body
    assert not ApiKey.objects.exists()


def test_a_missing_name_is_an_error_and_ticked_scopes_stay_ticked(owner):
    response = signed_in(owner).post(
        "/settings/api-keys/new", NEW_KEY | {"name": "", "scopes": ["bots:read"]}
    )
    assert field_errors(response, "name") == ["This field is required."]
    body = response.content.decode()
    assert 'value="bots:read" id="scope-bots-read" checked' in body
    assert 'value="servers:read" id="scope-servers-read" checked' not in body


def test_the_form_groups_scopes_and_disables_those_the_role_cannot_grant(viewer):
    response = signed_in(viewer).get("/settings/api-keys/new")
    body = response.content.decode()
    for area in [
        "Servers",
        "Bots",
        "Billing",
        "Tickets",
        "Analytics",
        "Webhooks",
        "Account",
        "API keys",
    ]:
        assert f"<h3>{area}</h3>" in body
    assert 'value="servers:read" id="scope-servers-read">' in body
    assert 'value="servers:write" id="scope-servers-write" disabled>' in body
    # Staff's scopes are not shown to customers at all (issue 34): not even greyed out.
    assert "<h3>Staff</h3>" not in body and 'value="admin:read"' not in body
    assert '<option value="90" selected>' in body
    assert 'id="create-key"' in body


@pytest.mark.parametrize(
    ("preset", "actions"),
    [("read", {"read"}), ("write", {"read", "write"}), ("power", {"read", "write", "power"})],
)
def test_a_preset_grants_every_such_scope_the_role_may_grant(teammate, account, preset, actions):
    signed_in(teammate).post(
        "/settings/api-keys/new", NEW_KEY | {"preset": preset, "scopes": ["bots:read"]}
    )
    api_key = ApiKey.objects.get(account=account)
    grantable = grantable_scopes(Role.DEVELOPER, is_staff=False)
    assert api_key.scopes == sorted(s for s in grantable if s.split(":")[1] in actions)
    assert "billing:read" not in api_key.scopes


def test_a_viewer_cannot_create_a_write_key(viewer, account):
    response = signed_in(viewer).post(
        "/settings/api-keys/new", NEW_KEY | {"scopes": ["servers:read", "servers:write"]}
    )
    assert response.status_code == 200
    assert field_errors(response, "scopes") == ["The role 'viewer' may not grant: servers:write."]
    assert not ApiKey.objects.exists()


def test_a_viewer_gets_a_read_key_from_the_write_preset(viewer, account):
    signed_in(viewer).post("/settings/api-keys/new", NEW_KEY | {"preset": "write"})
    scopes = ApiKey.objects.get(account=account).scopes
    assert scopes
    # Reads only, but for the viewer's own profile (their SSH keys), which every role may change.
    assert all(scope.endswith(":read") or scope == "profile:write" for scope in scopes)


@pytest.mark.parametrize(("expiry", "days"), [("30", 30), ("365", 365), ("never", None)])
def test_the_expiry_choice(owner, account, expiry, days):
    signed_in(owner).post("/settings/api-keys/new", NEW_KEY | {"expiry": expiry})
    expires_at = ApiKey.objects.get(account=account).expires_at
    if days is None:
        assert expires_at is None
    else:
        expected = timezone.now() + timedelta(days=days)
        assert abs(expires_at - expected) < timedelta(minutes=1)


def test_allowed_ips_one_per_line(owner, account):
    client = signed_in(owner)
    response = client.post(
        "/settings/api-keys/new", NEW_KEY | {"allowed_ips": "10.0.0.0/8\n\nnot-an-ip\n"}
    )
    assert field_errors(response, "allowed_ips") == [
        "'not-an-ip' is not an IP address or CIDR network."
    ]
    client.post("/settings/api-keys/new", NEW_KEY | {"allowed_ips": " 10.0.0.0/8\r\n203.0.113.7 "})
    assert ApiKey.objects.get(account=account).allowed_ips == ["10.0.0.0/8", "203.0.113.7/32"]


def test_the_key_limit_is_a_form_error(owner, account, owner_key):
    account.max_api_keys = 1
    account.save()
    response = signed_in(owner).post("/settings/api-keys/new", NEW_KEY)
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "This account already has 1 API keys, its limit; revoke one you no longer use first."
    ]
    assert ApiKey.objects.count() == 1


def test_revoking_asks_first_then_the_key_stops_working(owner, owner_key):
    api_key, token = owner_key
    client = signed_in(owner)
    confirm = client.get(f"/settings/api-keys/{api_key.id}/revoke")
    assert confirm.status_code == 200
    body = confirm.content.decode()
    assert re.search(r'<button type="submit" id="confirm-revoke"[^>]*>Revoke key</button>', body)
    assert "stops working" in body
    api_key.refresh_from_db()
    assert api_key.status == "active"

    response = client.post(f"/settings/api-keys/{api_key.id}/revoke", follow=True)
    assert response.redirect_chain == [("/settings/api-keys", 302)]
    assert messages_of(response) == [
        f"The key “Owner's key” (hms_{api_key.key_id}…) has been revoked."
    ]
    api_key.refresh_from_db()
    assert api_key.status == "revoked"
    assert api_status(token) == (401, "api_key_revoked")


def test_a_revoked_key_has_nothing_left_to_confirm(owner, owner_key):
    api_key, _ = owner_key
    api_key.revoked_at = timezone.now()
    api_key.save()
    response = signed_in(owner).get(f"/settings/api-keys/{api_key.id}/revoke", follow=True)
    assert response.redirect_chain == [("/settings/api-keys", 302)]
    assert messages_of(response) == ["The key “Owner's key” is already revoked."]


def test_a_developer_sees_only_their_own_keys_and_the_owner_sees_all(
    owner, teammate, owner_key, teammate_key
):
    seen_by_teammate = signed_in(teammate).get("/settings/api-keys").context["api_keys"]
    assert [key.name for key in seen_by_teammate] == ["Teammate's key"]
    seen_by_owner = signed_in(owner).get("/settings/api-keys").context["api_keys"]
    assert {key.name for key in seen_by_owner} == {"Owner's key", "Teammate's key"}


def test_a_developer_cannot_revoke_the_owners_key(teammate, owner_key):
    api_key, token = owner_key
    client = signed_in(teammate)
    assert client.get(f"/settings/api-keys/{api_key.id}/revoke").status_code == 404
    assert client.post(f"/settings/api-keys/{api_key.id}/revoke").status_code == 404
    assert api_status(token) == (200, None)


def test_the_owner_can_revoke_a_teammates_key(owner, teammate_key):
    api_key, token = teammate_key
    signed_in(owner).post(f"/settings/api-keys/{api_key.id}/revoke")
    assert api_status(token) == (401, "api_key_revoked")


def test_an_outsider_gets_404_for_another_accounts_key(outsider, owner_key):
    api_key, token = owner_key
    client = signed_in(outsider)
    assert client.get(f"/settings/api-keys/{api_key.id}/revoke").status_code == 404
    assert client.post(f"/settings/api-keys/{api_key.id}/revoke").status_code == 404
    assert api_status(token) == (200, None)


def test_an_owner_cannot_grant_staff_scopes(owner):
    response = signed_in(owner).post("/settings/api-keys/new", NEW_KEY | {"scopes": ["admin:read"]})
    assert field_errors(response, "scopes") == ["The role 'owner' may not grant: admin:read."]


def test_an_owner_key_from_the_power_preset_holds_every_customer_scope(owner, account):
    signed_in(owner).post("/settings/api-keys/new", NEW_KEY | {"preset": "power"})
    assert set(ApiKey.objects.get(account=account).scopes) == set(SCOPES)

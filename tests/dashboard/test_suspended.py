"""A suspended account: a banner everywhere, and its data cannot be changed from the dashboard."""

import pytest

from accounts.actors import SYSTEM, Actor
from accounts.models import ApiKey, Invitation
from accounts.roles import Role
from accounts.services import account_suspend, invitation_create
from tests.dashboard import messages_of, signed_in

REFUSED = "This account is suspended, so its data cannot be changed."


@pytest.fixture
def suspended(account, owner):
    account_suspend(account=account, reason="Unpaid invoice INV-42", actor=SYSTEM)
    account.refresh_from_db()
    return account


@pytest.fixture
def api_key(suspended, owner, make_token) -> ApiKey:
    make_token(owner, suspended, ["servers:read"], name="Deploys")
    return ApiKey.objects.get(name="Deploys")


def test_every_page_shows_the_banner_and_still_reads(owner, suspended):
    client = signed_in(owner)
    for path in [
        "/",
        "/settings/api-keys",
        "/settings/team",
        "/settings/profile",
        "/settings/activity",
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert "This account is suspended: Unpaid invoice INV-42" in response.content.decode()


@pytest.mark.parametrize(
    ("path", "data", "lands_on"),
    [
        (
            "/settings/api-keys/new",
            {"name": "x", "scopes": ["servers:read"], "expiry": "90"},
            "/settings/api-keys",
        ),
        ("/settings/team/invite", {"email": "new@example.com", "role": "viewer"}, "/settings/team"),
    ],
)
def test_creating_is_refused(owner, suspended, path, data, lands_on):
    response = signed_in(owner).post(path, data, follow=True)
    assert response.redirect_chain == [(lands_on, 302)]
    assert messages_of(response) == [REFUSED]
    assert not suspended.api_keys.exists()
    assert not Invitation.objects.exists()


def test_revoking_a_key_is_refused(owner, api_key):
    response = signed_in(owner).post(f"/settings/api-keys/{api_key.id}/revoke", follow=True)
    assert messages_of(response) == [REFUSED]
    api_key.refresh_from_db()
    assert api_key.revoked_at is None


def test_team_changes_are_refused(owner, teammate, suspended):
    invitation, _ = invitation_create(
        account=suspended, email="x@example.com", role=Role.VIEWER, actor=Actor(user=owner)
    )
    client = signed_in(owner)
    for path, data in [
        (f"/settings/team/{teammate.id}/role", {"role": "admin"}),
        (f"/settings/team/{teammate.id}/remove", {}),
        (f"/settings/team/invitations/{invitation.id}/revoke", {}),
    ]:
        response = client.post(path, data, follow=True)
        assert messages_of(response) == [REFUSED], path
    assert suspended.memberships.get(user=teammate).role == Role.DEVELOPER
    invitation.refresh_from_db()
    assert invitation.status == "pending"


def test_a_member_cannot_leave_a_suspended_account_either(teammate, suspended):
    signed_in(teammate).post(f"/settings/team/{teammate.id}/remove")
    assert suspended.memberships.filter(user=teammate).exists()


def test_the_page_offers_no_changing_buttons(owner, api_key):
    client = signed_in(owner)
    keys = client.get("/settings/api-keys").content.decode()
    assert ">Revoke</a>" not in keys
    assert "New API key" not in keys
    team = client.get("/settings/team").content.decode()
    assert "Change role" not in team
    assert 'action="/settings/team/invite"' not in team


def test_profile_password_switch_and_logout_still_work(owner, suspended, other_account):
    other_account.memberships.create(user=owner, role=Role.OWNER)
    owner.save(update_fields=["password"])  # UserFactory sets it on the instance only
    client = signed_in(owner, suspended)
    response = client.post("/settings/profile", {"name": "Still Me", "email": owner.email})
    assert response.status_code == 302
    owner.refresh_from_db()
    assert owner.name == "Still Me"
    response = client.post(
        "/password/change",
        {
            "old_password": "correct-horse-battery",
            "new_password1": "a-new-passphrase-1",
            "new_password2": "a-new-passphrase-1",
        },
    )
    assert response["Location"] == "/password/change/done"
    response = client.post("/switch", {"account_id": other_account.id}, follow=True)
    assert response.context["current_account"] == other_account
    assert client.post("/logout").status_code == 302

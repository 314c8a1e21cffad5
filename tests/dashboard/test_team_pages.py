"""Settings → Team: members, roles, removing and leaving, invitations and accepting them."""

import re

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from accounts.actors import Actor
from accounts.models import Invitation, Membership, User
from accounts.roles import Role
from accounts.services import invitation_create
from events.models import Event
from tests.dashboard import api_status, field_errors, messages_of, signed_in
from tests.factories import MembershipFactory


@pytest.fixture
def admin(account):
    return MembershipFactory(account=account, role=Role.ADMIN).user


@pytest.fixture
def invite(owner, account):
    """Invite an address as the owner; returns the invitation and the token of its link."""

    def make(email="new.person@example.com", role=Role.DEVELOPER, to=account):
        return invitation_create(account=to, email=email, role=role, actor=Actor(user=owner))

    return make


def role_of(user, account) -> str | None:
    membership = Membership.objects.filter(user=user, account=account).first()
    return membership.role if membership else None


def test_the_team_page_lists_members_with_controls_for_managers(owner, teammate):
    body = signed_in(owner).get("/settings/team").content.decode()
    assert 'id="members"' in body
    assert teammate.email in body
    assert f'action="/settings/team/{teammate.id}/role"' in body
    assert f'href="/settings/team/{teammate.id}/remove">Remove</a>' in body
    assert 'action="/settings/team/invite"' in body


def test_a_developer_sees_the_team_without_controls_but_may_leave(owner, teammate):
    body = signed_in(teammate).get("/settings/team").content.decode()
    assert owner.email in body
    assert "Change role" not in body
    assert 'action="/settings/team/invite"' not in body
    assert f'href="/settings/team/{owner.id}/remove"' not in body
    assert f'href="/settings/team/{teammate.id}/remove">Leave</a>' in body


def test_the_team_page_costs_a_fixed_number_of_queries(
    owner, account, invite, django_assert_max_num_queries
):
    for number in range(5):
        MembershipFactory(account=account, role=Role.VIEWER)
        invite(email=f"invitee{number}@example.com")
    client = signed_in(owner)
    with django_assert_max_num_queries(7):  # one of them: who has a second factor, for all
        client.get("/settings/team")


def test_an_invitation_is_mailed_with_a_working_link(
    owner, account, settings, django_capture_on_commit_callbacks
):
    settings.SITE_URL = "https://panel.example.com"
    with django_capture_on_commit_callbacks(execute=True):
        response = signed_in(owner).post(
            "/settings/team/invite",
            {"email": "New.Person@Example.com", "role": "developer"},
            follow=True,
        )
    assert messages_of(response) == ["Invitation sent to new.person@example.com as Developer."]
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["new.person@example.com"]
    path = re.search(r"https://panel\.example\.com(/invitations/\S+)", message.body).group(1)
    page = Client().get(path)
    assert page.status_code == 200
    assert escape(account.name) in page.content.decode()
    assert "Developer" in page.content.decode()
    assert 'id="invitations"' in signed_in(owner).get("/settings/team").content.decode()


def test_invite_form_errors_stay_next_to_the_fields(owner, teammate):
    client = signed_in(owner)
    response = client.post("/settings/team/invite", {"email": "not-an-email", "role": "viewer"})
    assert field_errors(response, "email") == ["Enter a valid email address."]
    assert 'value="not-an-email"' in response.content.decode()
    response = client.post("/settings/team/invite", {"email": teammate.email, "role": "viewer"})
    assert field_errors(response, "email") == [
        f"{teammate.email} is already a member of this account."
    ]
    assert mail.outbox == []


def test_a_developer_cannot_invite(teammate):
    response = signed_in(teammate).post(
        "/settings/team/invite", {"email": "friend@example.com", "role": "viewer"}
    )
    assert response.context["form"].non_field_errors() == [
        "Only owners and admins can manage the team."
    ]
    assert not Invitation.objects.exists()


def test_an_admin_is_not_offered_the_owner_role_and_cannot_invite_owners(admin):
    client = signed_in(admin)
    assert '<option value="owner"' not in client.get("/settings/team").content.decode()
    response = client.post("/settings/team/invite", {"email": "boss@example.com", "role": "owner"})
    assert field_errors(response, "role")
    assert not Invitation.objects.exists()


def test_a_new_user_accepts_by_creating_their_user(owner, account, invite):
    _, token = invite(role=Role.SUPPORT)
    client = Client()
    page = client.get(f"/invitations/{token}")
    assert page.context["mode"] == "sign_up"
    response = client.post(
        f"/invitations/{token}",
        {"name": "New Person", "password1": "pass-phrase-for-new", "password2": "nope"},
    )
    assert field_errors(response, "password2")
    assert 'value="New Person"' in response.content.decode()
    assert not User.objects.filter(email="new.person@example.com").exists()

    response = client.post(
        f"/invitations/{token}",
        {
            "name": "New Person",
            "password1": "pass-phrase-for-new",
            "password2": "pass-phrase-for-new",
        },
        follow=True,
    )
    assert response.redirect_chain == [("/", 302)]
    user = User.objects.get(email="new.person@example.com")
    assert user.check_password("pass-phrase-for-new")
    assert role_of(user, account) == Role.SUPPORT
    assert response.context["user"] == user
    assert response.context["current_account"] == account
    assert messages_of(response) == [f"Welcome to {account.name}! You joined as Support."]
    event = Event.objects.get(type="member.added", object_id=user.id)
    assert event.actor_user == user
    assert Client().get(f"/invitations/{token}").status_code == 404


def test_an_existing_user_signs_in_and_accepts(invite, account, other_account):
    user = MembershipFactory(account=other_account, role=Role.OWNER).user
    user.save(update_fields=["password"])  # sign in with it below
    _, token = invite(email=user.email.upper(), role=Role.VIEWER)
    page = Client().get(f"/invitations/{token}")
    assert page.context["mode"] == "sign_in"
    assert f'href="/login?next=%2Finvitations%2F{token}"' in page.content.decode()

    client = Client()
    response = client.post(
        f"/login?next=/invitations/{token}",
        {
            "username": user.email,
            "password": "correct-horse-battery",
            "next": f"/invitations/{token}",
        },
    )
    assert response["Location"] == f"/invitations/{token}"
    assert client.get(f"/invitations/{token}").context["mode"] == "accept"
    response = client.post(f"/invitations/{token}", follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert role_of(user, account) == Role.VIEWER
    assert response.context["current_account"] == account


def test_someone_else_signed_in_is_told_and_cannot_accept(invite, outsider, other_account):
    _, token = invite()
    client = signed_in(outsider)
    page = client.get(f"/invitations/{token}")
    assert page.context["mode"] == "other_user"
    assert "this invitation is for <strong>new.person@example.com</strong>" in (
        page.content.decode()
    )
    assert client.post(f"/invitations/{token}").status_code == 403
    assert list(Membership.objects.filter(user=outsider)) == [
        Membership.objects.get(user=outsider, account=other_account)
    ]


@pytest.mark.parametrize("state", ["unknown", "revoked", "expired", "accepted"])
def test_an_unusable_invitation_link_is_404(invite, owner, state):
    invitation, token = invite()
    if state == "unknown":
        token = "x" * 43
    elif state == "revoked":
        invitation.revoked_at = timezone.now()
    elif state == "expired":
        invitation.expires_at = timezone.now()
    else:
        invitation.accepted_at = timezone.now()
    invitation.save()
    assert Client().get(f"/invitations/{token}").status_code == 404
    assert signed_in(owner).post(f"/invitations/{token}").status_code == 404


def test_the_owner_changes_a_role(owner, teammate, account):
    response = signed_in(owner).post(
        f"/settings/team/{teammate.id}/role", {"role": "admin"}, follow=True
    )
    assert messages_of(response) == [f"{teammate.email} is now Admin."]
    assert role_of(teammate, account) == Role.ADMIN


def test_demoting_a_developer_to_viewer_narrows_their_keys_at_once(
    owner, teammate, account, make_token, client_for
):
    token = make_token(teammate, account, ["servers:read", "servers:write"])
    signed_in(owner).post(f"/settings/team/{teammate.id}/role", {"role": "viewer"})
    assert role_of(teammate, account) == Role.VIEWER
    assert api_status(token) == (200, None)  # servers:read is still within a viewer's role
    form = signed_in(teammate).get("/settings/api-keys/new").content.decode()
    assert 'value="servers:write" id="scope-servers-write" disabled>' in form


def test_the_last_owner_cannot_be_demoted_or_removed(owner, account):
    client = signed_in(owner)
    response = client.post(f"/settings/team/{owner.id}/role", {"role": "admin"}, follow=True)
    assert messages_of(response) == [
        "An account needs at least one owner; make someone else owner first."
    ]
    response = client.post(f"/settings/team/{owner.id}/remove", follow=True)
    assert messages_of(response) == [
        "The last owner cannot be removed; make someone else owner first."
    ]
    assert role_of(owner, account) == Role.OWNER


def test_an_admin_cannot_touch_an_owner(admin, owner, account):
    client = signed_in(admin)
    body = client.get("/settings/team").content.decode()
    assert f'action="/settings/team/{owner.id}/role"' not in body
    response = client.post(f"/settings/team/{owner.id}/role", {"role": "viewer"}, follow=True)
    assert messages_of(response) == ["Only owners can add, change or remove owners."]
    client.post(f"/settings/team/{owner.id}/remove")
    assert role_of(owner, account) == Role.OWNER


def test_a_developer_cannot_change_roles(teammate, owner, account):
    response = signed_in(teammate).post(
        f"/settings/team/{teammate.id}/role", {"role": "admin"}, follow=True
    )
    assert messages_of(response) == ["Only owners and admins can manage the team."]
    assert role_of(teammate, account) == Role.DEVELOPER


def test_an_unknown_role_is_refused(owner, teammate, account):
    response = signed_in(owner).post(
        f"/settings/team/{teammate.id}/role", {"role": "emperor"}, follow=True
    )
    assert messages_of(response) == ["Choose one of the roles."]
    assert role_of(teammate, account) == Role.DEVELOPER


def test_removing_a_member_asks_first_and_their_keys_stop_working(
    owner, teammate, account, make_token
):
    token = make_token(teammate, account, ["servers:read"])
    client = signed_in(owner)
    confirm = client.get(f"/settings/team/{teammate.id}/remove")
    assert confirm.status_code == 200
    assert "stops working" in confirm.content.decode()
    assert role_of(teammate, account) == Role.DEVELOPER

    response = client.post(f"/settings/team/{teammate.id}/remove", follow=True)
    assert response.redirect_chain == [("/settings/team", 302)]
    assert messages_of(response) == [f"{teammate.email} was removed from the account."]
    assert role_of(teammate, account) is None
    # The keys are revoked too, but a removed member's key only ever says "invalid" (CONTRACT §5).
    assert api_status(token) == (401, "invalid_api_key")


def test_a_removed_members_unrevoked_key_answers_invalid_api_key(
    owner, teammate, account, make_token
):
    token = make_token(teammate, account, ["servers:read"])
    signed_in(owner).post(f"/settings/team/{teammate.id}/remove")
    teammate.api_keys.update(revoked_at=None)  # even a key that escaped revocation
    assert api_status(token) == (401, "invalid_api_key")


def test_a_member_may_leave(teammate, account, other_account):
    Membership.objects.create(account=other_account, user=teammate, role=Role.VIEWER)
    client = signed_in(teammate, account)
    confirm = client.get(f"/settings/team/{teammate.id}/remove")
    assert confirm.context["leaving"] is True
    response = client.post(f"/settings/team/{teammate.id}/remove", follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert messages_of(response) == [f"You have left {account.name}."]
    assert role_of(teammate, account) is None
    assert response.context["current_account"] == other_account


def test_revoking_an_invitation(owner, invite):
    invitation, token = invite()
    response = signed_in(owner).post(
        f"/settings/team/invitations/{invitation.id}/revoke", follow=True
    )
    assert messages_of(response) == ["The invitation of new.person@example.com was revoked."]
    invitation.refresh_from_db()
    assert invitation.status == "revoked"
    assert Client().get(f"/invitations/{token}").status_code == 404


def test_an_outsider_gets_404_on_members_and_invitations_of_another_account(
    outsider, owner, teammate, account, invite
):
    invitation, _ = invite()
    client = signed_in(outsider)
    assert client.get(f"/settings/team/{teammate.id}/remove").status_code == 404
    assert client.post(f"/settings/team/{teammate.id}/remove").status_code == 404
    assert client.post(f"/settings/team/{teammate.id}/role", {"role": "owner"}).status_code == 404
    assert client.post(f"/settings/team/invitations/{invitation.id}/revoke").status_code == 404
    assert role_of(teammate, account) == Role.DEVELOPER
    invitation.refresh_from_db()
    assert invitation.status == "pending"

"""/v1/account/members and /v1/account/invitations: the team, its roles and its invitations."""

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.actors import SYSTEM, Actor
from accounts.models import ApiKey, Invitation, Membership
from accounts.roles import Role, grantable_scopes
from accounts.services import invitation_accept, invitation_create, invitation_for_token
from events.models import Event
from tests.conftest import auth_queries
from tests.envelopes import error_of
from tests.factories import MembershipFactory, ServerFactory, UserFactory
from tests.test_openapi import validator_for

MEMBERS = "/v1/account/members"
INVITATIONS = "/v1/account/invitations"
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


def caller_key(api) -> ApiKey:
    """The key an APIClient authenticates with."""
    token = api._credentials["HTTP_AUTHORIZATION"].removeprefix("Bearer ")
    return ApiKey.objects.get(key_id=token[4:16])


@pytest.fixture
def member_of(account, make_token, client_for):
    """A new member of ``account`` with ``role``, and a client with a key of ``scopes``."""

    def make(role: str, scopes: list[str] | None = None):
        user = MembershipFactory(account=account, role=role).user
        granted = grantable_scopes(role, is_staff=False) if scopes is None else scopes
        return user, client_for(make_token(user, account, granted))

    return make


@pytest.fixture
def invitation(account, owner):
    return Invitation.objects.create(
        account=account,
        email="sam@example.com",
        role=Role.DEVELOPER,
        token_digest="d" * 64,
        invited_by=owner,
        expires_at=timezone.now() + timedelta(days=7),
    )


def member_json(membership: Membership) -> dict:
    return {
        "id": membership.user.id,
        "email": membership.user.email,
        "name": membership.user.name,
        "role": membership.role,
        "joined_at": membership.created_at.strftime(TIMESTAMP),
    }


# --- Listing and reading members -------------------------------------------------------------


def test_the_list_shows_every_member_newest_first(owner_api, owner, teammate, account, outsider):
    response = owner_api.get(MEMBERS)

    assert response.status_code == 200
    memberships = [Membership.objects.get(user=u, account=account) for u in (teammate, owner)]
    assert response.json()["data"] == {
        "members": [member_json(m) for m in memberships],
        "pagination": {"page": 1, "per_page": 25, "total": 2, "total_pages": 1},
    }


# A guest (invited for one server) reads nothing of the account: tests/servers/test_server_users.py
@pytest.mark.parametrize("role", [role for role in Role.values if role != Role.GUEST])
def test_every_role_can_list_and_read_members(member_of, owner, role):
    _, api = member_of(role, ["account:read"])

    listed = api.get(MEMBERS)
    one = api.get(f"{MEMBERS}/{owner.id}")

    assert listed.status_code == 200
    assert listed.json()["data"]["pagination"]["total"] == 2
    assert one.status_code == 200
    assert one.json()["data"]["member"]["email"] == owner.email
    assert one.json()["data"]["member"]["role"] == "owner"


def test_the_members_can_be_filtered_by_role_and_ordered(owner_api, owner, teammate):
    developers = owner_api.get(f"{MEMBERS}?role=developer").json()["data"]["members"]
    by_email = owner_api.get(f"{MEMBERS}?ordering=email").json()["data"]["members"]

    assert [m["id"] for m in developers] == [teammate.id]
    assert [m["email"] for m in by_email] == sorted([owner.email, teammate.email])
    error = error_of(owner_api.get(f"{MEMBERS}?role=emperor"), 400)
    assert error["code"] == "invalid_parameter"
    assert error["details"]["parameters"][0]["name"] == "role"


def test_the_member_list_runs_a_fixed_number_of_queries(
    owner_api, account, django_assert_num_queries
):
    MembershipFactory.create_batch(30, account=account, role=Role.VIEWER)
    owner_api.get(MEMBERS)  # the first call records last use; steady state follows

    # The key with its context, the count, the page with its users.
    with django_assert_num_queries(2 + auth_queries()):
        response = owner_api.get(f"{MEMBERS}?per_page=100")

    assert len(response.json()["data"]["members"]) == 31


def test_listing_needs_account_read(teammate_api):
    error = error_of(teammate_api.get(MEMBERS), 403)

    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["account:read"]}


def test_the_outsider_sees_only_their_own_members(outsider_api, outsider):
    members = outsider_api.get(MEMBERS).json()["data"]["members"]

    assert [m["id"] for m in members] == [outsider.id]


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_a_member_of_another_account_is_not_found(owner_api, outsider_api, owner, outsider, method):
    body = {"role": "viewer"} if method == "patch" else None
    for api, user in ((outsider_api, owner), (owner_api, outsider)):
        response = getattr(api, method)(f"{MEMBERS}/{user.id}", body, format="json")
        assert error_of(response, 404)["code"] == "not_found"
    assert Membership.objects.get(user=owner).role == Role.OWNER
    assert Membership.objects.get(user=outsider).role == Role.OWNER
    missing = owner_api.get(f"{MEMBERS}/usr_000000000000000000000000")
    assert error_of(missing, 404)["code"] == "not_found"


# --- Adding members: an invitation ---------------------------------------------------------


@pytest.mark.parametrize("url", [MEMBERS, INVITATIONS])
def test_adding_a_member_sends_an_invitation(
    owner_api, owner, account, url, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_api.post(
            url, {"email": " Sam@Example.com ", "role": "developer"}, format="json"
        )

    assert response.status_code == 201, response.content
    invitation = Invitation.objects.get()
    created = invitation.created_at.strftime(TIMESTAMP)
    assert response.json() == {
        "success": True,
        "data": {
            "invitation": {
                "id": invitation.id,
                "email": "sam@example.com",
                "role": "developer",
                "status": "pending",
                "invited_by": owner.id,
                "created_at": created,
                "expires_at": invitation.expires_at.strftime(TIMESTAMP),
                "accepted_at": None,
                "revoked_at": None,
            }
        },
    }
    assert re.fullmatch(r"ivt_[0-9A-Za-z]{24}", invitation.id)
    assert invitation.account == account
    assert abs(invitation.expires_at - invitation.created_at - timedelta(days=7)) < timedelta(
        seconds=5
    )
    assert not Membership.objects.filter(user__email="sam@example.com").exists()
    # The link goes only to the invitee, never into the API answer.
    [message] = mail.outbox
    assert message.to == ["sam@example.com"]
    assert "Owner's Hosting" in message.subject
    token = re.search(r"http://[^\s]+/invitations/(\S+)", message.body).group(1)
    assert token not in response.content.decode()
    assert invitation_for_token(token) == invitation
    event = Event.objects.get(type="member.invited")
    assert (event.account, event.object_id) == (account, invitation.id)
    assert event.actor_api_key == caller_key(owner_api)
    assert event.actor_user == owner


def test_an_admin_invites_but_only_owners_invite_owners(member_of, account):
    _, admin_api = member_of(Role.ADMIN)

    ok = admin_api.post(INVITATIONS, {"email": "dev@example.com", "role": "admin"}, format="json")
    refused = admin_api.post(MEMBERS, {"email": "boss@example.com", "role": "owner"}, format="json")

    assert ok.status_code == 201
    assert error_of(refused, 403)["code"] == "permission_denied"
    assert list(Invitation.objects.values_list("email", flat=True)) == ["dev@example.com"]


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT, Role.VIEWER])
@pytest.mark.parametrize("url", [MEMBERS, INVITATIONS])
def test_other_roles_cannot_invite(member_of, role, url):
    _, api = member_of(role)

    response = api.post(url, {"email": "friend@example.com", "role": "viewer"}, format="json")

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["account:write"]}
    assert not Invitation.objects.exists()


def test_inviting_an_existing_member_is_a_conflict(owner_api, teammate):
    response = owner_api.post(
        MEMBERS, {"email": teammate.email.upper(), "role": "viewer"}, format="json"
    )

    assert error_of(response, 409)["code"] == "conflict"
    assert not Invitation.objects.exists()


def test_inviting_again_replaces_the_pending_invitation(owner_api, invitation):
    response = owner_api.post(
        INVITATIONS, {"email": "sam@example.com", "role": "viewer"}, format="json"
    )

    assert response.status_code == 201
    invitation.refresh_from_db()
    assert invitation.status == "revoked"
    assert Invitation.objects.exclude(pk=invitation.pk).get().role == "viewer"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, [("email", "required"), ("role", "required")]),
        ({"email": "not-an-email", "role": "viewer"}, [("email", "invalid")]),
        ({"email": "a@example.com", "role": "emperor"}, [("role", "invalid_choice")]),
        ({"email": "a@example.com", "role": "viewer", "token": "x"}, [("token", "unknown_field")]),
    ],
)
@pytest.mark.parametrize("url", [MEMBERS, INVITATIONS])
def test_an_invalid_invitation_is_refused(owner_api, url, body, fields):
    error = error_of(owner_api.post(url, body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    assert not Invitation.objects.exists()


# --- Changing roles ------------------------------------------------------------------------


def test_the_owner_changes_a_members_role(owner_api, owner, teammate, account):
    response = owner_api.patch(f"{MEMBERS}/{teammate.id}", {"role": "billing"}, format="json")

    assert response.status_code == 200
    membership = Membership.objects.get(user=teammate)
    assert response.json()["data"] == {"member": member_json(membership)}
    assert membership.role == "billing"
    event = Event.objects.get(type="member.role_changed")
    assert (event.account, event.object_id) == (account, teammate.id)
    assert event.data["previous_attributes"] == {"role": "developer"}
    assert event.actor_api_key == caller_key(owner_api)


def test_demoting_a_developer_to_viewer_demotes_their_keys_at_once(
    owner_api, teammate, account, make_token, client_for
):
    ServerFactory(account=account)
    their_api = client_for(
        make_token(teammate, account, ["servers:write", "api_keys:read", "account:read"])
    )
    assert their_api.get("/v1/api-keys").status_code == 200

    response = owner_api.patch(f"{MEMBERS}/{teammate.id}", {"role": "viewer"}, format="json")

    assert response.status_code == 200
    error = error_of(their_api.get("/v1/api-keys"), 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["api_keys:read"]}
    # servers:write implies servers:read, which a viewer keeps.
    servers = their_api.get("/v1/servers")
    assert servers.status_code == 200
    assert servers.json()["data"]["pagination"]["total"] == 1


def test_the_last_owner_cannot_be_demoted(owner_api, owner):
    response = owner_api.patch(f"{MEMBERS}/{owner.id}", {"role": "admin"}, format="json")

    assert error_of(response, 409)["code"] == "conflict"
    assert Membership.objects.get(user=owner).role == Role.OWNER
    assert not Event.objects.filter(type="member.role_changed").exists()


def test_an_owner_steps_down_once_there_is_another_owner(owner_api, owner, member_of):
    member_of(Role.OWNER)

    response = owner_api.patch(f"{MEMBERS}/{owner.id}", {"role": "admin"}, format="json")

    assert response.status_code == 200
    assert Membership.objects.get(user=owner).role == Role.ADMIN


def test_an_admin_manages_the_team_but_not_its_owners(member_of, owner, teammate):
    _, admin_api = member_of(Role.ADMIN)

    promote = admin_api.patch(f"{MEMBERS}/{teammate.id}", {"role": "owner"}, format="json")
    demote = admin_api.patch(f"{MEMBERS}/{owner.id}", {"role": "viewer"}, format="json")
    change = admin_api.patch(f"{MEMBERS}/{teammate.id}", {"role": "support"}, format="json")

    assert error_of(promote, 403)["code"] == "permission_denied"
    assert error_of(demote, 403)["code"] == "permission_denied"
    assert change.status_code == 200
    assert Membership.objects.get(user=owner).role == Role.OWNER
    assert Membership.objects.get(user=teammate).role == Role.SUPPORT


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT, Role.VIEWER])
def test_other_roles_cannot_change_roles(member_of, teammate, role):
    _, api = member_of(role)

    response = api.patch(f"{MEMBERS}/{teammate.id}", {"role": "viewer"}, format="json")

    assert error_of(response, 403)["code"] == "insufficient_scope"
    assert Membership.objects.get(user=teammate).role == Role.DEVELOPER


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"role": "emperor"}, [("role", "invalid_choice")]),
        ({"role": None}, [("role", "null")]),
        ({"role": "viewer", "email": "x@example.com"}, [("email", "unknown_field")]),
    ],
)
def test_an_invalid_role_change_is_refused(owner_api, teammate, body, fields):
    error = error_of(owner_api.patch(f"{MEMBERS}/{teammate.id}", body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    assert Membership.objects.get(user=teammate).role == Role.DEVELOPER


def test_an_empty_patch_changes_no_role(owner_api, teammate):
    response = owner_api.patch(f"{MEMBERS}/{teammate.id}", {}, format="json")

    assert response.status_code == 200
    assert response.json()["data"]["member"]["role"] == "developer"
    assert not Event.objects.filter(type="member.role_changed").exists()


# --- Removing members ----------------------------------------------------------------------


def test_removing_a_member_revokes_their_keys(owner_api, teammate, account, make_token, client_for):
    their_api = client_for(make_token(teammate, account, ["servers:read"]))
    their_key = caller_key(their_api)

    response = owner_api.delete(f"{MEMBERS}/{teammate.id}")

    assert response.status_code == 200
    assert response.json() == {"success": True, "data": {"id": teammate.id, "deleted": True}}
    assert not Membership.objects.filter(user=teammate).exists()
    their_key.refresh_from_db()
    assert their_key.status == "revoked"
    # Revoked on the way out, but a removed member's key says only "invalid" (CONTRACT §5).
    assert error_of(their_api.get("/v1/servers"), 401)["code"] == "invalid_api_key"
    removed = Event.objects.get(type="member.removed")
    revoked = Event.objects.get(type="api_key.revoked")
    assert (removed.object_id, revoked.object_id) == (teammate.id, their_key.id)
    assert removed.actor_api_key == revoked.actor_api_key == caller_key(owner_api)


def test_the_last_owner_cannot_be_removed(owner_api, owner):
    response = owner_api.delete(f"{MEMBERS}/{owner.id}")

    assert error_of(response, 409)["code"] == "conflict"
    assert Membership.objects.get(user=owner).role == Role.OWNER
    assert owner_api.get(MEMBERS).status_code == 200


def test_an_admin_cannot_remove_an_owner(member_of, owner):
    _, admin_api = member_of(Role.ADMIN)

    assert error_of(admin_api.delete(f"{MEMBERS}/{owner.id}"), 403)["code"] == "permission_denied"
    assert Membership.objects.filter(user=owner).exists()


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT, Role.VIEWER])
def test_other_roles_cannot_remove_members(member_of, teammate, role):
    _, api = member_of(role)

    assert error_of(api.delete(f"{MEMBERS}/{teammate.id}"), 403)["code"] == "insufficient_scope"
    assert Membership.objects.filter(user=teammate).exists()


# --- Invitations ---------------------------------------------------------------------------


@pytest.fixture
def invitations(account, owner, other_account):
    """One invitation in every status, plus one of another account."""
    now = timezone.now()

    def make(email, target=account, **fields):
        fields.setdefault("expires_at", now + timedelta(days=7))
        return Invitation.objects.create(
            account=target,
            email=email,
            role=Role.VIEWER,
            token_digest=email.ljust(64, "x"),
            invited_by=owner,
            **fields,
        )

    return {
        "pending": make("pending@example.com", created_at=now - timedelta(hours=4)),
        "accepted": make(
            "accepted@example.com", accepted_at=now, created_at=now - timedelta(hours=3)
        ),
        "revoked": make("revoked@example.com", revoked_at=now, created_at=now - timedelta(hours=2)),
        "expired": make("expired@example.com", expires_at=now, created_at=now - timedelta(hours=1)),
        "theirs": make("theirs@example.com", target=other_account),
    }


def test_the_invitation_list_shows_the_accounts_invitations_newest_first(owner_api, invitations):
    response = owner_api.get(INVITATIONS)

    assert response.status_code == 200
    listed = response.json()["data"]["invitations"]
    assert [(i["email"], i["status"]) for i in listed] == [
        ("expired@example.com", "expired"),
        ("revoked@example.com", "revoked"),
        ("accepted@example.com", "accepted"),
        ("pending@example.com", "pending"),
    ]
    assert response.json()["data"]["pagination"]["total"] == 4


@pytest.mark.parametrize("status", ["pending", "accepted", "revoked", "expired"])
def test_invitations_can_be_filtered_by_status(owner_api, invitations, status):
    listed = owner_api.get(f"{INVITATIONS}?status={status}").json()["data"]["invitations"]

    assert [i["id"] for i in listed] == [invitations[status].id]


def test_several_statuses_can_be_asked_for_and_unknown_ones_are_refused(owner_api, invitations):
    listed = owner_api.get(f"{INVITATIONS}?status=pending,expired").json()["data"]["invitations"]

    assert [i["id"] for i in listed] == [invitations["expired"].id, invitations["pending"].id]
    error = error_of(owner_api.get(f"{INVITATIONS}?status=lost"), 400)
    assert error["code"] == "invalid_parameter"
    assert error["details"]["parameters"][0]["name"] == "status"


def test_the_invitation_list_runs_a_fixed_number_of_queries(
    owner_api, invitations, django_assert_num_queries
):
    owner_api.get(INVITATIONS)

    with django_assert_num_queries(2 + auth_queries()):
        assert owner_api.get(INVITATIONS).status_code == 200


def test_any_member_reads_invitations_but_needs_account_read(member_of, invitations):
    _, viewer_api = member_of(Role.VIEWER)
    _, no_scope_api = member_of(Role.ADMIN, ["servers:read"])
    pending = invitations["pending"]

    response = viewer_api.get(f"{INVITATIONS}/{pending.id}")

    assert response.status_code == 200
    assert response.json()["data"]["invitation"]["email"] == "pending@example.com"
    error = error_of(no_scope_api.get(INVITATIONS), 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["account:read"]}


@pytest.mark.parametrize("method", ["get", "delete"])
def test_an_invitation_of_another_account_is_not_found(
    owner_api, outsider_api, invitations, method
):
    for api, invitation in (
        (outsider_api, invitations["pending"]),
        (owner_api, invitations["theirs"]),
    ):
        response = getattr(api, method)(f"{INVITATIONS}/{invitation.id}")
        assert error_of(response, 404)["code"] == "not_found"
    invitations["pending"].refresh_from_db()
    assert invitations["pending"].status == "pending"


def test_revoking_an_invitation_kills_its_link(
    owner_api, account, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(INVITATIONS, {"email": "sam@example.com", "role": "viewer"}, format="json")
    token = re.search(r"/invitations/(\S+)", mail.outbox[0].body).group(1)
    invitation = Invitation.objects.get()

    response = owner_api.delete(f"{INVITATIONS}/{invitation.id}")

    assert response.status_code == 200
    assert response.json() == {"success": True, "data": {"id": invitation.id, "deleted": True}}
    invitation.refresh_from_db()
    assert invitation.status == "revoked"
    assert invitation_for_token(token) is None
    event = Event.objects.get(type="member.invitation_revoked")
    assert (event.account, event.object_id) == (account, invitation.id)
    assert event.actor_api_key == caller_key(owner_api)
    # Still listed, as revoked; a second revocation is a conflict.
    assert (
        owner_api.get(f"{INVITATIONS}/{invitation.id}").json()["data"]["invitation"]["status"]
        == "revoked"
    )
    assert error_of(owner_api.delete(f"{INVITATIONS}/{invitation.id}"), 409)["code"] == "conflict"


def test_an_accepted_invitation_cannot_be_revoked(owner_api, owner, account):
    invitation, token = invitation_create(
        account=account, email="sam@example.com", role=Role.DEVELOPER, actor=Actor(user=owner)
    )
    user = UserFactory(email="sam@example.com")
    invitation_accept(token=token, user=user, actor=SYSTEM)

    response = owner_api.delete(f"{INVITATIONS}/{invitation.id}")

    assert error_of(response, 409)["code"] == "conflict"
    invitation.refresh_from_db()
    assert invitation.status == "accepted"
    assert owner_api.get(f"{MEMBERS}/{user.id}").json()["data"]["member"]["role"] == "developer"


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT, Role.VIEWER])
def test_other_roles_cannot_revoke_invitations(member_of, invitation, role):
    _, api = member_of(role)

    assert error_of(api.delete(f"{INVITATIONS}/{invitation.id}"), 403)["code"] == (
        "insufficient_scope"
    )
    invitation.refresh_from_db()
    assert invitation.status == "pending"


def test_the_answers_match_the_documented_schema(
    owner_api, owner, teammate, invitation, django_capture_on_commit_callbacks
):
    document = APIClient().get("/v1/openapi.json").json()
    member, invite = f"{MEMBERS}/{{user_id}}", f"{INVITATIONS}/{{id}}"
    new = {"email": "new@example.com", "role": "viewer"}

    for path, method, response in (
        (MEMBERS, "get", owner_api.get(MEMBERS)),
        (MEMBERS, "post", owner_api.post(MEMBERS, new, format="json")),
        (
            MEMBERS,
            "post",
            owner_api.post(MEMBERS, {"email": owner.email, "role": "viewer"}, format="json"),
        ),
        (member, "get", owner_api.get(f"{MEMBERS}/{teammate.id}")),
        (
            member,
            "patch",
            owner_api.patch(f"{MEMBERS}/{teammate.id}", {"role": "viewer"}, format="json"),
        ),
        (
            member,
            "patch",
            owner_api.patch(f"{MEMBERS}/{owner.id}", {"role": "viewer"}, format="json"),
        ),
        (member, "delete", owner_api.delete(f"{MEMBERS}/{teammate.id}")),
        (INVITATIONS, "get", owner_api.get(INVITATIONS)),
        (INVITATIONS, "post", owner_api.post(INVITATIONS, new, format="json")),
        (invite, "get", owner_api.get(f"{INVITATIONS}/{invitation.id}")),
        (invite, "delete", owner_api.delete(f"{INVITATIONS}/{invitation.id}")),
        (invite, "delete", owner_api.delete(f"{INVITATIONS}/{invitation.id}")),
    ):
        status = str(response.status_code)
        assert status in {"200", "201", "409"}, (path, method, response.content)
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

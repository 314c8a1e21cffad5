"""Grants bind however the person joins: the grants waiting for an e-mail address become that
person's when they become a member of the account by any route that makes one (an invitation
accepted by a signed-in user, the sign-up from an invitation, a guest invitation replaced by a
team invitation), and a grant for someone who already is a member is theirs at once. No other
route makes a membership of an existing account: the staff API's members are read-only and the
Django admin shows them without an add form."""

import pytest
from django.core import mail

from accounts.actors import Actor
from accounts.models import Membership
from accounts.roles import Role
from accounts.services import (
    invitation_accept,
    invitation_accept_as_new_user,
    invitation_create,
)
from servers.models import ServerGrant
from servers.services.grants import grant_create
from servers.services.permissions import Caller, instance_permissions
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

EMAIL = "mod@example.com"


def token_of_last_mail() -> str:
    return mail.outbox[-1].body.split("/invitations/")[1].split()[0].rstrip("/")


@pytest.fixture
def waiting(owner, server, bot, django_capture_on_commit_callbacks):
    """Grants for EMAIL on the server and the bot, waiting on a guest invitation."""
    with django_capture_on_commit_callbacks(execute=True):
        grant_create(
            instance=server, email=EMAIL, permissions=["console.view"], actor=Actor(user=owner)
        )
        grant_create(instance=bot, email=EMAIL, permissions=["files.read"], actor=Actor(user=owner))
    return ServerGrant.objects.filter(invitation__email=EMAIL)


def assert_bound(account, server, bot, person):
    assert set(ServerGrant.objects.values_list("user", flat=True)) == {person.pk}
    role = Membership.objects.get(account=account, user=person).role
    caller = Caller(user=person, account_id=account.pk, role=role)
    assert "console.view" in instance_permissions(caller, server)
    assert "files.read" in instance_permissions(caller, bot)


def test_a_signed_in_user_accepting_the_guest_invitation_gets_the_grants(
    account, server, bot, waiting
):
    person = UserFactory(email=EMAIL)
    invitation_accept(token=token_of_last_mail(), user=person, actor=Actor(user=person))
    assert_bound(account, server, bot, person)


def test_signing_up_from_the_invitation_gets_the_grants(account, server, bot, waiting):
    membership = invitation_accept_as_new_user(
        token=token_of_last_mail(), name="Mod", password="a long passphrase 42", actor=Actor()
    )
    assert membership.role == Role.GUEST
    assert_bound(account, server, bot, membership.user)


def test_a_team_invitation_that_replaces_the_guest_one_brings_the_grants(
    owner, account, server, bot, waiting, django_capture_on_commit_callbacks
):
    # The owner then invites the same person to the whole team: the guest invitation, which the
    # grants wait on, is replaced (revoked) by this one.
    with django_capture_on_commit_callbacks(execute=True):
        invitation_create(account=account, email=EMAIL, role=Role.SUPPORT, actor=Actor(user=owner))
    person = UserFactory(email=EMAIL.upper())  # the address in another case is the same person
    membership = invitation_accept(
        token=token_of_last_mail(), user=person, actor=Actor(user=person)
    )
    assert membership.role == Role.SUPPORT
    assert_bound(account, server, bot, person)


def test_the_grants_of_another_address_or_account_stay_waiting(
    owner, account, other_account, server, bot, waiting, django_capture_on_commit_callbacks
):
    other_owner = Membership.objects.create(
        account=other_account, user=UserFactory(), role=Role.OWNER
    ).user
    with django_capture_on_commit_callbacks(execute=True):
        invitation_create(
            account=other_account, email=EMAIL, role=Role.VIEWER, actor=Actor(user=other_owner)
        )
    person = UserFactory(email=EMAIL)
    invitation_accept(token=token_of_last_mail(), user=person, actor=Actor(user=person))
    assert not ServerGrant.objects.filter(user__isnull=False).exists()
    someone = UserFactory(email="someone@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        invitation_create(
            account=account, email=someone.email, role=Role.VIEWER, actor=Actor(user=owner)
        )
    invitation_accept(token=token_of_last_mail(), user=someone, actor=Actor(user=someone))
    assert not ServerGrant.objects.filter(user__isnull=False).exists()


def test_a_grant_for_a_member_is_theirs_at_once(owner, teammate, server):
    granted = grant_create(
        instance=server,
        email=teammate.email.upper(),
        permissions=["power.start"],
        actor=Actor(user=owner),
    )
    assert granted.user == teammate and granted.invitation is None
    assert not mail.outbox


def test_no_other_route_makes_a_member_of_an_existing_account(staff_api, account):
    answer = staff_api.post(
        f"/v1/admin/customers/{account.pk}/members",
        {"email": EMAIL, "role": "viewer"},
        format="json",
    )
    assert answer.status_code == 405, answer.content


# --- The invitation e-mail ---------------------------------------------------------------------


def test_a_guests_invitation_names_the_servers_the_inviter_and_the_account(
    owner, account, server, bot, django_capture_on_commit_callbacks
):
    owner.name = "Ann Owner"
    owner.save()
    server.name, bot.name = "Survival SMP", "Helper bot"
    server.save()
    bot.save()
    with django_capture_on_commit_callbacks(execute=True):
        grant_create(
            instance=server,
            email=EMAIL,
            permissions=["console.view", "power.start"],
            actor=Actor(user=owner),
        )
    sent = mail.outbox[-1]
    assert sent.to == [EMAIL]
    assert sent.subject == "You're invited to Owner's Hosting"
    assert f"Ann Owner ({owner.email}) invited you to Owner's Hosting" in sent.body
    assert "- the server “Survival SMP”: See the console's output; Start\n" in sent.body
    assert "You will see only this, nothing else of the account." in sent.body
    assert "as Guest" not in sent.body
    # A second grant re-sends the invitation, which now names both.
    with django_capture_on_commit_callbacks(execute=True):
        grant_create(instance=bot, email=EMAIL, permissions=["files.read"], actor=Actor(user=owner))
    body = mail.outbox[-1].body
    assert "“Survival SMP”" in body and "- the bot “Helper bot”: List, read and download" in body
    assert "You will see only these" in body


def test_a_team_invitation_says_the_role_and_any_grants_waiting_on_it(
    owner, account, server, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        invitation_create(account=account, email=EMAIL, role=Role.SUPPORT, actor=Actor(user=owner))
    body = mail.outbox[-1].body
    assert "to join Owner's Hosting on the hosting dashboard as Support." in body
    assert "you may also use" not in body

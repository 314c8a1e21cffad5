"""Settings → Profile and Settings → Activity (the account's event log)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from accounts.models import User
from accounts.roles import Role
from events.models import Event
from tests.dashboard import field_errors, messages_of, signed_in
from tests.factories import MembershipFactory, UserFactory


def test_the_profile_changes_name_and_email(owner):
    response = signed_in(owner).post(
        "/settings/profile", {"name": "Grace Hopper", "email": " Grace@Example.COM "}, follow=True
    )
    assert response.redirect_chain == [("/settings/profile", 302)]
    assert messages_of(response) == ["Your profile has been saved."]
    owner.refresh_from_db()
    assert (owner.name, owner.email) == ("Grace Hopper", "grace@example.com")
    assert 'href="/password/change"' in response.content.decode()


def test_the_email_must_stay_unique_whatever_its_case(owner, db):
    other = UserFactory(email="taken@example.com")
    response = signed_in(owner).post(
        "/settings/profile", {"name": "Owner", "email": other.email.upper()}
    )
    assert field_errors(response, "email") == ["Another user has this e-mail address."]
    body = response.content.decode()
    assert 'value="TAKEN@EXAMPLE.COM"' in body
    # The top bar still shows who is signed in, not what was typed.
    assert f'<span class="user-email">{owner.email}</span>' in body
    assert User.objects.get(pk=owner.pk).email == owner.email


def test_keeping_ones_own_email_is_fine(owner):
    response = signed_in(owner).post(
        "/settings/profile", {"name": "New Name", "email": owner.email.upper()}
    )
    assert response.status_code == 302


def test_owners_and_admins_see_the_activity_log(owner, teammate, account, make_token):
    admin = MembershipFactory(account=account, role=Role.ADMIN).user
    signed_in(owner).post(f"/settings/team/{teammate.id}/role", {"role": "viewer"})
    for user in [owner, admin]:
        response = signed_in(user).get("/settings/activity")
        assert response.status_code == 200
        body = response.content.decode()
        assert 'id="activity"' in body
        assert 'href="/settings/activity"' in body  # in the navigation
        event = response.context["events"][0]
        assert event.type == "member.role_changed"
        assert f'<td><a href="/settings/team">{escape(teammate.name)}</a></td>' in body
        assert f"<td>{owner.email}</td>" in body
        assert "<td>127.0.0.1</td>" in body


@pytest.mark.parametrize("role", [Role.DEVELOPER, Role.BILLING, Role.SUPPORT, Role.VIEWER])
def test_other_roles_are_told_their_role_does_not_open_it_and_no_link(account, role):
    user = MembershipFactory(account=account, role=role).user
    client = signed_in(user)
    assert client.get("/settings/activity").status_code == 403
    assert 'href="/settings/activity"' not in client.get("/").content.decode()


def test_the_log_is_the_current_accounts_only_and_can_be_filtered(
    owner, account, other_account, django_assert_max_num_queries
):
    now = timezone.now()
    for number in range(3):
        Event.objects.create(
            account=account,
            type="api_key.created",
            object_type="api_key",
            object_id=f"key_{number}",
            created_at=now - timedelta(minutes=number),
        )
    Event.objects.create(account=account, type="member.added", object_type="member")
    Event.objects.create(account=other_account, type="api_key.created", object_type="api_key")
    client = signed_in(owner)
    with django_assert_max_num_queries(7):
        response = client.get("/settings/activity", {"type": "api_key.created"})
    assert [event.object_id for event in response.context["events"]] == [
        "key_0",
        "key_1",
        "key_2",
    ]
    assert '<option value="api_key.created" selected>' in response.content.decode()
    everything = client.get("/settings/activity").context["events"]
    assert len(everything) == 4
    assert all(event.account_id == account.id for event in everything)


def test_the_log_pages_by_fifty_and_keeps_the_filter(owner, account):
    Event.objects.bulk_create(
        Event(account=account, type="api_key.created", object_type="api_key", object_id=str(n))
        for n in range(51)
    )
    client = signed_in(owner)
    first = client.get("/settings/activity", {"type": "api_key.created"})
    assert len(first.context["events"]) == 50
    assert 'href="?type=api_key.created&amp;page=2"' in first.content.decode()
    second = client.get("/settings/activity", {"type": "api_key.created", "page": 2})
    assert len(second.context["events"]) == 1


def test_an_unknown_type_filter_is_left_out_with_a_notice_not_a_crash(owner, account):
    Event.objects.create(account=account, type="member.added", object_type="member")
    response = signed_in(owner).get("/settings/activity", {"type": "no.such.type"})
    assert response.status_code == 200
    assert response.context["listing"].notices == [
        "The event type filter was left out: Select a valid choice. no.such.type is not one of "
        "the available choices."
    ]
    assert [event.type for event in response.context["events"]] == ["member.added"]

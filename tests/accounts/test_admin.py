"""Django admin for staff: signing in, every model's pages, finding and revoking API keys."""

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse

from accounts.actors import Actor
from accounts.models import Account, ApiKey, Invitation, Membership, User
from accounts.services import invitation_create
from events.models import Event
from servers.models import Game, Server
from tests.factories import ServerFactory


@pytest.fixture
def server(account) -> Server:
    return ServerFactory(account=account)


@pytest.fixture
def invitation(owner, account) -> Invitation:
    created, _ = invitation_create(
        account=account, email="new@example.com", role="developer", actor=Actor(user=owner)
    )
    return created


@pytest.fixture
def owner_key(owner, account, make_token) -> tuple[ApiKey, str]:
    token = make_token(owner, account, ["servers:read"], name="Owner's deploy key")
    return ApiKey.objects.get(account=account, name="Owner's deploy key"), token


@pytest.fixture
def other_keys(owner, teammate, outsider, account, other_account, make_token) -> list[ApiKey]:
    """Keys that a search must not find."""
    make_token(owner, account, ["servers:read"], name="Another key")
    make_token(teammate, account, ["servers:read"], name="Teammate key")
    make_token(outsider, other_account, name="Outsider key")
    return list(ApiKey.objects.exclude(name="Owner's deploy key"))


def admin_url(model, view: str, *args) -> str:
    # Admin escapes primary keys in URLs ("_3B" would read as ";"), as its own links do.
    name = f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}"
    return reverse(name, args=[quote(arg) for arg in args])


def changelist_actions(client: Client, model) -> list[str]:
    """The actions the changelist offers staff (none: no action form at all)."""
    action_form = client.get(admin_url(model, "changelist")).context["action_form"]
    return [] if action_form is None else [name for name, _ in action_form.fields["action"].choices]


def searched(client: Client, term: str) -> list[ApiKey]:
    response = client.get(admin_url(ApiKey, "changelist"), {"q": term})
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


# --- Every registered model -------------------------------------------------------------------


def test_every_expected_model_is_registered():
    assert {User, Account, Membership, ApiKey, Invitation, Event, Game, Server} <= set(
        admin.site._registry
    )


@pytest.mark.parametrize("model", [User, Account, Membership, ApiKey, Game, Server])
def test_the_changelist_answers_for_staff(staff_client, owner, owner_key, server, model):
    response = staff_client.get(admin_url(model, "changelist"))

    assert response.status_code == 200
    assert response.context["cl"].result_count >= 1


def test_the_change_pages_answer_for_staff(staff_client, account, owner, owner_key, server):
    api_key, _ = owner_key
    objects = [
        owner,
        account,
        Membership.objects.get(account=account, user=owner),
        api_key,
        Game.objects.get(slug="minecraft-java"),
        server,
    ]

    for obj in objects:
        response = staff_client.get(admin_url(type(obj), "change", obj.pk))
        assert response.status_code == 200, type(obj).__name__
        assert response.context["original"] == obj


@pytest.mark.parametrize("model", [User, Account, ApiKey, Server])
def test_the_changelist_search_answers_for_staff(staff_client, owner, owner_key, server, model):
    response = staff_client.get(admin_url(model, "changelist"), {"q": "example"})

    assert response.status_code == 200


def test_it_refuses_the_admin_to_customers(owner):
    client = Client()
    client.force_login(owner)

    response = client.get(admin_url(ApiKey, "changelist"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


# --- Signing in ---------------------------------------------------------------------------------

ADMIN_LOGIN = "/admin/login/"


def test_staff_sign_in_to_the_admin(superuser):
    client = Client()

    response = client.post(
        ADMIN_LOGIN,
        {"username": superuser.email, "password": "staff-password-1", "next": "/admin/"},
    )

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    # Staff without a second factor are sent to set one up first (tests/accounts/
    # test_sign_in_policies.py); a session that passed one reaches admin.
    assert client.get("/admin/")["Location"] == "/auth/2fa/?next=%2Fadmin%2F"
    assert not Event.objects.filter(type="user.login_failed").exists()


def test_a_failed_admin_sign_in_is_recorded(superuser):
    response = Client().post(ADMIN_LOGIN, {"username": superuser.email, "password": "wrong"})

    assert response.status_code == 200
    assert response.context["form"].non_field_errors()
    event = Event.objects.get(type="user.login_failed")
    assert event.account is None
    assert event.actor_ip == "127.0.0.1"
    assert event.data["object"] == {"id": superuser.id, "email": superuser.email}


def test_a_customer_with_the_right_password_is_still_refused_the_admin(owner, account):
    owner.save(update_fields=["password"])
    client = Client()

    response = client.post(
        ADMIN_LOGIN, {"username": owner.email, "password": "correct-horse-battery"}
    )

    assert response.status_code == 200
    assert "_auth_user_id" not in client.session
    assert Event.objects.get(type="user.login_failed").account == account


def test_the_eleventh_admin_attempt_is_refused_without_checking_the_password(
    superuser, rate_limit_clock
):
    client = Client()
    for _ in range(10):
        response = client.post(ADMIN_LOGIN, {"username": superuser.email, "password": "wrong"})
        assert response.status_code == 200

    response = client.post(
        ADMIN_LOGIN, {"username": superuser.email, "password": "staff-password-1"}
    )

    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert "Too many sign-in attempts; try again in 30 seconds." in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert Event.objects.filter(type="user.login_failed").count() == 10


def test_the_admin_and_the_dashboard_share_one_sign_in_budget(
    superuser, settings, rate_limit_clock
):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 3
    wrong = {"username": superuser.email, "password": "wrong"}
    right = {"username": superuser.email, "password": "staff-password-1"}
    Client(REMOTE_ADDR="198.51.100.1").post("/login", wrong)
    Client(REMOTE_ADDR="198.51.100.2").post("/login", wrong)
    Client(REMOTE_ADDR="198.51.100.3").post(ADMIN_LOGIN, wrong)

    admin_refusal = Client(REMOTE_ADDR="198.51.100.4").post(ADMIN_LOGIN, right)
    dashboard_refusal = Client(REMOTE_ADDR="198.51.100.5").post("/login", right)

    assert admin_refusal.status_code == dashboard_refusal.status_code == 429
    assert Event.objects.filter(type="user.login_failed").count() == 3
    other = Client(REMOTE_ADDR="198.51.100.4").post(
        ADMIN_LOGIN, {"username": "someone-else@example.com", "password": "wrong"}
    )
    assert other.status_code == 200


# --- API keys -----------------------------------------------------------------------------------


def test_it_finds_a_key_by_its_display_prefix(staff_client, owner_key, other_keys):
    api_key, _ = owner_key
    assert api_key.display_prefix == f"hms_{api_key.key_id}…"

    assert searched(staff_client, api_key.display_prefix) == [api_key]


@pytest.mark.parametrize("suffix", ["", "...", "…  "])
def test_it_finds_a_key_by_its_prefix_with_or_without_an_ellipsis(
    staff_client, owner_key, other_keys, suffix
):
    api_key, _ = owner_key

    assert searched(staff_client, f"  hms_{api_key.key_id}{suffix}") == [api_key]


def test_it_finds_a_key_by_its_whole_token(staff_client, owner_key, other_keys):
    api_key, token = owner_key

    assert searched(staff_client, token) == [api_key]


def test_it_finds_a_key_by_its_key_id_alone(staff_client, owner_key, other_keys):
    api_key, _ = owner_key

    assert searched(staff_client, api_key.key_id) == [api_key]


def test_it_finds_nothing_for_an_unknown_prefix(staff_client, owner_key, other_keys):
    assert searched(staff_client, "hms_000000000000…") == []


def test_the_key_list_shows_prefixes_but_no_digest(staff_client, owner_key, other_keys):
    response = staff_client.get(admin_url(ApiKey, "changelist"))

    html = response.content.decode()
    for api_key in ApiKey.objects.all():
        assert f"hms_{api_key.key_id}" in html
        assert api_key.digest not in html


def test_the_key_change_page_never_shows_the_digest_or_token(staff_client, owner_key):
    api_key, token = owner_key

    response = staff_client.get(admin_url(ApiKey, "change", api_key.pk))

    assert response.status_code == 200
    html = response.content.decode()
    assert api_key.display_prefix in html
    assert api_key.digest not in html
    assert token not in html
    assert 'name="digest"' not in html
    assert 'name="pepper_id"' not in html


def test_it_refuses_to_add_keys_in_the_admin(staff_client):
    response = staff_client.get(admin_url(ApiKey, "add"))

    assert response.status_code == 403


def test_it_refuses_to_post_a_new_key_in_the_admin(staff_client, account, owner):
    response = staff_client.post(
        admin_url(ApiKey, "add"),
        {"name": "Sneaky", "account": account.pk, "user": owner.pk, "scopes": '["servers:read"]'},
        secure=True,
    )

    assert response.status_code == 403
    assert not ApiKey.objects.exists()


def test_the_revoke_action_revokes_the_selected_keys(
    staff_client, owner_key, other_keys, client_for
):
    api_key, token = owner_key
    assert client_for(token).get("/v1/servers").status_code == 200

    response = staff_client.post(
        admin_url(ApiKey, "changelist"),
        {"action": "revoke_keys", "_selected_action": [api_key.pk]},
        secure=True,
        follow=True,
    )

    assert response.status_code == 200
    assert "Revoked 1 API key." in [str(message) for message in response.context["messages"]]
    api_key.refresh_from_db()
    assert api_key.revoked_at is not None
    assert api_key.status == "revoked"
    for other in other_keys:
        other.refresh_from_db()
        assert other.revoked_at is None
    response = client_for(token).get("/v1/servers")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "api_key_revoked"


def test_the_revoke_action_leaves_a_revoked_key_untouched(staff_client, owner_key, other_keys):
    api_key, _ = owner_key
    staff_client.post(
        admin_url(ApiKey, "changelist"),
        {"action": "revoke_keys", "_selected_action": [api_key.pk]},
        secure=True,
    )
    api_key.refresh_from_db()
    first_revoked_at = api_key.revoked_at

    response = staff_client.post(
        admin_url(ApiKey, "changelist"),
        {"action": "revoke_keys", "_selected_action": [api_key.pk, other_keys[0].pk]},
        secure=True,
        follow=True,
    )

    assert "Revoked 1 API key." in [str(message) for message in response.context["messages"]]
    api_key.refresh_from_db()
    assert api_key.revoked_at == first_revoked_at
    other_keys[0].refresh_from_db()
    assert other_keys[0].revoked_at is not None


# --- Suspension, invitations and the event log -----------------------------------------------


def test_the_suspend_and_unsuspend_actions_use_the_services(
    superuser, staff_client, account, owner_key
):
    _, token = owner_key
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = admin_url(Account, "changelist")

    response = staff_client.post(
        url, {"action": "suspend_accounts", "_selected_action": [account.pk]}
    )
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.status == Account.Status.SUSPENDED
    assert account.suspended_reason == f"Suspended by {superuser.email}"
    assert api.get("/v1/servers").json()["error"]["code"] == "account_suspended"
    event = Event.objects.get(type="account.suspended")
    assert (event.account, event.actor_user) == (account, superuser)
    assert event.data["previous_attributes"]["status"] == "active"

    again = staff_client.post(
        url, {"action": "suspend_accounts", "_selected_action": [account.pk]}, follow=True
    )
    assert "Suspended 0 accounts." in again.content.decode()  # says what it did: nothing

    response = staff_client.post(
        url, {"action": "unsuspend_accounts", "_selected_action": [account.pk]}, follow=True
    )
    assert "Unsuspended 1 account." in response.content.decode()
    account.refresh_from_db()
    assert account.status == Account.Status.ACTIVE
    assert api.get("/v1/servers").status_code == 200
    assert Event.objects.filter(type="account.unsuspended", actor_user=superuser).count() == 1


def test_the_event_log_is_read_only_for_staff(staff_client, account, owner_key):
    event = Event.objects.filter(type="api_key.created").first()
    assert event is not None
    assert staff_client.get(admin_url(Event, "changelist")).status_code == 200
    page = staff_client.get(admin_url(Event, "change", event.pk))
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    assert staff_client.get(admin_url(Event, "add")).status_code == 403
    assert (
        staff_client.post(admin_url(Event, "delete", event.pk), {"post": "yes"}).status_code == 403
    )
    assert Event.objects.filter(pk=event.pk).exists()


def test_invitations_are_listed_without_their_token(staff_client, owner, account):
    invitation, token = invitation_create(
        account=account, email="new@example.com", role="developer", actor=Actor(user=owner)
    )
    listing = staff_client.get(admin_url(Invitation, "changelist"), {"q": "new@example.com"})
    assert list(listing.context["cl"].result_list) == [invitation]
    page = staff_client.get(admin_url(Invitation, "change", invitation.pk))
    assert page.status_code == 200
    assert token.encode() not in page.content
    assert invitation.token_digest.encode() not in page.content
    assert staff_client.get(admin_url(Invitation, "add")).status_code == 403


def test_the_revoke_action_revokes_a_rotated_key_in_its_grace_period_at_once(
    staff_client, owner_key, client_for
):
    """The same rule as the API's revocation: a key in its rotation grace is still live."""
    from datetime import timedelta

    from django.utils import timezone

    api_key, token = owner_key
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now() + timedelta(hours=1))
    assert client_for(token).get("/v1/servers").status_code == 200

    staff_client.post(
        admin_url(ApiKey, "changelist"),
        {"action": "revoke_keys", "_selected_action": [api_key.pk]},
        secure=True,
    )

    api_key.refresh_from_db()
    assert api_key.status == "revoked"
    assert client_for(token).get("/v1/servers").json()["error"]["code"] == "api_key_revoked"


def account_form(account: Account, **changes) -> dict:
    data = {
        "name": account.name,
        "rate_limit_per_minute": "",
        "max_api_keys": account.max_api_keys,
        "max_servers": account.max_servers,
        "max_bots": account.max_bots,
        "max_memory_mb": account.max_memory_mb,
        "unbilled_instances": account.unbilled_instances,
        "unbilled_memory_mb": account.unbilled_memory_mb,
        "unbilled_cpu_percent": account.unbilled_cpu_percent,
        "unbilled_disk_mb": account.unbilled_disk_mb,
        "memberships-TOTAL_FORMS": account.memberships.count(),
        "memberships-INITIAL_FORMS": account.memberships.count(),
        "memberships-MIN_NUM_FORMS": 0,
        "memberships-MAX_NUM_FORMS": 1000,
    }
    for index, membership in enumerate(account.memberships.all()):
        data[f"memberships-{index}-id"] = membership.pk
        data[f"memberships-{index}-account"] = account.pk
    return {**data, **changes}


def test_changing_an_account_in_admin_goes_through_the_service(staff_client, account, owner):
    response = staff_client.post(
        admin_url(Account, "change", account.pk),
        account_form(account, name="Renamed Hosting", max_servers=42),
        secure=True,
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    account.refresh_from_db()
    assert (account.name, account.max_servers) == ("Renamed Hosting", 42)
    event = Event.objects.get(type="account.updated", object_id=account.pk)
    assert event.data["previous_attributes"] == {"name": "Owner's Hosting", "max_servers": 10}
    assert event.actor_user is not None and event.actor_user.is_staff


@pytest.mark.parametrize(
    ("changes", "field"), [({"name": "   "}, "name"), ({"max_api_keys": 0}, "max_api_keys")]
)
def test_admin_refuses_what_the_service_refuses(staff_client, account, owner, changes, field):
    response = staff_client.post(
        admin_url(Account, "change", account.pk), account_form(account, **changes), secure=True
    )

    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    account.refresh_from_db()
    assert account.name == "Owner's Hosting" and account.max_api_keys == 25
    assert not Event.objects.filter(type="account.updated").exists()


def test_memberships_are_read_only_in_admin(staff_client, account, owner):
    membership = Membership.objects.get(account=account, user=owner)

    page = staff_client.get(admin_url(Membership, "change", membership.pk))
    post = staff_client.post(
        admin_url(Membership, "change", membership.pk), {"role": "viewer"}, secure=True
    )
    delete = staff_client.get(admin_url(Membership, "delete", membership.pk))

    assert page.status_code == 200
    assert 'name="role"' not in page.content.decode()
    assert b'name="_save"' not in page.content
    assert post.status_code == 403
    membership.refresh_from_db()
    assert membership.role == "owner"
    assert delete.status_code == 403


# --- Users ---------------------------------------------------------------------------------------


def user_form(user: User, **changes) -> dict:
    """The user change form as the page posts it; a flag set to False is left unticked."""
    data = {"email": user.email, "name": user.name}
    data |= {
        flag: "on" for flag in ["is_active", "is_staff", "is_superuser"] if getattr(user, flag)
    }
    data |= changes
    return {name: value for name, value in data.items() if value is not False}


def test_changing_a_users_name_and_email_goes_through_the_service(staff_client, superuser, owner):
    old_email = owner.email

    response = staff_client.post(
        admin_url(User, "change", owner.pk),
        user_form(owner, email="  Renamed.Owner@Example.COM ", name="Renamed Owner"),
        secure=True,
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    owner.refresh_from_db()
    assert (owner.email, owner.name) == ("renamed.owner@example.com", "Renamed Owner")
    event = Event.objects.get(type="user.updated", object_id=owner.pk)
    assert event.actor_user == superuser
    assert event.data["object"]["email"] == "renamed.owner@example.com"
    assert event.data["previous_attributes"]["email"] == old_email


def test_admin_refuses_an_email_another_user_has_in_any_case(staff_client, owner, teammate):
    response = staff_client.post(
        admin_url(User, "change", owner.pk),
        user_form(owner, email=teammate.email.upper()),
        secure=True,
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["email"] == [
        "Another user has this e-mail address."
    ]
    owner.refresh_from_db()
    assert owner.email != teammate.email
    assert not Event.objects.filter(type="user.updated").exists()


def test_deactivating_a_user_turns_their_keys_off_and_changes_nothing_else(
    staff_client, owner, owner_key, client_for, monkeypatch
):
    _, token = owner_key
    assert client_for(token).get("/v1/servers").status_code == 200
    # The page's copy was read before the user renamed themselves on their profile page.
    stale = User.objects.get(pk=owner.pk)
    User.objects.filter(pk=owner.pk).update(name="Renamed Meanwhile")
    monkeypatch.setattr(admin.site._registry[User], "get_object", lambda *args, **kw: stale)

    response = staff_client.post(
        admin_url(User, "change", owner.pk), user_form(stale, is_active=False), secure=True
    )

    assert response.status_code == 302
    owner.refresh_from_db()
    assert (owner.is_active, owner.name) == (False, "Renamed Meanwhile")
    assert not Event.objects.filter(type="user.updated").exists()
    response = client_for(token).get("/v1/servers")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"


def test_users_are_neither_added_nor_deleted_in_admin(staff_client, owner):
    assert staff_client.get(admin_url(User, "add")).status_code == 403
    assert staff_client.get(admin_url(User, "delete", owner.pk)).status_code == 403
    response = staff_client.post(admin_url(User, "delete", owner.pk), {"post": "yes"}, secure=True)

    assert response.status_code == 403
    assert User.objects.filter(pk=owner.pk).exists()


# --- Nothing is deleted in bulk ------------------------------------------------------------------


@pytest.mark.parametrize("model", [User, Account, Membership, ApiKey, Invitation, Event])
def test_delete_selected_is_not_offered_and_deletes_nothing(
    staff_client, owner_key, invitation, model
):
    obj = model.objects.first()
    assert obj is not None
    url = admin_url(model, "changelist")

    response = staff_client.post(
        url,
        {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"},
        secure=True,
        follow=True,
    )

    assert "delete_selected" not in changelist_actions(staff_client, model)
    assert response.status_code == 200
    assert model.objects.filter(pk=obj.pk).exists()


# --- API keys and invitations are changed only through their services -----------------------


def test_a_keys_page_is_view_only(staff_client, owner_key):
    api_key, _ = owner_key

    page = staff_client.get(admin_url(ApiKey, "change", api_key.pk))
    post = staff_client.post(
        admin_url(ApiKey, "change", api_key.pk),
        {"name": "Renamed", "allowed_ips": '["not a network"]', "expires_at": ""},
        secure=True,
    )
    delete = staff_client.get(admin_url(ApiKey, "delete", api_key.pk))

    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    assert b'name="allowed_ips"' not in page.content
    assert (post.status_code, delete.status_code) == (403, 403)
    api_key.refresh_from_db()
    assert (api_key.name, api_key.allowed_ips) == ("Owner's deploy key", [])


def test_invitations_are_read_only(staff_client, invitation):
    post = staff_client.post(
        admin_url(Invitation, "change", invitation.pk), {"role": "owner"}, secure=True
    )
    delete = staff_client.get(admin_url(Invitation, "delete", invitation.pk))

    assert (post.status_code, delete.status_code) == (403, 403)
    invitation.refresh_from_db()
    assert (invitation.role, invitation.status) == ("developer", "pending")


def test_staff_set_the_unbilled_allowance_in_admin(staff_client, account, owner):
    """What the account may run without a plan (issue 27): zero is a valid allowance."""
    response = staff_client.post(
        admin_url(Account, "change", account.pk),
        account_form(account, unbilled_instances=0, unbilled_memory_mb=4096),
        secure=True,
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    account.refresh_from_db()
    assert (account.unbilled_instances, account.unbilled_memory_mb) == (0, 4096)
    event = Event.objects.get(type="account.updated", object_id=account.pk)
    assert event.data["object"]["unbilled_allowance"]["memory_mb"] == 4096

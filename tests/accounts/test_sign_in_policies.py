"""The second-factor policies and re-authentication (issue 33, accounts/second_factor.py):
staff reach admin, the desk and the staff pages only with a second factor; an account's owner
may require one of every member; sensitive actions ask for a recent sign-in; removing one's
last factor asks for a fresh one, and is refused while a policy asks for a factor."""

import time

import pytest
from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
from django.test import Client

from accounts.models import ApiKey
from accounts.roles import Role, StaffRole
from accounts.signals import FACTOR_ADDED_SESSION_KEY
from events.models import Event
from tests.accounts.test_second_factor import PASSWORD, activate_totp, totp_code
from tests.accounts.test_second_factor import signed_in as password_signed_in
from tests.factories import (
    AccountFactory,
    BotFactory,
    MembershipFactory,
    ServerFactory,
    UserFactory,
)

STAFF_PAGES = ("/admin/", "/admin/accounts/account/", "/desk", "/staff/reports")


def signed_in(user) -> Client:
    """Signed in through /login with a password, just now."""
    user.set_password(PASSWORD)
    user.save()
    return password_signed_in(user)


def give_totp(user) -> str:
    """A factor set up earlier (not in the session under test): its secret."""
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    return secret


def age_sign_in(client: Client, seconds: float) -> None:
    """As if everything typed in this session was typed ``seconds`` earlier."""
    session = client.session
    records = session.get(AUTHENTICATION_METHODS_SESSION_KEY, [])
    for record in records:
        record["at"] -= seconds
    session[AUTHENTICATION_METHODS_SESSION_KEY] = records
    if FACTOR_ADDED_SESSION_KEY in session:
        session[FACTOR_ADDED_SESSION_KEY] -= seconds
    session.save()


def messages_of(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


@pytest.fixture
def staff_member(db):
    user = UserFactory(
        email="desk@hosting.example",
        password=PASSWORD,
        is_staff=True,
        staff_role=StaffRole.ADMINISTRATOR,
    )
    MembershipFactory(account=AccountFactory(name="Hosting Company"), user=user, role=Role.OWNER)
    return user


# --- Staff ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", STAFF_PAGES)
def test_staff_without_a_factor_are_sent_to_set_one_up(staff_member, path):
    client = signed_in(staff_member)
    answer = client.get(path)
    assert answer.status_code == 302
    assert answer["Location"].startswith("/auth/2fa/?next=")
    page = client.get(answer["Location"], follow=True)
    assert "Staff use a second factor" in messages_of(page)
    # Their own customer pages and profile are not staff pages.
    assert client.get("/settings/profile").status_code == 200
    assert client.get("/").status_code == 200


def test_staff_who_set_a_factor_up_reach_admin_in_that_session(staff_member):
    client = signed_in(staff_member)
    assert client.get("/admin/").status_code == 302
    activate_totp(client)
    assert client.get("/admin/").status_code == 200
    assert client.get("/staff/reports").status_code == 200


def test_staff_signing_in_with_password_and_code_reach_every_staff_page(staff_member):
    secret = give_totp(staff_member)
    client = Client()
    answer = client.post("/admin/login/", {"username": staff_member.email, "password": PASSWORD})
    assert answer["Location"].startswith("/auth/2fa/authenticate")
    client.post("/auth/2fa/authenticate/", {"code": totp_code(secret)})
    for path in ("/admin/", "/admin/accounts/account/", "/staff/reports"):
        assert client.get(path).status_code == 200, path


def test_a_staff_session_without_its_factor_is_asked_to_type_it(staff_member):
    secret = give_totp(staff_member)
    client = Client()
    client.force_login(staff_member, second_factor=False)  # e.g. from before the factor
    answer = client.get("/staff/reports")
    assert answer["Location"] == "/auth/2fa/reauthenticate/?next=%2Fstaff%2Freports"
    typed = client.post(answer["Location"], {"code": totp_code(secret)})
    assert typed.status_code == 302 and typed["Location"] == "/staff/reports"
    assert client.get("/staff/reports").status_code == 200


def test_the_staff_policy_can_be_switched_off_by_a_host_enforcing_it_elsewhere(
    staff_member, settings
):
    settings.STAFF_REQUIRE_SECOND_FACTOR = False
    assert signed_in(staff_member).get("/admin/").status_code == 200


def test_customers_are_not_asked_by_the_staff_policy(owner):
    client = Client()
    client.force_login(owner, second_factor=False)
    assert client.get("/").status_code == 200
    assert client.get("/settings/api-keys").status_code == 200


# --- An account that requires a second factor of its members ---------------------------------


def test_an_owner_requires_a_factor_and_a_member_without_one_is_sent_to_set_it_up(
    account, owner, teammate
):
    owner_client = signed_in_with(owner)
    page = owner_client.get("/settings/team").content.decode()
    assert 'id="sign-in-policy"' in page and "No 2FA" in page
    refused = owner_client.post("/settings/team/second-factor", {"required": "true"}, follow=True)
    assert "before requiring one of every member" in messages_of(refused)
    account.refresh_from_db()
    assert not account.require_second_factor

    activate_totp(owner_client)
    owner_client.post("/settings/team/second-factor", {"required": "true"})
    account.refresh_from_db()
    assert account.require_second_factor
    event = Event.objects.filter(account=account, type="account.updated").latest("created_at")
    assert event.data["previous_attributes"] == {"require_second_factor": False}
    assert owner_client.get("/").status_code == 200  # the owner's session passed one

    member = Client()
    member.force_login(teammate, second_factor=False)
    answer = member.get("/")
    assert answer.status_code == 302 and answer["Location"].startswith("/auth/2fa/?next=")
    page = member.get(answer["Location"], follow=True)
    assert f"{account.name} asks every member" in messages_of(page)
    for path in ("/settings/profile", "/auth/2fa/", "/auth/sessions/"):
        assert member.get(path).status_code == 200, path
    activate_totp(member)
    assert member.get("/").status_code == 200


def signed_in_with(user) -> Client:
    client = Client()
    client.force_login(user, second_factor=False)
    return client


def test_a_member_may_still_work_in_another_account_that_does_not_require_it(account, teammate):
    AccountFactory.reset_sequence()
    other = MembershipFactory(user=teammate, role=Role.OWNER).account
    account.require_second_factor = True
    account.save()
    client = signed_in_with(teammate)
    client.post("/switch", {"account_id": account.id})
    assert client.get("/").status_code == 302
    client.post("/switch", {"account_id": other.id})
    assert client.get("/").status_code == 200


def test_only_owners_set_the_policy(account, owner):
    admin = MembershipFactory(account=account, role=Role.ADMIN).user
    give_totp(admin)
    client = Client()
    client.force_login(admin)
    answer = client.post("/settings/team/second-factor", {"required": "true"}, follow=True)
    assert "Only the account's owners" in messages_of(answer)
    assert 'id="sign-in-policy"' not in client.get("/settings/team").content.decode()
    account.refresh_from_db()
    assert not account.require_second_factor


def test_the_api_sets_the_policy_for_owners_only(account, owner, owner_api, teammate_api):
    answer = owner_api.patch("/v1/account", {"require_second_factor": True}, format="json")
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "second_factor_missing"
    give_totp(owner)
    answer = owner_api.patch("/v1/account", {"require_second_factor": True}, format="json")
    assert answer.status_code == 200 and answer.json()["data"]["account"]["require_second_factor"]
    answer = teammate_api.patch("/v1/account", {"require_second_factor": False}, format="json")
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] in {"insufficient_scope", "permission_denied"}
    answer = owner_api.patch("/v1/account", {"require_second_factor": "maybe"}, format="json")
    assert answer.status_code == 400
    assert owner_api.get("/v1/account").json()["data"]["account"]["require_second_factor"]
    # API keys are the machine path: the policy does not touch them.
    assert owner_api.get("/v1/servers").status_code == 200


def test_an_outsider_cannot_set_another_accounts_policy(account, outsider_api, other_account):
    answer = outsider_api.patch("/v1/account", {"require_second_factor": True}, format="json")
    assert answer.status_code == 409  # their own account, and they have no factor
    account.refresh_from_db()
    assert not account.require_second_factor


# --- Sensitive actions ask for a recent sign-in ----------------------------------------------


def test_creating_an_api_key_asks_for_a_recent_sign_in_and_goes_on_after_it(account, owner):
    client = signed_in(owner)
    assert client.get("/settings/api-keys/new").status_code == 200  # the password just typed
    age_sign_in(client, 11 * 60)
    asked = client.get("/settings/api-keys/new")
    assert asked.status_code == 302
    assert asked["Location"] == "/auth/reauthenticate/?next=%2Fsettings%2Fapi-keys%2Fnew"

    form = {"name": "Deploy", "scopes": ["servers:read"], "expiry": "90"}
    sent = client.post("/settings/api-keys/new", form)
    assert sent.status_code == 302 and sent["Location"].startswith("/auth/reauthenticate/")
    assert not ApiKey.objects.filter(account=account).exists()
    wrong = client.post(sent["Location"], {"password": "not-it"})
    assert wrong.status_code == 200 and not ApiKey.objects.exists()
    resumed = client.post(sent["Location"], {"password": PASSWORD})
    assert resumed.status_code == 302 and resumed["Location"] == "/settings/api-keys/created"
    assert ApiKey.objects.get(account=account).name == "Deploy"


def test_a_factor_typed_again_counts_as_a_recent_sign_in(account, owner):
    client = signed_in(owner)
    secret = activate_totp(client)
    age_sign_in(client, 11 * 60)
    assert client.get("/settings/api-keys/new").status_code == 302
    client.post("/auth/2fa/reauthenticate/", {"code": totp_code(secret)})
    assert client.get("/settings/api-keys/new").status_code == 200


def test_a_passkey_sign_in_just_now_counts_as_a_recent_sign_in(account, owner):
    client = Client()
    client.force_login(owner, second_factor=False)
    session = client.session
    passkey = {"method": "mfa", "type": "webauthn", "passwordless": True, "at": time.time()}
    session[AUTHENTICATION_METHODS_SESSION_KEY] = [passkey]
    session.save()
    assert client.get("/settings/api-keys/new").status_code == 200
    age_sign_in(client, 11 * 60)
    assert client.get("/settings/api-keys/new").status_code == 302


def test_changing_the_email_asks_for_a_recent_sign_in_the_name_does_not(owner):
    client = signed_in(owner)
    age_sign_in(client, 11 * 60)
    renamed = client.post("/settings/profile", {"name": "New Name", "email": owner.email})
    assert renamed.status_code == 302 and renamed["Location"] == "/settings/profile"
    owner.refresh_from_db()
    assert owner.name == "New Name"

    moved = client.post("/settings/profile", {"name": "New Name", "email": "new@example.com"})
    assert moved["Location"].startswith("/auth/reauthenticate/")
    owner.refresh_from_db()
    assert owner.email != "new@example.com"
    client.post(moved["Location"], {"password": PASSWORD})
    owner.refresh_from_db()
    assert owner.email == "new@example.com"


@pytest.mark.parametrize("kind", ["servers", "bots"])
def test_deleting_a_server_or_bot_asks_for_a_recent_sign_in(account, owner, kind):
    instance = (BotFactory if kind == "bots" else ServerFactory)(account=account)
    client = signed_in(owner)
    age_sign_in(client, 11 * 60)
    asked = client.get(f"/{kind}/{instance.id}/delete")
    assert asked["Location"].startswith("/auth/reauthenticate/")
    sent = client.post(f"/{kind}/{instance.id}/delete")
    assert sent["Location"].startswith("/auth/reauthenticate/")
    assert not instance.actions.filter(type="delete").exists()
    client.post(sent["Location"], {"password": PASSWORD})
    assert instance.actions.filter(type="delete").exists()


def test_a_teammate_and_an_outsider_are_still_refused_after_re_authenticating(
    account, owner, teammate, outsider
):
    server = ServerFactory(account=account)
    client = signed_in_with(outsider)
    assert client.get(f"/servers/{server.id}/delete").status_code == 404


# --- Removing one's last factor -----------------------------------------------------------------


def test_removing_the_last_factor_asks_for_a_fresh_sign_in(owner):
    client = signed_in(owner)
    activate_totp(client)
    age_sign_in(client, 2 * 60)  # recent enough for most actions, not for this one
    asked = client.post("/auth/2fa/totp/deactivate/")
    assert asked.status_code == 302 and asked["Location"].startswith("/auth/reauthenticate/")
    assert Authenticator.objects.filter(user=owner, type="totp").exists()
    client.post(asked["Location"], {"password": PASSWORD})
    assert not Authenticator.objects.filter(user=owner, type="totp").exists()


@pytest.mark.parametrize("who", ["staff", "member"])
def test_the_last_factor_stays_while_a_policy_asks_for_one(account, staff_member, owner, who):
    if who == "member":
        account.require_second_factor = True
        account.save()
        person = owner
    else:
        person = staff_member
    client = signed_in(person)
    activate_totp(client)
    refused = client.post("/auth/2fa/totp/deactivate/", follow=True)
    assert "add another before removing it" in messages_of(refused)
    assert Authenticator.objects.filter(user=person, type="totp").exists()


def test_a_sign_in_just_now_has_typed_its_password_recently(owner):
    client = signed_in(owner)
    records = client.session[AUTHENTICATION_METHODS_SESSION_KEY]
    assert records[-1]["method"] == "password" and time.time() - records[-1]["at"] < 60


def test_staff_see_an_accounts_policy_in_admin_and_do_not_change_it_there(account, staff_client):
    account.require_second_factor = True
    account.save()
    page = staff_client.get(f"/admin/accounts/account/{account.pk}/change/").content.decode()
    assert "Require second factor" in page
    assert 'name="require_second_factor"' not in page  # the owners decide it
    listed = staff_client.get("/admin/accounts/account/?require_second_factor__exact=1")
    assert account.pk in listed.content.decode()

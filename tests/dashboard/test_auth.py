"""Signing up, in and out, password change and reset, CSRF and the sign-in rate limit."""

import re
from unittest import mock

import pytest
from django.core import mail
from django.test import Client

from accounts.models import Account, Membership, User
from accounts.roles import Role
from accounts.services import account_create
from events.models import Event
from hosting.errors import ValidationFailed
from tests.dashboard import field_errors, signed_in

SIGNUP = {
    "name": "Ada Lovelace",
    "email": "Ada@Example.com",
    "account_name": "Analytical Engines",
    "password1": "a-long-enough-passphrase",
    "password2": "a-long-enough-passphrase",
}


@pytest.fixture
def owner(owner):
    """The owner with their password stored (UserFactory sets it on the instance only)."""
    owner.save(update_fields=["password"])
    return owner


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """The sign-in limit is a fixed window: every test here counts within one window."""


def test_signup_creates_the_user_the_account_and_the_owner_membership(db):
    client = Client()
    response = client.post("/signup", SIGNUP)
    assert response.status_code == 302
    assert response["Location"] == "/"
    user = User.objects.get(email="ada@example.com")
    assert user.name == "Ada Lovelace"
    assert user.check_password("a-long-enough-passphrase")
    membership = Membership.objects.get(user=user)
    assert membership.role == Role.OWNER
    assert membership.account.name == "Analytical Engines"
    assert Event.objects.filter(account=membership.account, type="account.created").exists()
    home = client.get("/")
    assert home.status_code == 200
    assert home.context["current_account"] == membership.account


def test_signup_refuses_a_known_email_next_to_the_field_and_keeps_what_was_typed(owner):
    response = Client().post("/signup", SIGNUP | {"email": owner.email.upper()})
    assert response.status_code == 200
    assert field_errors(response, "email") == [
        "An account with this e-mail address already exists; sign in instead."
    ]
    assert 'value="Analytical Engines"' in response.content.decode()
    assert Account.objects.filter(name="Analytical Engines").count() == 0


@pytest.mark.parametrize("racing", [False, True])
def test_a_sign_up_never_takes_over_a_known_user(owner, racing):
    """The form checks the address first; the service refuses too, also when a second sign-up
    with the same address got past the form's check while the first was being saved."""
    known = (
        User.objects.filter
        if not racing
        else mock.Mock(return_value=mock.Mock(first=mock.Mock(return_value=None)))
    )
    with (
        mock.patch("accounts.services.accounts.User.objects.filter", known),
        pytest.raises(ValidationFailed) as refused,
    ):
        account_create(name="Mine now", owner_email=owner.email.upper(), owner_password="x" * 12)
    assert refused.value.details["fields"][0]["name"] == "email"
    assert not Account.objects.filter(name="Mine now").exists()


def test_signup_checks_the_passwords(db):
    response = Client().post("/signup", SIGNUP | {"password2": "something-else-entirely"})
    assert field_errors(response, "password2") == [
        "The two password fields didn\N{RIGHT SINGLE QUOTATION MARK}t match."
    ]
    response = Client().post("/signup", SIGNUP | {"password1": "12345678", "password2": "12345678"})
    assert "This password is entirely numeric." in field_errors(response, "password2")
    assert not User.objects.exists()


def test_signing_in_with_the_email_leads_home(owner):
    client = Client()
    page = client.get("/login")
    assert '<label for="id_username">E-mail' in page.content.decode()
    response = client.post(
        "/login", {"username": owner.email.upper(), "password": "correct-horse-battery"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_signing_in_follows_a_safe_next_only(owner):
    credentials = {"username": owner.email, "password": "correct-horse-battery"}
    response = Client().post("/login", credentials | {"next": "/settings/team"})
    assert response["Location"] == "/settings/team"
    response = Client().post("/login", credentials | {"next": "https://evil.example/"})
    assert response["Location"] == "/"


def test_a_failed_sign_in_is_recorded_in_the_users_accounts(owner, account):
    response = Client().post("/login", {"username": owner.email, "password": "wrong"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors()
    event = Event.objects.get(type="user.login_failed")
    assert event.account == account
    assert event.actor_ip == "127.0.0.1"
    assert event.data["object"] == {"id": owner.id, "email": owner.email}


def test_the_eleventh_attempt_in_a_minute_is_refused_without_checking_the_password(owner):
    client = Client()
    for _ in range(10):
        response = client.post("/login", {"username": owner.email, "password": "wrong"})
        assert response.status_code == 200
    response = client.post("/login", {"username": owner.email, "password": "correct-horse-battery"})
    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert re.search(
        r"Too many sign-in attempts; try again in \d+ seconds\.", response.content.decode()
    )
    assert "_auth_user_id" not in client.session
    assert Event.objects.filter(type="user.login_failed").count() == 10


def test_the_limit_per_email_holds_across_client_addresses(owner, settings):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 3
    for number in range(3):
        Client(REMOTE_ADDR=f"198.51.100.{number}").post(
            "/login", {"username": owner.email, "password": "wrong"}
        )
    response = Client(REMOTE_ADDR="198.51.100.99").post(
        "/login", {"username": owner.email.upper(), "password": "correct-horse-battery"}
    )
    assert response.status_code == 429
    other = Client(REMOTE_ADDR="198.51.100.99").post(
        "/login", {"username": "someone-else@example.com", "password": "wrong"}
    )
    assert other.status_code == 200


def test_csrf_is_enforced_on_every_form(owner, account):
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post("/login", {"username": owner.email, "password": "x"}).status_code == 403
    assert anonymous.post("/signup", SIGNUP).status_code == 403
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    for path in [
        "/settings/api-keys/new",
        "/settings/team/invite",
        "/settings/profile",
        "/switch",
        "/logout",
        "/password/change",
    ]:
        assert browser.post(path, {}).status_code == 403, path
    assert not account.api_keys.exists()


def test_a_form_posted_with_its_token_passes_csrf(owner):
    client = Client(enforce_csrf_checks=True)
    client.get("/login")
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/login",
        {
            "username": owner.email,
            "password": "correct-horse-battery",
            "csrfmiddlewaretoken": token,
        },
    )
    assert response.status_code == 302


def test_log_out_is_a_post(owner):
    client = signed_in(owner)
    assert client.get("/logout").status_code == 405
    response = client.post("/logout")
    assert response.status_code == 302
    assert response["Location"] == "/login"
    assert client.get("/")["Location"] == "/login?next=/"


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/settings/api-keys",
        "/settings/api-keys/new",
        "/settings/team",
        "/settings/profile",
        "/settings/activity",
        "/password/change",
    ],
)
def test_dashboard_pages_ask_to_sign_in(db, path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/login?next={path}"


def test_changing_the_password(owner):
    client = signed_in(owner)
    response = client.post(
        "/password/change",
        {"old_password": "wrong", "new_password1": "x", "new_password2": "x"},
    )
    assert field_errors(response, "old_password")
    response = client.post(
        "/password/change",
        {
            "old_password": "correct-horse-battery",
            "new_password1": "a-brand-new-passphrase",
            "new_password2": "a-brand-new-passphrase",
        },
    )
    assert response["Location"] == "/password/change/done"
    owner.refresh_from_db()
    assert owner.check_password("a-brand-new-passphrase")
    assert client.get("/password/change/done").status_code == 200


def test_a_password_reset_mails_a_link_on_the_site_url_that_sets_a_new_password(owner, settings):
    settings.SITE_URL = "https://panel.example.com"
    response = Client().post("/password/reset", {"email": owner.email.upper()})
    assert response["Location"] == "/password/reset/done"
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [owner.email]
    link = re.search(r"https://panel\.example\.com(/password/reset/\S+)", mail.outbox[0].body)
    assert link, mail.outbox[0].body

    client = Client()
    form_page = client.get(link.group(1), follow=True)
    assert form_page.context["validlink"] is True
    set_password_path = form_page.redirect_chain[-1][0]
    response = client.post(
        set_password_path,
        {"new_password1": "reset-to-this-passphrase", "new_password2": "reset-to-this-passphrase"},
    )
    assert response["Location"] == "/password/reset/complete"
    owner.refresh_from_db()
    assert owner.check_password("reset-to-this-passphrase")


def test_a_password_reset_for_an_unknown_address_sends_nothing_and_says_the_same(db):
    response = Client().post("/password/reset", {"email": "nobody@example.com"})
    assert response["Location"] == "/password/reset/done"
    assert mail.outbox == []


def test_sign_up_is_rate_limited_per_address(db, settings):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 2
    client = Client()
    statuses = []
    for n in range(3):
        response = client.post(
            "/signup",
            {
                "name": "N",
                "email": f"new{n}@example.com",
                "account_name": "Acme",
                "password1": "a-long-and-unusual-passphrase",
                "password2": "a-long-and-unusual-passphrase",
            },
        )
        statuses.append(response.status_code)
        client.logout()
    assert statuses == [302, 302, 429]
    assert "Too many attempts" in response.content.decode()
    assert not User.objects.filter(email="new2@example.com").exists()


def test_password_reset_is_rate_limited_per_address_and_e_mail(db, settings, mailoutbox):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 2
    client = Client()
    statuses = [
        client.post("/password/reset", {"email": "someone@example.com"}).status_code
        for _ in range(3)
    ]
    assert statuses == [302, 302, 429]


def test_an_unknown_page_is_a_styled_not_found(db):
    response = Client().get("/invitations/not-a-real-token")
    assert response.status_code == 404
    assert "Back to the dashboard" in response.content.decode()

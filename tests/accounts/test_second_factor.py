"""A second factor at sign-in (issue 33, through django-allauth's MFA): a person sets up an
authenticator app (TOTP) under Profile → Security, gets recovery codes shown once, and from
then on the dashboard's and admin's sign-in ask for a code after the password; a code is used
once; a recovery code signs in once, also when two sign-ins race with it."""

import re
import threading
import time

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value
from django.db import connection
from django.test import Client

from tests.factories import UserFactory

PASSWORD = "a-long-enough-password-for-tests"


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """The sign-in limits are fixed windows: every test here counts within one window, so a
    test that straddles a minute's end never finds its budget whole again."""


def totp_code(secret: str, offset: int = 0) -> str:
    return format_hotp_value(hotp_value(secret, int(time.time()) // 30 + offset))


def signed_in(user) -> Client:
    client = Client()
    answer = client.post("/login", {"username": user.email, "password": PASSWORD})
    assert answer.status_code == 302, answer.content.decode()[:500]
    return client


def activate_totp(client: Client) -> str:
    page = client.get("/auth/2fa/totp/activate/")
    assert page.status_code == 200, page.content.decode()[:500]
    secret = page.context["form"].secret
    assert secret in page.content.decode()  # the secret to type, beside the QR code
    done = client.post("/auth/2fa/totp/activate/", {"code": totp_code(secret)})
    assert done.status_code == 302, done.content.decode()[:1000]
    return secret


def recovery_codes(client: Client) -> list[str]:
    page = client.get("/auth/2fa/recovery-codes/").content.decode()
    return re.findall(r"\b\d{8}\b", page)


@pytest.fixture
def person(db):
    return UserFactory(password=PASSWORD)


def test_profile_security_leads_to_the_factor_pages_in_the_dashboards_layout(person):
    client = signed_in(person)
    profile = client.get("/settings/profile").content.decode()
    assert 'id="security"' in profile and "Set up two-factor sign-in" in profile
    index = client.get("/auth/2fa/")
    assert index.status_code == 200
    assert "Authenticator App" in index.content.decode()
    assert 'class="app' in index.content.decode()  # the dashboard's layout, not allauth's bare one
    activate_totp(client)
    assert "Manage two-factor sign-in" in client.get("/settings/profile").content.decode()


def test_with_totp_set_up_the_password_alone_signs_no_one_in(person):
    client = signed_in(person)
    secret = activate_totp(client)
    assert Authenticator.objects.filter(user=person, type="totp").exists()
    client.post("/logout")

    other = Client()
    answer = other.post("/login", {"username": person.email, "password": PASSWORD})
    assert answer.status_code == 302 and answer["Location"].startswith("/auth/2fa/authenticate")
    assert other.get("/").status_code == 302  # not signed in yet
    wrong = other.post("/auth/2fa/authenticate/", {"code": "000000"})
    assert wrong.status_code == 200 and "Incorrect code" in wrong.content.decode()
    code = totp_code(secret)
    right = other.post("/auth/2fa/authenticate/", {"code": code})
    assert right.status_code == 302
    assert other.get("/").status_code == 200

    # The same code does not sign in twice.
    third = Client()
    third.post("/login", {"username": person.email, "password": PASSWORD})
    again = third.post("/auth/2fa/authenticate/", {"code": code})
    assert again.status_code == 200


@pytest.mark.parametrize(("offset", "taken"), [(-1, True), (1, True), (-2, False), (2, False)])
def test_a_code_one_period_off_is_taken_two_are_not(person, monkeypatch, offset, taken):
    """One 30-second step of drift either way (RFC 6238): a code typed as it ticks over works."""
    client = signed_in(person)
    secret = activate_totp(client)
    client.post("/logout")
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)  # one instant for the code and its check
    other = Client()
    other.post("/login", {"username": person.email, "password": PASSWORD})
    answer = other.post("/auth/2fa/authenticate/", {"code": totp_code(secret, offset)})
    assert (answer.status_code == 302) is taken


def test_recovery_codes_are_shown_once_and_each_signs_in_once(person):
    client = signed_in(person)
    activate_totp(client)
    codes = recovery_codes(client)
    assert len(codes) == 10
    # Shown once: the page does not show them again.
    assert recovery_codes(client) == []
    client.post("/logout")

    first = Client()
    first.post("/login", {"username": person.email, "password": PASSWORD})
    assert first.post("/auth/2fa/authenticate/", {"code": codes[0]}).status_code == 302
    second = Client()
    second.post("/login", {"username": person.email, "password": PASSWORD})
    assert second.post("/auth/2fa/authenticate/", {"code": codes[0]}).status_code == 200
    assert second.post("/auth/2fa/authenticate/", {"code": codes[1]}).status_code == 302


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_recovery_code_raced_by_two_sign_ins_signs_in_one():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL's row locks (SQLite serialises the writes anyway)")
    person = UserFactory(password=PASSWORD)
    client = signed_in(person)
    activate_totp(client)
    code = recovery_codes(client)[0]
    clients = []
    for _ in range(6):
        racer = Client()
        racer.post("/login", {"username": person.email, "password": PASSWORD})
        clients.append(racer)
    barrier = threading.Barrier(len(clients))
    answers: list[int] = []

    def race(racer: Client) -> None:
        barrier.wait()
        answers.append(racer.post("/auth/2fa/authenticate/", {"code": code}).status_code)
        connection.close()

    threads = [threading.Thread(target=race, args=(racer,)) for racer in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [200] * 5 + [302]


def test_staff_sign_in_to_admin_asks_for_the_second_factor_too(db):
    staff = UserFactory(password=PASSWORD, is_staff=True, is_superuser=True)
    client = signed_in(staff)
    secret = activate_totp(client)
    admin = Client()
    answer = admin.post(
        "/admin/login/?next=/admin/", {"username": staff.email, "password": PASSWORD}
    )
    assert answer.status_code == 302 and answer["Location"].startswith("/auth/2fa/authenticate")
    assert admin.get("/admin/").status_code == 302
    done = admin.post("/auth/2fa/authenticate/", {"code": totp_code(secret)})
    assert done["Location"] == "/admin/"
    assert admin.get("/admin/").status_code == 200


def test_factor_codes_count_in_the_sign_ins_limits_and_a_lockout_is_e_mailed(
    person, settings, mailoutbox
):
    client = signed_in(person)
    secret = activate_totp(client)
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 5
    guesser = Client(REMOTE_ADDR="198.51.100.7")
    # Each password is one attempt of the address (the owner's sign-in above, the guesser's
    # here), each code typed another: three codes, then the budget of 5 is spent.
    guesser.post("/login", {"username": person.email, "password": PASSWORD})
    for _ in range(3):
        wrong = guesser.post("/auth/2fa/authenticate/", {"code": "123456"})
        assert "Incorrect code" in wrong.content.decode()
    held = guesser.post("/auth/2fa/authenticate/", {"code": totp_code(secret)})
    refusal = r"Too many sign-in attempts; try again in \d+ seconds\."
    assert re.search(refusal, held.content.decode())
    assert guesser.get("/").status_code == 302  # even the right code was not read
    assert [mail.to for mail in mailoutbox] == [[person.email]]
    assert "198.51.100.7" in mailoutbox[0].body
    # Once a window: the next refusal e-mails nobody.
    guesser.post("/auth/2fa/authenticate/", {"code": "123456"})
    assert len(mailoutbox) == 1


def test_each_factor_change_and_wrong_code_is_an_event_of_the_persons_accounts(
    person, django_capture_on_commit_callbacks
):
    from events.models import Event
    from tests.factories import MembershipFactory

    membership = MembershipFactory(user=person)
    client = signed_in(person)
    with django_capture_on_commit_callbacks(execute=True):  # allauth signals after commit
        activate_totp(client)
    added = Event.objects.filter(type="user.factor_added", account=membership.account)
    assert sorted(event.data["object"]["factor"] for event in added) == [
        "recovery_codes",
        "totp",
    ]
    client.post("/logout")
    other = Client()
    other.post("/login", {"username": person.email, "password": PASSWORD})
    other.post("/auth/2fa/authenticate/", {"code": "000000"})
    failed = Event.objects.get(type="user.factor_failed", account=membership.account)
    assert failed.data["object"] == {"id": person.id, "email": person.email, "factor": "totp"}


def test_a_password_guesser_held_back_e_mails_the_person_once(person, settings, mailoutbox):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 2
    guesser = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(2):
        guesser.post("/login", {"username": person.email, "password": "wrong"})
    assert mailoutbox == []
    for _ in range(2):
        held = guesser.post("/login", {"username": person.email, "password": "wrong"})
        assert held.status_code == 429
    assert [mail.to for mail in mailoutbox] == [[person.email]]
    assert "203.0.113.9" in mailoutbox[0].body
    # An address nobody has is e-mailed nothing.
    for _ in range(3):
        guesser.post("/login", {"username": "nobody@example.com", "password": "wrong"})
    assert len(mailoutbox) == 1


def test_sessions_are_listed_a_new_device_is_e_mailed_and_others_signed_out(person, mailoutbox):
    from events.models import Event
    from tests.factories import MembershipFactory

    membership = MembershipFactory(user=person)
    laptop = Client(HTTP_USER_AGENT="Laptop Firefox")
    laptop.post("/login", {"username": person.email, "password": PASSWORD})
    assert mailoutbox == []  # the first device is no news
    laptop_again = Client(HTTP_USER_AGENT="Laptop Firefox")
    laptop_again.post("/login", {"username": person.email, "password": PASSWORD})
    assert mailoutbox == []  # a device seen before
    phone = Client(HTTP_USER_AGENT="Phone Safari", REMOTE_ADDR="198.51.100.44")
    phone.post("/login", {"username": person.email, "password": PASSWORD})
    assert [mail.to for mail in mailoutbox] == [[person.email]]
    assert "Phone Safari" in mailoutbox[0].body and "198.51.100.44" in mailoutbox[0].body
    signed = Event.objects.filter(type="user.signed_in", account=membership.account)
    assert [event.data["object"]["new_device"] for event in signed.order_by("created_at")] == [
        False,
        False,
        True,
    ]

    page = phone.get("/auth/sessions/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Laptop Firefox" in text and "Phone Safari" in text
    assert phone.post("/auth/sessions/", {"action": "logout"}).status_code == 302
    assert laptop.get("/").status_code == 302  # signed out there
    assert laptop_again.get("/").status_code == 302
    assert phone.get("/").status_code == 200  # but not here


@pytest.mark.parametrize(
    "path", ["/auth/signup/", "/auth/password/reset/", "/auth/password/change/", "/auth/email/"]
)
def test_allauths_own_account_pages_are_not_served(db, path):
    # Ours are the only sign-in, sign-up and password pages (their shared rate limits).
    assert Client().get(path).status_code == 404


def test_allauths_sign_in_address_leads_to_ours(db):
    answer = Client().get("/auth/login/")
    assert answer.status_code == 302 and answer["Location"] == "/login"


def test_staff_see_a_persons_factors_in_admin_and_change_none(person, staff_client):
    from tests.accounts.test_admin import admin_url

    client = signed_in(person)
    activate_totp(client)
    factor = Authenticator.objects.get(user=person, type="totp")
    assert staff_client.get(admin_url(Authenticator, "change", factor.pk)).status_code == 200
    assert staff_client.post(admin_url(Authenticator, "delete", factor.pk)).status_code == 403
    assert staff_client.get(admin_url(Authenticator, "add")).status_code == 403
    assert Authenticator.objects.filter(pk=factor.pk).exists()

"""Passkeys in real Chromium (issue 33), with a virtual authenticator through the DevTools
protocol (``WebAuthn.addVirtualAuthenticator``): a person adds a passkey under Profile →
Security, signs out, signs in with the passkey alone; a passkey as the second factor after the
password; renaming and removing it; a passkey this site does not know, and a device without
one, refused with a plain message; each step in the event log."""

import base64
import re

import pytest
from allauth.account.utils import user_pk_to_url_str
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from events.models import Event
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "a-long-and-unusual-passphrase"
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def person(db):
    user = UserFactory(email="grace@example.com", password=PASSWORD)
    MembershipFactory(user=user, account__name="Hopper Hosting")
    return user


def virtual_authenticator(page) -> tuple[object, str]:
    """A platform authenticator that holds passkeys and verifies its user (a fingerprint)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    answer = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, answer["authenticatorId"]


def sign_in_with_password(page, email: str, path: str = "/login") -> None:
    page.goto(path)
    page.fill("[name=username]", email)
    page.fill("[name=password]", PASSWORD)
    page.locator("form").filter(has=page.locator("[name=password]")).locator(
        "[type=submit]"
    ).click()


def add_passkey(page, live_server, name: str, screenshot=None) -> None:
    """Profile → Security → two-factor sign-in → add a passkey (no password needed with it)."""
    page.goto("/settings/profile")
    page.locator("#security ~ .card").get_by_role("link", name=re.compile("two-factor")).click()
    page.wait_for_url(f"{live_server.url}/auth/2fa/")
    page.get_by_role("link", name="Add", exact=True).last.click()
    page.wait_for_url(f"{live_server.url}/auth/2fa/webauthn/add/")
    page.fill("[name=name]", name)
    page.check("[name=passwordless]")
    if screenshot:
        screenshot("passkeys-add")
    page.click("#mfa_webauthn_add")
    # The first factor comes with recovery codes, shown once.
    page.wait_for_url(f"{live_server.url}/auth/2fa/recovery-codes/")


def sign_out(page, live_server) -> None:
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r".*/login"))


def events_of(user, type: str) -> list[dict]:
    return [
        event.data["object"]
        for event in Event.objects.filter(type=type).order_by("created_at")
        if event.data["object"].get("id") == user.id
    ]


def test_add_a_passkey_then_sign_in_with_it_alone(page, live_server, person, screenshot):
    cdp, authenticator_id = virtual_authenticator(page)
    sign_in_with_password(page, person.email)
    page.wait_for_url(f"{live_server.url}/")
    add_passkey(page, live_server, "Grace's laptop", screenshot)
    credentials = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id})
    assert len(credentials["credentials"]) == 1
    assert credentials["credentials"][0]["isResidentCredential"] is True

    page.goto("/auth/2fa/webauthn/")
    listing = page.locator("main").inner_text()
    assert "Grace's laptop" in listing and "Passkey" in listing
    screenshot("passkeys-list")
    added = events_of(person, "user.factor_added")
    assert {"webauthn", "recovery_codes"} <= {event["factor"] for event in added}

    sign_out(page, live_server)
    screenshot("passkeys-sign-in-page")
    page.click("#passkey-sign-in")
    page.wait_for_url(f"{live_server.url}/")
    assert person.email in page.locator(".user-email").inner_text()
    # Signed in without the password; the event says how.
    sign_ins = events_of(person, "user.signed_in")
    assert [event["method"] for event in sign_ins] == ["password", "passkey"]
    # A passkey is a second factor by itself: the pages that ask for one let the person in.
    page.goto("/auth/sessions/")
    assert page.locator("main").get_by_text("Sessions").count() >= 1


def test_a_passkey_as_the_second_factor_after_the_password(page, live_server, person, screenshot):
    virtual_authenticator(page)
    sign_in_with_password(page, person.email)
    page.wait_for_url(f"{live_server.url}/")
    add_passkey(page, live_server, "Security key")
    sign_out(page, live_server)

    sign_in_with_password(page, person.email)
    page.wait_for_url(re.compile(r".*/auth/2fa/authenticate/"))
    assert page.url.startswith(f"{live_server.url}/auth/2fa/authenticate/")
    screenshot("passkeys-second-factor")
    page.get_by_role("button", name="Use a security key").click()
    page.wait_for_url(f"{live_server.url}/")
    assert [event["method"] for event in events_of(person, "user.signed_in")] == [
        "password",
        "password",
    ]


def test_rename_and_remove_a_passkey_on_a_phone_then_it_signs_in_no_more(
    page, live_server, person, screenshot
):
    virtual_authenticator(page)
    sign_in_with_password(page, person.email)
    page.wait_for_url(f"{live_server.url}/")
    add_passkey(page, live_server, "Old phone")

    page.set_viewport_size(PHONE)
    page.goto("/auth/2fa/webauthn/")
    fits = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    assert page.evaluate(fits), "the list of keys scrolls sideways on a phone"
    screenshot("passkeys-list-phone")
    page.get_by_role("link", name="Edit").click()
    page.fill("[name=name]", "Work phone")
    page.locator("main form [type=submit]").click()
    page.wait_for_url(f"{live_server.url}/auth/2fa/webauthn/")
    assert "Work phone" in page.locator("main").inner_text()

    page.get_by_role("link", name="Remove").click()
    page.wait_for_url(re.compile(r"/remove/$"))
    assert page.evaluate(fits)
    page.locator("main form [type=submit]").click()
    # Anchored: the remove page's own address also holds /auth/2fa/webauthn/ (a CI run read
    # it before the removal's answer had come).
    page.wait_for_url(re.compile(r"/auth/2fa/webauthn/$"))
    assert "No security keys have been added" in page.locator("main").inner_text()
    removed = {event["factor"] for event in events_of(person, "user.factor_removed")}
    assert removed == {"webauthn", "recovery_codes"}

    # The device still holds the passkey; the site no longer knows it.
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_out(page, live_server)
    with page.expect_navigation():
        page.click("#passkey-sign-in")
    refusal = page.locator(".messages .message-error").inner_text()
    assert "That passkey was not accepted" in refusal and "removed" in refusal
    assert page.locator(".user-email").count() == 0
    failed = events_of(person, "user.login_failed")
    assert failed == [
        {
            "id": person.id,
            "email": person.email,
            "method": "passkey",
            "reason": "passkey_not_registered",
        }
    ]


def _forged_passkey(cdp, authenticator_id: str, user) -> None:
    """A passkey for this site and this person that was never registered here (made on a
    device of someone else's, say)."""
    key = ec.generate_private_key(ec.SECP256R1())
    pkcs8 = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    cdp.send(
        "WebAuthn.addCredential",
        {
            "authenticatorId": authenticator_id,
            "credential": {
                "credentialId": base64.b64encode(b"never-registered-here-1").decode(),
                "isResidentCredential": True,
                "rpId": "localhost",
                "privateKey": base64.b64encode(pkcs8).decode(),
                "userHandle": base64.b64encode(user_pk_to_url_str(user).encode()).decode(),
                "signCount": 1,
            },
        },
    )


def test_a_passkey_this_site_never_registered_is_refused(page, live_server, person):
    cdp, authenticator_id = virtual_authenticator(page)
    _forged_passkey(cdp, authenticator_id, person)
    page.goto("/login")
    with page.expect_navigation():
        page.click("#passkey-sign-in")
    assert page.url == f"{live_server.url}/login"
    refusal = page.locator(".messages .message-error").inner_text()
    assert "That passkey was not accepted" in refusal
    page.goto("/")
    assert page.url.startswith(f"{live_server.url}/login")  # not signed in
    assert [event["reason"] for event in events_of(person, "user.login_failed")] == [
        "passkey_not_registered"
    ]


def test_a_device_without_a_passkey_says_so(page, live_server, person):
    virtual_authenticator(page)  # which holds no passkey
    page.goto("/login")
    page.click("#passkey-sign-in")
    error = page.locator("#passkey-error")
    error.wait_for(state="visible")
    assert "No passkey was used" in error.inner_text()
    assert page.url == f"{live_server.url}/login"


def test_staff_sign_in_to_admin_with_a_passkey(page, live_server, screenshot):
    staff = UserFactory(email="ops@example.com", password=PASSWORD, is_staff=True)
    staff.is_superuser = True
    staff.save()
    virtual_authenticator(page)
    sign_in_with_password(page, staff.email)
    # Staff without a factor are sent to set one up before anything else.
    add_passkey(page, live_server, "Ops key")
    sign_out_form = page.locator("form[action='/logout'], form[action='/auth/logout/']")
    sign_out_form.first.locator("[type=submit]").click()
    page.goto("/admin/login/?next=/admin/")
    screenshot("passkeys-admin-sign-in")
    page.click("#passkey-sign-in")
    page.wait_for_url(f"{live_server.url}/admin/")
    assert page.get_by_role("heading", name="Staff administration").count() == 1
    assert [event["method"] for event in events_of(staff, "user.signed_in")] == [
        "password",
        "passkey",
    ]

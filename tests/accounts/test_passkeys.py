"""Passkeys on the server's side (accounts/passkeys.py), with a software passkey that signs
real WebAuthn assertions (P-256, as a phone's or laptop's does): a passkey signs in alone and
the event says so; passkey sign-ins count in the sign-in's bucket of the client address, which
passwords share; one that signs nobody in (unknown, made for another site, of a deactivated
person, staff under STAFF_SSO_ONLY) is refused plainly and is an event; a passkey as the
second factor counts as a code does and a wrong one is ``user.factor_failed``. The browser's
side: tests/browser/test_passkeys_flow.py."""

import hashlib
import json
import os
import re

import pytest
from allauth.account.utils import user_pk_to_url_str
from allauth.mfa.webauthn.internal.auth import WebAuthn
from allauth.usersessions.models import UserSession
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from django.test import Client
from fido2.cose import ES256
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import (
    AttestationObject,
    AttestedCredentialData,
    AuthenticatorData,
    CollectedClientData,
)

from events.models import Event
from tests.factories import MembershipFactory, UserFactory

PASSWORD = "a-long-enough-password-for-tests"
LOGIN = "/auth/2fa/webauthn/login/"
REFUSED = "That passkey was not accepted"


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """The sign-in limits are fixed windows: every test here counts within one window, so a
    test that straddles a minute's end never finds its budget whole again."""


class SoftPasskey:
    """A passkey held in software: registers as a phone's would, and signs assertions."""

    def __init__(self, origin: str = "https://testserver", rp_id: str = "testserver") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(16)
        self.origin = origin
        self.rp_id_hash = hashlib.sha256(rp_id.encode()).digest()
        self.counter = 0

    def _ids(self) -> dict:
        encoded = websafe_encode(self.credential_id)
        return {"id": encoded, "rawId": encoded, "type": "public-key"}

    def registration(self) -> dict:
        public_key = ES256.from_cryptography_key(self.key.public_key())
        credential = AttestedCredentialData.create(b"\0" * 16, self.credential_id, public_key)
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV | AuthenticatorData.FLAG.AT
        auth_data = AuthenticatorData.create(self.rp_id_hash, flags, 0, credential)
        client_data = CollectedClientData.create("webauthn.create", os.urandom(32), self.origin)
        return self._ids() | {
            "response": {
                "clientDataJSON": websafe_encode(bytes(client_data)),
                "attestationObject": websafe_encode(
                    bytes(AttestationObject.create("none", auth_data, {}))
                ),
            },
            "clientExtensionResults": {"credProps": {"rk": True}},
        }

    def register_to(self, user, name: str = "Laptop"):
        return WebAuthn.add(user, name, self.registration()).instance

    def assertion(self, request_options: dict, user) -> dict:
        options = request_options.get("publicKey", request_options)
        challenge = websafe_decode(options["challenge"])
        client_data = CollectedClientData.create("webauthn.get", challenge, self.origin)
        self.counter += 1
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV
        auth_data = AuthenticatorData.create(self.rp_id_hash, flags, self.counter)
        signature = self.key.sign(bytes(auth_data) + client_data.hash, ec.ECDSA(hashes.SHA256()))
        return self._ids() | {
            "response": {
                "clientDataJSON": websafe_encode(bytes(client_data)),
                "authenticatorData": websafe_encode(bytes(auth_data)),
                "signature": websafe_encode(signature),
                "userHandle": websafe_encode(user_pk_to_url_str(user).encode()),
            },
            "clientExtensionResults": {},
        }


def offer(client: Client, passkey: SoftPasskey, user):
    """What the sign-in page's button does: ask for a challenge, answer it with the passkey."""
    options = client.get(LOGIN, HTTP_ACCEPT="application/json")
    assert options.status_code == 200, options.content[:300]
    credential = passkey.assertion(options.json()["request_options"], user)
    return client.post(LOGIN, {"credential": json.dumps(credential)}, follow=True)


def said(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


def events(type: str, **object_fields) -> list[dict]:
    found = [
        event.data["object"] for event in Event.objects.filter(type=type).order_by("created_at")
    ]
    return [obj for obj in found if object_fields.items() <= obj.items()]


@pytest.fixture
def person(db):
    user = UserFactory(password=PASSWORD)
    MembershipFactory(user=user)
    return user


def test_nothing_offered_is_said_plainly(db):
    client = Client()
    for sent in ({}, {"credential": ""}, {"credential": "not json"}):
        answer = client.post(LOGIN, sent, follow=True)
        assert answer.redirect_chain[-1][0] == "/login"
        assert said(answer) == "No passkey was offered. Try again, or sign in with your password."


def test_a_passkey_signs_in_alone_and_the_event_says_passkey(person):
    passkey = SoftPasskey()
    passkey.register_to(person)
    client = Client()
    answer = offer(client, passkey, person)
    assert answer.redirect_chain[0] == ("/", 302)
    assert client.get("/").status_code == 200
    assert [obj["method"] for obj in events("user.signed_in", id=person.id)] == ["passkey"]
    assert events("user.login_failed") == []
    # Listed under Profile → Security → Sessions, as any sign-in is.
    session = UserSession.objects.get(user=person)
    assert session.session_key == client.session.session_key
    assert session.ip == "127.0.0.1"


def test_a_passkey_this_site_does_not_know_or_made_for_another_site_signs_nobody_in(person):
    registered = SoftPasskey()
    registered.register_to(person)
    # A passkey never registered here, naming the person; then the person's own passkey,
    # signing for another site (a phishing page relaying the challenge).
    phished = SoftPasskey(origin="https://evil.example")
    phished.key, phished.credential_id = registered.key, registered.credential_id
    for stranger in (SoftPasskey(), phished):
        client = Client()
        answer = offer(client, stranger, person)
        assert answer.redirect_chain[-1][0] == "/login"
        assert REFUSED in said(answer) and "removed" in said(answer)
        assert client.get("/").status_code == 302  # not signed in
    assert [obj["reason"] for obj in events("user.login_failed", method="passkey")] == [
        "passkey_not_registered",
        "assertion_refused",
    ]


def test_a_deactivated_person_and_staff_under_sso_only_are_refused_with_a_passkey(person, settings):
    passkey = SoftPasskey()
    passkey.register_to(person)
    person.is_active = False
    person.save()
    client = Client()
    assert "This account is deactivated" in said(offer(client, passkey, person))
    assert client.get("/").status_code == 302

    person.is_active = True
    person.is_staff = True
    person.save()
    settings.STAFF_SSO_ONLY = True
    answer = offer(client, passkey, person)
    assert "Staff sign in with single sign-on only" in said(answer)
    assert client.get("/").status_code == 302
    reasons = [obj["reason"] for obj in events("user.login_failed", id=person.id)]
    assert reasons == ["user_inactive", "staff_sso_only"]


def test_passkey_sign_ins_count_in_the_addresses_sign_in_bucket(person, settings):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 3
    passkey = SoftPasskey()
    passkey.register_to(person)
    guesser = Client(REMOTE_ADDR="198.51.100.23")
    guesser.get(LOGIN, HTTP_ACCEPT="application/json")  # asking for a challenge is free
    for _ in range(3):
        junk = json.dumps({"id": "AAAA", "rawId": "AAAA", "type": "public-key"})
        answer = guesser.post(LOGIN, {"credential": junk}, follow=True)
        assert REFUSED in said(answer)
    assert len(events("user.login_failed", method="passkey")) == 3

    # Over the budget, even the right passkey is refused unread, with the wait...
    answer = offer(guesser, passkey, person)
    assert re.search(r"Too many sign-in attempts; try again in \d+ seconds\.", said(answer))
    assert guesser.get("/").status_code == 302
    assert len(events("user.login_failed")) == 3  # ...which is no failed sign-in of anyone
    # ...and the address's password sign-ins share the bucket.
    held = guesser.post("/login", {"username": person.email, "password": PASSWORD})
    assert held.status_code == 429
    # Another address is not held back.
    assert offer(Client(REMOTE_ADDR="198.51.100.24"), passkey, person).redirect_chain[0][0] == "/"


def password_then_factor_page(person) -> tuple[Client, dict]:
    client = Client(REMOTE_ADDR="203.0.113.40")
    answer = client.post("/login", {"username": person.email, "password": PASSWORD})
    assert answer["Location"].startswith("/auth/2fa/authenticate/")
    page = client.get("/auth/2fa/authenticate/")
    assert "Use a security key" in page.content.decode()
    return client, page.context["js_data"]["request_options"]


def test_a_passkey_as_the_second_factor_and_a_wrong_one_is_a_factor_failed_event(person, settings):
    passkey = SoftPasskey()
    passkey.register_to(person)
    client, options = password_then_factor_page(person)
    wrong = SoftPasskey().assertion(options, person)
    answer = client.post("/auth/2fa/authenticate/", {"credential": json.dumps(wrong)})
    assert answer.status_code == 200
    assert "That security key or passkey was not accepted" in answer.content.decode()
    assert client.get("/").status_code == 302
    assert events("user.factor_failed", id=person.id) == [
        {"id": person.id, "email": person.email, "factor": "webauthn"}
    ]

    options = client.get("/auth/2fa/authenticate/").context["js_data"]["request_options"]
    right = passkey.assertion(options, person)
    answer = client.post("/auth/2fa/authenticate/", {"credential": json.dumps(right)})
    assert answer.status_code == 302
    assert client.get("/").status_code == 200
    assert [obj["method"] for obj in events("user.signed_in", id=person.id)] == ["password"]


def test_a_passkey_as_the_second_factor_counts_in_the_sign_ins_limits(person, settings, mailoutbox):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 2
    passkey = SoftPasskey()
    passkey.register_to(person)
    # The password is the e-mail's first attempt, the passkey its second: at the budget.
    client, options = password_then_factor_page(person)
    client.post(
        "/auth/2fa/authenticate/",
        {"credential": json.dumps(SoftPasskey().assertion(options, person))},
    )
    options = client.get("/auth/2fa/authenticate/").context["js_data"]["request_options"]
    right = passkey.assertion(options, person)
    held = client.post("/auth/2fa/authenticate/", {"credential": json.dumps(right)})
    assert held.status_code == 200
    refusal = r"Too many sign-in attempts; try again in \d+ seconds\."
    assert re.search(refusal, held.content.decode())
    assert client.get("/").status_code == 302
    assert [mail.to for mail in mailoutbox] == [[person.email]]


def test_a_passkey_sign_in_counts_as_a_recent_sign_in_for_the_sensitive_actions(person):
    passkey = SoftPasskey()
    passkey.register_to(person)
    client = Client()
    offer(client, passkey, person)
    # Adding another key asks for a recent sign-in: the passkey (with its PIN or biometrics)
    # was one, as a password typed at sign-in is.
    assert client.get("/auth/2fa/webauthn/add/").status_code == 200
    assert client.get("/settings/api-keys/new").status_code == 200


def test_confirming_it_is_you_with_a_passkey(person):
    from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY

    passkey = SoftPasskey()
    passkey.register_to(person)
    client = Client()
    offer(client, passkey, person)
    session = client.session  # an hour later: the sign-in is no longer recent
    session[AUTHENTICATION_METHODS_SESSION_KEY] = [
        record | {"at": record["at"] - 3600}
        for record in session[AUTHENTICATION_METHODS_SESSION_KEY]
    ]
    session.save()
    asked = client.get("/settings/api-keys/new")
    assert asked["Location"].startswith("/auth/reauthenticate/")

    page = client.get("/auth/2fa/webauthn/reauthenticate/?next=/settings/api-keys/new")
    options = page.context["js_data"]["request_options"]
    wrong = SoftPasskey().assertion(options, person)
    refused = client.post(
        "/auth/2fa/webauthn/reauthenticate/", {"credential": json.dumps(wrong)}, follow=True
    )
    assert "That security key or passkey was not accepted" in said(refused)
    assert events("user.factor_failed", id=person.id, factor="webauthn")
    assert client.get("/settings/api-keys/new").status_code == 302

    page = client.get("/auth/2fa/webauthn/reauthenticate/?next=/settings/api-keys/new")
    right = passkey.assertion(page.context["js_data"]["request_options"], person)
    done = client.post(
        "/auth/2fa/webauthn/reauthenticate/",
        {"credential": json.dumps(right), "next": "/settings/api-keys/new"},
    )
    assert done.status_code == 302 and done["Location"] == "/settings/api-keys/new"
    assert client.get("/settings/api-keys/new").status_code == 200

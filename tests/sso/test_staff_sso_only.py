"""STAFF_SSO_ONLY: a host's staff sign in with single sign-on only. Their password is refused
on the dashboard's /login and on admin's sign-in, with a message pointing at the button; single
sign-on still signs them in (their second factor asked, as for anyone with one); members'
passwords still work; staff cannot unlink their last identity."""

import time

import pytest
from allauth.mfa.totp.internal.auth import TOTP, format_hotp_value, hotp_value
from allauth.socialaccount.models import SocialAccount
from django.test import Client

from events.models import Event
from tests.factories import UserFactory
from tests.sso.relying_party import PASSWORD, sign_in_with_sso, signed_in_user_id

pytestmark = pytest.mark.django_db
REFUSAL = "Staff sign in with single sign-on only"
SECRET = "JBSWY3DPEHPK3PXP"


@pytest.fixture
def sso_only(idp, settings):
    settings.STAFF_SSO_ONLY = True
    return idp


@pytest.fixture
def staff(db):
    user = UserFactory(
        email="staff@example.com", password=PASSWORD, is_staff=True, is_superuser=True
    )
    TOTP.activate(user, SECRET)
    SocialAccount.objects.create(user=user, provider="oidc", uid="op-ada")
    return user


def code() -> str:
    return format_hotp_value(hotp_value(SECRET, int(time.time()) // 30))


@pytest.mark.parametrize("path", ["/login", "/admin/login/"])
def test_a_staff_password_is_refused_with_a_pointer_to_the_button(sso_only, staff, path):
    client = Client()

    answer = client.post(path, {"username": staff.email, "password": PASSWORD})

    assert answer.status_code == 200
    text = answer.content.decode()
    assert REFUSAL in text and "Sign in with Example IdP" in text
    assert signed_in_user_id(client) is None
    assert Event.objects.filter(type="user.login_failed").count() == 1


def test_a_wrong_staff_password_says_nothing_of_staff(sso_only, staff):
    answer = Client().post("/login", {"username": staff.email, "password": "wrong"})

    assert answer.status_code == 200 and REFUSAL not in answer.content.decode()


def test_a_members_password_still_signs_in(sso_only):
    member = UserFactory(password=PASSWORD)
    client = Client()

    answer = client.post("/login", {"username": member.email, "password": PASSWORD})

    assert answer.status_code == 302 and signed_in_user_id(client) == str(member.pk)


def test_staff_sign_in_with_sso_then_their_factor_and_reach_admin(sso_only, staff):
    client = Client()

    answer = sign_in_with_sso(client, sso_only)

    assert answer["Location"].startswith("/auth/2fa/authenticate/")
    done = client.post("/auth/2fa/authenticate/", {"code": code()})
    assert done.status_code == 302 and signed_in_user_id(client) == str(staff.pk)
    assert client.get("/admin/").status_code == 200
    signed = Event.objects.get(type="user.signed_in")
    assert (signed.data["object"]["method"], signed.data["object"]["provider"]) == ("sso", "oidc")


def test_without_the_setting_a_staff_password_works(idp, staff):
    client = Client()

    answer = client.post("/login", {"username": staff.email, "password": PASSWORD})

    assert answer.status_code == 302 and answer["Location"].startswith("/auth/2fa/authenticate/")


def test_staff_cannot_unlink_their_last_identity(sso_only, staff):
    client = Client()
    sign_in_with_sso(client, sso_only)
    client.post("/auth/2fa/authenticate/", {"code": code()})
    account = SocialAccount.objects.get(user=staff)

    answer = client.post("/auth/sso/connections/", {"account": account.pk})

    assert answer.status_code == 200
    assert "link another provider before removing your last one" in answer.content.decode()
    assert SocialAccount.objects.filter(pk=account.pk).exists()

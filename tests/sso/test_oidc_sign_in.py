"""Signing in to the dashboard with the host's OpenID Connect provider, against the real
provider process: the authorization code flow with PKCE (S256), state and nonce, the ID token
verified against the provider's JWKS, and every tampered token refused."""

import pytest
from allauth.socialaccount.models import SocialAccount
from django.test import Client

from events.models import Event
from tests.factories import MembershipFactory, UserFactory
from tests.sso.relying_party import (
    PASSWORD,
    local,
    query,
    sign_in_with_sso,
    signed_in_user_id,
    start,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """The sign-in limits are fixed windows: every test here counts within one window, so a
    test that straddles a minute's end never finds its budget whole again."""


@pytest.fixture
def ada(db):
    """The person the provider's first account is (the same e-mail, verified there)."""
    return MembershipFactory(user=UserFactory(email="ada@idp.example.com", password=PASSWORD)).user


def test_the_code_flow_with_pkce_state_and_nonce_signs_in_and_links_by_verified_email(idp, ada):
    client = Client()

    authorize = start(client)
    params = query(authorize)
    answer = client.get(local(idp.sign_in(authorize)))

    assert answer.status_code == 302 and answer["Location"] == "/"
    assert signed_in_user_id(client) == str(ada.pk)
    assert client.get("/").status_code == 200
    [request] = idp.authorization_requests()
    assert request["code_challenge_method"] == "S256"
    assert len(request["code_challenge"]) == 43
    assert request["state"] == params["state"] and len(params["state"]) >= 12
    assert request["nonce"] == params["nonce"] and len(params["nonce"]) >= 32
    assert set(request["scope"].split()) == {"openid", "email", "profile"}
    account = SocialAccount.objects.get(user=ada)
    assert (account.provider, account.uid) == ("oidc", "op-ada")
    linked = Event.objects.get(type="user.sso_linked")
    assert linked.data["object"] | {} == {
        "id": ada.id,
        "email": ada.email,
        "provider": "oidc",
        "uid": "op-ada",
        "automatic": True,
    }
    signed = Event.objects.get(type="user.signed_in")
    assert (signed.data["object"]["method"], signed.data["object"]["provider"]) == ("sso", "oidc")


def refused(client: Client, answer, text: str) -> None:
    """Refused on our sign-in page, with the reason, nobody signed in."""
    assert answer.status_code == 302 and answer["Location"] == "/login", answer
    assert signed_in_user_id(client) is None
    page = client.get("/login").content.decode()
    assert text in page, page


def test_the_basic_auth_client_signs_in_a_linked_person(oidc_provider, monkeypatch, settings, ada):
    from tests.sso.relying_party import configure_provider

    configure_provider(monkeypatch, settings, oidc_provider, client_id="hosting-basic")
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    client = Client()

    answer = sign_in_with_sso(client, oidc_provider)

    assert answer.status_code == 302 and signed_in_user_id(client) == str(ada.pk)
    assert oidc_provider.authorization_requests()[0]["client_id"] == "hosting-basic"
    assert not Event.objects.filter(type="user.sso_linked").exists()  # linked before


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("wrong-key", "Signature verification failed"),
        ("alg-none", "signed with 'none'"),
        ("wrong-aud", "Audience doesn't match"),
        ("wrong-iss", "Invalid issuer"),
        ("expired", "Signature has expired"),
        ("wrong-nonce", "the nonce is not this sign-in's"),
    ],
)
def test_each_tampered_id_token_is_refused(idp, ada, mode, reason):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    idp.set_id_token_mode(mode)
    client = Client()

    answer = sign_in_with_sso(client, idp)

    refused(client, answer, "Sign-in with Example IdP failed")
    failed = Event.objects.get(type="user.login_failed")
    assert failed.data["object"]["method"] == "sso"
    assert failed.data["object"]["provider"] == "oidc"
    assert reason in failed.data["object"]["reason"]
    assert not Event.objects.filter(type="user.signed_in").exists()


def test_a_tampered_token_links_nobody_by_email(idp, ada):
    idp.set_id_token_mode("wrong-key")
    client = Client()

    sign_in_with_sso(client, idp)

    assert not SocialAccount.objects.exists()


def test_a_callback_with_another_state_is_refused(idp, ada):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    client = Client()
    callback = idp.sign_in(start(client))
    forged = callback.replace(f"state={query(callback)['state']}", "state=forged-state-value")

    refused(client, client.get(local(forged)), "Sign-in with Example IdP failed")
    failed = Event.objects.get(type="user.login_failed")
    assert failed.data["object"]["reason"] == "state missing or not this browser's"


def test_a_callback_without_state_is_refused(idp, ada):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    client = Client()
    callback = idp.sign_in(start(client))
    code = query(callback)["code"]

    answer = client.get(f"/auth/sso/oidc/login/callback/?code={code}")

    refused(client, answer, "Sign-in with Example IdP failed")


def test_a_callback_taken_to_another_browser_is_refused(idp, ada):
    """Login CSRF: someone's code and state, replayed in a victim's browser, sign nobody in
    there: the state lives in the session that started the sign-in."""
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    callback = idp.sign_in(start(Client()))
    victim = Client()

    refused(victim, victim.get(local(callback)), "Sign-in with Example IdP failed")


def test_a_state_is_used_once(idp, ada):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    client = Client()
    callback = local(idp.sign_in(start(client)))
    assert client.get(callback).status_code == 302
    client.post("/logout")

    refused(client, client.get(callback), "Sign-in with Example IdP failed")


def test_parameters_in_the_query_string_do_not_replace_ours(idp):
    client = Client()

    authorize = start(
        client,
        url="/auth/sso/oidc/login/?auth_params=nonce%3Dchosen%26code_challenge_method%3Dplain"
        "&scope=offline_access",
    )

    params = query(authorize)
    assert params["nonce"] != "chosen" and params["code_challenge_method"] == "S256"
    assert set(params["scope"].split()) == {"openid", "email", "profile"}


def test_an_unverified_email_is_never_matched(idp):
    grace = UserFactory(email="grace@idp.example.com", password=PASSWORD)
    client = Client()

    answer = sign_in_with_sso(client, idp, email="grace@idp.example.com")

    refused(client, answer, "Example IdP has not verified your e-mail address")
    assert not SocialAccount.objects.exists()
    failed = Event.objects.get(type="user.login_failed")
    assert failed.data["object"] | {} == {
        "id": grace.id,
        "email": grace.email,
        "method": "sso",
        "provider": "oidc",
        "reason": "e-mail not verified",
    }


def test_an_identity_linked_to_nobody_makes_no_account(idp):
    client = Client()

    answer = sign_in_with_sso(client, idp)

    refused(client, answer, "No account here is linked to this Example IdP identity")
    from accounts.models import User

    assert not User.objects.exists() and not SocialAccount.objects.exists()


def test_a_linked_identity_signs_in_whatever_its_email(idp):
    """Grace's address is not verified at the provider, but she linked the identity herself
    from Profile: the link, not the address, is what signs her in."""
    person = UserFactory(email="g.hopper@example.com")
    SocialAccount.objects.create(user=person, provider="oidc", uid="op-grace")
    client = Client()

    answer = sign_in_with_sso(client, idp, email="grace@idp.example.com")

    assert answer.status_code == 302 and signed_in_user_id(client) == str(person.pk)


def test_a_person_linked_to_another_identity_is_not_linked_again_by_email(idp, ada):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-someone-else")
    client = Client()

    answer = sign_in_with_sso(client, idp)

    refused(client, answer, "Your account is linked to another identity at Example IdP")
    assert SocialAccount.objects.get(user=ada).uid == "op-someone-else"


def test_a_deactivated_person_is_refused(idp, ada):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    ada.is_active = False
    ada.save(update_fields=["is_active"])
    client = Client()

    refused(client, sign_in_with_sso(client, idp), "This account is deactivated.")


def test_with_a_second_factor_sso_still_asks_for_the_code(idp, ada):
    import time

    from allauth.mfa.totp.internal.auth import TOTP, format_hotp_value, hotp_value

    secret = "JBSWY3DPEHPK3PXP"
    TOTP.activate(ada, secret)
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    client = Client()

    answer = sign_in_with_sso(client, idp)

    assert answer.status_code == 302
    assert answer["Location"].startswith("/auth/2fa/authenticate/")
    assert signed_in_user_id(client) is None
    code = format_hotp_value(hotp_value(secret, int(time.time()) // 30))
    done = client.post("/auth/2fa/authenticate/", {"code": code})
    assert done.status_code == 302 and signed_in_user_id(client) == str(ada.pk)
    signed = Event.objects.get(type="user.signed_in")
    assert signed.data["object"]["method"] == "sso"


def test_cancelling_at_the_provider_comes_back_to_the_sign_in_page(idp):
    import httpx

    client = Client()
    authorize = start(client)
    with httpx.Client(base_url=idp.issuer, timeout=5) as browser:
        form = browser.get(browser.get(authorize).headers["location"])
        response = browser.post(f"{form.url.path}/abort")
        while not response.headers["location"].startswith("http://testserver/"):
            response = browser.get(response.headers["location"])

    answer = client.get(local(response.headers["location"]))

    refused(client, answer, "Sign-in with Example IdP was cancelled.")


def test_the_sign_in_pages_offer_the_configured_provider(idp):
    page = Client().get("/login").content.decode()
    assert "Sign in with Example IdP" in page
    assert 'action="/auth/sso/oidc/login/"' in page
    admin = Client().get("/admin/login/").content.decode()
    assert "Sign in with Example IdP" in admin


def test_nothing_configured_no_buttons_and_no_routes(monkeypatch, settings):
    from tests.sso.relying_party import configure

    configure(monkeypatch, settings)
    client = Client()

    assert "data-sso-provider" not in client.get("/login").content.decode()
    assert "data-sso-provider" not in client.get("/admin/login/").content.decode()
    for provider in ("oidc", "discord", "github", "google"):
        assert client.post(f"/auth/sso/{provider}/login/").status_code == 404
        assert client.get(f"/auth/sso/{provider}/login/callback/?code=c&state=s").status_code == 404


def test_forged_callbacks_count_in_the_sign_in_limit_and_stop_being_recorded(idp, settings):
    settings.LOGIN_ATTEMPTS_PER_MINUTE = 3
    client = Client()

    for attempt in range(6):
        answer = client.get(f"/auth/sso/oidc/login/callback/?code=c{attempt}&state=forged")
        assert answer.status_code == 302 and answer["Location"] == "/login"

    assert Event.objects.filter(type="user.login_failed").count() == 3
    # The same address's password guesses share that budget.
    refused_password = client.post("/login", {"username": "a@example.com", "password": "x"})
    assert refused_password.status_code == 429


def test_a_link_alone_starts_no_sign_in(idp):
    """A GET (a link, an image on another site) only shows a page asking to continue: a sign-in
    starts with a POST carrying the CSRF token."""
    client = Client(enforce_csrf_checks=True)

    page = client.get("/auth/sso/oidc/login/")
    forged = client.post("/auth/sso/oidc/login/", {"process": "login"})

    assert page.status_code == 200 and 'method="post"' in page.content.decode()
    assert forged.status_code == 403
    assert idp.authorization_requests() == []


def test_a_provider_that_cannot_be_reached_is_a_clear_refusal(monkeypatch, settings):
    from tests.agent.harness import free_port
    from tests.sso.relying_party import configure

    configure(
        monkeypatch,
        settings,
        SSO_OIDC_SERVER_URL=f"http://127.0.0.1:{free_port()}",
        SSO_OIDC_CLIENT_ID="hosting",
        SSO_OIDC_CLIENT_SECRET="secret",
        SSO_OIDC_NAME="Example IdP",
    )
    client = Client()

    answer = client.post("/auth/sso/oidc/login/", {"process": "login"})

    refused(client, answer, "Sign-in with Example IdP failed (the provider could not be reached)")
    failed = Event.objects.get(type="user.login_failed")
    assert failed.data["object"]["reason"] == "the provider could not be reached"


def test_a_code_the_provider_refuses_is_a_clear_refusal(idp, ada):
    SocialAccount.objects.create(user=ada, provider="oidc", uid="op-ada")
    client = Client()
    callback = idp.sign_in(start(client))
    forged_code = callback.replace(f"code={query(callback)['code']}", "code=not-a-code")

    answer = client.get(local(forged_code))

    refused(client, answer, "failed (the provider refused the sign-in code)")

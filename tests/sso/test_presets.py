"""The Discord, GitHub and Google presets: their servers are outside this machine, so their
configuration, the authorization redirect we send (PKCE S256, state) and the mapping of what
they answer are tested with their recorded answers, served to django-allauth's HTTP client in
place of the real services (nothing of ours is replaced). Public providers never link by
e-mail: anyone can hold an identity there whose address matches a person here."""

import json
import time
from urllib.parse import parse_qs

import jwt
import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from django.test import Client

from accounts.sso_adapter import SocialAccountAdapter
from events.models import Event
from tests.factories import MembershipFactory, UserFactory
from tests.sso.relying_party import PASSWORD, configure, password_client, query, signed_in_user_id

pytestmark = pytest.mark.django_db

GITHUB_USER = {  # GET https://api.github.com/user, as documented (trimmed)
    "login": "octocat",
    "id": 583231,
    "node_id": "MDQ6VXNlcjU4MzIzMQ==",
    "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4",
    "html_url": "https://github.com/octocat",
    "type": "User",
    "name": "The Octocat",
    "company": "@github",
    "email": None,
}
GITHUB_EMAILS = [
    {"email": "octocat@github.com", "verified": True, "primary": True, "visibility": "public"}
]
DISCORD_ME = {  # GET https://discord.com/api/users/@me with the email scope
    "id": "80351110224678912",
    "username": "nelly",
    "discriminator": "0",
    "global_name": "Nelly",
    "avatar": "8342729096ea3675442027381ff50dfe",
    "verified": True,
    "email": "nelly@discord.com",
    "flags": 64,
    "mfa_enabled": True,
}


class RecordedServices(requests.adapters.BaseAdapter):
    """The outside services' recorded answers, by method and URL; any other request fails
    the test (nothing reaches the network)."""

    def __init__(self, answers: dict[tuple[str, str], tuple[int, object]]) -> None:
        super().__init__()
        self.answers = answers
        self.requests: list[requests.PreparedRequest] = []

    def send(self, request, **kwargs):
        self.requests.append(request)
        key = (request.method, request.url.split("?")[0])
        assert key in self.answers, f"unexpected request to an outside service: {key}"
        status, body = self.answers[key]
        response = requests.Response()
        response.status_code = status
        response._content = json.dumps(body).encode()
        response.headers["content-type"] = "application/json"
        response.url, response.request = request.url, request
        return response

    def close(self) -> None:
        pass

    def form(self, index: int) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.requests[index].body).items()}


@pytest.fixture
def services(monkeypatch):
    def recorded(answers):
        recorder = RecordedServices(answers)

        def session(adapter):
            sess = requests.Session()
            sess.mount("https://", recorder)
            sess.mount("http://", recorder)
            return sess

        monkeypatch.setattr(SocialAccountAdapter, "get_requests_session", session)
        return recorder

    return recorded


@pytest.fixture
def presets(monkeypatch, settings):
    configure(
        monkeypatch,
        settings,
        SSO_DISCORD_CLIENT_ID="discord-client",
        SSO_DISCORD_CLIENT_SECRET="discord-secret",
        SSO_GITHUB_CLIENT_ID="github-client",
        SSO_GITHUB_CLIENT_SECRET="github-secret",
        SSO_GOOGLE_CLIENT_ID="google-client.apps.googleusercontent.com",
        SSO_GOOGLE_CLIENT_SECRET="google-secret",
    )


@pytest.fixture
def person(db):
    return MembershipFactory(user=UserFactory(email="person@example.com", password=PASSWORD)).user


def google_id_token(**claims) -> str:
    now = int(time.time())
    payload = {
        "iss": "https://accounts.google.com",
        "azp": "google-client.apps.googleusercontent.com",
        "aud": "google-client.apps.googleusercontent.com",
        "sub": "110169484474386276334",
        "email": "person.g@gmail.com",
        "email_verified": True,
        "name": "Person G",
        "given_name": "Person",
        "family_name": "G",
        "iat": now,
        "exp": now + 3600,
    } | claims
    return jwt.encode(payload, "recorded-not-googles-key-0123456789abcdef", algorithm="HS256")


@pytest.mark.parametrize(
    ("slug", "authorize", "scope"),
    [
        ("github", "https://github.com/login/oauth/authorize", {"read:user", "user:email"}),
        ("discord", "https://discord.com/api/oauth2/authorize", {"identify", "email"}),
        ("google", "https://accounts.google.com/o/oauth2/v2/auth", {"openid", "email", "profile"}),
    ],
)
def test_each_preset_redirects_with_pkce_and_state(presets, slug, authorize, scope):
    answer = Client().post(f"/auth/sso/{slug}/login/", {"process": "login"})

    assert answer.status_code == 302
    location = answer["Location"]
    assert location.split("?")[0] == authorize
    params = query(location)
    assert params["client_id"].startswith(f"{slug}-client")
    assert params["redirect_uri"] == f"http://testserver/auth/sso/{slug}/login/callback/"
    assert params["response_type"] == "code"
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43
    assert len(params["state"]) >= 12
    assert set(params["scope"].split()) == scope


def test_the_sign_in_page_offers_each_configured_preset(presets):
    page = Client().get("/login").content.decode()

    for name in ("Discord", "GitHub", "Google"):
        assert f"Sign in with {name}" in page
    assert "/auth/sso/oidc/" not in page  # the generic provider is not configured


def github_answers(status: int = 200) -> dict:
    return {
        ("POST", "https://github.com/login/oauth/access_token"): (
            status,
            {"access_token": "gho_recorded", "token_type": "bearer", "scope": "read:user"}
            if status == 200
            else {"error": "bad_verification_code"},
        ),
        ("GET", "https://api.github.com/user"): (200, GITHUB_USER),
        ("GET", "https://api.github.com/user/emails"): (200, GITHUB_EMAILS),
    }


def callback(client: Client, slug: str, *, process: str = "login") -> object:
    state = query(client.post(f"/auth/sso/{slug}/login/", {"process": process})["Location"])
    return client.get(f"/auth/sso/{slug}/login/callback/?code=recorded-code&state={state['state']}")


def test_github_linked_from_profile_then_signs_in(presets, services, person):
    recorder = services(github_answers())
    client = password_client(person)

    linked = callback(client, "github", process="connect")

    assert linked.status_code == 302 and linked["Location"] == "/auth/sso/connections/"
    account = SocialAccount.objects.get(user=person)
    assert (account.provider, account.uid) == ("github", "583231")
    assert account.extra_data["login"] == "octocat"
    assert str(account.get_provider_account()) == "octocat"
    assert recorder.requests[2].url == "https://api.github.com/user/emails"
    token_request = recorder.form(0)
    assert token_request["client_id"] == "github-client"
    assert token_request["client_secret"] == "github-secret"
    assert token_request["code"] == "recorded-code"
    assert len(token_request["code_verifier"]) >= 43  # the PKCE verifier of this sign-in
    assert recorder.requests[1].headers["Authorization"] == "token gho_recorded"
    assert Event.objects.get(type="user.sso_linked").data["object"]["provider"] == "github"

    other = Client()
    answer = callback(other, "github")
    assert answer.status_code == 302 and signed_in_user_id(other) == str(person.pk)
    signed = Event.objects.filter(type="user.signed_in").latest("created_at")
    assert signed.data["object"]["provider"] == "github"


def test_a_public_preset_never_links_by_email(presets, services):
    """GitHub vouches for octocat@github.com, and a person here has that address: still no
    link at sign-in (e-mail-based takeover); only the person, from Profile, links it."""
    UserFactory(email="octocat@github.com", password=PASSWORD)
    recorder = services(github_answers())
    client = Client()

    answer = callback(client, "github")

    assert answer.status_code == 302 and answer["Location"] == "/login"
    assert signed_in_user_id(client) is None
    assert not SocialAccount.objects.exists()
    assert recorder.requests[2].url == "https://api.github.com/user/emails"  # verified there
    page = client.get("/login").content.decode()
    assert "No account here is linked to this GitHub identity" in page


def test_a_refused_code_at_github_is_a_clear_failure(presets, services, person):
    services(github_answers(status=400))
    client = Client()

    answer = callback(client, "github")

    assert answer["Location"] == "/login" and signed_in_user_id(client) is None
    assert "Sign-in with GitHub failed" in client.get("/login").content.decode()
    failed = Event.objects.get(type="user.login_failed")
    assert failed.data["object"]["provider"] == "github"


def test_discord_profile_is_mapped_and_linked(presets, services, person):
    recorder = services(
        {
            ("POST", "https://discord.com/api/oauth2/token"): (
                200,
                {"access_token": "discord-recorded", "token_type": "Bearer", "expires_in": 604800},
            ),
            ("GET", "https://discord.com/api/users/@me"): (200, DISCORD_ME),
        }
    )
    client = password_client(person)

    callback(client, "discord", process="connect")

    account = SocialAccount.objects.get(user=person)
    assert (account.provider, account.uid) == ("discord", "80351110224678912")
    assert str(account.get_provider_account()) == "Nelly"
    assert recorder.form(0)["code_verifier"]
    assert recorder.requests[1].headers["Authorization"] == "Bearer discord-recorded"


def test_google_profile_is_mapped_from_its_id_token(presets, services, person):
    services(
        {
            ("POST", "https://oauth2.googleapis.com/token"): (
                200,
                {
                    "access_token": "ya29.recorded",
                    "expires_in": 3599,
                    "token_type": "Bearer",
                    "scope": "openid email profile",
                    "id_token": google_id_token(),
                },
            ),
        }
    )
    client = password_client(person)

    callback(client, "google", process="connect")

    account = SocialAccount.objects.get(user=person)
    assert (account.provider, account.uid) == ("google", "110169484474386276334")
    assert account.extra_data["email"] == "person.g@gmail.com"


def test_a_google_id_token_for_another_client_is_refused(presets, services, person):
    services(
        {
            ("POST", "https://oauth2.googleapis.com/token"): (
                200,
                {"access_token": "ya29.recorded", "id_token": google_id_token(aud="another")},
            ),
        }
    )
    client = password_client(person)

    callback(client, "google", process="connect")

    assert not SocialAccount.objects.exists()
    assert "Sign-in with Google failed" in client.get("/auth/sso/connections/").content.decode()


def test_an_error_from_discords_profile_is_a_clear_failure(presets, services):
    services(
        {
            ("POST", "https://discord.com/api/oauth2/token"): (
                200,
                {"access_token": "discord-recorded", "token_type": "Bearer"},
            ),
            ("GET", "https://discord.com/api/users/@me"): (
                401,
                {"message": "401: Unauthorized", "code": 0},
            ),
        }
    )
    client = Client()

    answer = callback(client, "discord")

    assert answer.status_code == 302 and answer["Location"] == "/login"
    page = client.get("/login").content.decode()
    assert "Sign-in with Discord failed (the provider answered with an error)" in page

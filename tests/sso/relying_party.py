"""The dashboard as the relying party of the test provider (tests/sso/oidc_provider.py):
single sign-on configured through the host's environment variables, and a person's way through
it with Django's test client, the provider's pages walked with its plain-HTTP ``sign_in``."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from hosting.sso_env import sso_providers

TESTSERVER = "http://testserver"
CALLBACK = f"{TESTSERVER}/auth/sso/oidc/login/callback/"
LOGIN = "/auth/sso/oidc/login/"
PASSWORD = "a-long-enough-password-for-tests"
SSO_VARIABLES = (
    "SSO_OIDC_SERVER_URL",
    "SSO_OIDC_CLIENT_ID",
    "SSO_OIDC_CLIENT_SECRET",
    "SSO_OIDC_NAME",
    "SSO_OIDC_SCOPES",
    "SSO_OIDC_TOKEN_AUTH_METHOD",
    *(f"SSO_{p}_CLIENT_{k}" for p in ("DISCORD", "GITHUB", "GOOGLE") for k in ("ID", "SECRET")),
)


def configure(monkeypatch, settings, **variables: str) -> None:
    """Set the host's single sign-on variables (only these) and the settings read from them."""
    for name in SSO_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    settings.SOCIALACCOUNT_PROVIDERS = sso_providers()


def configure_provider(monkeypatch, settings, provider, *, client_id: str = "hosting-post"):
    client = next(c for c in provider.clients if c.client_id == client_id)
    provider.add_redirect_uri(CALLBACK, client_id=client_id)
    configure(
        monkeypatch,
        settings,
        SSO_OIDC_SERVER_URL=provider.issuer,
        SSO_OIDC_CLIENT_ID=client.client_id,
        SSO_OIDC_CLIENT_SECRET=client.client_secret,
        SSO_OIDC_NAME="Example IdP",
        SSO_OIDC_TOKEN_AUTH_METHOD=client.token_endpoint_auth_method,
    )


@pytest.fixture
def idp(oidc_provider, monkeypatch, settings):
    """The test provider as the host's configured OpenID Connect provider."""
    configure_provider(monkeypatch, settings, oidc_provider)
    return oidc_provider


def query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def local(url: str) -> str:
    assert url.startswith(TESTSERVER), url
    return url.removeprefix(TESTSERVER)


def start(client: Client, *, process: str = "login", url: str = LOGIN, **extra) -> str:
    """Press "Sign in with …" (or "Link …"): our answer is a redirect to the provider's
    authorization endpoint, whose URL is returned."""
    answer = client.post(url, {"process": process, **extra})
    assert answer.status_code == 302, answer.content.decode()[:500]
    return answer["Location"]


def sign_in_with_sso(client: Client, provider, *, email: str | None = None, process="login"):
    """The whole way: our redirect, the provider's sign-in, our callback; the callback's
    answer."""
    callback = provider.sign_in(start(client, process=process), email=email)
    return client.get(local(callback))


def signed_in_user_id(client: Client) -> str | None:
    return client.session.get("_auth_user_id")


def password_client(user, **client_kwargs) -> Client:
    client = Client(**client_kwargs)
    answer = client.post("/login", {"username": user.email, "password": PASSWORD})
    assert answer.status_code == 302, answer.content.decode()[:500]
    return client

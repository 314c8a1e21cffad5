"""Single sign-on's configuration: the host's SSO_* variables become django-allauth's
settings-based apps (no database rows), PKCE on for every provider; a half-configured provider
or a bad value stops start-up naming the variable."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from hosting.sso_env import sso_configured, sso_providers
from tests.sso.relying_party import SSO_VARIABLES
from tests.test_settings import SETUP, production_env, start_django


@pytest.fixture
def env(monkeypatch):
    for name in SSO_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def set_env(**variables: str) -> None:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)

    return set_env


def test_nothing_configured_no_provider_has_an_app(env):
    providers = sso_providers()

    assert {name: p["APPS"] for name, p in providers.items()} == {
        "openid_connect": [],
        "discord": [],
        "github": [],
        "google": [],
    }
    assert not sso_configured(providers)
    # The host's provider is ours whatever the variables: the hardened one.
    assert providers["openid_connect"]["provider_class"] == "accounts.sso.HostOIDCProvider"


def test_the_generic_provider_from_its_variables(env):
    env(
        SSO_OIDC_SERVER_URL="https://id.example.com/realms/staff/",
        SSO_OIDC_CLIENT_ID="hosting",
        SSO_OIDC_CLIENT_SECRET="s3cret",
        SSO_OIDC_NAME="Example ID",
        SSO_OIDC_SCOPES="openid,email profile groups",
        SSO_OIDC_TOKEN_AUTH_METHOD="client_secret_basic",
    )

    providers = sso_providers()

    assert providers["openid_connect"]["APPS"] == [
        {
            "provider_id": "oidc",
            "name": "Example ID",
            "client_id": "hosting",
            "secret": "s3cret",
            "settings": {
                "server_url": "https://id.example.com/realms/staff",
                "oauth_pkce_enabled": True,
                "scope": ["openid", "email", "profile", "groups"],
                "token_auth_method": "client_secret_basic",
            },
        }
    ]
    assert sso_configured(providers)


def test_the_presets_from_their_variables_with_pkce(env):
    env(
        SSO_DISCORD_CLIENT_ID="d-id",
        SSO_DISCORD_CLIENT_SECRET="d-secret",
        SSO_GITHUB_CLIENT_ID="g-id",
        SSO_GITHUB_CLIENT_SECRET="g-secret",
        SSO_GOOGLE_CLIENT_ID="go-id",
        SSO_GOOGLE_CLIENT_SECRET="go-secret",
    )

    providers = sso_providers()

    assert providers["discord"] == {
        "OAUTH_PKCE_ENABLED": True,
        "SCOPE": ["identify", "email"],
        "APPS": [{"client_id": "d-id", "secret": "d-secret"}],
    }
    assert providers["github"]["APPS"] == [{"client_id": "g-id", "secret": "g-secret"}]
    assert providers["github"]["SCOPE"] == ["read:user", "user:email"]
    assert providers["google"]["APPS"] == [{"client_id": "go-id", "secret": "go-secret"}]
    assert all(providers[name]["OAUTH_PKCE_ENABLED"] for name in ("discord", "github", "google"))
    assert providers["openid_connect"]["APPS"] == []


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"SSO_GITHUB_CLIENT_ID": "g"}, "SSO_GITHUB_CLIENT_ID is set but SSO_GITHUB_CLIENT_SECRET"),
        ({"SSO_DISCORD_CLIENT_SECRET": "d"}, "SSO_DISCORD_CLIENT_SECRET is set but SSO_DISCORD_C"),
        ({"SSO_OIDC_SERVER_URL": "https://id.example.com"}, "SSO_OIDC_SERVER_URL is set but"),
        (
            {"SSO_OIDC_CLIENT_ID": "c", "SSO_OIDC_CLIENT_SECRET": "s"},
            "SSO_OIDC_CLIENT_ID is set but SSO_OIDC_SERVER_URL is not",
        ),
        (
            {
                "SSO_OIDC_SERVER_URL": "http://id.example.com",
                "SSO_OIDC_CLIENT_ID": "c",
                "SSO_OIDC_CLIENT_SECRET": "s",
            },
            r"must use https:// \(plain http:// only on loopback\)",
        ),
        (
            {
                "SSO_OIDC_SERVER_URL": "id.example.com",
                "SSO_OIDC_CLIENT_ID": "c",
                "SSO_OIDC_CLIENT_SECRET": "s",
            },
            "SSO_OIDC_SERVER_URL must be the provider's issuer URL",
        ),
        (
            {
                "SSO_OIDC_SERVER_URL": "https://id.example.com",
                "SSO_OIDC_CLIENT_ID": "c",
                "SSO_OIDC_CLIENT_SECRET": "s",
                "SSO_OIDC_SCOPES": "email profile",
            },
            "SSO_OIDC_SCOPES must include openid",
        ),
        (
            {
                "SSO_OIDC_SERVER_URL": "https://id.example.com",
                "SSO_OIDC_CLIENT_ID": "c",
                "SSO_OIDC_CLIENT_SECRET": "s",
                "SSO_OIDC_TOKEN_AUTH_METHOD": "private_key_jwt",
            },
            "SSO_OIDC_TOKEN_AUTH_METHOD must be one of client_secret_post, client_secret_basic",
        ),
    ],
)
def test_a_bad_configuration_names_the_variable(env, variables, message):
    env(**variables)

    with pytest.raises(ImproperlyConfigured, match=message):
        sso_providers()


def test_plain_http_is_allowed_on_loopback_only(env):
    env(
        SSO_OIDC_SERVER_URL="http://127.0.0.1:9000",
        SSO_OIDC_CLIENT_ID="c",
        SSO_OIDC_CLIENT_SECRET="s",
    )

    assert sso_providers()["openid_connect"]["APPS"][0]["settings"]["server_url"] == (
        "http://127.0.0.1:9000"
    )


def test_staff_sso_only_without_a_provider_stops_start_up(tmp_path):
    result = start_django(
        tmp_path,
        **production_env(STAFF_SSO_ONLY="true", **dict.fromkeys(SSO_VARIABLES)),
    )

    assert result.returncode != 0
    assert "STAFF_SSO_ONLY needs a single sign-on provider" in result.stderr


def test_staff_sso_only_with_a_provider_starts(tmp_path):
    result = start_django(
        tmp_path,
        f"{SETUP}; from django.conf import settings; print(settings.STAFF_SSO_ONLY)",
        **production_env(
            STAFF_SSO_ONLY="true", SSO_GITHUB_CLIENT_ID="g", SSO_GITHUB_CLIENT_SECRET="s"
        ),
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"

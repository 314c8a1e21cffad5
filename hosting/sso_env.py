"""Single sign-on providers from the environment, as django-allauth's settings-based apps
(``SOCIALACCOUNT_PROVIDERS``): no database rows, the host's variables alone.

- the host's own OpenID Connect provider: ``SSO_OIDC_SERVER_URL`` (its issuer),
  ``SSO_OIDC_CLIENT_ID``, ``SSO_OIDC_CLIENT_SECRET``, optionally ``SSO_OIDC_NAME`` (the button's
  name), ``SSO_OIDC_SCOPES`` and ``SSO_OIDC_TOKEN_AUTH_METHOD``;
- the presets: ``SSO_DISCORD_CLIENT_ID`` / ``_SECRET``, ``SSO_GITHUB_…``, ``SSO_GOOGLE_…``.

A provider is on when its client id is set; a half-configured one stops start-up naming the
variable missing. The generic provider is always django-allauth's ``openid_connect`` hardened by
``accounts.sso`` (ID token signature, nonce, PKCE), whether configured or not.
"""

from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from hosting.env import env_str

# The generic provider's id in URLs (/auth/sso/oidc/login/) and on its linked identities.
OIDC_PROVIDER_ID = "oidc"
TOKEN_AUTH_METHODS = ("client_secret_post", "client_secret_basic")
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# What each preset asks of its people: who they are and their (verified) e-mail address.
PRESETS = {
    "discord": ("SSO_DISCORD", ["identify", "email"]),
    "github": ("SSO_GITHUB", ["read:user", "user:email"]),
    "google": ("SSO_GOOGLE", ["openid", "email", "profile"]),
}


def _client(prefix: str) -> tuple[str, str] | None:
    client_id = env_str(f"{prefix}_CLIENT_ID") or ""
    secret = env_str(f"{prefix}_CLIENT_SECRET") or ""
    if not client_id and not secret:
        return None
    if not client_id:
        raise ImproperlyConfigured(f"{prefix}_CLIENT_SECRET is set but {prefix}_CLIENT_ID is not.")
    if not secret:
        raise ImproperlyConfigured(f"{prefix}_CLIENT_ID is set but {prefix}_CLIENT_SECRET is not.")
    return client_id, secret


def _server_url(value: str) -> str:
    parts = urlsplit(value)
    if not parts.hostname or parts.scheme not in ("https", "http"):
        raise ImproperlyConfigured(
            f"SSO_OIDC_SERVER_URL must be the provider's issuer URL (https://…), got {value!r}."
        )
    if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        raise ImproperlyConfigured(
            "SSO_OIDC_SERVER_URL must use https:// (plain http:// only on loopback), "
            f"got {value!r}."
        )
    return value.rstrip("/")


def _oidc_app() -> dict[str, Any] | None:
    client = _client("SSO_OIDC")
    server_url = env_str("SSO_OIDC_SERVER_URL") or ""
    if client is None:
        if server_url:
            raise ImproperlyConfigured("SSO_OIDC_SERVER_URL is set but SSO_OIDC_CLIENT_ID is not.")
        return None
    if not server_url:
        raise ImproperlyConfigured("SSO_OIDC_CLIENT_ID is set but SSO_OIDC_SERVER_URL is not.")
    app_settings: dict[str, Any] = {
        "server_url": _server_url(server_url),
        "oauth_pkce_enabled": True,
        "scope": (env_str("SSO_OIDC_SCOPES") or "openid email profile").replace(",", " ").split(),
    }
    if "openid" not in app_settings["scope"]:
        raise ImproperlyConfigured(
            f"SSO_OIDC_SCOPES must include openid, got {env_str('SSO_OIDC_SCOPES')!r}."
        )
    if method := env_str("SSO_OIDC_TOKEN_AUTH_METHOD"):
        if method not in TOKEN_AUTH_METHODS:
            raise ImproperlyConfigured(
                f"SSO_OIDC_TOKEN_AUTH_METHOD must be one of {', '.join(TOKEN_AUTH_METHODS)}, "
                f"got {method!r}."
            )
        app_settings["token_auth_method"] = method
    return {
        "provider_id": OIDC_PROVIDER_ID,
        "name": env_str("SSO_OIDC_NAME") or "Single sign-on",
        "client_id": client[0],
        "secret": client[1],
        "settings": app_settings,
    }


def sso_providers() -> dict[str, dict[str, Any]]:
    """``SOCIALACCOUNT_PROVIDERS``: each provider's apps (none when not configured), PKCE on."""
    oidc = _oidc_app()
    providers: dict[str, dict[str, Any]] = {
        "openid_connect": {
            "provider_class": "accounts.sso.HostOIDCProvider",
            "OAUTH_PKCE_ENABLED": True,
            "APPS": [oidc] if oidc else [],
        }
    }
    for provider, (prefix, scope) in PRESETS.items():
        client = _client(prefix)
        providers[provider] = {
            "OAUTH_PKCE_ENABLED": True,
            "SCOPE": scope,
            "APPS": [{"client_id": client[0], "secret": client[1]}] if client else [],
        }
    return providers


def sso_configured(providers: dict[str, dict[str, Any]]) -> bool:
    return any(settings.get("APPS") for settings in providers.values())

from tests.sso.oidc_provider import oidc_provider, oidc_provider_session  # noqa: F401

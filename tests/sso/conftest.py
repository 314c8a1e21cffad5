from tests.sso.oidc_provider import oidc_provider, oidc_provider_session  # noqa: F401
from tests.sso.relying_party import idp  # noqa: F401

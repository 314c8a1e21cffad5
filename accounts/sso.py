"""The host's own OpenID Connect provider, held to what a relying party must check.

django-allauth's generic ``openid_connect`` provider (65.22) leaves three things to its user: it
skips the ID token's signature when the token came from the token endpoint, it sends and checks
no nonce, and PKCE is off unless asked for. ``HostOIDCProvider`` (registered in place of allauth's
through ``SOCIALACCOUNT_PROVIDERS["openid_connect"]["provider_class"]``) and its adapter do all
three, whatever the settings say:

- every authorization request carries PKCE (S256) and a fresh nonce, stashed with the state in
  the session; parameters a request's query string would add (``auth_params``, ``scope``) are
  not taken;
- the ID token must be there, signed (RS256 or ES256, never ``none``) by a key of the provider's
  JWKS, by its issuer, for our client (``azp`` too when there are several audiences), unexpired,
  with the nonce of this sign-in's state; userinfo must name the same ``sub``.

allauth's own views for the provider build allauth's adapter, not the provider's, so the routes
(accounts/sso_urls.py) are ours: ``oidc_login`` and ``oidc_callback``. Discord's callback is
ours too (``DiscordAdapter``: an error answer from its profile endpoint is a refusal, not a 500).
"""

import secrets

import jwt
import requests
from allauth.account.internal.decorators import login_not_required
from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.helpers import render_authentication_error
from allauth.socialaccount.internal import jwtkit
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.discord.views import DiscordOAuth2Adapter
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.oauth2.utils import generate_code_challenge
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.http import Http404, HttpRequest, HttpResponse

ID_TOKEN_ALGORITHMS = ["RS256", "ES256"]
# Clock skew tolerated between the provider and us, in seconds.
LEEWAY_SECONDS = 30
JWKS_TIMEOUT_SECONDS = 5


class HostOIDCAdapter(OpenIDConnectOAuth2Adapter):
    """allauth's adapter, with the ID token always verified and its nonce checked."""

    # Set by the callback view from the sign-in's stashed state.
    expected_nonce: str | None = None

    def complete_login(self, request: HttpRequest, app, token, **kwargs):
        if not kwargs["response"].get("id_token"):
            raise OAuth2Error("The provider's token response has no ID token.")
        login = super().complete_login(request, app, token, **kwargs)
        data = login.account.extra_data
        userinfo, claims = data.get("userinfo"), data["id_token"]
        if userinfo is not None and userinfo.get("sub") != claims["sub"]:
            raise OAuth2Error("The provider's userinfo names another subject than its ID token.")
        return login

    def _decode_id_token(self, app: SocialApp, id_token: str) -> dict:
        config = self.openid_config
        try:
            header = jwt.get_unverified_header(id_token)
            if header.get("alg") not in ID_TOKEN_ALGORITHMS:
                raise jwt.InvalidAlgorithmError(f"ID token signed with {header.get('alg')!r}")
            jwks = jwt.PyJWKClient(
                config["jwks_uri"], cache_keys=True, timeout=JWKS_TIMEOUT_SECONDS
            )
            key = jwks.get_signing_key_from_jwt(id_token)
            claims = jwt.decode(
                id_token,
                key=key.key,
                algorithms=ID_TOKEN_ALGORITHMS,
                audience=app.client_id,
                issuer=config["issuer"],
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "sub", "aud", "exp", "iat", "nonce"]},
            )
        except jwt.PyJWTError as error:
            raise OAuth2Error(f"Invalid ID token: {error}") from error
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != app.client_id:
            raise OAuth2Error("Invalid ID token: issued to another party (azp).")
        if not self.expected_nonce or not secrets.compare_digest(
            str(claims["nonce"]), self.expected_nonce
        ):
            raise OAuth2Error("Invalid ID token: the nonce is not this sign-in's.")
        jwtkit.verify_jti(claims)
        return claims


class HostOIDCProvider(OpenIDConnectProvider):
    """allauth's ``openid_connect`` provider with PKCE and a nonce on every request."""

    oauth2_adapter_class = HostOIDCAdapter

    def get_pkce_params(self) -> dict:
        return generate_code_challenge()

    def get_auth_params_from_request(self, request: HttpRequest, action) -> dict:
        return self.get_auth_params()

    def get_scope_from_request(self, request: HttpRequest) -> list[str]:
        return self.get_scope()

    def redirect(self, request: HttpRequest, process, next_url=None, data=None, **kwargs):
        nonce = secrets.token_urlsafe(32)
        auth_params = kwargs.pop("auth_params", None)
        auth_params = {**(self.get_auth_params() if auth_params is None else auth_params)}
        auth_params["nonce"] = nonce
        # The nonce goes into the stashed state (allauth keeps any keyword given here).
        try:
            return super().redirect(
                request, process, next_url, data, auth_params=auth_params, nonce=nonce, **kwargs
            )
        except requests.RequestException as error:  # its discovery document, unreachable
            return render_authentication_error(request, self, exception=error)


class HostOIDCCallbackView(OAuth2CallbackView):
    """allauth's callback, handing the state's nonce to the adapter that checks the ID token."""

    def _get_state(self, request: HttpRequest, provider):
        state, response = super()._get_state(request, provider)
        if state is not None:
            self.adapter.expected_nonce = state.get("nonce")
        return state, response


@login_not_required
def oidc_login(request: HttpRequest, provider_id: str) -> HttpResponse:
    try:
        return OAuth2LoginView.adapter_view(HostOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404("No such sign-in provider.") from None


@login_not_required
def oidc_callback(request: HttpRequest, provider_id: str) -> HttpResponse:
    try:
        return HostOIDCCallbackView.adapter_view(HostOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404("No such sign-in provider.") from None


class DiscordAdapter(DiscordOAuth2Adapter):
    """allauth's Discord adapter reads the profile whatever Discord answered (an error's body
    has no id: a 500 here); this one refuses an error answer as a failed sign-in."""

    def complete_login(self, request: HttpRequest, app, token, **kwargs):
        headers = {"Authorization": f"Bearer {token.token}"}
        with get_adapter().get_requests_session() as session:
            response = session.get(self.profile_url, headers=headers)
            response.raise_for_status()
            profile = response.json()
        return self.get_provider().sociallogin_from_response(request, profile)


discord_callback = OAuth2CallbackView.adapter_view(DiscordAdapter)

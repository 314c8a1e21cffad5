"""The OIDC provider the single sign-on tests sign in against (tests/sso/oidc_provider.py),
driven as a relying party would with a plain HTTP client: discovery, the authorization code
flow with PKCE, state and nonce, the token exchange, and every way it can tamper with the ID
token, each refused by a verification with PyJWT against its JWKS."""

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
import pytest

REDIRECT_URI = "http://testserver/accounts/oidc/test/login/callback/"


class NonceMismatchError(jwt.InvalidTokenError):
    pass


@pytest.fixture
def provider(oidc_provider):
    oidc_provider.add_redirect_uri(REDIRECT_URI)
    oidc_provider.add_redirect_uri(REDIRECT_URI, client_id="hosting-basic")
    return oidc_provider


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


def authorization_url(provider, *, client_id=None, **overrides) -> str:
    params = {
        "client_id": client_id or provider.client_id,
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "scope": "openid email profile",
        **overrides,
    }
    return f"{provider.issuer}/auth?{urlencode({k: v for k, v in params.items() if v is not None})}"


def callback_params(url: str) -> dict[str, str]:
    assert url.startswith(REDIRECT_URI), url
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def sign_in(provider, *, email=None, client_id=None) -> dict[str, str]:
    """The authorization request with PKCE, state and nonce, the sign-in, then the token
    exchange; returns the token response, the nonce and the verifier."""
    verifier, challenge = pkce_pair()
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    url = authorization_url(
        provider,
        client_id=client_id,
        state=state,
        nonce=nonce,
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    callback = callback_params(provider.sign_in(url, email=email))
    assert callback["state"] == state
    assert callback["iss"] == provider.issuer
    tokens = exchange(provider, callback["code"], verifier, client_id=client_id)
    assert tokens.status_code == 200, tokens.text
    return {**tokens.json(), "nonce": nonce}


def exchange(provider, code: str, verifier: str, *, client_id=None) -> httpx.Response:
    client = next(c for c in provider.clients if c.client_id == (client_id or provider.client_id))
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier,
    }
    auth = None
    if client.token_endpoint_auth_method == "client_secret_basic":
        auth = (client.client_id, client.client_secret)
    else:
        form |= {"client_id": client.client_id, "client_secret": client.client_secret}
    return httpx.post(f"{provider.issuer}/token", data=form, auth=auth, timeout=5)


def verify_id_token(provider, id_token: str, *, nonce: str, audience=None) -> dict:
    """What a relying party must check: signature by a key of the JWKS, RS256 only, issuer,
    audience, expiry, then the nonce it sent."""
    keys = jwt.PyJWKSet.from_dict(httpx.get(f"{provider.issuer}/jwks", timeout=5).json())
    kid = jwt.get_unverified_header(id_token).get("kid")
    key = next((k for k in keys.keys if k.key_id == kid), keys.keys[0])
    claims = jwt.decode(
        id_token,
        key=key.key,
        algorithms=["RS256"],
        audience=audience or provider.client_id,
        issuer=provider.issuer,
        options={"require": ["iss", "sub", "aud", "exp", "iat", "nonce"]},
    )
    if claims["nonce"] != nonce:
        raise NonceMismatchError("the nonce is not the one sent")
    return claims


def test_discovery_names_the_loopback_issuer_and_s256_only(provider):
    metadata = provider.metadata()

    assert metadata["issuer"] == provider.issuer
    assert metadata["authorization_endpoint"] == f"{provider.issuer}/auth"
    assert metadata["token_endpoint"] == f"{provider.issuer}/token"
    assert metadata["jwks_uri"] == f"{provider.issuer}/jwks"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["response_types_supported"] == ["code"]
    assert {"client_secret_post", "client_secret_basic"} <= set(
        metadata["token_endpoint_auth_methods_supported"]
    )


def test_code_flow_with_pkce_state_and_nonce_gives_a_verifiable_id_token(provider):
    tokens = sign_in(provider)

    claims = verify_id_token(provider, tokens["id_token"], nonce=tokens["nonce"])
    assert claims["sub"] == "op-ada"
    assert claims["email"] == "ada@idp.example.com"
    assert claims["email_verified"] is True
    assert claims["name"] == "Ada Lovelace"
    userinfo = httpx.get(
        f"{provider.issuer}/me",
        headers={"Authorization": f"Bearer {tokens['access_token']}"},
        timeout=5,
    ).json()
    assert userinfo == {
        "sub": "op-ada",
        "email": "ada@idp.example.com",
        "email_verified": True,
        "name": "Ada Lovelace",
    }
    [request] = provider.authorization_requests()
    assert request["code_challenge_method"] == "S256"
    assert request["nonce"] == tokens["nonce"]


def test_the_second_account_and_the_basic_auth_client(provider):
    tokens = sign_in(provider, email="grace@idp.example.com", client_id="hosting-basic")

    claims = verify_id_token(
        provider, tokens["id_token"], nonce=tokens["nonce"], audience="hosting-basic"
    )
    assert (claims["sub"], claims["email_verified"]) == ("op-grace", False)


def test_it_refuses_an_authorization_request_without_pkce(provider):
    url = authorization_url(provider, state="s", nonce="n")

    callback = callback_params(provider.sign_in(url))

    assert callback["error"] == "invalid_request"
    assert "PKCE" in callback["error_description"]
    assert callback["state"] == "s"


def test_it_refuses_the_code_with_another_verifier(provider):
    _verifier, challenge = pkce_pair()
    url = authorization_url(
        provider, state="s", nonce="n", code_challenge=challenge, code_challenge_method="S256"
    )
    code = callback_params(provider.sign_in(url))["code"]

    response = exchange(provider, code, pkce_pair()[0])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_it_refuses_a_redirect_uri_not_registered(provider):
    _verifier, challenge = pkce_pair()
    url = authorization_url(
        provider,
        redirect_uri="http://testserver/elsewhere/",
        code_challenge=challenge,
        code_challenge_method="S256",
    )

    with pytest.raises(AssertionError, match=r"(?s)400.*redirect_uri did not match"):
        provider.sign_in(url)


def test_the_login_form_refuses_an_unknown_email(provider):
    _verifier, challenge = pkce_pair()
    url = authorization_url(provider, code_challenge=challenge, code_challenge_method="S256")

    with pytest.raises(AssertionError, match=r"(?s)400.*No test account has the e-mail"):
        provider.sign_in(url, email="nobody@idp.example.com")


def test_cancelling_at_the_provider_returns_access_denied(provider):
    _verifier, challenge = pkce_pair()
    url = authorization_url(
        provider, state="s", code_challenge=challenge, code_challenge_method="S256"
    )

    with httpx.Client(base_url=provider.issuer, timeout=5) as browser:
        form = browser.get(browser.get(url).headers["location"])
        response = browser.post(f"{form.url.path}/abort")
        while not response.headers["location"].startswith(REDIRECT_URI):
            response = browser.get(response.headers["location"])

    callback = callback_params(response.headers["location"])
    assert (callback["error"], callback["state"]) == ("access_denied", "s")


def test_auto_login_goes_straight_back_to_the_relying_party(provider):
    provider.set_auto_login("grace@idp.example.com")
    _verifier, challenge = pkce_pair()
    url = authorization_url(
        provider, state="s", code_challenge=challenge, code_challenge_method="S256"
    )

    with httpx.Client(base_url=provider.issuer, timeout=5) as browser:
        response = browser.get(url)
        while not response.headers["location"].startswith(REDIRECT_URI):
            response = browser.get(response.headers["location"])

    assert "code" in callback_params(response.headers["location"])
    assert len(provider.authorization_requests()) == 1


@pytest.mark.parametrize(
    ("mode", "refusal"),
    [
        ("wrong-key", jwt.InvalidSignatureError),
        ("wrong-nonce", NonceMismatchError),
        ("wrong-aud", jwt.InvalidAudienceError),
        ("wrong-iss", jwt.InvalidIssuerError),
        ("expired", jwt.ExpiredSignatureError),
        ("alg-none", jwt.InvalidAlgorithmError),
    ],
)
def test_each_tampered_id_token_is_refused(provider, mode, refusal):
    provider.set_id_token_mode(mode)

    tokens = sign_in(provider)

    with pytest.raises(refusal):
        verify_id_token(provider, tokens["id_token"], nonce=tokens["nonce"])


def test_the_tamper_switch_lasts_until_reset(provider):
    provider.set_id_token_mode("wrong-key")
    provider.reset()

    tokens = sign_in(provider)

    assert verify_id_token(provider, tokens["id_token"], nonce=tokens["nonce"])["sub"] == "op-ada"


def test_it_refuses_an_unknown_tamper_mode(provider):
    with pytest.raises(ValueError, match="mode must be one of"):
        provider.set_id_token_mode("wrong-everything")

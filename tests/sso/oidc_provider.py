"""A real OpenID Connect provider on loopback for the single sign-on tests: npm's oidc-provider
(tests/sso/provider/, pinned by its package-lock.json) in a process of its own, never a mock.

``oidc_provider`` is the fixture to use: the provider of the session (started on first use,
stopped at the end), put back to normal before and after each test. A test module outside
tests/sso/ imports both fixtures (``from tests.sso.oidc_provider import oidc_provider,
oidc_provider_session``) or moves into tests/sso/, whose conftest.py does.

Without node or without tests/sso/provider/node_modules (``npm ci`` there; scripts/test runs it)
the tests that use it skip with the reason, except under CI=true, where they fail.
"""

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from tests.agent.harness import free_port

PROVIDER_DIR = Path(__file__).resolve().parent / "provider"
START_SECONDS = 15
LOGIN_FORM = re.compile(r'<form method="post" action="(?P<action>/interaction/[^"/]+/login)"')
ID_TOKEN_MODES = (
    "normal",
    "wrong-key",  # signed by a key its JWKS does not publish, under the published key's kid
    "wrong-nonce",  # another nonce than the relying party sent
    "wrong-aud",  # issued to another client (aud and azp "another-client")
    "wrong-iss",  # another issuer
    "expired",  # exp an hour ago
    "alg-none",  # unsigned: {"alg": "none"} and an empty signature
)


@dataclass(frozen=True)
class Account:
    """A person at the provider: they sign in with ``email`` alone (no password)."""

    sub: str
    email: str
    name: str
    email_verified: bool = True


@dataclass(frozen=True)
class Client:
    """A relying party registered at the provider."""

    client_id: str
    client_secret: str
    token_endpoint_auth_method: str  # "client_secret_post" or "client_secret_basic"


ACCOUNTS = (
    Account(sub="op-ada", email="ada@idp.example.com", name="Ada Lovelace"),
    Account(
        sub="op-grace", email="grace@idp.example.com", name="Grace Hopper", email_verified=False
    ),
)


def missing_reason() -> str | None:
    """Why the provider cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (apt-get install nodejs npm): the OIDC provider cannot run."
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider" / "package.json").is_file():
        return f"the OIDC provider's packages are not installed (cd {PROVIDER_DIR} && npm ci)."
    return None


class OIDCProvider:
    """A running provider: its issuer, clients and accounts, and the switches tests turn."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        issuer: str,
        clients: tuple[Client, ...],
        accounts: tuple[Account, ...],
        log_path: Path,
    ) -> None:
        self.process = process
        self.issuer = issuer
        self.clients = clients
        self.accounts = accounts
        self.log_path = log_path

    @property
    def client(self) -> Client:
        """The first client: client_secret_post, the method django-allauth picks when the
        provider offers it."""
        return self.clients[0]

    @property
    def client_id(self) -> str:
        return self.client.client_id

    @property
    def client_secret(self) -> str:
        return self.client.client_secret

    @property
    def account(self) -> Account:
        """The first account (e-mail verified)."""
        return self.accounts[0]

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def metadata(self) -> dict[str, Any]:
        """The discovery document."""
        response = httpx.get(self.discovery_url, timeout=5)
        response.raise_for_status()
        return response.json()

    def add_redirect_uri(self, redirect_uri: str, *, client_id: str | None = None) -> list[str]:
        """Allow ``redirect_uri`` for the client (the first one by default) from now on, e.g.
        the live server's callback; returns the client's redirect URIs."""
        client = client_id or self.client_id
        return self._test_endpoint(
            f"/clients/{client}/redirect_uris", {"redirect_uri": redirect_uri}
        )["redirect_uris"]

    def set_id_token_mode(self, mode: str) -> None:
        """How the token endpoint's next ID tokens are tampered with (ID_TOKEN_MODES), until
        the next test or ``reset()``."""
        if mode not in ID_TOKEN_MODES:
            raise ValueError(f"mode must be one of {ID_TOKEN_MODES}, got {mode!r}")
        self._test_endpoint("/mode", {"id_token": mode})

    def set_auto_login(self, email: str | None) -> None:
        """Sign this account in without showing the login form (None: show it again)."""
        self._test_endpoint("/mode", {"auto_login": email})

    def authorization_requests(self) -> list[dict[str, str]]:
        """The parameters of every authorization request since the last reset (client_id,
        redirect_uri, response_type, scope, state, nonce, code_challenge, code_challenge_method,
        prompt, login_hint: those present), oldest first."""
        response = httpx.get(f"{self.issuer}/__test__/state", timeout=5)
        response.raise_for_status()
        return response.json()["authorization_requests"]

    def reset(self) -> None:
        """ID tokens as issued, the login form shown, the recorded requests forgotten (the
        redirect URIs added stay)."""
        self._test_endpoint("/reset", {})

    def sign_in(self, authorization_url: str, *, email: str | None = None) -> str:
        """Go through the provider as a person with a plain HTTP client: follow
        ``authorization_url`` to the login form, sign in as ``email`` (the first account by
        default) and return the URL the provider sends the browser back to (the relying
        party's redirect URI with ``code``, ``state`` and ``iss``, or ``error``). Raises
        AssertionError when the provider answers with anything else (e.g. its error page)."""
        with httpx.Client(timeout=5) as browser:
            url = authorization_url
            for _ in range(10):
                if not url.startswith(f"{self.issuer}/"):
                    return url
                response = browser.get(url)
                form = LOGIN_FORM.search(response.text) if response.status_code == 200 else None
                if form:
                    action = urljoin(url, form["action"])
                    response = browser.post(action, data={"email": email or self.account.email})
                if not response.is_redirect:
                    raise AssertionError(
                        f"the provider answered {response.status_code}: {response.text[:500]}"
                    )
                url = urljoin(url, response.headers["location"])
            raise AssertionError(f"more than 10 redirects, the last to {url}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _test_endpoint(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{self.issuer}/__test__{path}", json=body, timeout=5)
        if response.status_code != 200:
            raise AssertionError(f"POST /__test__{path}: {response.status_code} {response.text}")
        return response.json()


def start_oidc_provider(
    *,
    log_path: Path,
    clients: tuple[Client, ...] | None = None,
    accounts: tuple[Account, ...] = ACCOUNTS,
    redirect_uris: tuple[str, ...] = (),
) -> OIDCProvider:
    """Start the provider on a free loopback port and wait until its discovery document
    answers. By default two clients with fresh secrets: ``hosting-post``
    (client_secret_post) and ``hosting-basic`` (client_secret_basic)."""
    if clients is None:
        clients = (
            Client("hosting-post", secrets.token_urlsafe(24), "client_secret_post"),
            Client("hosting-basic", secrets.token_urlsafe(24), "client_secret_basic"),
        )
    issuer = f"http://127.0.0.1:{free_port()}"
    config = {
        "issuer": issuer,
        "clients": [
            {
                "client_id": client.client_id,
                "client_secret": client.client_secret,
                "token_endpoint_auth_method": client.token_endpoint_auth_method,
                "redirect_uris": list(redirect_uris),
            }
            for client in clients
        ],
        "accounts": [
            {
                "sub": account.sub,
                "email": account.email,
                "name": account.name,
                "email_verified": account.email_verified,
            }
            for account in accounts
        ],
    }
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            ["node", "server.js"],  # noqa: S607 - node from PATH, as npm ci used
            cwd=PROVIDER_DIR,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "OIDC_PROVIDER_CONFIG": json.dumps(config),
            },
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    provider = OIDCProvider(
        process, issuer=issuer, clients=clients, accounts=accounts, log_path=log_path
    )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"the OIDC provider exited with {process.returncode}:\n{provider.log()}"
            )
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(provider.discovery_url, timeout=1).status_code == 200:
                return provider
        time.sleep(0.05)
    provider.stop()
    raise AssertionError(
        f"the OIDC provider did not answer within {START_SECONDS} s:\n{provider.log()}"
    )


@pytest.fixture(scope="session")
def oidc_provider_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OIDCProvider]:
    """The provider process of the whole session; tests use ``oidc_provider``."""
    reason = missing_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI tests single sign-on against a real provider: {reason}")
        pytest.skip(reason)
    provider = start_oidc_provider(log_path=tmp_path_factory.mktemp("oidc") / "provider.log")
    yield provider
    provider.stop()


@pytest.fixture
def oidc_provider(oidc_provider_session: OIDCProvider) -> Iterator[OIDCProvider]:
    """The session's provider, put back to normal around the test (ID tokens as issued, the
    login form shown, no recorded requests)."""
    oidc_provider_session.reset()
    yield oidc_provider_session
    oidc_provider_session.reset()

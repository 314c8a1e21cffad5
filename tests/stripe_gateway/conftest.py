"""Card payments against a real Stripe fake: localstripe, started once per test session on a
loopback port, driven by the real ``stripe`` library (nothing of the library is faked)."""

import socket
import subprocess
import sys
import time

import pytest
import stripe
from django.conf import settings

from billing.services import gateways
from stripe_gateway.services.gateway import StripeGateway
from tests.billing.api.conftest import (  # noqa: F401 (fixtures)
    mate,
    mate_api,
    reader_api,
    unscoped_api,
)

SECRET_KEY = "sk_test_localstripe"
WEBHOOK_SECRET = "whsec_test_secret_for_the_suite"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def localstripe():
    """The base address of a localstripe process (its state lives as long as the session)."""
    port = free_port()
    process = subprocess.Popen(  # noqa: S603 (our own venv's localstripe)
        [
            sys.executable,
            "-m",
            "tests.stripe_gateway.localstripe_server",
            "--port",
            str(port),
            "--from-scratch",
        ],
        cwd=settings.BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert process.poll() is None, "localstripe did not start"
            assert time.monotonic() < deadline, "localstripe did not listen"
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def stripe_on(settings, localstripe):
    """The service configured for Stripe at localstripe, the card gateway registered."""
    settings.STRIPE_SECRET_KEY = SECRET_KEY
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_localstripe"
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.STRIPE_API_BASE = localstripe
    settings.STRIPE_TIMEOUT_SECONDS = 5
    settings.STRIPE_ENABLED = True
    settings.BILLING_GATEWAYS = ["credit", "stripe", "bank_transfer"]
    gateways.gateway_register(StripeGateway())
    yield localstripe
    gateways.GATEWAYS.pop("stripe", None)


@pytest.fixture
def stripe_api(stripe_on) -> stripe.StripeClient:
    """A client of our own for what the browser (Stripe.js) does and for looking at Stripe."""
    return stripe.StripeClient(SECRET_KEY, base_addresses={"api": stripe_on})

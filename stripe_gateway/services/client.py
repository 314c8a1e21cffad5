"""The one Stripe client, from the settings: ``STRIPE_SECRET_KEY``, and ``STRIPE_API_BASE`` to
talk to another address (a local Stripe fake such as localstripe)."""

from functools import lru_cache

import stripe
from django.conf import settings
from django.utils.translation import gettext_noop

from hosting.errors import ApplicationError


class GatewayUnavailable(ApplicationError):
    status, code = 503, "payment_gateway_unavailable"
    message = gettext_noop(
        "The card payment service cannot be reached; nothing was charged. Try again later."
    )


def stripe_client() -> stripe.StripeClient:
    """The client for the configured Stripe account (network errors retried twice by the
    library, each with the same idempotency key)."""
    return _client(
        settings.STRIPE_SECRET_KEY, settings.STRIPE_API_BASE, settings.STRIPE_TIMEOUT_SECONDS
    )


@lru_cache(maxsize=4)
def _client(secret_key: str, api_base: str, timeout: int) -> stripe.StripeClient:
    return stripe.StripeClient(
        secret_key,
        base_addresses={"api": api_base} if api_base else None,
        max_network_retries=2,
        http_client=stripe.RequestsClient(timeout=timeout),
    )

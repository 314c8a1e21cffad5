"""The public representation of webhook endpoints.

What the API shows and what events carry (``data.object``), defined once (hosting/representations).
"""

from typing import Any

from hosting.representations import json_copy, timestamp
from webhooks.models import WebhookEndpoint


def webhook_endpoint_representation(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint without its secret, which only the creation and rotation answers show."""
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "description": endpoint.description,
        "enabled_events": json_copy(endpoint.enabled_events),
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "failure_streak": endpoint.failure_streak,
        "failing_since": timestamp(endpoint.failing_since),
        "last_delivery_at": timestamp(endpoint.last_delivery_at),
        "last_delivery_status": endpoint.last_delivery_status,
        "secret_rotating_until": timestamp(endpoint.previous_secret_expires_at),
        "created_by": endpoint.created_by_id,
        "created_at": timestamp(endpoint.created_at),
        "updated_at": timestamp(endpoint.updated_at),
    }

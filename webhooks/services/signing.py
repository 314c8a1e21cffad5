"""What a delivery sends: the event's body and its Standard Webhooks signatures."""

import json
from datetime import datetime

from standardwebhooks.webhooks import Webhook

from events.models import Event
from hosting.secrets_box import decrypt_secret
from webhooks.models import WebhookEndpoint


def payload_of(event: Event) -> str:
    """The body: ``{"id", "type", "created_at", "data": {"object", "previous_attributes"}}``."""
    body = {
        "id": event.id,
        "type": event.type,
        "created_at": event.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": event.data,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def signature_header(endpoint: WebhookEndpoint, msg_id: str, at: datetime, body: str) -> str:
    """``v1,<sig>`` for the secret, plus the previous secret's while its overlap lasts."""
    secrets_in_use = [decrypt_secret(endpoint.secret_encrypted)]
    if (
        endpoint.previous_secret_encrypted
        and endpoint.previous_secret_expires_at
        and (endpoint.previous_secret_expires_at > at)
    ):
        secrets_in_use.append(decrypt_secret(endpoint.previous_secret_encrypted))
    return " ".join(Webhook(secret).sign(msg_id, at, body) for secret in secrets_in_use)

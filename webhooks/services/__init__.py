"""Webhook endpoints and the delivery of events to them (Standard Webhooks, CONTRACT §9).

The modules, lowest first: ``targets`` (where requests may go), ``signing`` (the body and its
signatures), ``delivery`` (fan-out of events and each attempt), ``endpoints`` (what customers
change). Other apps and the API use the names below.
"""

from webhooks.services.delivery import (
    EXCERPT_BYTES,
    MAX_RESPONSE_BYTES,
    RETRY_SCHEDULE,
    deliver_webhook,
    deliveries_for_event,
    deliveries_for_events,
    deliveries_recover_stale,
    delivery_retry,
    send,
    webhook_deliver,
)
from webhooks.services.endpoints import (
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_send_test,
    endpoint_update,
)
from webhooks.services.signing import payload_of, signature_header
from webhooks.services.targets import UnsafeTarget, resolve_target

__all__ = [
    "EXCERPT_BYTES",
    "MAX_RESPONSE_BYTES",
    "RETRY_SCHEDULE",
    "UnsafeTarget",
    "deliver_webhook",
    "deliveries_for_event",
    "deliveries_for_events",
    "deliveries_recover_stale",
    "delivery_retry",
    "endpoint_create",
    "endpoint_delete",
    "endpoint_rotate_secret",
    "endpoint_send_test",
    "endpoint_update",
    "payload_of",
    "resolve_target",
    "send",
    "signature_header",
    "webhook_deliver",
]

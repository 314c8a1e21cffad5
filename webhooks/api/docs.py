"""The OpenAPI documentation of the webhooks API (the delivery contract, examples, errors).

Kept apart from the views, which it would otherwise outweigh; each ``*_DOCS`` is the
``extend_schema_view`` of the viewset of that name.
"""

from django.conf import settings
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)

from events.catalogue import EVENT_TYPES
from hosting.api.schema import CONFLICT, envelope, error_doc
from hosting.api.serializers import DeletedSerializer
from webhooks.api.serializers import (
    DELIVERY_EXAMPLE,
    NEW_WEBHOOK_EXAMPLE,
    ROTATED_WEBHOOK_EXAMPLE,
    WEBHOOK_EXAMPLE,
    NewWebhookSecretSerializer,
    WebhookDeliverySerializer,
    WebhookEndpointCreateSerializer,
    WebhookEndpointSerializer,
    WebhookEndpointUpdateSerializer,
)
from webhooks.services import (
    RETRY_SCHEDULE,
)


def _duration(seconds: int) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


EVENT_CATALOGUE = "\n".join(
    f"- **{area}**: " + ", ".join(f"`{event_type}`" for event_type in types)
    for area, types in EVENT_TYPES.items()
)
DELIVERY_DOC = f"""
**Event types.** `enabled_events` lists types, whole areas (`server.*`) or `["*"]` for every
type; an unknown one is 400 `validation_failed` naming the item (`enabled_events.0`). New types
may be added within `/v1`.

{EVENT_CATALOGUE}

**Payload.** Each delivery is a `POST` of `Content-Type: application/json`:

```json
{{"id": "evt_7Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy", "type": "server.status_changed",
 "created_at": "2026-11-21T15:04:05Z",
 "data": {{"object": {{"id": "srv_...", "status": "running", "...": "..."}},
          "previous_attributes": {{"status": "starting"}}}}}}
```

`data.object` is the resource as the API shows it, `data.previous_attributes` the values that
changed. The same events are listed by `GET /v1/events`.

**Signing** ([Standard Webhooks](https://www.standardwebhooks.com/)). Headers:

- `webhook-id`: the event id, the same on every retry; use it to drop duplicates.
- `webhook-timestamp`: Unix seconds of this attempt; refuse old ones to stop replays.
- `webhook-signature`: `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`,
  keyed with the base64-decoded part of the secret after `whsec_`. For 24 hours after
  `rotate-secret` it carries two signatures separated by a space (new secret, old secret): accept
  the request if either matches.

**Delivery** is at least once and in no guaranteed order. Answer any 2xx within 15 seconds;
anything else is retried after {", ".join(_duration(s) for s in RETRY_SCHEDULE)} (±10%, or later
if `Retry-After` says so). A `410 Gone` answer, or 5 days of failures, disables the endpoint and
e-mails the account's owners. Private, loopback and other non-public addresses are refused.
"""

WEBHOOK_RESPONSE = envelope("webhook", WebhookEndpointSerializer(), name="WebhookEnvelope")
DELIVERY_RESPONSE = envelope(
    "delivery", WebhookDeliverySerializer(), name="WebhookDeliveryEnvelope"
)
NEW_SECRET_RESPONSE = OpenApiResponse(
    NewWebhookSecretSerializer, description="The endpoint and its secret, shown this once."
)
UNSAFE_URL_NOTE = (
    "A URL that is not https:// or that points at a private, loopback or otherwise non-public "
    "address is 400 `validation_failed` with field `url` and code `unsafe_target`."
)
WEBHOOK_EXAMPLES = [
    OpenApiExample("An endpoint", value={"webhook": WEBHOOK_EXAMPLE}, response_only=True)
]
DELIVERY_EXAMPLES = [
    OpenApiExample("Queued after a 503", value={"delivery": DELIVERY_EXAMPLE}, response_only=True)
]
DELIVERY_ID = OpenApiParameter(
    "delivery_id", str, OpenApiParameter.PATH, description="The delivery id (`whd_...`)."
)
WRITE_SCOPE = "Needs `webhooks:write`."


# WebhookEndpointViewSet
WEBHOOK_ENDPOINT_DOCS = dict(
    list=extend_schema(
        summary="List webhook endpoints",
        description="The account's endpoints, newest first. Secrets are never listed.",
        examples=[OpenApiExample("An endpoint", value=WEBHOOK_EXAMPLE, response_only=True)],
        tags=["Webhooks"],
    ),
    create=extend_schema(
        summary="Create a webhook endpoint",
        description="201 with `data.webhook` and `data.secret` (`whsec_...`), the only time the "
        f"secret is shown. {UNSAFE_URL_NOTE} An account may have "
        f"{settings.WEBHOOKS_MAX_ENDPOINTS} endpoints: one more is 422 `quota_exceeded` "
        f"(details.limit). {WRITE_SCOPE}\n{DELIVERY_DOC}",
        request=WebhookEndpointCreateSerializer,
        responses={
            201: NEW_SECRET_RESPONSE,
            422: error_doc(
                422,
                "quota_exceeded",
                "`quota_exceeded` (details.limit): the account holds its maximum of endpoints.",
                "An account may have 20 webhook endpoints.",
                {"limit": 20, "quota": "webhook_endpoints"},
            ),
        },
        examples=[
            OpenApiExample(
                "Server changes and failed actions",
                value={
                    "url": "https://hooks.example.com/hosting",
                    "description": "Status changes to our chat bot",
                    "enabled_events": ["server.*", "action.failed"],
                },
                request_only=True,
            ),
            OpenApiExample(
                "The endpoint and its secret", value=NEW_WEBHOOK_EXAMPLE, response_only=True
            ),
        ],
        tags=["Webhooks"],
    ),
    retrieve=extend_schema(
        summary="Get a webhook endpoint",
        responses=WEBHOOK_RESPONSE,
        examples=WEBHOOK_EXAMPLES,
        tags=["Webhooks"],
    ),
    partial_update=extend_schema(
        summary="Change a webhook endpoint",
        description="Any of `url`, `description`, `enabled_events` and `enabled`. Re-enabling "
        f"an endpoint that was disabled clears its failure streak. {UNSAFE_URL_NOTE} "
        f"{WRITE_SCOPE}",
        request=WebhookEndpointUpdateSerializer,
        responses=WEBHOOK_RESPONSE,
        examples=[
            OpenApiExample("Re-enable", value={"enabled": True}, request_only=True),
            *WEBHOOK_EXAMPLES,
        ],
        tags=["Webhooks"],
    ),
    destroy=extend_schema(
        summary="Delete a webhook endpoint",
        description="Deletes the endpoint with its pending deliveries and their history. "
        f"{WRITE_SCOPE}",
        responses={200: DeletedSerializer},
        examples=[
            OpenApiExample(
                "Deleted",
                value={"id": "whe_5Rk8Tz2Qm7Lx4Wc9Nb1Hd6Fy", "deleted": True},
                response_only=True,
            )
        ],
        tags=["Webhooks"],
    ),
    rotate_secret=extend_schema(
        summary="Rotate a webhook endpoint's secret",
        description="200 with a new secret, shown this once. The old secret keeps signing "
        "beside the new one for 24 hours (`secret_rotating_until`), so receivers can switch "
        f"without losing deliveries. No body. {WRITE_SCOPE}",
        request=None,
        responses={200: NEW_SECRET_RESPONSE},
        examples=[
            OpenApiExample("The new secret", value=ROTATED_WEBHOOK_EXAMPLE, response_only=True)
        ],
        tags=["Webhooks"],
    ),
    send_test=extend_schema(
        summary="Send a test event",
        description="Records a `webhook.test` event and delivers it to this endpoint only, "
        "whatever it subscribes to; 202 with the queued delivery. No body. "
        f"{WRITE_SCOPE}",
        request=None,
        responses={202: DELIVERY_RESPONSE},
        examples=DELIVERY_EXAMPLES,
        tags=["Webhooks"],
    ),
)


WEBHOOK_ID = OpenApiParameter(
    "webhook_id", str, OpenApiParameter.PATH, description="The endpoint id (`whe_...`)."
)


# WebhookDeliveryViewSet
WEBHOOK_DELIVERY_DOCS = dict(
    list=extend_schema(
        summary="List an endpoint's deliveries",
        description="Newest first, each with every attempt: when, the HTTP status, how long it "
        "took, the first 1 KB of the answer, the connection error and when the next retry is "
        "due. Filter by `status`.",
        parameters=[WEBHOOK_ID],
        examples=[OpenApiExample("Queued after a 503", value=DELIVERY_EXAMPLE, response_only=True)],
        tags=["Webhooks"],
    ),
    retry=extend_schema(
        summary="Retry a delivery",
        description="Sends the same event again now, with the same `webhook-id`; 202 with the "
        "delivery. A delivery that was never attempted yet is 409 `conflict`. No body. "
        f"{WRITE_SCOPE}",
        parameters=[WEBHOOK_ID, DELIVERY_ID],
        request=None,
        responses={202: DELIVERY_RESPONSE, 409: CONFLICT},
        examples=DELIVERY_EXAMPLES,
        tags=["Webhooks"],
    ),
)

from rest_framework import serializers

from hosting.api.serializers import RepresentedBy, StrictInputSerializer
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.representations import webhook_endpoint_representation


class WebhookEndpointSerializer(RepresentedBy, serializers.ModelSerializer):
    """An endpoint as the API shows it; its secret is only ever in the creation response."""

    represent = staticmethod(webhook_endpoint_representation)

    enabled_events = serializers.ListField(child=serializers.CharField(), read_only=True)
    secret_rotating_until = serializers.DateTimeField(
        source="previous_secret_expires_at",
        read_only=True,
        allow_null=True,
        help_text="After a rotation, the old secret also signs until this time.",
    )
    created_by = serializers.CharField(
        source="created_by_id",
        read_only=True,
        allow_null=True,
        help_text="The user whose rights the endpoint has: it receives only the events this user "
        "may see with their current role (set by creating it or changing its URL).",
    )

    class Meta:
        model = WebhookEndpoint
        fields = [
            "id",
            "url",
            "description",
            "enabled_events",
            "enabled",
            "disabled_reason",
            "failure_streak",
            "failing_since",
            "last_delivery_at",
            "last_delivery_status",
            "secret_rotating_until",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class WebhookAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = [
            "created_at",
            "status_code",
            "duration_ms",
            "response_excerpt",
            "error",
            "next_retry_at",
        ]
        read_only_fields = fields


class WebhookDeliverySerializer(serializers.ModelSerializer):
    event = serializers.CharField(source="event_id", read_only=True)
    event_type = serializers.CharField(source="event.type", read_only=True)
    endpoint = serializers.CharField(source="endpoint_id", read_only=True)
    attempts = WebhookAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event",
            "event_type",
            "endpoint",
            "status",
            "attempt_count",
            "last_status_code",
            "next_attempt_at",
            "created_at",
            "delivered_at",
            "attempts",
        ]
        read_only_fields = fields


# --- Request bodies ------------------------------------------------------------------------


def _enabled_events(**kwargs) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=64),
        max_length=100,
        help_text='Event types (`server.status_changed`), areas (`server.*`) or `["*"]` for all.',
        **kwargs,
    )


class WebhookEndpointCreateSerializer(StrictInputSerializer):
    url = serializers.URLField(max_length=2000, help_text="An https:// URL on the internet.")
    description = serializers.CharField(max_length=500, allow_blank=True, required=False)
    enabled_events = _enabled_events()
    enabled = serializers.BooleanField(required=False, default=True)


class WebhookEndpointUpdateSerializer(StrictInputSerializer):
    url = serializers.URLField(max_length=2000, required=False)
    description = serializers.CharField(max_length=500, allow_blank=True, required=False)
    enabled_events = _enabled_events(required=False)
    enabled = serializers.BooleanField(
        required=False, help_text="Re-enabling a disabled endpoint clears its failure streak."
    )


class NewWebhookSecretSerializer(serializers.Serializer):
    """The answer to a creation or rotation: the only place the secret is ever shown."""

    webhook = WebhookEndpointSerializer()
    secret = serializers.CharField(help_text="`whsec_<base64>`; shown this once.")


# --- Documentation examples ----------------------------------------------------------------

WEBHOOK_EXAMPLE = {
    "id": "whe_5Rk8Tz2Qm7Lx4Wc9Nb1Hd6Fy",
    "url": "https://hooks.example.com/hosting",
    "description": "Status changes to our chat bot",
    "enabled_events": ["server.*", "action.failed"],
    "enabled": True,
    "disabled_reason": "",
    "failure_streak": 0,
    "failing_since": None,
    "last_delivery_at": "2026-11-21T15:04:06Z",
    "last_delivery_status": 200,
    "secret_rotating_until": None,
    "created_by": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
    "created_at": "2026-11-01T12:00:00Z",
    "updated_at": "2026-11-01T12:00:00Z",
}
NEW_WEBHOOK_EXAMPLE = {
    "webhook": {**WEBHOOK_EXAMPLE, "last_delivery_at": None, "last_delivery_status": None},
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
}
ROTATED_WEBHOOK_EXAMPLE = {
    "webhook": {**WEBHOOK_EXAMPLE, "secret_rotating_until": "2026-11-22T15:04:05Z"},
    "secret": "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
}
DELIVERY_EXAMPLE = {
    "id": "whd_9Lp3Xc7Vb2Nm6Qr1Tz8Kf4Hs",
    "event": "evt_7Qm2Lx9Tc4Rb8Nz1Kd5Wf3Hy",
    "event_type": "server.status_changed",
    "endpoint": "whe_5Rk8Tz2Qm7Lx4Wc9Nb1Hd6Fy",
    "status": "pending",
    "attempt_count": 1,
    "last_status_code": 503,
    "next_attempt_at": "2026-11-21T15:04:11Z",
    "created_at": "2026-11-21T15:04:05Z",
    "delivered_at": None,
    "attempts": [
        {
            "created_at": "2026-11-21T15:04:06Z",
            "status_code": 503,
            "duration_ms": 212,
            "response_excerpt": "Service Unavailable",
            "error": "",
            "next_retry_at": "2026-11-21T15:04:11Z",
        }
    ],
}

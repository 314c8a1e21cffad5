from rest_framework import serializers

from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


class WebhookEndpointSerializer(serializers.ModelSerializer):
    """An endpoint as the API shows it; its secret is only ever in the creation response."""

    secret_rotating_until = serializers.DateTimeField(
        source="previous_secret_expires_at", read_only=True
    )

    class Meta:
        model = WebhookEndpoint
        fields = [
            "id", "url", "description", "enabled_events", "enabled", "disabled_reason",
            "failure_streak", "failing_since", "last_delivery_at", "last_delivery_status",
            "secret_rotating_until", "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


class WebhookAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = [
            "created_at", "status_code", "duration_ms", "response_excerpt", "error",
            "next_retry_at",
        ]  # fmt: skip
        read_only_fields = fields


class WebhookDeliverySerializer(serializers.ModelSerializer):
    event = serializers.CharField(source="event_id", read_only=True)
    event_type = serializers.CharField(source="event.type", read_only=True)
    endpoint = serializers.CharField(source="endpoint_id", read_only=True)
    attempts = WebhookAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id", "event", "event_type", "endpoint", "status", "attempt_count",
            "last_status_code", "next_attempt_at", "created_at", "delivered_at", "attempts",
        ]  # fmt: skip
        read_only_fields = fields

from rest_framework import serializers

from events.models import Event


class EventSerializer(serializers.ModelSerializer):
    """An event as the API and webhooks show it (CONTRACT §9), plus who caused it."""

    actor = serializers.SerializerMethodField()

    class Meta:
        model = Event
        fields = ["id", "type", "created_at", "data", "actor"]
        read_only_fields = fields

    def get_actor(self, event: Event) -> dict:
        return {
            "user": event.actor_user_id,
            "api_key": event.actor_api_key_id,
            "ip": event.actor_ip,
        }

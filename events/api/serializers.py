from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from events.models import Event
from events.representations import event_representation
from hosting.api.serializers import RepresentedBy


class EventActorSerializer(serializers.Serializer):
    user = serializers.CharField(allow_null=True, help_text="The user (`usr_...`), if a person.")
    api_key = serializers.CharField(allow_null=True, help_text="The API key (`key_...`) used.")
    ip = serializers.CharField(allow_null=True, help_text="The client address.")
    staff = serializers.BooleanField(
        help_text="The hosting company's staff did it: shown without user, key or address."
    )


class EventDataSerializer(serializers.Serializer):
    object = serializers.DictField(
        help_text="The object as the API shows it (a server, an action, an API key...)."
    )
    previous_attributes = serializers.DictField(
        help_text="The attributes that changed, with their values before the change."
    )


@extend_schema_field(EventDataSerializer)
class EventDataField(serializers.JSONField):
    pass


class EventSerializer(RepresentedBy, serializers.ModelSerializer):
    """An event as the API and webhooks show it (CONTRACT §9), plus who caused it."""

    represent = staticmethod(event_representation)

    data = EventDataField(read_only=True)
    actor = serializers.SerializerMethodField()

    class Meta:
        model = Event
        fields = ["id", "type", "created_at", "data", "actor"]
        read_only_fields = fields

    # Only DRF's own walk of the declared fields reads this (tests/api/test_representations.py
    # holds it to the function's answer); the API answers with event_representation.
    @extend_schema_field(EventActorSerializer)
    def get_actor(self, event: Event) -> dict:
        if event.caused_by_staff:
            return {"user": None, "api_key": None, "ip": None, "staff": True}
        return {
            "user": event.actor_user_id,
            "api_key": event.actor_api_key_id,
            "ip": event.actor_ip,
            "staff": False,
        }

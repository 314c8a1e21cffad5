from django.contrib import admin

from accounts.service_admin import ReadOnlyAdmin
from events.models import Event


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """The audit trail, read-only: staff can search and filter it but never change history."""

    list_display = ["created_at", "type", "account", "object_id", "actor", "actor_ip"]
    list_filter = ["type", "object_type", "created_at"]
    search_fields = ["id", "type", "object_id", "account__name", "account__id", "actor_user__email"]
    list_select_related = ["account", "actor_user", "actor_api_key"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "id",
        "account",
        "type",
        "object_type",
        "object_id",
        "data",
        "actor_user",
        "actor_api_key",
        "actor_ip",
        "created_at",
    ]

    @admin.display(description="Actor")
    def actor(self, obj: Event) -> str:
        return obj.actor_label

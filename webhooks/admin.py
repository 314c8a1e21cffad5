"""Staff pages for webhook endpoints and their deliveries.

Secrets never appear here, encrypted or not. Only an endpoint's ``enabled`` and ``description``
may be changed, and the change goes through ``endpoint_update`` (which clears the failure streak
on re-enabling and records the event), as deleting goes through ``endpoint_delete``. Endpoints
are created by customers only; deliveries and attempts are a read-only log.
"""

from django.contrib import admin

from accounts.actors import Actor
from accounts.service_admin import ReadOnlyAdmin
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoint_delete, endpoint_update


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = [
        "url",
        "account",
        "enabled",
        "failure_streak",
        "last_delivery_at",
        "last_delivery_status",
    ]
    list_filter = ["enabled"]
    list_select_related = ["account"]
    search_fields = ["url", "id", "account__name", "account__id"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "account",
        "url",
        "description",
        "enabled_events",
        "enabled",
        "disabled_reason",
        "failure_streak",
        "failing_since",
        "last_delivery_at",
        "last_delivery_status",
        "previous_secret_expires_at",
        "created_by",
        "created_at",
        "updated_at",
    ]
    editable = {"enabled", "description"}

    def get_readonly_fields(self, request, obj=None):
        return [name for name in self.fields if name not in self.editable]

    def has_add_permission(self, request) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        if changes:
            endpoint_update(endpoint=obj, actor=Actor.from_request(request), **changes)

    def delete_model(self, request, obj) -> None:
        endpoint_delete(endpoint=obj, actor=Actor.from_request(request))

    def delete_queryset(self, request, queryset) -> None:
        actor = Actor.from_request(request)
        for endpoint in queryset:
            endpoint_delete(endpoint=endpoint, actor=actor)


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ["created_at", "status_code", "duration_ms", "error", "response_excerpt"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "endpoint",
        "event_type",
        "status",
        "attempt_count",
        "last_status_code",
        "next_attempt_at",
        "created_at",
    ]
    list_filter = ["status"]
    list_select_related = ["endpoint", "event"]
    search_fields = ["id", "endpoint__id", "endpoint__url", "event__id"]
    date_hierarchy = "created_at"
    inlines = [WebhookAttemptInline]

    @admin.display(description="Event type", ordering="event__type")
    def event_type(self, obj: WebhookDelivery) -> str:
        return obj.event.type

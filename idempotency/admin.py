from django.contrib import admin

from accounts.service_admin import ReadOnlyAdmin
from idempotency.models import IdempotencyRecord


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    """Read-only, for support: which keys a client used and what status they got.

    Stored bodies and headers are never shown (bodies are encrypted under the caller's token
    anyway); a record answers retries for 24 hours and is then pruned.
    """

    list_display = ["key", "api_key", "request_method", "request_path", "status", "created_at"]
    list_filter = ["response_status", "created_at"]
    search_fields = ["key", "api_key_id"]
    date_hierarchy = "created_at"
    fields = [
        "api_key",
        "key",
        "request_method",
        "request_path",
        "request_body_sha256",
        "status",
        "required_scopes",
        "created_at",
        "completed_at",
    ]
    readonly_fields = fields

    @admin.display(description="API key", ordering="api_key_id")
    def api_key(self, obj: IdempotencyRecord) -> str:
        return f"hms_{obj.api_key_id}…"

    @admin.display(description="Status", ordering="response_status")
    def status(self, obj: IdempotencyRecord) -> str:
        return str(obj.response_status) if obj.is_completed else "in progress"

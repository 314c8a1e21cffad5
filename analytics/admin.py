"""Staff's read-only view of the MRR snapshots (written by housekeeping only)."""

from django.contrib import admin

from accounts.service_admin import ReadOnlyAdmin
from analytics.models import MrrSnapshot, MrrSnapshotDay


@admin.register(MrrSnapshotDay)
class MrrSnapshotDayAdmin(ReadOnlyAdmin):
    list_display = ["day", "taken_at", "accounts"]
    date_hierarchy = "day"


@admin.register(MrrSnapshot)
class MrrSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["day", "account_id", "currency", "mrr", "subscriptions"]
    list_filter = ["currency"]
    search_fields = ["account_id"]
    date_hierarchy = "day"

"""Staff's read-only view of the MRR snapshots (written by housekeeping only)."""

from django.contrib import admin

from accounts.service_admin import ReadOnlyAdmin
from analytics.models import MrrSnapshot, MrrSnapshotDay
from hosting.money import format_amount


@admin.register(MrrSnapshotDay)
class MrrSnapshotDayAdmin(ReadOnlyAdmin):
    list_display = ["day", "taken_at", "accounts"]
    date_hierarchy = "day"


@admin.register(MrrSnapshot)
class MrrSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["day", "account_id", "currency", "mrr_shown", "subscriptions"]
    list_filter = ["currency"]
    search_fields = ["account_id"]
    date_hierarchy = "day"
    fields = ["day", "account_id", "currency", "mrr_shown", "subscriptions"]
    readonly_fields = fields

    @admin.display(description="MRR", ordering="mrr")
    def mrr_shown(self, obj: MrrSnapshot) -> str:
        # Minor units in the snapshot; staff read them in the currency's units.
        return format_amount(obj.mrr, obj.currency)

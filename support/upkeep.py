"""The help desk's upkeep (``manage.py housekeeping``): SLA breaches flagged, resolved tickets
closed after their quiet days, and files of failed messages removed."""

from django.utils import timezone

from support.services.attachments import attachments_orphans_remove
from support.services.sla import tickets_sla_check
from support.services.tickets import tickets_autoclose


def run() -> dict[str, int]:
    now = timezone.now()
    return {
        "ticket SLA breaches flagged": tickets_sla_check(now=now),
        "resolved tickets closed": tickets_autoclose(now=now),
        "orphaned attachment files removed": attachments_orphans_remove(now=now),
    }

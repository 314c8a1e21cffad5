"""The event log's periodic upkeep (run by ``manage.py housekeeping``)."""

from django.conf import settings

from events.services import events_prune


def run() -> dict[str, int]:
    return {"events pruned": events_prune(older_than_days=settings.EVENT_RETENTION_DAYS)}

"""Webhooks' periodic upkeep (run by ``manage.py housekeeping``)."""

from webhooks.services import deliveries_recover_stale


def run() -> dict[str, int]:
    return {"deliveries requeued": deliveries_recover_stale()}

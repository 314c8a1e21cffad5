"""The accounts app's periodic upkeep (run by ``manage.py housekeeping``)."""

from accounts.services import api_keys_expiring_notify


def run() -> dict[str, int]:
    return {"expiring keys notified": api_keys_expiring_notify()}

"""Analytics' periodic upkeep (run by ``manage.py housekeeping``)."""

from analytics.services.usage import usage_expire


def run() -> dict[str, int]:
    return usage_expire()

"""Analytics' periodic upkeep (run by ``manage.py housekeeping``)."""

from analytics.services.snapshots import mrr_snapshot_daily
from analytics.services.uptime import uptime_days_record
from analytics.services.usage import usage_expire


def run() -> dict[str, int]:
    return usage_expire() | {
        "MRR snapshots taken": mrr_snapshot_daily(),
        "uptime days recorded": uptime_days_record(),
    }

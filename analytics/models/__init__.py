"""Analytics keeps history the other apps do not: usage time series (``usage``) and the
business figures taken once a day (``revenue``)."""

from analytics.models.revenue import MrrSnapshot, MrrSnapshotDay
from analytics.models.usage import (
    UsageDay,
    UsageHour,
    UsageLatest,
    UsageMinute,
    UsageRollup,
    UsageSample,
)

__all__ = [
    "MrrSnapshot",
    "MrrSnapshotDay",
    "UsageDay",
    "UsageHour",
    "UsageLatest",
    "UsageMinute",
    "UsageRollup",
    "UsageSample",
]

"""Analytics keeps history the other apps do not: usage time series (``usage``), uptime per
day (``uptime``) and the business figures taken once a day (``revenue``)."""

from analytics.models.revenue import MrrSnapshot, MrrSnapshotDay
from analytics.models.uptime import UptimeDay, UptimeRecordedDay
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
    "UptimeDay",
    "UptimeRecordedDay",
    "UsageDay",
    "UsageHour",
    "UsageLatest",
    "UsageMinute",
    "UsageRollup",
    "UsageSample",
]

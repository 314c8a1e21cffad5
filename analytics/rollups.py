"""The arithmetic of rollups, in one place: a sample becomes a partial aggregate, two partial
aggregates merge into one (and a series reads them back, ``analytics.selectors.usage``).

A partial aggregate is a dict with the columns of ``UsageRollup`` (less instance and bucket).
Merging is associative and commutative, so a minute, an hour or a thirty-day bucket is the same
merge of whatever rows cover it: the ingest builds the minute, hour and day rows with it (and
the database repeats it in SQL when a row already exists, ``analytics.services.usage``), and a
metrics query merges stored rows into its own buckets the same way.
"""

from datetime import datetime
from typing import Any

from analytics.models.usage import COUNTERS, GAUGES

Partial = dict[str, Any]
AGGREGATES = ("avg", "min", "max", "last")
UNITS = {
    "cpu_percent": "percent",
    "memory_bytes": "bytes",
    "disk_bytes": "bytes",
    "players": "count",
    "uptime_seconds": "seconds",
    "network_rx_bytes": "bytes",
    "network_tx_bytes": "bytes",
}
METRICS = (*GAUGES, *COUNTERS)
COLUMNS = (
    "samples",
    "last_at",
    *(f"{gauge}_{part}" for gauge in GAUGES for part in ("min", "sum", "max", "last")),
    "players_samples",
    *COUNTERS,
)


def from_sample(sample: dict[str, Any]) -> Partial:
    """A raw sample (``UsageSample``'s fields, with ``network_*_delta``) as a partial aggregate."""
    partial: Partial = {"samples": 1, "last_at": sample["at"]}
    for gauge in GAUGES:
        value = sample[gauge]
        for part in ("min", "sum", "max", "last"):
            partial[f"{gauge}_{part}"] = value
    partial["players_samples"] = 0 if sample["players"] is None else 1
    for counter in COUNTERS:
        partial[counter] = sample[f"{counter.removesuffix('_bytes')}_delta"]
    return partial


def _pick(a: Any, b: Any, choose) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return choose(a, b)


def _add(a: Any, b: Any) -> Any:
    return _pick(a, b, lambda x, y: x + y)


def merge(a: Partial, b: Partial) -> Partial:
    """``a`` and ``b`` as one partial aggregate (``b`` wins a tie on ``last_at``)."""
    newer = b if b["last_at"] >= a["last_at"] else a
    merged: Partial = {"samples": a["samples"] + b["samples"], "last_at": newer["last_at"]}
    for gauge in GAUGES:
        merged[f"{gauge}_min"] = _pick(a[f"{gauge}_min"], b[f"{gauge}_min"], min)
        merged[f"{gauge}_sum"] = _add(a[f"{gauge}_sum"], b[f"{gauge}_sum"])
        merged[f"{gauge}_max"] = _pick(a[f"{gauge}_max"], b[f"{gauge}_max"], max)
        merged[f"{gauge}_last"] = newer[f"{gauge}_last"]
    merged["players_samples"] = a["players_samples"] + b["players_samples"]
    for counter in COUNTERS:
        merged[counter] = _add(a[counter], b[counter])
    return merged


def merge_into(buckets: dict[Any, Partial], key: Any, partial: Partial) -> None:
    current = buckets.get(key)
    buckets[key] = partial if current is None else merge(current, partial)


def counter_delta(
    value_now: int | None,
    uptime_now: int,
    at: datetime,
    previous: tuple[int | None, int, datetime] | None,
) -> int | None:
    """How much a counter grew since the instance's previous sample ``(value, uptime, at)``.

    Counters count from zero when their process starts; the first sample of an instance counts
    only if its process has just started. A process that started later than the
    previous sample's (``at - uptime``, give or take ``SAME_PROCESS_SECONDS``), or a value lower
    than before, is a new process: all of its count is new. A sample older than the newest one
    stored gets 0: the newer sample's delta already spans its interval, so totals stay exact.
    """
    if value_now is None:
        return None
    if previous is None:
        # The first sample we see: its count is new only if its process has just started;
        # a process we find running (history began today) counted traffic we never saw.
        return value_now if uptime_now <= FIRST_SAMPLE_SECONDS else 0
    value_before, uptime_before, at_before = previous
    if at <= at_before:
        return 0
    started_now = at.timestamp() - uptime_now
    started_before = at_before.timestamp() - uptime_before
    restarted = started_now - started_before > SAME_PROCESS_SECONDS
    if value_before is None or restarted or value_now < value_before:
        return value_now
    return value_now - value_before


# Uptime is reported in whole seconds and sampled a moment after the clock is read.
SAME_PROCESS_SECONDS = 5
# A first sample of a process younger than this counts its whole counter as new traffic.
FIRST_SAMPLE_SECONDS = 60

"""Reading usage history: the live figures, and series served from the right rollup.

A series of ``[start, end)`` is cut into buckets of ``step`` seconds (aligned on multiples of
the step since the Unix epoch, so UTC hours and days line up), at most ``MAX_POINTS`` of them:
the step grows to fit. It is read from the coarsest table whose rows fit the step exactly (day,
hour or minute rows, else the raw samples) and still hold the range (their retention), and the
rows of a bucket are merged (``analytics.rollups``), so any step gives the same figures as the
raw samples would.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max, Sum
from django.utils import timezone

from analytics import rollups
from analytics.models import UsageDay, UsageHour, UsageLatest, UsageMinute, UsageSample
from analytics.models.usage import COUNTERS
from analytics.selectors.ranges import asked_range
from hosting.errors import InvalidParameter

MAX_POINTS = 500
MIN_STEP = 10
MAX_RANGE = timedelta(days=3660)
# Steps chosen when the caller gives none, or when theirs gives too many points.
NICE_STEPS = (
    10,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
    1209600,
    2419200,
)
DEFAULT_METRICS = (
    "cpu_percent",
    "memory_bytes",
    "disk_bytes",
    "network_rx_bytes",
    "network_tx_bytes",
)


@dataclass(frozen=True)
class Level:
    name: str
    model: type
    seconds: int  # its rows' width; the raw samples have none (1: any step fits)
    time_field: str

    def oldest(self, now: datetime) -> datetime | None:
        days = {
            "raw": settings.USAGE_RAW_RETENTION_DAYS,
            "minute": settings.USAGE_MINUTE_RETENTION_DAYS,
            "hour": settings.USAGE_HOUR_RETENTION_DAYS,
        }.get(self.name)
        return None if days is None else now - timedelta(days=days)


LEVELS = (  # coarsest first
    Level("day", UsageDay, 86400, "bucket"),
    Level("hour", UsageHour, 3600, "bucket"),
    Level("minute", UsageMinute, 60, "bucket"),
    Level("raw", UsageSample, 1, "at"),
)


@dataclass(frozen=True)
class Plan:
    start: datetime
    end: datetime
    step: int
    level: Level


@dataclass(frozen=True)
class Series:
    metric: str
    unit: str
    aggregate: str
    points: list[tuple[datetime, float | int | None]]


def usage_latest(instance_id: str) -> UsageLatest | None:
    """The newest sample of a server or bot, if its node has sent one."""
    return UsageLatest.objects.filter(instance_id=instance_id).first()


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def usage_range(
    start: datetime | None,
    end: datetime | None,
    *,
    default: timedelta = timedelta(0),
    now: datetime | None = None,
) -> tuple[datetime, datetime]:
    """The range a usage query asks for (``default`` long when given by one end only), cut
    to the Unix epoch and to a day from now (nothing was measured outside), or a 400 naming
    the parameter (``analytics.selectors.ranges``)."""
    now = now or timezone.now()
    return asked_range(
        start, end, default=default, longest=MAX_RANGE, latest=now + timedelta(days=1), now=now
    )


def metrics_plan(
    *, start: datetime, end: datetime, step: int | None = None, now: datetime | None = None
) -> Plan:
    """Where and how to read ``[start, end)``: the step (grown to at most ``MAX_POINTS``
    buckets), the range aligned on it, and the table to read."""
    now = now or timezone.now()
    start, end = usage_range(start, end, now=now)
    if step is not None and step < MIN_STEP:
        raise InvalidParameter.named("step", "invalid", f"A step of {MIN_STEP} seconds or more.")
    span = _epoch(end) - _epoch(start)
    wanted = max(step or 0, math.ceil(span / MAX_POINTS), MIN_STEP)
    if step is None or wanted > step:
        wanted = next((nice for nice in NICE_STEPS if nice >= wanted), wanted)
    level = next(level for level in LEVELS if wanted % level.seconds == 0)
    # A table past its retention for this range: the next coarser one, the step a multiple of
    # its rows (a week-old hour at a ten-second step comes from hour rows, one point).
    while (oldest := level.oldest(now)) is not None and start < oldest:
        level = LEVELS[LEVELS.index(level) - 1]
        wanted = math.ceil(wanted / level.seconds) * level.seconds
    first = _epoch(start) // wanted * wanted
    last = -(-_epoch(end) // wanted) * wanted
    while (last - first) // wanted > MAX_POINTS:  # alignment added a bucket too many
        wanted = next(nice for nice in NICE_STEPS if nice > wanted)
        first, last = _epoch(start) // wanted * wanted, -(-_epoch(end) // wanted) * wanted
    return Plan(_at(first), _at(last), wanted, level)


def _reader(level: Level, metric: str, aggregate: str) -> tuple[str, str | None, str]:
    """How one metric is read from one table: ``(value column, weight or time column, how)``.
    The same arithmetic as ``rollups.merge``, on the columns a series
    needs only (a 30-day series reads 720 rows of 2 to 9 columns, not of 29)."""
    raw = level.name == "raw"
    if metric in COUNTERS:
        return (metric.replace("_bytes", "_delta") if raw else metric), None, "sum"
    if aggregate == "avg":
        if raw:
            return metric, None, "mean"
        return (
            f"{metric}_sum",
            ("players_samples" if metric == "players" else "samples"),
            "weighted",
        )
    if aggregate == "last":
        return (metric if raw else f"{metric}_last"), ("at" if raw else "last_at"), "last"
    return (metric if raw else f"{metric}_{aggregate}"), None, aggregate


def _fold(how: str, state: Any, value: Any, extra: Any) -> Any:
    """One row into a bucket's running figure."""
    if how == "last":
        return (extra, value) if state is None or extra >= state[0] else state
    if value is None:
        return state
    if how == "sum":
        return value if state is None else state + value
    if how == "min":
        return value if state is None else min(state, value)
    if how == "max":
        return value if state is None else max(state, value)
    weight = 1 if how == "mean" else extra
    return (value, weight) if state is None else (state[0] + value, state[1] + weight)


def _figure(how: str, state: Any) -> float | int | None:
    if state is None:
        return None
    if how == "last":
        return state[1]
    if how in ("mean", "weighted"):
        return state[0] / state[1] if state[1] else None
    return state


def metrics_series(
    *,
    instance_id: str,
    metrics: Iterable[str],
    aggregate: str,
    plan: Plan,
) -> list[Series]:
    """The instance's ``metrics`` over the plan's buckets; a bucket without samples (or, for
    players and network, without that figure) has no point. Counters are totals per bucket,
    gauges the ``aggregate`` of their samples."""
    metrics = list(metrics)
    readers = [_reader(plan.level, metric, aggregate) for metric in metrics]
    columns = list(dict.fromkeys(c for r in readers for c in r[:2] if c is not None))
    index = {column: number for number, column in enumerate(columns, start=1)}
    rows = plan.level.model.objects.filter(
        instance_id=instance_id,
        **{f"{plan.level.time_field}__gte": plan.start, f"{plan.level.time_field}__lt": plan.end},
    ).values_list(plan.level.time_field, *columns)
    step = plan.step
    buckets: dict[int, list[Any]] = {}
    for row in rows:
        key = int(row[0].timestamp()) // step * step
        states = buckets.get(key)
        if states is None:
            states = buckets[key] = [None] * len(readers)
        for number, (value_column, extra_column, how) in enumerate(readers):
            extra = row[index[extra_column]] if extra_column is not None else None
            states[number] = _fold(how, states[number], row[index[value_column]], extra)
    ordered = sorted(buckets.items())
    series = []
    for number, metric in enumerate(metrics):
        how = readers[number][2]
        points = [(_at(key), _figure(how, states[number])) for key, states in ordered]
        points = [(moment, figure) for moment, figure in points if figure is not None]
        shown = "sum" if metric in COUNTERS else aggregate
        series.append(Series(metric, rollups.UNITS[metric], shown, points))
    return series


def parse_metrics(value: str | None) -> list[str]:
    """``metrics=cpu_percent,memory_bytes`` (the default: all but players and uptime)."""
    if not value:
        return list(DEFAULT_METRICS)
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in rollups.METRICS]
    if unknown or not names:
        raise InvalidParameter.named(
            "metrics",
            "invalid",
            "metrics is a comma-separated list of: " + ", ".join(rollups.METRICS),
        )
    return list(dict.fromkeys(names))


# -- the account's usage over a range -------------------------------------------------------

TOP_METRICS = ("cpu_percent", "memory_bytes", "disk_bytes", "network_rx_bytes", "network_tx_bytes")


@dataclass(frozen=True)
class Consumer:
    instance_id: str
    samples: int
    cpu_percent: float  # average
    cpu_percent_max: float
    memory_bytes: float  # average
    memory_bytes_max: int
    disk_bytes: int  # the most used in the range
    network_rx_bytes: int | None
    network_tx_bytes: int | None


def usage_range_level(
    start: datetime, end: datetime, *, now: datetime | None = None
) -> tuple[datetime, datetime, Level]:
    """The rollup an account's totals over ``[start, end)`` are read from (day rows from a
    week, hour rows from six hours, else minute rows, or coarser where those have expired),
    and the range widened to whole rows of it."""
    now = now or timezone.now()
    start, end = usage_range(start, end, now=now)
    span = end - start
    index = 0 if span >= timedelta(days=7) else 1 if span >= timedelta(hours=6) else 2
    level = LEVELS[index]
    while (oldest := level.oldest(now)) is not None and start < oldest:
        level = LEVELS[LEVELS.index(level) - 1]
    first = _epoch(start) // level.seconds * level.seconds
    last = -(-_epoch(end) // level.seconds) * level.seconds
    return _at(first), _at(last), level


def account_usage(
    *, instance_ids: Iterable[str], start: datetime, end: datetime, level: Level
) -> list[Consumer]:
    """Each instance's figures over the range, summed by the database from one rollup."""
    rows = (
        level.model.objects.filter(
            instance_id__in=list(instance_ids), bucket__gte=start, bucket__lt=end
        )
        .values("instance_id")
        .annotate(
            n=Sum("samples"),
            cpu_sum=Sum("cpu_percent_sum"),
            cpu_max=Max("cpu_percent_max"),
            memory_sum=Sum("memory_bytes_sum"),
            memory_max=Max("memory_bytes_max"),
            disk_max=Max("disk_bytes_max"),
            rx=Sum("network_rx_bytes"),
            tx=Sum("network_tx_bytes"),
        )
        .order_by()
    )
    return [
        Consumer(
            instance_id=row["instance_id"],
            samples=row["n"],
            cpu_percent=row["cpu_sum"] / row["n"],
            cpu_percent_max=row["cpu_max"],
            memory_bytes=row["memory_sum"] / row["n"],
            memory_bytes_max=row["memory_max"],
            disk_bytes=row["disk_max"],
            network_rx_bytes=row["rx"],
            network_tx_bytes=row["tx"],
        )
        for row in rows
    ]


@dataclass
class DayTotals:
    day: datetime
    cpu_percent: float = 0  # the sum of each instance's average that day
    memory_bytes: float = 0  # likewise
    network_rx_bytes: int = 0
    network_tx_bytes: int = 0


def account_daily_usage(
    *, instance_ids: Iterable[str], start: datetime, end: datetime
) -> list[DayTotals]:
    """Per UTC day of ``[start, end)``, the instances' usage added up (from the day rows), for
    the account overview's charts; every day of the range, zero where nothing reported."""
    first = start.replace(hour=0, minute=0, second=0, microsecond=0)
    days: dict[datetime, DayTotals] = {}
    day = first
    while day < end:
        days[day] = DayTotals(day)
        day += timedelta(days=1)
    rows = UsageDay.objects.filter(
        instance_id__in=list(instance_ids), bucket__gte=first, bucket__lt=end
    ).values_list(
        "bucket",
        "samples",
        "cpu_percent_sum",
        "memory_bytes_sum",
        "network_rx_bytes",
        "network_tx_bytes",
    )
    for bucket, samples, cpu, memory, rx, tx in rows:
        totals = days.get(bucket)
        if totals is None:
            continue
        totals.cpu_percent += cpu / samples
        totals.memory_bytes += memory / samples
        totals.network_rx_bytes += rx or 0
        totals.network_tx_bytes += tx or 0
    return list(days.values())

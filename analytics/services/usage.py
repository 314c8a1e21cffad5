"""Storing usage samples and keeping their rollups, and expiring old history.

Rollups are kept up to date as samples arrive rather than by a later scan: one ingest stores
the raw rows, then merges them into their minute, hour and day rows with one upsert per level
(the merge of ``analytics.rollups``, written again in SQL for the rows already there). A query
therefore never waits on a rollup job, and a late or repeated batch is exact too: a sample
already stored (same instance and time, an agent retrying a batch) is skipped, and its rollups
are not touched twice.
"""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from analytics import partitions, rollups
from analytics.models import UsageDay, UsageHour, UsageLatest, UsageMinute, UsageSample
from analytics.models.usage import COUNTERS

# A node's clock may run a little ahead of ours; a sample further in the future is refused.
FUTURE_SKEW = timedelta(minutes=5)
SAMPLE_FIELDS = (
    "instance_id",
    "at",
    "cpu_percent",
    "memory_bytes",
    "disk_bytes",
    "players",
    "uptime_seconds",
    "network_rx_bytes",
    "network_tx_bytes",
)
RAW_COLUMNS = (*SAMPLE_FIELDS, "network_rx_delta", "network_tx_delta")
# What only the newest sample keeps: a game query's answer beside the player count.
LATEST_FIELDS = (*SAMPLE_FIELDS, "max_players", "game_version", "motd", "responding")
LEVELS = (
    (UsageMinute, lambda at: at.replace(second=0, microsecond=0)),
    (UsageHour, lambda at: at.replace(minute=0, second=0, microsecond=0)),
    (UsageDay, lambda at: at.replace(hour=0, minute=0, second=0, microsecond=0)),
)


@dataclass(frozen=True, slots=True)
class Measurement:
    """One sample as a node reports it (validated by the caller)."""

    instance_id: str
    at: datetime
    cpu_percent: float
    memory_bytes: int
    disk_bytes: int
    uptime_seconds: int
    players: int | None = None
    network_rx_bytes: int | None = None
    network_tx_bytes: int | None = None
    max_players: int | None = None
    game_version: str = ""
    motd: str = ""
    responding: bool | None = None


@dataclass(frozen=True)
class Recorded:
    stored: int  # new samples, now in the raw table and the rollups
    duplicates: int  # already stored (a batch sent again)
    out_of_range: int  # older than the raw retention, or from the future


@transaction.atomic
def usage_record(*, measurements: list[Measurement], now: datetime | None = None) -> Recorded:
    """Store a batch of samples and merge the new ones into the minute, hour and day rollups."""
    now = now or timezone.now()
    oldest = now - timedelta(days=settings.USAGE_RAW_RETENTION_DAYS)
    in_range = [m for m in measurements if oldest <= m.at <= now + FUTURE_SKEW]
    out_of_range = len(measurements) - len(in_range)
    # A sample twice in one batch is stored (and counted) once, as one sent again later is.
    kept = list({(m.instance_id, m.at): m for m in reversed(in_range)}.values())
    if not kept:
        return Recorded(0, 0, out_of_range)
    kept.sort(key=lambda m: (m.instance_id, m.at))
    # A partition per day (or month) is enough to ask for: the days of the batch.
    days = {m.at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0) for m in kept}
    for model in (UsageSample, UsageMinute, UsageHour):
        partitions.partitions_ensure(model._meta.db_table, days)

    rows = _with_deltas(kept)
    inserted = _insert_new(rows)
    fresh = [
        (row, rollups.from_sample(row))
        for row in rows
        if (row["instance_id"], row["at"]) in inserted
    ]
    for level, floor in LEVELS:
        buckets: dict[tuple[str, datetime], rollups.Partial] = {}
        for row, partial in fresh:  # merge returns new dicts: one partial serves every level
            rollups.merge_into(buckets, (row["instance_id"], floor(row["at"])), partial)
        _upsert_rollups(level, buckets)
    _upsert_latest([row for row, _ in fresh])
    return Recorded(len(fresh), len(in_range) - len(fresh), out_of_range)


def _with_deltas(kept: list[Measurement]) -> list[dict[str, Any]]:
    """The samples as raw rows with their counters' deltas, measured from each instance's
    newest stored sample (locked, so two batches of one instance take turns)."""
    ids = sorted({m.instance_id for m in kept})
    latest = {
        row.instance_id: row
        for row in UsageLatest.objects.select_for_update().filter(instance_id__in=ids)
    }
    previous: dict[str, dict[str, Any]] = {
        instance_id: {
            "at": row.at,
            "uptime_seconds": row.uptime_seconds,
            "network_rx_bytes": row.network_rx_bytes,
            "network_tx_bytes": row.network_tx_bytes,
        }
        for instance_id, row in latest.items()
    }
    rows = []
    for measurement in kept:
        row = {field: getattr(measurement, field) for field in LATEST_FIELDS}
        row["at"] = row["at"].astimezone(UTC)
        row["cpu_percent"] = float(row["cpu_percent"])  # a float column, whatever was passed
        before = previous.get(measurement.instance_id)
        for counter in COUNTERS:
            row[f"{counter.removesuffix('_bytes')}_delta"] = rollups.counter_delta(
                row[counter],
                row["uptime_seconds"],
                row["at"],
                None
                if before is None
                else (before[counter], before["uptime_seconds"], before["at"]),
            )
        if before is None or row["at"] > before["at"]:
            previous[measurement.instance_id] = row
        rows.append(row)
    return rows


def _adapt(value: Any) -> Any:
    """A value as SQLite's backend wants it (PostgreSQL takes Python's own values)."""
    if isinstance(value, datetime) and connection.vendor != "postgresql":
        return connection.ops.adapt_datetimefield_value(value)
    return value


def _cursor() -> Any:
    """A cursor on the request's connection and transaction. On PostgreSQL a server-side
    binding one (Django's own binds on the client, in text), so ``_row_sets``' arrays travel
    in binary: dumping them as text was the larger part of an ingest's time."""
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        return psycopg.Cursor(connection.connection)
    return connection.cursor()


def _as_utc(value: Any) -> datetime:
    """A timestamp as the database hands it back (SQLite: text)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _row_sets(
    model: type[Model], columns: tuple[str, ...], rows: list[list[Any]]
) -> Iterator[tuple[str, list[Any]]]:
    """``rows`` (values in ``columns``' order) as the source of an ``INSERT``: yields
    ``(sql, params)`` to follow ``INSERT INTO table (columns)``. On PostgreSQL one
    ``SELECT * FROM unnest(%b::type[], …)`` of one array per column: the statement stays a few
    hundred characters whatever the batch, where a ``VALUES`` list of thousands of placeholders
    costs more to parse (in psycopg and the server) than the rows cost to write. Elsewhere
    ``VALUES`` lists of at most 500 rows (SQLite's limit on variables)."""
    if connection.vendor == "postgresql":
        casts = ", ".join(
            f"%b::{model._meta.get_field(column).db_type(connection)}[]" for column in columns
        )
        arrays = [list(values) for values in zip(*rows, strict=True)]
        yield f"SELECT * FROM unnest({casts})", arrays  # noqa: S608 (types are the models')
        return
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        yield "VALUES " + ", ".join([placeholders] * len(chunk)), [v for row in chunk for v in row]


def _insert_new(rows: list[dict[str, Any]]) -> set[tuple[str, datetime]]:
    """Insert the raw rows, skipping those already stored; returns the keys inserted."""
    table = UsageSample._meta.db_table
    values = [[_adapt(row[column]) for column in RAW_COLUMNS] for row in rows]
    inserted: set[tuple[str, datetime]] = set()
    with _cursor() as cursor:
        for source, params in _row_sets(UsageSample, RAW_COLUMNS, values):
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(RAW_COLUMNS)}) {source}"
                " ON CONFLICT (instance_id, at) DO NOTHING RETURNING instance_id, at",
                params,
            )
            inserted.update((instance_id, _as_utc(at)) for instance_id, at in cursor.fetchall())
    return inserted


def _merge_sql(column: str) -> str:
    """How the stored row ``t`` and the incoming row ``excluded`` combine for one column: the
    SQL twin of ``rollups.merge``."""
    old, new = f"t.{column}", f"excluded.{column}"
    least, greatest = ("LEAST", "GREATEST") if connection.vendor == "postgresql" else ("MIN", "MAX")
    if column in ("samples", "players_samples"):
        return f"{old} + {new}"
    if column == "last_at":
        return f"{greatest}({old}, {new})"
    if column.endswith("_min"):
        return f"{least}(COALESCE({old}, {new}), COALESCE({new}, {old}))"
    if column.endswith("_max"):
        return f"{greatest}(COALESCE({old}, {new}), COALESCE({new}, {old}))"
    if column.endswith("_last"):
        return f"CASE WHEN excluded.last_at >= t.last_at THEN {new} ELSE {old} END"
    # sums of gauges and counters' deltas; null only when both are
    return (
        f"CASE WHEN {old} IS NULL THEN {new} WHEN {new} IS NULL THEN {old} ELSE {old} + {new} END"
    )


def _upsert_rollups(
    model: type[Model], buckets: dict[tuple[str, datetime], rollups.Partial]
) -> None:
    if not buckets:
        return
    table = model._meta.db_table
    columns = ("instance_id", "bucket", *rollups.COLUMNS)
    updates = ", ".join(f"{column} = {_merge_sql(column)}" for column in rollups.COLUMNS)
    # In key order, so two batches touching the same rows lock them in the same order.
    values = [
        [instance_id, _adapt(bucket), *(_adapt(partial[c]) for c in rollups.COLUMNS)]
        for (instance_id, bucket), partial in sorted(buckets.items())
    ]
    with _cursor() as cursor:
        for source, params in _row_sets(model, columns, values):
            cursor.execute(
                f"INSERT INTO {table} AS t ({', '.join(columns)}) {source}"
                f" ON CONFLICT (instance_id, bucket) DO UPDATE SET {updates}",
                params,
            )


def _upsert_latest(rows: list[dict[str, Any]]) -> None:
    newest: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["instance_id"] not in newest or row["at"] > newest[row["instance_id"]]["at"]:
            newest[row["instance_id"]] = row
    if not newest:
        return
    table = UsageLatest._meta.db_table
    updates = ", ".join(f"{field} = excluded.{field}" for field in LATEST_FIELDS[1:])
    values = [[_adapt(newest[key][field]) for field in LATEST_FIELDS] for key in sorted(newest)]
    with _cursor() as cursor:
        for source, params in _row_sets(UsageLatest, LATEST_FIELDS, values):
            cursor.execute(
                f"INSERT INTO {table} AS t ({', '.join(LATEST_FIELDS)}) {source}"
                f" ON CONFLICT (instance_id) DO UPDATE SET {updates} WHERE excluded.at > t.at",
                params,
            )


# -- expiry ---------------------------------------------------------------------------------

PARTITIONS_AHEAD_DAYS = 7


def usage_expire(*, now: datetime | None = None) -> dict[str, int]:
    """Housekeeping: create next week's partitions, and expire raw samples, minute rows and hour
    rows past their retention (``USAGE_*_RETENTION_DAYS``): whole partitions dropped on
    PostgreSQL, rows deleted on SQLite. Day rows are kept for ever."""
    now = now or timezone.now()
    ahead = [now + timedelta(days=days) for days in range(PARTITIONS_AHEAD_DAYS + 1)]
    retention: dict[type[UsageSample | UsageMinute | UsageHour], tuple[str, int]] = {
        UsageSample: ("at", settings.USAGE_RAW_RETENTION_DAYS),
        UsageMinute: ("bucket", settings.USAGE_MINUTE_RETENTION_DAYS),
        UsageHour: ("bucket", settings.USAGE_HOUR_RETENTION_DAYS),
    }
    expired: dict[str, int] = defaultdict(int)
    with transaction.atomic():
        for model, (column, days) in retention.items():
            table = model._meta.db_table
            cutoff = now - timedelta(days=days)
            if partitions.partitioned():
                partitions.partitions_ensure(table, ahead)
                dropped = partitions.partitions_drop_before(table, cutoff)
                expired[f"{table} partitions dropped"] += len(dropped)
            else:
                deleted, _ = model.objects.filter(**{f"{column}__lt": cutoff}).delete()
                expired[f"{table} rows deleted"] += deleted
    return dict(expired)

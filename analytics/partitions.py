"""Time partitions for the usage tables on PostgreSQL, so expiring a day costs a ``DROP TABLE``.

The raw samples and the minute rows are partitioned by UTC day, the hour rows by UTC month
(declarative range partitioning on the time column). Housekeeping creates partitions a week
ahead and drops those past their table's retention (``analytics.services.usage``); an insert
for a period whose partition is missing creates it first (``partitions_ensure``), so a
housekeeping that has not run yet never loses a sample. SQLite has one plain table per level
and expires rows with a ``DELETE``: the embedded default holds a few servers, not a fleet.
"""

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.migrations.operations import CreateModel


@dataclass(frozen=True)
class Scheme:
    column: str
    period: str  # "day" or "month"


SCHEMES: dict[str, Scheme] = {
    "analytics_usage_sample": Scheme("at", "day"),
    "analytics_usage_minute": Scheme("bucket", "day"),
    "analytics_usage_hour": Scheme("bucket", "month"),
}
_SUFFIX = re.compile(r"_p(\d{8}|\d{6})$")
# Partitions this process knows to exist: checked before every insert, so a cache.
_known: set[str] = set()


def partitioned() -> bool:
    return connection.vendor == "postgresql"


def period_start(period: str, moment: datetime) -> datetime:
    moment = moment.astimezone(UTC)
    if period == "day":
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def period_end(period: str, start: datetime) -> datetime:
    if period == "day":
        return start + timedelta(days=1)
    return (start + timedelta(days=32)).replace(day=1)


def partition_name(table: str, start: datetime) -> str:
    period = SCHEMES[table].period
    return f"{table}_p{start:%Y%m%d}" if period == "day" else f"{table}_p{start:%Y%m}"


def partitions_ensure(table: str, moments: Iterable[datetime]) -> list[str]:
    """Create the partitions of ``table`` holding ``moments`` where missing; returns the names
    created. Concurrent callers serialise on an advisory lock per table, since two ``CREATE
    TABLE IF NOT EXISTS`` of one name may still collide in the catalogue."""
    if not partitioned():
        return []
    period = SCHEMES[table].period
    starts = {period_start(period, moment) for moment in moments}
    missing = sorted(start for start in starts if partition_name(table, start) not in _known)
    created: list[str] = []
    if not missing:
        return created
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [zlib.crc32(table.encode())])
        existing = {name for name, _, _ in partitions_list(table)}
        for start in missing:
            name = partition_name(table, start)
            if name not in existing:
                # DDL takes no bind parameters; the bounds are our own UTC timestamps.
                end = period_end(period, start)
                cursor.execute(
                    f'CREATE TABLE "{name}" PARTITION OF "{table}" '
                    f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
                )
                created.append(name)
    # Remembered once the creating transaction commits (at once outside one): a rolled-back
    # creation is found missing next time and made again.
    names = [partition_name(table, start) for start in missing]
    transaction.on_commit(lambda: _known.update(names))
    return created


def partitions_list(table: str) -> list[tuple[str, datetime, datetime]]:
    """The partitions of ``table`` as ``(name, start, end)``, oldest first (ours only: named by
    ``partition_name``)."""
    if not partitioned():
        return []
    period = SCHEMES[table].period
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [table],
        )
        names = [row[0] for row in cursor.fetchall()]
    found = []
    for name in names:
        match = _SUFFIX.search(name)
        if match is None:
            continue
        digits = match.group(1)
        start = datetime.strptime(digits, "%Y%m%d" if len(digits) == 8 else "%Y%m")
        start = start.replace(tzinfo=UTC)
        found.append((name, start, period_end(period, start)))
    return sorted(found, key=lambda item: item[1])


def partitions_drop_before(table: str, cutoff: datetime) -> list[str]:
    """Drop the partitions of ``table`` that end at or before ``cutoff``; returns their names."""
    dropped = []
    with connection.cursor() as cursor:
        for name, _, end in partitions_list(table):
            if end <= cutoff:
                cursor.execute(f'DROP TABLE "{name}"')
                dropped.append(name)
                _known.discard(name)
    return dropped


def forget_known() -> None:
    """Tests that drop and re-create the tables call this."""
    _known.clear()


class CreatePartitionedModel(CreateModel):
    """``CreateModel`` that, on PostgreSQL, makes the table a range-partitioned parent on its
    scheme's column (``SCHEMES``); elsewhere a plain table. Its partitions come later."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        model = to_state.apps.get_model(app_label, self.name)
        if schema_editor.connection.vendor != "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        scheme = SCHEMES[model._meta.db_table]
        sql, params = schema_editor.table_sql(model)
        schema_editor.execute(f'{sql} PARTITION BY RANGE ("{scheme.column}")', params or None)
        for statement in schema_editor._model_indexes_sql(model):
            schema_editor.deferred_sql.append(statement)
        return None

"""Maintained counts of live servers and bots per account, status and creation month.

``InstanceCount`` rows are written by the triggers below and by compaction only. The triggers
are installed by migration 0007 and again after every ``migrate`` (``install_count_triggers``
replaces them): SQLite rebuilds a table to alter it, dropping its triggers, and a later
migration of ``servers_server`` must not silently stop the counting.

The month (of ``created_at``, UTC) lets a deep page of the newest-first list start at the right
month instead of skipping every newer row (``month_boundary``).
"""

import datetime

from django.db import connection, transaction

from servers.models import InstanceCount

TABLES = {"server": "servers_server", "bot": "servers_bot"}
COUNTS = "servers_instancecount"  # InstanceCount._meta.db_table, written out in the SQL

_POSTGRES_FUNCTION = """
CREATE OR REPLACE FUNCTION servers_count_instances() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL AND NEW.deleted_at IS NULL
       AND OLD.status = NEW.status AND OLD.account_id = NEW.account_id
       AND OLD.created_at = NEW.created_at THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        INSERT INTO servers_instancecount (account_id, kind, status, month, delta)
        VALUES (OLD.account_id, TG_ARGV[0], OLD.status,
                date_trunc('month', OLD.created_at AT TIME ZONE 'UTC')::date, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        INSERT INTO servers_instancecount (account_id, kind, status, month, delta)
        VALUES (NEW.account_id, TG_ARGV[0], NEW.status,
                date_trunc('month', NEW.created_at AT TIME ZONE 'UTC')::date, 1);
    END IF;
    RETURN NULL;
END
$$;
"""
# The month of created_at, in SQL, per database (SQLite keeps UTC timestamps as text).
_MONTH = {
    "postgresql": "date_trunc('month', {column} AT TIME ZONE 'UTC')::date",
    "sqlite": "date({column}, 'start of month')",
}
_WATCHED = "status, deleted_at, account_id, created_at"


def _postgres_statements() -> list[str]:
    statements = [_POSTGRES_FUNCTION]
    for kind, table in TABLES.items():
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_count ON {table}",
            f"CREATE TRIGGER {table}_count AFTER INSERT OR DELETE OR UPDATE OF {_WATCHED} "
            f"ON {table} FOR EACH ROW EXECUTE FUNCTION servers_count_instances('{kind}')",
        ]
    return statements


def _sqlite_statements() -> list[str]:
    statements = []
    for kind, table in TABLES.items():
        add = f"INSERT INTO {COUNTS} (account_id, kind, status, month, delta) SELECT"
        old, new = (
            f"{row}.account_id, '{kind}', {row}.status, "
            + _MONTH["sqlite"].format(column=f"{row}.created_at")
            for row in ("OLD", "NEW")
        )
        unchanged = (
            "OLD.deleted_at IS NULL AND NEW.deleted_at IS NULL AND OLD.status = NEW.status "
            "AND OLD.account_id = NEW.account_id AND OLD.created_at = NEW.created_at"
        )
        for event in ("insert", "delete", "update"):
            statements.append(f"DROP TRIGGER IF EXISTS {table}_count_{event}")
        statements += [
            f"CREATE TRIGGER {table}_count_insert AFTER INSERT ON {table} "
            f"WHEN NEW.deleted_at IS NULL BEGIN {add} {new}, 1; END",
            f"CREATE TRIGGER {table}_count_delete AFTER DELETE ON {table} "
            f"WHEN OLD.deleted_at IS NULL BEGIN {add} {old}, -1; END",
            f"CREATE TRIGGER {table}_count_update AFTER UPDATE OF {_WATCHED} ON {table} "
            f"WHEN NOT ({unchanged}) BEGIN "
            f"{add} {old}, -1 WHERE OLD.deleted_at IS NULL; "
            f"{add} {new}, 1 WHERE NEW.deleted_at IS NULL; END",
        ]
    return statements


def install_count_triggers(using_connection=None) -> None:
    """Create (or replace) the counting triggers on the servers and bots tables."""
    conn = using_connection or connection
    if conn.vendor == "postgresql":
        statements = _postgres_statements()
    elif conn.vendor == "sqlite":
        statements = _sqlite_statements()
    else:  # pragma: no cover - the service runs on PostgreSQL or SQLite only
        raise NotImplementedError(f"No counting triggers for {conn.vendor}.")
    with conn.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def instance_counts_rebuild(using_connection=None) -> None:
    """Recount every account from the tables themselves (after a bulk load without triggers).

    The counted tables are locked against writes meanwhile (PostgreSQL; SQLite's transaction
    holds its only write lock): a server created between the delete and the recount would
    otherwise be counted twice.
    """
    conn = using_connection or connection
    with transaction.atomic(using=conn.alias), conn.cursor() as cursor:
        if conn.vendor == "postgresql":
            cursor.execute(f"LOCK TABLE {', '.join(TABLES.values())} IN SHARE MODE")
        cursor.execute("DELETE FROM servers_instancecount")
        for kind, table in TABLES.items():
            # The table names come from TABLES, never from input.
            month = _MONTH[conn.vendor].format(column="created_at")
            recount = (
                "INSERT INTO servers_instancecount (account_id, kind, status, month, delta) "  # noqa: S608
                f"SELECT account_id, %s, status, {month}, count(*) FROM {table} "
                f"WHERE deleted_at IS NULL GROUP BY account_id, status, {month}"
            )
            cursor.execute(recount, [kind])


_POSTGRES_COMPACT = """
WITH folded AS (
    DELETE FROM servers_instancecount c
    USING (
        SELECT account_id, kind, status, month FROM servers_instancecount
        GROUP BY account_id, kind, status, month HAVING count(*) > 1
    ) many
    WHERE c.account_id = many.account_id AND c.kind = many.kind AND c.status = many.status
      AND c.month = many.month
    RETURNING c.account_id, c.kind, c.status, c.month, c.delta
)
INSERT INTO servers_instancecount (account_id, kind, status, month, delta)
SELECT account_id, kind, status, month, sum(delta) FROM folded
GROUP BY account_id, kind, status, month HAVING sum(delta) <> 0
"""


def instance_counts_compact() -> int:
    """Fold the change rows of each (account, kind, status, month) into one; returns the rows
    removed.

    On PostgreSQL one statement: it deletes exactly the rows it sums, so changes committed
    meanwhile stay untouched and the totals never move. On SQLite the transaction holds the
    database's only write lock, so nothing changes meanwhile.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        before = InstanceCount.objects.count()
        if connection.vendor == "postgresql":
            cursor.execute(_POSTGRES_COMPACT)
        else:
            cursor.execute(
                "CREATE TEMP TABLE folded AS SELECT account_id, kind, status, month, "
                "sum(delta) AS delta FROM servers_instancecount "
                "GROUP BY account_id, kind, status, month HAVING count(*) > 1"
            )
            cursor.execute(
                "DELETE FROM servers_instancecount WHERE (account_id, kind, status, month) IN "
                "(SELECT account_id, kind, status, month FROM folded)"
            )
            cursor.execute(
                "INSERT INTO servers_instancecount (account_id, kind, status, month, delta) "
                "SELECT account_id, kind, status, month, delta FROM folded WHERE delta <> 0"
            )
            cursor.execute("DROP TABLE folded")
        return before - InstanceCount.objects.count()


def _where(account_id: str, kind: str, statuses) -> tuple[str, list]:
    sql = "WHERE account_id = %s AND kind = %s"
    params = [account_id, kind]
    if statuses:
        sql += f" AND status IN ({', '.join(['%s'] * len(statuses))})"
        params += list(statuses)
    return sql, params


def live_instance_count(*, account_id: str, kind: str, statuses=None) -> int:
    """How many live servers (or bots) the account has, in any of ``statuses`` if given.

    Plain SQL: it runs on every list request, and building it with the ORM costs more than
    running it (an index-only sum over a few rows).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            *live_instance_count_sql(account_id=account_id, kind=kind, statuses=statuses)
        )
        return int(cursor.fetchone()[0])


def live_instance_count_sql(*, account_id: str, kind: str, statuses=None) -> tuple[str, list]:
    """``live_instance_count``'s SQL and values (a list reads its page and this total in one
    statement: hosting/api/pagination.py)."""
    where, params = _where(account_id, kind, statuses)
    return f"SELECT coalesce(sum(delta), 0) FROM {COUNTS} {where}", params  # noqa: S608


def live_instance_months(*, account_id: str, kind: str, statuses=None) -> list[tuple]:
    """``(month, count)`` of the account's live servers (or bots), newest month first."""
    where, params = _where(account_id, kind, statuses)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT month, sum(delta) FROM {COUNTS} {where} "  # noqa: S608
            "GROUP BY month HAVING sum(delta) <> 0 ORDER BY month DESC",
            params,
        )
        rows = cursor.fetchall()
    return [
        (month if isinstance(month, datetime.date) else datetime.date.fromisoformat(month), int(n))
        for month, n in rows
    ]


def month_boundary(months: list[tuple], offset: int) -> tuple[datetime.datetime, int] | None:
    """Where row ``offset`` of a newest-first list lies: ``(before, skip)`` means it is row
    ``skip`` among the rows created before ``before`` (the start of the month after its own);
    None when the list is shorter."""
    newer = 0
    for month, count in months:
        if offset < newer + count:
            following = (month.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
            before = datetime.datetime.combine(following, datetime.time(), tzinfo=datetime.UTC)
            return before, offset - newer
        newer += count
    return None

"""Maintained counts of live servers and bots per account and status (``InstanceCount``).

The triggers are the only writers of ``servers_instancecount`` besides compaction. They are
installed by migration 0007 and again after every ``migrate`` (``install_count_triggers`` is
idempotent): SQLite rebuilds a table to alter it, dropping its triggers, and a later migration
of ``servers_server`` must not silently stop the counting.
"""

from django.db import connection, transaction

from servers.models import InstanceCount

TABLES = {"server": "servers_server", "bot": "servers_bot"}
COUNTS = "servers_instancecount"  # InstanceCount._meta.db_table, written out in the SQL

_POSTGRES_FUNCTION = """
CREATE OR REPLACE FUNCTION servers_count_instances() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL AND NEW.deleted_at IS NULL
       AND OLD.status = NEW.status AND OLD.account_id = NEW.account_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        INSERT INTO servers_instancecount (account_id, kind, status, delta)
        VALUES (OLD.account_id, TG_ARGV[0], OLD.status, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        INSERT INTO servers_instancecount (account_id, kind, status, delta)
        VALUES (NEW.account_id, TG_ARGV[0], NEW.status, 1);
    END IF;
    RETURN NULL;
END
$$;
"""


def _postgres_statements() -> list[str]:
    statements = [_POSTGRES_FUNCTION]
    for kind, table in TABLES.items():
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_count ON {table}",
            f"CREATE TRIGGER {table}_count AFTER INSERT OR DELETE OR UPDATE OF status, "
            f"deleted_at, account_id ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION servers_count_instances('{kind}')",
        ]
    return statements


def _sqlite_statements() -> list[str]:
    statements = []
    for kind, table in TABLES.items():
        add = f"INSERT INTO {COUNTS} (account_id, kind, status, delta) SELECT"
        statements += [
            f"CREATE TRIGGER IF NOT EXISTS {table}_count_insert AFTER INSERT ON {table} "
            f"WHEN NEW.deleted_at IS NULL BEGIN "
            f"{add} NEW.account_id, '{kind}', NEW.status, 1; END",
            f"CREATE TRIGGER IF NOT EXISTS {table}_count_delete AFTER DELETE ON {table} "
            f"WHEN OLD.deleted_at IS NULL BEGIN "
            f"{add} OLD.account_id, '{kind}', OLD.status, -1; END",
            f"CREATE TRIGGER IF NOT EXISTS {table}_count_update "
            f"AFTER UPDATE OF status, deleted_at, account_id ON {table} "
            f"WHEN NOT (OLD.deleted_at IS NULL AND NEW.deleted_at IS NULL "
            f"AND OLD.status = NEW.status AND OLD.account_id = NEW.account_id) BEGIN "
            f"{add} OLD.account_id, '{kind}', OLD.status, -1 WHERE OLD.deleted_at IS NULL; "
            f"{add} NEW.account_id, '{kind}', NEW.status, 1 WHERE NEW.deleted_at IS NULL; END",
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
            recount = (
                "INSERT INTO servers_instancecount (account_id, kind, status, delta) "  # noqa: S608
                f"SELECT account_id, %s, status, count(*) FROM {table} "
                "WHERE deleted_at IS NULL GROUP BY account_id, status"
            )
            cursor.execute(recount, [kind])


_POSTGRES_COMPACT = """
WITH folded AS (
    DELETE FROM servers_instancecount c
    USING (
        SELECT account_id, kind, status FROM servers_instancecount
        GROUP BY account_id, kind, status HAVING count(*) > 1
    ) many
    WHERE c.account_id = many.account_id AND c.kind = many.kind AND c.status = many.status
    RETURNING c.account_id, c.kind, c.status, c.delta
)
INSERT INTO servers_instancecount (account_id, kind, status, delta)
SELECT account_id, kind, status, sum(delta) FROM folded
GROUP BY account_id, kind, status HAVING sum(delta) <> 0
"""


def instance_counts_compact() -> int:
    """Fold each (account, kind, status)'s change rows into one; returns the rows removed.

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
                "CREATE TEMP TABLE folded AS SELECT account_id, kind, status, "
                "sum(delta) AS delta FROM servers_instancecount GROUP BY account_id, kind, status "
                "HAVING count(*) > 1"
            )
            cursor.execute(
                "DELETE FROM servers_instancecount WHERE (account_id, kind, status) IN "
                "(SELECT account_id, kind, status FROM folded)"
            )
            cursor.execute(
                "INSERT INTO servers_instancecount (account_id, kind, status, delta) "
                "SELECT account_id, kind, status, delta FROM folded WHERE delta <> 0"
            )
            cursor.execute("DROP TABLE folded")
        return before - InstanceCount.objects.count()


def live_instance_count(*, account_id: str, kind: str, statuses=None) -> int:
    """How many live servers (or bots) the account has, in any of ``statuses`` if given.

    Plain SQL: it runs on every list request, and building it with the ORM costs more than
    running it (an index-only sum over a handful of rows).
    """
    sql = (
        "SELECT coalesce(sum(delta), 0) FROM servers_instancecount "
        "WHERE account_id = %s AND kind = %s"
    )
    params = [account_id, kind]
    if statuses:
        sql += f" AND status IN ({', '.join(['%s'] * len(statuses))})"
        params += list(statuses)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])

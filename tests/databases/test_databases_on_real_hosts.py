"""Databases made on the REAL MariaDB and PostgreSQL of the machine (and of CI): the user
connects with its password and works in its database, cannot see nor touch another customer's,
a rotation makes the old password fail, a delete drops both, a failure midway leaves nothing,
and a deleted server's databases are dropped after the grace period.

PostgreSQL here trusts 127.0.0.1 (pg_hba.conf's ``trust``), so it never asks for a password:
its tests read the user's SCRAM verifier from ``pg_authid`` and check the password against it,
by RFC 7677's own computation, written out here apart from the service's.
"""

import base64
import hashlib
import hmac
from datetime import timedelta

import psycopg
import pymysql
import pytest
from django.utils import timezone

from accounts.actors import SYSTEM
from databases import upkeep
from databases.models import DatabaseEngine, ServerDatabase
from databases.services import (
    DatabaseHostUnavailable,
    DatabaseLimitReached,
    NoDatabaseHost,
    database_create,
    database_delete,
    database_host_check,
    database_password_rotate,
    databases_drop_deleted,
)
from events.models import Event
from hosting.errors import ValidationFailed
from hosting.housekeeping import upkeep_steps
from servers.models import Region, Server
from tests.agent.harness import free_port
from tests.databases.conftest import MARIADB, POSTGRESQL, host_of, mariadb_admin, postgresql_admin
from tests.factories import AccountFactory, BotFactory, ServerFactory

pytestmark = pytest.mark.django_db

# Access denied: to a database, for a user, to a table; a global right (CREATE USER) missing.
MARIADB_DENIED = (1044, 1045, 1142, 1227)


def mariadb_as(
    database: ServerDatabase, password: str, *, inside: bool = False
) -> pymysql.Connection:
    return pymysql.connect(
        host=MARIADB["host"],
        port=MARIADB["port"],
        user=database.username,
        password=password,
        autocommit=True,
        database=database.db_name if inside else None,
    )


def postgresql_as(database: ServerDatabase, dbname: str | None = None) -> psycopg.Connection:
    return psycopg.connect(
        host=POSTGRESQL["host"],
        port=POSTGRESQL["port"],
        user=database.username,
        dbname=dbname or database.db_name,
        autocommit=True,
    )


def postgresql_password_matches(username: str, password: str) -> bool:
    with postgresql_admin() as admin:
        (verifier,) = admin.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = %s", (username,)
        ).fetchone()
    method, rest = verifier.split("$", 1)
    assert method == "SCRAM-SHA-256"
    iterations_salt, keys = rest.split("$")
    iterations, salt = iterations_salt.split(":")
    stored_key = keys.split(":")[0]
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(salt), int(iterations)
    )
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return base64.b64encode(hashlib.sha256(client_key).digest()).decode() == stored_key


def on_mariadb(database: ServerDatabase) -> tuple[bool, list[tuple[str, str]]]:
    """Whether the database exists on the MariaDB host, and its user's (user, host) rows."""
    with mariadb_admin() as admin, admin.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
            (database.db_name,),
        )
        exists = cursor.fetchone() is not None
        cursor.execute("SELECT user, host FROM mysql.user WHERE user = %s", (database.username,))
        return exists, list(cursor.fetchall())


def on_postgresql(database: ServerDatabase) -> tuple[bool, bool]:
    with postgresql_admin() as admin:
        exists = admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database.db_name,)
        ).fetchone()
        role = admin.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", (database.username,)
        ).fetchone()
    return exists is not None, role is not None


@pytest.fixture
def server(account):
    return ServerFactory(account=account)


# --- MariaDB --------------------------------------------------------------------------------


def test_a_mariadb_user_works_in_its_database_with_its_password(mariadb_host, server, owner):
    database, password = database_create(instance=server, name="main", actor=SYSTEM)
    assert len(password) >= 24
    assert database.host == mariadb_host
    assert database.db_name == f"s{server.pk[4:12].lower()}_main"
    assert len(database.username) <= 32
    connection = mariadb_as(database, password, inside=True)
    with connection, connection.cursor() as cursor:
        cursor.execute("CREATE TABLE players (id INT PRIMARY KEY, name VARCHAR(32))")
        cursor.execute("INSERT INTO players VALUES (1, 'Steve')")
        cursor.execute("SELECT name FROM players")
        assert cursor.fetchall() == (("Steve",),)
    with pytest.raises(pymysql.err.OperationalError) as refused:
        mariadb_as(database, "not-the-password")
    assert refused.value.args[0] == 1045
    assert on_mariadb(database) == (True, [(database.username, "%")])
    event = Event.objects.get(type="database.created")
    assert event.related_id == server.pk
    assert password not in str(event.data)


def test_a_mariadb_user_cannot_see_nor_touch_another_customers_database(mariadb_host, server):
    mine, my_password = database_create(instance=server, name="main", actor=SYSTEM)
    neighbour = ServerFactory(account=AccountFactory())
    theirs, _ = database_create(instance=neighbour, name="main", actor=SYSTEM)
    with mariadb_as(mine, my_password) as connection, connection.cursor() as cursor:
        cursor.execute("SHOW DATABASES")
        seen = {name for (name,) in cursor.fetchall()}
        assert mine.db_name in seen
        assert theirs.db_name not in seen
        for statement in (
            f"USE `{theirs.db_name}`",
            f"CREATE TABLE `{theirs.db_name}`.t (id INT)",
            f"DROP DATABASE `{theirs.db_name}`",
            # `_` is a wildcard in a GRANT's database name: the grant escapes it, so a name that
            # the unescaped grant would match stays out of reach.
            f"CREATE DATABASE `{mine.db_name.replace('_', 'x')}`",
            "CREATE DATABASE another",
            "CREATE USER 'sneaky'@'%'",
        ):
            with pytest.raises(pymysql.err.OperationalError) as refused:
                cursor.execute(statement)
            assert refused.value.args[0] in MARIADB_DENIED, statement
    assert on_mariadb(theirs)[0]


def test_a_mariadb_users_host_part_is_the_remote_asked_for(mariadb_host, server):
    database, password = database_create(
        instance=server, name="web", actor=SYSTEM, remote="203.0.113.%"
    )
    assert on_mariadb(database) == (True, [(database.username, "203.0.113.%")])
    # From 127.0.0.1 the user does not exist: access denied (1045, or 1698 when MariaDB
    # answers for a user it has no matching host for).
    with pytest.raises(pymysql.err.OperationalError) as refused:
        mariadb_as(database, password)
    assert refused.value.args[0] in (1045, 1698)


@pytest.mark.parametrize(
    "remote",
    ["localhost", "10.0.0.0/8", "300.1.%", "%.example.com", "1.2.3.4'; DROP USER root; --", ""],
)
def test_a_bad_remote_is_refused_before_anything_is_made(mariadb_host, server, remote):
    if remote == "":
        database, _ = database_create(instance=server, name="main", actor=SYSTEM, remote=remote)
        assert database.remote == "%"
        return
    with pytest.raises(ValidationFailed) as refused:
        database_create(instance=server, name="main", actor=SYSTEM, remote=remote)
    assert refused.value.details["fields"][0]["name"] == "remote"
    assert not ServerDatabase.objects.exists()


@pytest.mark.parametrize("name", ["Main", "1db", "a" * 21, "my-db", "db`; DROP", "", "é"])
def test_a_bad_name_is_refused(mariadb_host, server, name):
    with pytest.raises(ValidationFailed) as refused:
        database_create(instance=server, name=name, actor=SYSTEM)
    assert refused.value.details["fields"][0] == {
        "name": "name",
        "code": "invalid",
        "message": "A name is 1 to 20 lowercase letters, digits and underscores, a letter first.",
    }


def test_a_mariadb_rotation_makes_the_old_password_fail(mariadb_host, server):
    database, old = database_create(instance=server, name="main", actor=SYSTEM)
    database, new = database_password_rotate(database=database, actor=SYSTEM)
    assert new != old and len(new) >= 24
    with pytest.raises(pymysql.err.OperationalError) as refused:
        mariadb_as(database, old)
    assert refused.value.args[0] == 1045
    mariadb_as(database, new, inside=True).close()
    database.refresh_from_db()
    assert database.password_rotated_at is not None
    assert Event.objects.filter(type="database.password_rotated").count() == 1


def test_a_mariadb_delete_drops_the_database_and_the_user(mariadb_host, server):
    database, _ = database_create(instance=server, name="main", actor=SYSTEM)
    database_delete(database=database, actor=SYSTEM)
    assert on_mariadb(database) == (False, [])
    assert not ServerDatabase.objects.exists()
    assert Event.objects.get(type="database.deleted").data["object"]["deleted"] is True


def test_a_mariadb_failure_midway_leaves_nothing_and_spares_what_was_there(
    mariadb_host, server, monkeypatch
):
    """The user's CREATE fails (a user of that name is there already): the database made just
    before is dropped, the user that was there before stays, and no row is left."""
    taken = f"s{server.pk[4:12].lower()}_taken1"
    with mariadb_admin() as admin, admin.cursor() as cursor:
        cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY 'theirs-theirs-theirs'", (taken,))
    monkeypatch.setattr("databases.services._username", lambda instance: taken)
    with pytest.raises(DatabaseHostUnavailable) as refused:
        database_create(instance=server, name="main", actor=SYSTEM)
    assert refused.value.status == 503
    assert refused.value.code == "database_host_unavailable"
    assert not ServerDatabase.objects.exists()
    assert not Event.objects.filter(type="database.created").exists()
    gone = ServerDatabase(db_name=f"s{server.pk[4:12].lower()}_main", username=taken)
    assert on_mariadb(gone) == (False, [(taken, "%")])


# --- PostgreSQL -----------------------------------------------------------------------------


def test_a_postgresql_user_works_in_its_database(postgresql_host, server):
    database, password = database_create(
        instance=server, name="main", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
    )
    assert postgresql_password_matches(database.username, password)
    with postgresql_as(database) as connection:
        connection.execute("CREATE TABLE players (id int PRIMARY KEY, name text)")
        connection.execute("INSERT INTO players VALUES (1, 'Alex')")
        assert connection.execute("SELECT name FROM players").fetchall() == [("Alex",)]
    assert on_postgresql(database) == (True, True)


def test_a_postgresql_user_cannot_connect_to_another_customers_database(postgresql_host, server):
    mine, _ = database_create(
        instance=server, name="main", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
    )
    neighbour = ServerFactory(account=AccountFactory())
    theirs, _ = database_create(
        instance=neighbour, name="main", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
    )
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        postgresql_as(mine, dbname=theirs.db_name)
    with postgresql_as(mine) as connection:
        for statement in (
            f'DROP DATABASE "{theirs.db_name}"',
            "CREATE DATABASE another",
            "CREATE ROLE sneaky",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(statement)
    assert on_postgresql(theirs) == (True, True)


def test_a_postgresql_host_takes_only_the_remote_anywhere(postgresql_host, server):
    with pytest.raises(ValidationFailed) as refused:
        database_create(
            instance=server,
            name="main",
            actor=SYSTEM,
            engine=DatabaseEngine.POSTGRESQL,
            remote="203.0.113.7",
        )
    assert refused.value.details["fields"][0]["code"] == "unsupported"


def test_a_postgresql_rotation_replaces_the_password(postgresql_host, server):
    database, old = database_create(
        instance=server, name="main", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
    )
    database, new = database_password_rotate(database=database, actor=SYSTEM)
    assert postgresql_password_matches(database.username, new)
    assert not postgresql_password_matches(database.username, old)


def test_a_postgresql_delete_drops_both_even_with_a_session_open(postgresql_host, server):
    database, _ = database_create(
        instance=server, name="main", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
    )
    session = postgresql_as(database)
    database_delete(database=database, actor=SYSTEM)
    assert on_postgresql(database) == (False, False)
    session.close()


def test_a_postgresql_failure_midway_leaves_nothing(postgresql_host, server):
    """CREATE DATABASE fails (one of that name is there): the role made just before is
    dropped, the database that was there stays, no row."""
    db_name = f"s{server.pk[4:12].lower()}_main"
    with postgresql_admin() as admin:
        admin.execute(f'CREATE DATABASE "{db_name}"')
    with pytest.raises(DatabaseHostUnavailable):
        database_create(
            instance=server, name="main", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
        )
    assert not ServerDatabase.objects.exists()
    with postgresql_admin() as admin:
        assert admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db_name,)).fetchone()
        prefix = f"s{server.pk[4:12].lower()}\\_%"
        assert not admin.execute(
            "SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (prefix,)
        ).fetchall()


# --- Hosts, limits, the grace period --------------------------------------------------------


def test_the_test_connection_answers_the_version_or_503(mariadb_host, postgresql_host):
    assert "MariaDB" in database_host_check(mariadb_host)
    assert "PostgreSQL" in database_host_check(postgresql_host)
    wrong = host_of(DatabaseEngine.MARIADB, name="wrong", admin_password="not-roots-password")
    with pytest.raises(DatabaseHostUnavailable) as refused:
        database_host_check(wrong)
    assert "not-roots-password" not in refused.value.message


def test_a_host_that_does_not_answer_is_503_and_no_row(db, server):
    host_of(DatabaseEngine.MARIADB, port=free_port())
    with pytest.raises(DatabaseHostUnavailable):
        database_create(instance=server, name="main", actor=SYSTEM)
    assert not ServerDatabase.objects.exists()


def test_the_plan_limits_the_databases(mariadb_host, server, settings):
    database_create(instance=server, name="main", actor=SYSTEM)
    with pytest.raises(DatabaseLimitReached) as refused:
        database_create(instance=server, name="second", actor=SYSTEM)
    assert refused.value.details == {"limit": 1}
    server.plan = {"database_limit": 2}
    server.save()
    database_create(instance=server, name="second", actor=SYSTEM)
    settings.DATABASE_DEFAULT_LIMIT = 0
    bot = BotFactory(account=server.account)
    with pytest.raises(DatabaseLimitReached):
        database_create(instance=bot, name="main", actor=SYSTEM)


def test_a_name_is_once_per_server(mariadb_host, server, settings):
    settings.DATABASE_DEFAULT_LIMIT = 3
    database_create(instance=server, name="main", actor=SYSTEM)
    with pytest.raises(ValidationFailed) as refused:
        database_create(instance=server, name="main", actor=SYSTEM)
    assert refused.value.details["fields"][0]["code"] == "unique"


def test_the_least_used_host_serving_the_region_is_chosen(db, server, settings):
    settings.DATABASE_DEFAULT_LIMIT = 5
    busy = host_of(DatabaseEngine.MARIADB, name="busy")
    quiet = host_of(DatabaseEngine.MARIADB, name="quiet")
    host_of(DatabaseEngine.MARIADB, name="inactive", active=False)
    host_of(
        DatabaseEngine.MARIADB,
        name="elsewhere",
        region=Region.objects.create(slug="far", name="Far", location="Far"),
    )
    other = ServerFactory(account=server.account)
    database_create(instance=other, name="a", actor=SYSTEM)  # on busy (made first)
    first, _ = database_create(instance=server, name="a", actor=SYSTEM)
    assert first.host == quiet
    second, _ = database_create(instance=server, name="b", actor=SYSTEM)
    assert {second.host, first.host} == {busy, quiet}


def test_no_host_of_the_engine_is_409(mariadb_host, server):
    with pytest.raises(NoDatabaseHost) as refused:
        database_create(instance=server, name="main", actor=SYSTEM, engine="postgresql")
    assert refused.value.code == "no_database_host"
    mariadb_host.max_databases = 0
    mariadb_host.save()
    with pytest.raises(NoDatabaseHost):
        database_create(instance=server, name="main", actor=SYSTEM)


def test_a_deleted_servers_databases_are_dropped_after_the_grace_period(
    mariadb_host, postgresql_host, server, settings
):
    settings.DATABASE_DROP_GRACE_HOURS = 24
    settings.DATABASE_DEFAULT_LIMIT = 2
    on_maria, _ = database_create(instance=server, name="main", actor=SYSTEM)
    on_pg, _ = database_create(
        instance=server, name="stats", actor=SYSTEM, engine=DatabaseEngine.POSTGRESQL
    )
    recent = ServerFactory(account=server.account)
    kept, _ = database_create(instance=recent, name="main", actor=SYSTEM)
    now = timezone.now()
    Server.objects.filter(pk=server.pk).update(deleted_at=now - timedelta(hours=25))
    Server.objects.filter(pk=recent.pk).update(deleted_at=now - timedelta(hours=23))
    assert "databases" in [label for label, _ in upkeep_steps()]
    assert upkeep.run() == {"deleted instances' databases dropped": 2}
    assert on_mariadb(on_maria) == (False, [])
    assert on_postgresql(on_pg) == (False, False)
    assert list(ServerDatabase.objects.all()) == [kept]
    assert on_mariadb(kept)[0]
    assert Event.objects.filter(type="database.deleted", actor_user=None).count() == 2
    assert databases_drop_deleted(now=now + timedelta(hours=2)) == 1
    assert on_mariadb(kept) == (False, [])

"""Fixtures of the databases' tests: hosts registered as staff would, pointing at the REAL
MariaDB (127.0.0.1:3306, root) and PostgreSQL (127.0.0.1:5432, postgres) of the machine and of
CI, and a clean-up that drops every database and user a test made there.

Names on the hosts begin with the short id of a server or bot (random for each test), so the
five pytest processes CI runs at once against the same two servers never meet; the clean-up
drops exactly what begins with the short ids of the test's own servers and bots.
"""

import os

import psycopg
import pymysql
import pytest
from psycopg import sql

from databases.models import DatabaseEngine
from databases.services import _short_id, database_host_create
from servers.models import Bot, Server

MARIADB = {
    "host": os.environ.get("TEST_MARIADB_HOST", "127.0.0.1"),
    "port": int(os.environ.get("TEST_MARIADB_PORT", "3306")),
    "user": os.environ.get("TEST_MARIADB_USER", "root"),
    "password": os.environ.get("TEST_MARIADB_PASSWORD", ""),
}
POSTGRESQL = {
    "host": os.environ.get("TEST_POSTGRESQL_HOST", "127.0.0.1"),
    "port": int(os.environ.get("TEST_POSTGRESQL_PORT", "5432")),
    "user": os.environ.get("TEST_POSTGRESQL_USER", "postgres"),
    "password": os.environ.get("TEST_POSTGRESQL_PASSWORD", ""),
}


def mariadb_admin() -> pymysql.Connection:
    return pymysql.connect(**MARIADB, autocommit=True)


def postgresql_admin(dbname: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(**POSTGRESQL, dbname=dbname, autocommit=True)


def host_of(engine: str, **kwargs):
    where = MARIADB if engine == DatabaseEngine.MARIADB else POSTGRESQL
    return database_host_create(
        engine=engine,
        name=kwargs.pop("name", f"{engine} 1"),
        host=where["host"],
        port=kwargs.pop("port", where["port"]),
        admin_user=where["user"],
        admin_password=kwargs.pop("admin_password", where["password"]),
        **kwargs,
    )


@pytest.fixture
def mariadb_host(db):
    return host_of(DatabaseEngine.MARIADB, public_host="db1.example.net")


@pytest.fixture
def postgresql_host(db):
    return host_of(DatabaseEngine.POSTGRESQL)


def _drop_everything_of(prefixes: list[str]) -> None:
    with mariadb_admin() as connection, connection.cursor() as cursor:
        for prefix in prefixes:
            pattern = prefix + r"\_%"
            cursor.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE %s",
                (pattern,),
            )
            for (name,) in cursor.fetchall():
                cursor.execute(f"DROP DATABASE `{name}`")
            cursor.execute("SELECT user, host FROM mysql.user WHERE user LIKE %s", (pattern,))
            for user, host in cursor.fetchall():
                cursor.execute("DROP USER %s@%s", (user, host))
    with postgresql_admin() as connection:
        for prefix in prefixes:
            pattern = prefix + r"\_%"
            for (name,) in connection.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,)
            ).fetchall():
                connection.execute(
                    sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
                )
            for (name,) in connection.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (pattern,)
            ).fetchall():
                connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.fixture(autouse=True)
def _drop_what_the_test_made(db):
    yield
    prefixes = [_short_id(instance) for model in (Server, Bot) for instance in model.objects.all()]
    if prefixes:
        _drop_everything_of(prefixes)

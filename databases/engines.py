"""The SQL each engine runs on a database host, and nothing else: a database, a user limited to
it, a new password, and dropping both.

Names reach the SQL only after ``IDENTIFIER`` has accepted them (they are generated, never typed
by a customer) and are then quoted by each driver's own rules: psycopg's ``sql.Identifier`` for
PostgreSQL, backticks for MariaDB/MySQL (which has no driver helper for identifiers). Values
(passwords, the user's host part) are always the driver's parameters or literals.

Every ``create`` undoes what it made when a later statement fails, so a host is left as it was.
"""

import base64
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pymysql
from psycopg import sql

logger = logging.getLogger(__name__)

# Generated names only: lowercase letters, digits and underscores, a letter first.
IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
# PostgreSQL keeps a SCRAM-SHA-256 verifier; computing it here means the password itself never
# reaches the host's statement log. 4096 is PostgreSQL's own default iteration count.
SCRAM_ITERATIONS = 4096


class EngineError(Exception):
    """The host could not be reached or refused a statement; ``str()`` is for the logs."""


def _checked(*names: str) -> None:
    for name in names:
        if not IDENTIFIER.fullmatch(name):
            raise ValueError(f"Not a generated identifier: {name!r}")


def _backticked(name: str) -> str:
    _checked(name)
    return f"`{name}`"


def _grant_pattern(name: str) -> str:
    """A database name in a MySQL ``GRANT … ON db.*``, where ``_`` and ``%`` are wildcards: an
    unescaped ``s1_main`` would also grant ``s1xmain``, which its user could then create."""
    _checked(name)
    return "`" + name.replace("_", r"\_") + "`"


def scram_verifier(password: str, *, salt: bytes | None = None) -> str:
    """PostgreSQL's ``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` (RFC 7677)."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return (
        f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{b64(salt)}$"
        f"{b64(hashlib.sha256(client_key).digest())}:{b64(server_key)}"
    )


@contextmanager
def admin_connection(
    engine: str, *, host: str, port: int, user: str, password: str, timeout: int
) -> Iterator[Any]:
    """An autocommit connection as the host's admin user; ``EngineError`` when it fails."""
    try:
        if engine == "mariadb":
            connection: Any = pymysql.connect(
                host=host,
                port=port,
                user=user,
                password=password,
                connect_timeout=timeout,
                read_timeout=timeout * 6,
                write_timeout=timeout * 6,
                autocommit=True,
            )
        else:
            connection = psycopg.connect(
                host=host,
                port=port,
                user=user,
                password=password,
                dbname="postgres",
                connect_timeout=timeout,
                autocommit=True,
            )
    except (pymysql.MySQLError, psycopg.Error) as error:
        raise EngineError(str(error)) from error
    try:
        yield connection
    except (pymysql.MySQLError, psycopg.Error) as error:
        raise EngineError(str(error)) from error
    finally:
        connection.close()


def server_version(engine: str, connection: Any) -> str:
    """The host's version line (the admin's "test connection")."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        return str(cursor.fetchone()[0])


def create(
    engine: str, connection: Any, *, database: str, user: str, password: str, remote: str
) -> None:
    """The database, its user with ``password`` and every right on it alone. When a statement
    fails, what this call made is dropped again (and only that: a database or user of the same
    name that was there before is never touched)."""
    _checked(database, user)
    made: list[str] = []
    try:
        if engine == "mariadb":
            _mariadb_create(connection, database, user, password, remote, made)
        else:
            _postgresql_create(connection, database, user, password, made)
    except BaseException:
        try:
            _undo(engine, connection, made, database=database, user=user, remote=remote)
        except (pymysql.MySQLError, psycopg.Error) as error:
            logger.warning("Could not undo %s/%s: %s", database, user, error)
        raise


def _undo(
    engine: str, connection: Any, made: list[str], *, database: str, user: str, remote: str
) -> None:
    if engine == "mariadb":
        with connection.cursor() as cursor:
            if "database" in made:
                cursor.execute(f"DROP DATABASE IF EXISTS {_backticked(database)}")
            if "user" in made:
                cursor.execute("DROP USER IF EXISTS %s@%s", (user, remote))
    else:
        if "database" in made:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
            )
        if "user" in made:
            connection.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(user)))


def _mariadb_create(
    connection: Any, database: str, user: str, password: str, remote: str, made: list[str]
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {_backticked(database)}")
        made.append("database")
        cursor.execute("CREATE USER %s@%s IDENTIFIED BY %s", (user, remote, password))
        made.append("user")
        cursor.execute(
            f"GRANT ALL PRIVILEGES ON {_grant_pattern(database)}.* TO %s@%s", (user, remote)
        )


def _postgresql_create(
    connection: Any, database: str, user: str, password: str, made: list[str]
) -> None:
    db, role = sql.Identifier(database), sql.Identifier(user)
    verifier = sql.Literal(scram_verifier(password))
    connection.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, verifier))
    made.append("user")
    connection.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(db, role))
    made.append("database")
    # Every role may connect to a new database (PUBLIC's CONNECT and TEMPORARY): not to ours.
    connection.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))


def set_password(engine: str, connection: Any, *, user: str, password: str, remote: str) -> None:
    """A new password for the user; the old one stops working at once."""
    _checked(user)
    if engine == "mariadb":
        with connection.cursor() as cursor:
            cursor.execute("ALTER USER %s@%s IDENTIFIED BY %s", (user, remote, password))
    else:
        connection.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(user), sql.Literal(scram_verifier(password))
            )
        )


def drop(engine: str, connection: Any, *, database: str, user: str, remote: str) -> None:
    """Drop the database and its user; whichever is already gone is skipped. PostgreSQL ends
    the database's open sessions first (``WITH (FORCE)``), as it refuses to drop one in use."""
    _checked(database, user)
    _undo(engine, connection, ["database", "user"], database=database, user=user, remote=remote)

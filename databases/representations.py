"""A database's public representation: what the API shows and what its events carry."""

from typing import Any

from databases.models import DatabaseEngine, ServerDatabase
from hosting.representations import timestamp


def database_representation(database: ServerDatabase) -> dict[str, Any]:
    """Where and as whom to connect, never the password (shown once, by the answer that set
    it): ``url`` and ``jdbc_url`` carry the user but no password."""
    host = database.host
    mariadb = host.engine == DatabaseEngine.MARIADB
    where = f"{host.address}:{host.port}/{database.db_name}"
    return {
        "id": database.id,
        "name": database.name,
        "target": {"type": "server" if database.server_id else "bot", "id": database.instance_id},
        "engine": host.engine,
        "host": host.address,
        "port": host.port,
        "database": database.db_name,
        "username": database.username,
        "remote": database.remote,
        "url": f"{'mysql' if mariadb else 'postgresql'}://{database.username}@{where}",
        "jdbc_url": f"jdbc:{'mariadb' if mariadb else 'postgresql'}://{where}"
        f"?user={database.username}",
        "created_at": timestamp(database.created_at),
        "password_rotated_at": timestamp(database.password_rotated_at),
    }

"""A database's public representation: what the API shows and what its events carry."""

from typing import Any

from databases.models import DatabaseEngine, DatabaseHost, ServerDatabase
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


def database_host_representation(database_host: DatabaseHost) -> dict[str, Any]:
    """A database host as staff see it (the admin API and its staff events): never the admin
    password, which is write-only."""
    return {
        "id": database_host.id,
        "name": database_host.name,
        "engine": database_host.engine,
        "host": database_host.host,
        "port": database_host.port,
        "public_host": database_host.public_host,
        "admin_user": database_host.admin_user,
        "region": database_host.region_id,
        "nodes": sorted(node.pk for node in database_host.nodes.all()) if database_host.pk else [],
        "max_databases": database_host.max_databases,
        "active": database_host.active,
        "created_at": timestamp(database_host.created_at),
    }

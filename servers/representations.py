"""The public representations of servers, bots, actions, backups and sub-users' grants.

What the API shows and what events carry (``data.object``), defined once (hosting/representations).
"""

from typing import Any

from hosting.representations import json_copy, timestamp
from servers.models import Action, Backup, Bot, Game, Instance, Server, ServerGrant


def resources_representation(instance: Instance) -> dict[str, int]:
    """``resources`` is one object in the contract, stored as three columns."""
    return {
        "memory_mb": instance.memory_mb,
        "cpu_percent": instance.cpu_percent,
        "disk_mb": instance.disk_mb,
    }


def server_summary_representation(server: Server) -> dict[str, Any]:
    """The Server object of the seed, as lists show it: id, name, game, status, created_at."""
    return {
        "id": server.id,
        "name": server.name,
        "game": server.game_id,
        "status": server.status,
        "created_at": timestamp(server.created_at),
    }


def shown_variables(server: Server) -> dict[str, Any]:
    """The server's variables but those its game keeps from customers (``visible: false``)."""
    hidden = {
        definition["key"]
        for definition in server.game.variables
        if definition.get("visible", True) is False
    }
    return {key: json_copy(value) for key, value in server.variables.items() if key not in hidden}


def server_representation(server: Server) -> dict[str, Any]:
    """A server as ``GET /v1/servers/{id}`` shows it, and as events carry it."""
    summary = server_summary_representation(server)
    return {
        **summary,
        "region": server.region_id,
        "address": server.address,
        "resources": resources_representation(server),
        "variables": shown_variables(server),
        "auto_restart": server.auto_restart,
        "restart_when_not_responding": server.restart_when_not_responding,
        "start_on_install": server.start_on_install,
        "status_reason": server.status_reason,
        "suspended_reason": server.suspended_reason,
        "updated_at": timestamp(server.updated_at),
    }


def bot_source_representation(bot: Bot) -> dict[str, str] | None:
    if bot.source_type == "upload":
        archive = bot.source_archive  # the file, or its stored name (a list's record)
        name = archive if isinstance(archive, str) else archive.name
        return {"type": "upload", "name": name.rsplit("/", 1)[-1]}
    if not bot.source_url:
        return None
    source = {"type": bot.source_type, "url": bot.source_url}
    return source | ({"ref": bot.source_ref} if bot.source_ref else {})


def bot_representation(bot: Bot) -> dict[str, Any]:
    """A Discord bot; its token is never shown, only ``token_last4``."""
    return {
        "id": bot.id,
        "name": bot.name,
        "runtime": bot.runtime,
        "status": bot.status,
        "region": bot.region_id,
        "start_command": bot.start_command,
        "environment": json_copy(bot.environment),
        "token_last4": bot.token_last4,
        "source": bot_source_representation(bot),
        "resources": resources_representation(bot),
        "auto_restart": bot.auto_restart,
        "status_reason": bot.status_reason,
        "suspended_reason": bot.suspended_reason,
        "created_at": timestamp(bot.created_at),
        "updated_at": timestamp(bot.updated_at),
    }


def instance_representation(instance: Instance) -> dict[str, Any]:
    """A server's or a bot's representation, whichever the instance is."""
    if isinstance(instance, Server):
        return server_representation(instance)
    return bot_representation(instance)


def action_representation(action: Action) -> dict[str, Any]:
    """An action with its target (``{"type": "server", "id": …}``) and its times."""
    return {
        "id": action.id,
        "type": action.type,
        "status": action.status,
        "error": action.error,
        "target": {"type": "server" if action.server_id else "bot", "id": action.target_id},
        "created_at": timestamp(action.created_at),
        "started_at": timestamp(action.started_at),
        "completed_at": timestamp(action.completed_at),
    }


def backup_representation(backup: Backup) -> dict[str, Any]:
    """A backup as the API shows it and its events carry it; its place in storage is never
    shown (a download address is asked for)."""
    return {
        "id": backup.id,
        "name": backup.name,
        "status": backup.status,
        "target": {"type": "server" if backup.server_id else "bot", "id": backup.instance_id},
        "size": backup.size,
        "checksum": backup.checksum or None,
        "files": backup.files,
        "locked": backup.locked,
        "ignore": list(backup.ignore),
        "storage": backup.storage_kind,
        "error": backup.error or None,
        "restore_status": backup.restore_status or None,
        "restore_error": backup.restore_error or None,
        "created_at": timestamp(backup.created_at),
        "completed_at": timestamp(backup.completed_at),
        "restored_at": timestamp(backup.restored_at),
    }


def grant_representation(grant: ServerGrant) -> dict[str, Any]:
    """A sub-user of a server or bot: who (a member, or an e-mail invited and not yet joined:
    ``status`` ``invited``) and their permissions there."""
    user = grant.user
    return {
        "id": grant.id,
        "target": {"type": "server" if grant.server_id else "bot", "id": grant.instance_id},
        "status": "active" if user is not None else "invited",
        "user_id": user.pk if user is not None else None,
        "email": user.email if user is not None else grant.invitation.email,
        "name": user.name if user is not None else "",
        "invitation_id": grant.invitation_id,
        "permissions": sorted(grant.permissions),
        "created_at": timestamp(grant.created_at),
        "updated_at": timestamp(grant.updated_at),
    }


def game_representation(game: Game) -> dict[str, Any]:
    """A game as the staff API shows it and its events carry it."""
    return {
        # Its slug is its id (the event log's object id).
        "id": game.slug,
        "slug": game.slug,
        "name": game.name,
        "default_port": game.default_port,
        "template": game.template,
        "variables": game.variables,
        "origin": game.origin or None,
    }

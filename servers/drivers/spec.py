"""What a node agent is told about a server or bot: its spec (agent/PROTOCOL.md).

The spec carries the bot's Discord token in clear, for the agent to pass in the process's
environment: it is built only on the way to an agent, never stored or logged.
"""

from typing import Any

from hosting.secrets_box import decrypt_secret
from servers.models import Bot, Instance, Server
from servers.models import ServerStatus as S
from servers.services.allocations import allocation_names, allocations_of, port_variable

# What a process may fork at most (cgroup pids.max or RLIMIT_NPROC).
PROCESS_LIMIT = 1024
BOT_TEMPLATE = {
    "install_script": "",
    "ready_pattern": "",  # a bot is up once its process is
    "stop_command": "",
    "stop_signal": "SIGTERM",
    "stop_timeout_seconds": 15,
    "ready_timeout_seconds": 30,
    "query": None,  # a bot answers no game query
    "install_shell": "sh",
    "config_files": [],
}
GAME_TEMPLATE_DEFAULTS = {
    "install_script": "",
    "ready_pattern": "",
    "stop_command": "",
    "stop_signal": "SIGTERM",
    "stop_timeout_seconds": 30,
    "ready_timeout_seconds": 120,
    "query": None,  # no game query (agent/query.py)
    "install_shell": "sh",  # an egg's may be bash
    "config_files": [],  # no configuration file edited before each start (agent/config_files.py)
}


def _allocation(address: str) -> dict[str, Any] | None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return None
    return {"ip": host.strip("[]"), "port": int(port)}


def _allocations(server: Server) -> list[dict[str, Any]]:
    """Every ``ip:port`` the server holds, its primary (named ``game``) first: the sandbox
    forwards exactly these, each in the protocol its named port is for (the game's port and
    unnamed ones in both)."""
    held = list(allocations_of(server))
    names = allocation_names(server, held)
    protocols = {
        port.get("name"): port.get("protocol", "both")
        for port in server.game.template.get("ports", [])
        if isinstance(port, dict)
    }
    return [
        {
            "ip": item.ip,
            "port": item.port,
            "name": names[item.pk],
            "protocol": protocols.get(names[item.pk], "both"),
        }
        for item in held
    ]


def instance_spec(instance: Instance) -> dict[str, Any]:
    limits = {
        "memory_mb": instance.memory_mb,
        "cpu_percent": instance.cpu_percent,
        "disk_mb": instance.disk_mb,
        "pids": PROCESS_LIMIT,
    }
    if isinstance(instance, Server):
        # backup_commands go in the backup call (servers.services.backups), not in the spec;
        # the named ports go as the allocations they were given to.
        template = GAME_TEMPLATE_DEFAULTS | {
            key: value
            for key, value in instance.game.template.items()
            if key not in ("backup_commands", "ports")
        }
        allocations = _allocations(instance)
        # A variable the game gained after the server's were saved (a catalogue sync, a staff
        # change) has its default until the server's variables are next changed: its {{KEY}}
        # never reaches the scripts unreplaced.
        defaults = {
            definition["key"]: definition["default"]
            for definition in instance.game.variables
            if isinstance(definition, dict) and "default" in definition
        }
        variables = {key: _text(value) for key, value in (defaults | instance.variables).items()}
        # Each named port is a variable of the scripts ({{PORT_QUERY}}) beside {{SERVER_PORT}}.
        variables |= {
            port_variable(item["name"]): str(item["port"])
            for item in allocations
            if item["name"] and item["name"] != "game"
        }
        return {
            "id": instance.id,
            "kind": "server",
            "template": template,
            "variables": variables,
            "environment": {},
            "limits": limits,
            "allocation": _allocation(instance.address),
            "allocations": allocations,
            "runtime": None,
            "source": None,
        }
    assert isinstance(instance, Bot)
    environment = {key: _text(value) for key, value in instance.environment.items()}
    environment["DISCORD_TOKEN"] = decrypt_secret(instance.token_encrypted)
    source = None
    if instance.source_type == "upload" and instance.source_archive:
        source = {"type": "archive", "url": f"/v1/agent/bots/{instance.pk}/source"}
    elif instance.source_url:
        source = {"type": instance.source_type or "git", "url": instance.source_url}
        if instance.source_ref:
            source["ref"] = instance.source_ref
    return {
        "id": instance.id,
        "kind": "bot",
        "template": BOT_TEMPLATE | {"start_command": instance.start_command},
        "variables": {},
        "environment": environment,
        "limits": limits,
        "allocation": None,
        "allocations": [],
        "runtime": instance.runtime,
        "source": source,
    }


def desired_state(instance: Instance) -> str:
    """What the agent should make of the process when it syncs: only a running one runs."""
    return "running" if instance.status == S.RUNNING else "stopped"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

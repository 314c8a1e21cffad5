"""An imported egg's server under the real agent and its sandbox (issue 32): our runnable test
egg (tests/servers/eggs/runnable_ptdl_v2.json, PTDL_v2) read by servers.eggs, installed with
bash in /mnt/server, its configuration files edited before the start, started with its
variables read from the environment (a flag list split as the egg means it), its named port
(the egg's QUERY_PORT) reachable, and stopped by ^C: SIGINT."""

import socket
from pathlib import Path

import pytest

from servers.eggs import egg_load, egg_to_game
from tests.agent.conftest import wait_until
from tests.agent.harness import IS_ROOT, free_port

EGG = Path(__file__).parent.parent / "servers" / "eggs" / "runnable_ptdl_v2.json"

needs_root = pytest.mark.skipif(not IS_ROOT, reason="eggs' /mnt/server needs the sandbox")


def answer(port: int) -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.settimeout(2)
            return conn.recv(64).decode() or None
    except OSError:
        return None


def text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@needs_root
def test_an_imported_eggs_server_installs_starts_and_stops_as_the_egg_says(make_server):
    imported = egg_to_game(egg_load(EGG.read_bytes()))
    template = imported.entry["template"]
    game, query = free_port(), free_port()
    # What the control plane sends for it (servers.drivers.spec): the variables' defaults with
    # a customer's change, and each named port as PORT_<NAME>.
    variables = {
        variable["key"]: text(variable.get("default", ""))
        for variable in imported.entry["variables"]
    }
    variables |= {"MOTD": "Eggs & ham", "PORT_QUERY": str(query)}
    spec = {
        "id": "srv_placeholder",
        "kind": "server",
        "template": {
            key: value for key, value in template.items() if key not in ("backup_commands", "ports")
        }
        | {"stop_timeout_seconds": 10, "ready_timeout_seconds": 30},
        "variables": variables,
        "environment": {},
        "limits": {"memory_mb": 256, "cpu_percent": 100, "disk_mb": 200, "pids": 64},
        "allocation": {"ip": "127.0.0.1", "port": game},
        "allocations": [
            {"ip": "127.0.0.1", "port": game, "name": "game"},
            {"ip": "127.0.0.1", "port": query, "name": "query"},
        ],
        "runtime": None,
        "source": None,
    }
    server = make_server(spec=spec)
    installed = server.post("install")
    assert installed.status_code == 200, installed.text
    logs = "\n".join(server.logs())
    # bash ([[ ]]), in /mnt/server, with the variables and the named port under the egg's name.
    assert "auto update on" in logs
    assert f"installed in /mnt/server as 256 MB, query {query}" in logs

    assert server.post("start").status_code == 200
    server.wait_for_status("running", 30)
    logs = server.logs()
    # The done string made it "running"; the configuration files were edited before the start.
    assert f"Egg server listening on {game} (query {query}, slots 12, motd Eggs & ham)" in logs
    assert "world Egg World made at install" in logs
    # The flags variable split into words, the quoted one stayed one.
    assert 'args ["--memory", "256", "--world", "Egg World", "--fast", "--quiet"]' in logs
    assert answer(game) == "game Eggs & ham"
    assert answer(query) == "query 12"

    assert server.post("stop").status_code == 200
    server.wait_for_status("stopped", 20)
    assert "Stopping on signal SIGINT" in server.logs()


@needs_root
def test_the_edits_follow_a_changed_variable_at_the_next_start(make_server):
    imported = egg_to_game(egg_load(EGG.read_bytes()))
    game, query = free_port(), free_port()
    variables = {
        variable["key"]: text(variable.get("default", ""))
        for variable in imported.entry["variables"]
    } | {"PORT_QUERY": str(query), "SLOTS": "3"}
    template = {
        key: value
        for key, value in imported.entry["template"].items()
        if key not in ("backup_commands", "ports")
    }
    spec = {
        "id": "srv_placeholder",
        "kind": "server",
        "template": template | {"stop_timeout_seconds": 10, "ready_timeout_seconds": 30},
        "variables": variables,
        "environment": {},
        "limits": {"memory_mb": 256, "cpu_percent": 100, "disk_mb": 200, "pids": 64},
        "allocation": {"ip": "127.0.0.1", "port": game},
        "allocations": [
            {"ip": "127.0.0.1", "port": game, "name": "game"},
            {"ip": "127.0.0.1", "port": query, "name": "query"},
        ],
        "runtime": None,
        "source": None,
    }
    server = make_server(spec=spec)
    assert server.post("install").status_code == 200
    assert server.post("start").status_code == 200
    server.wait_for_line("slots 3,", 30)
    assert server.post("stop").status_code == 200
    server.wait_for_status("stopped", 20)
    spec["variables"]["SLOTS"] = "40"
    spec["id"] = server.id
    server.put(spec)
    assert server.post("start").status_code == 200
    server.wait_for_line("slots 40,", 30)
    wait_until(lambda: answer(query) == "query 40", 10)

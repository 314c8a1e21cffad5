"""Restart safety: servers outlive their agent, and the next agent takes them over."""

import contextlib
import os
import secrets
import signal

from tests.agent.aio import run
from tests.agent.conftest import (
    NODE_ID,
    Server,
    gameserver_spec,
    needs_python_for_nobody,
    public_pem,
    wait_until,
)
from tests.agent.harness import free_port
from tests.agent.test_console import Console, event
from tests.agent.test_lifecycle import ask, gone, workload_of


def start_server_on_new_agent(agents, console_key) -> Server:
    first = agents.start()
    with first.api() as api:
        api.post("/api/sync", json={"console_public_key": public_pem(console_key), "servers": []})
    server = Server(f"srv_{secrets.token_hex(6)}", free_port(), first)
    server.put(gameserver_spec(server.id, server.port))
    assert server.post("start").status_code == 200
    return server


def kill_agent(server: Server) -> None:
    server.agent.process.send_signal(signal.SIGKILL)
    server.agent.process.wait(10)


def test_a_new_agent_adopts_the_running_server(agents, console_key, console_token, control_plane):
    server = start_server_on_new_agent(agents, console_key)
    pid = server.get()["pid"]
    kill_agent(server)
    assert ask(server.port, "ping") == "pong"  # the server did not notice

    server.agent = agents.start(data_root=server.agent.data_root)
    state = server.get()
    assert state["status"] == "running"
    assert state["pid"] == pid
    adopted = control_plane.wait_for(lambda: control_plane.events_of(server.id))
    assert adopted[0]["type"] == "running"
    assert adopted[0]["reason"] == "adopted after an agent restart"

    async def console():
        # The console key came with the first agent's sync: kept in the state file.
        session = await Console.open(server, console_token(server.id))
        try:
            await session.until(event("auth success"))
            await session.until(lambda m: "Server ready on" in str(m.get("args")))
            await session.send("send command", "say back again")
            await session.until(lambda m: "[Server] back again" in m.get("args", []))
        finally:
            await session.close()

    run(console())

    server.command("crash")
    crashed = control_plane.wait_for(
        lambda: [e for e in control_plane.events_of(server.id) if e["type"] == "crashed"]
    )
    assert crashed[0]["reason"].startswith("exited (exit status unknown")
    assert server.wait_for_status("stopped")["pid"] is None
    assert server.post("start").status_code == 200  # and it starts again under the new agent


def test_a_server_that_died_with_its_agent_away_is_reported(agents, console_key, control_plane):
    server = start_server_on_new_agent(agents, console_key)
    pid = server.get()["pid"]
    game = workload_of(pid)
    kill_agent(server)
    for process in [*game, pid]:
        # pasta exits with its command and, the agent gone, is reaped at once: it may be gone.
        with contextlib.suppress(ProcessLookupError):
            os.kill(process, signal.SIGKILL)
    wait_until(lambda: gone(pid), 5)

    server.agent = agents.start(data_root=server.agent.data_root)
    assert server.get()["status"] == "stopped"
    crashed = control_plane.wait_for(lambda: control_plane.events_of(server.id))
    assert crashed[0]["type"] == "crashed"
    assert crashed[0]["reason"] == "exited while the agent was not running (exit status unknown)"


def test_undelivered_events_are_retried_in_order(make_server, control_plane):
    first, second = make_server(), make_server()
    first.post("start")
    second.post("start")
    control_plane.failing_event_posts = 1
    first.command("crash")
    second.command("stop")
    control_plane.wait_for(
        lambda: control_plane.events_of(first.id) and control_plane.events_of(second.id),
        timeout=15,
    )
    ours = [e for e in control_plane.all_events() if e["instance_id"] in (first.id, second.id)]
    assert [(e["instance_id"], e["type"]) for e in ours] == [
        (first.id, "crashed"),
        (second.id, "stopped"),
    ]
    assert control_plane.failing_event_posts == 0  # the first post was refused, then retried


def test_a_control_plane_that_answers_again_gets_a_hello_for_a_full_sync(
    agents, control_plane, make_server
):
    # The control plane is the session's: wait for this agent's own hello, which it says in
    # the background once it answers (under load, after start_agent has returned).
    earlier = len(control_plane.hellos)
    agent = agents.start()
    control_plane.wait_for(lambda: len(control_plane.hellos) > earlier)
    before = len(control_plane.hellos)
    server = make_server(on=agent)
    server.post("start")
    control_plane.failing_event_posts = 2  # unreachable for a moment (503)
    server.command("crash")
    control_plane.wait_for(lambda: control_plane.events_of(server.id), timeout=15)
    control_plane.wait_for(lambda: len(control_plane.hellos) > before, timeout=10)
    assert len(control_plane.hellos) == before + 1


def test_hello_hands_the_agent_its_servers(agents, control_plane, console_key):
    needs_python_for_nobody()
    server_id = f"srv_{secrets.token_hex(6)}"
    spec = {**gameserver_spec(server_id, free_port()), "desired": "running"}
    previous = control_plane.hello_answer
    control_plane.hello_answer = {
        "node_id": NODE_ID,
        "console_public_key": public_pem(console_key),
        "servers": [spec],
    }
    try:
        own = agents.start()
        running = control_plane.wait_for(lambda: control_plane.events_of(server_id), timeout=20)
    finally:
        control_plane.hello_answer = previous
    assert running[0]["type"] == "running"
    hello = next(h for h in reversed(control_plane.hellos) if h["servers"] == [])
    assert hello["limits"] in ("cgroup-v1", "cgroup-v2", "rlimit")
    assert hello["version"]
    with own.api() as api:
        assert api.get(f"/api/servers/{server_id}").json()["status"] == "running"

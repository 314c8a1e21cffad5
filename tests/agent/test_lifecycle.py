"""Install, start, stop, kill and crash of real game server processes, and their limits."""

import contextlib
import os
import secrets
import socket
from pathlib import Path

import pytest

from tests.agent.conftest import Server, gameserver_spec, wait_until
from tests.agent.harness import CGROUP_ROOT, IS_ROOT, free_port


def ask(port: int, request: str) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(f"{request}\n".encode())
        return connection.makefile().readline().strip()


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                text = (entry / "stat").read_text()
            except OSError:
                continue
            if int(text[text.rfind(")") + 2 :].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants_of(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        children = children_of(frontier.pop())
        found += children
        frontier += children
    return found


PLUMBING = {"pasta", "passt", "passt.avx2", "bwrap", "unshare"}


def workload_of(pid: int) -> list[int]:
    """The server's own processes under ``pid``: its sandbox's plumbing (pasta, unshare,
    bubblewrap) left out."""
    return [
        process
        for process in [pid, *descendants_of(pid)]
        if Path(f"/proc/{process}/comm").read_text().strip() not in PLUMBING
    ]


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return state[state.rfind(")") + 2] == "Z"


def test_it_installs_and_starts_a_server_that_answers_on_its_port(make_server):
    server = make_server(install_script="echo preparing the world; echo seed > world.txt")
    with server.api() as api:
        spec = api.get(server.path()).json()
        assert spec["installed"] is False
    installed = server.post("install")
    assert installed.status_code == 200, installed.text
    assert installed.json() == {"status": "stopped"}
    assert "preparing the world" in server.logs()

    started = server.post("start")
    assert started.status_code == 200, started.text
    assert started.json() == {"status": "running"}
    assert ask(server.port, "ping") == "pong"
    state = server.get()
    assert state["status"] == "running"
    assert state["pid"] > 0
    assert state["started_at"].endswith("Z")
    assert server.post("start").json() == {"status": "running"}  # idempotent


def test_variables_are_substituted_quoted_and_passed_in_the_environment(make_server):
    server = make_server()
    spec = gameserver_spec(
        server.id, server.port, install_script="printf '%s|%s\\n' {{MOTD}} \"$MOTD\""
    )
    spec["variables"] = {"MOTD": "hello; rm -rf / $(id)"}
    server.put(spec)
    assert server.post("install").status_code == 200
    assert "hello; rm -rf / $(id)|hello; rm -rf / $(id)" in server.logs()


def test_the_console_takes_commands(make_server):
    server = make_server()
    assert server.post("start").status_code == 200
    server.command("say hi")
    server.wait_for_line("[Server] hi")


def test_stop_is_graceful_with_the_stop_command(make_server, control_plane):
    server = make_server()
    server.post("start")
    pid = server.get()["pid"]
    stopped = server.post("stop")
    assert stopped.status_code == 200
    assert stopped.json() == {"status": "stopped", "how": "graceful"}
    assert gone(pid)
    assert "Stopping server" in server.logs()
    assert "[agent] The process exited with code 0." in server.logs()
    assert server.get()["pid"] is None
    assert control_plane.events_of(server.id) == []  # asked for: nothing to report


def test_stop_uses_the_stop_signal_without_a_stop_command(make_server):
    server = make_server(stop_command="", stop_signal="SIGTERM")
    server.post("start")
    assert server.post("stop").json() == {"status": "stopped", "how": "graceful"}
    assert "Stopping server (SIGTERM)" in server.logs()


def test_a_server_that_ignores_the_stop_command_is_killed_after_the_timeout(make_server):
    server = make_server(stop_command="please stop", stop_timeout_seconds=1)
    server.post("start")
    pid = server.get()["pid"]
    stopped = server.post("stop")
    assert stopped.json() == {"status": "stopped", "how": "killed"}
    assert "Unknown command: please stop" in server.logs()
    assert gone(pid)


def test_kill_is_immediate_and_takes_the_whole_tree(make_server):
    server = make_server(stop_timeout_seconds=30)
    server.post("start")
    pid = server.get()["pid"]
    game = workload_of(pid)
    assert game, "the shell runs the game server as its child"
    killed = server.post("kill")
    assert killed.status_code == 200
    assert killed.json() == {"status": "stopped"}
    assert all(gone(process) for process in [pid, *game])
    with pytest.raises(OSError):
        ask(server.port, "ping")


def test_a_crash_is_reported_to_the_control_plane(make_server, control_plane):
    server = make_server()
    server.post("start")
    server.command("crash")
    events = control_plane.wait_for(lambda: control_plane.events_of(server.id))
    assert events[0]["type"] == "crashed"
    assert events[0]["reason"] == "exited with code 3"
    assert events[0]["at"].endswith("Z")
    assert server.get()["status"] == "stopped"


def test_stop_typed_in_the_console_is_reported_as_stopped(make_server, control_plane):
    server = make_server()
    server.post("start")
    server.command("stop")
    events = control_plane.wait_for(lambda: control_plane.events_of(server.id))
    assert events[0]["type"] == "stopped"
    assert events[0]["reason"] == "exited with code 0"


def test_a_server_killed_by_a_signal_is_reported_with_it(make_server, control_plane):
    server = make_server()
    server.post("start")
    for child in workload_of(server.get()["pid"]):
        # Its sandbox's first process killed, the rest of the tree may be gone already.
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, 9)
    events = control_plane.wait_for(lambda: control_plane.events_of(server.id))
    assert (events[0]["type"], events[0]["reason"]) == ("crashed", "killed by signal 9")


def test_start_fails_when_the_process_exits_before_it_is_ready(make_server):
    server = make_server(start_command="echo cannot find the world file; exit 4")
    response = server.post("start")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "start_failed"
    assert "exited with code 4" in error["message"]
    assert "cannot find the world file" in error["message"]
    assert server.get()["status"] == "stopped"


def test_start_fails_and_kills_when_never_ready(make_server):
    server = make_server(ready_pattern="never printed", ready_timeout_seconds=1)
    response = server.post("start")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "start_failed"
    assert "not ready within 1 seconds" in response.json()["error"]["message"]
    state = server.get()
    assert (state["status"], state["pid"]) == ("stopped", None)


def test_a_failed_install_answers_with_its_last_lines(make_server):
    server = make_server(install_script="echo downloading; echo checksum mismatch >&2; exit 2")
    response = server.post("install")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "install_failed"
    assert "exited with code 2" in error["message"]
    assert "checksum mismatch" in error["message"]
    assert server.get()["status"] == "install_failed"
    assert server.post("start").json()["error"]["code"] == "invalid_state"


def test_install_is_refused_while_running(make_server):
    server = make_server()
    server.post("start")
    response = server.post("install")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_state"


def test_delete_kills_and_removes_everything(make_server, agent):
    server = make_server()
    server.post("start")
    pid = server.get()["pid"]
    with server.api() as api:
        assert api.delete(server.path()).status_code == 204
        assert api.get(server.path()).status_code == 404
    assert gone(pid)
    assert not (agent.data_root / "servers" / server.id).exists()
    assert not (CGROUP_ROOT / "memory" / "hms-agent" / server.id).exists()


def _ids(pid: int, key: str) -> list[str]:
    line = next(
        line
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith(f"{key}:")
    )
    return line.split()[1:]


@pytest.mark.skipif(not IS_ROOT, reason="only a root agent changes users")
def test_each_server_runs_as_its_own_user_in_a_folder_of_its_own(make_server, agent):
    servers = [make_server(install_script="touch made-by-install") for _ in range(2)]
    uids = agent.state()["uids"]
    own = [uids[server.id] for server in servers]
    assert own[0] != own[1]
    assert all(400000 <= uid < 465535 for uid in own)
    for server, uid in zip(servers, own, strict=True):
        assert server.post("start").status_code == 200
        pid = server.get()["pid"]
        for process in [pid, *descendants_of(pid)]:
            assert _ids(process, "Uid") == [str(uid)] * 4
            assert _ids(process, "Gid") == [str(uid)] * 4
            assert _ids(process, "Groups") == []
        for process in workload_of(pid):  # pasta keeps capabilities over its own namespace
            assert _ids(process, "CapEff") == ["0000000000000000"]
            assert _ids(process, "NoNewPrivs") == ["1"]
        directory = agent.data_root / "servers" / server.id
        info = directory.stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (uid, uid, 0o700)
        assert (directory / "made-by-install").stat().st_uid == uid


def test_the_node_token_never_reaches_a_process(make_server, agent):
    server = make_server()
    server.post("start")
    pid = server.get()["pid"]
    for process in [pid, *descendants_of(pid)]:
        environ = Path(f"/proc/{process}/environ").read_bytes()
        assert agent.token.encode() not in environ
        assert b"AGENT_" not in environ
    for process in workload_of(pid):
        environ = Path(f"/proc/{process}/environ").read_bytes()
        names = {entry.split(b"=", 1)[0] for entry in environ.split(b"\0") if entry}
        assert {b"PATH", b"HOME", b"LANG", b"SERVER_PORT"} <= names


def test_usage_samples_reach_the_control_plane(make_server, control_plane):
    server = make_server()
    server.post("start")
    server.command("leak 30")
    server.wait_for_line("Leaked 30 MB")
    samples = control_plane.wait_for(
        lambda: [
            sample
            for sample in control_plane.samples_of(server.id)
            if sample["memory_bytes"] > 30 * 1024 * 1024
        ]
    )
    sample = samples[-1]
    assert set(sample) == {
        "instance_id",
        "at",
        "cpu_percent",
        "memory_bytes",
        "disk_bytes",
        "network_rx_bytes",
        "network_tx_bytes",
        "uptime_seconds",
    }
    # The sandbox's own interface counts the traffic (null only without a sandbox).
    for key in ("network_rx_bytes", "network_tx_bytes"):
        assert isinstance(sample[key], int) if IS_ROOT else sample[key] is None
    assert sample["cpu_percent"] >= 0
    assert server.get()["usage"]["instance_id"] == server.id


def test_a_server_over_the_file_cap_is_stopped(agents, control_plane):
    node = agents.start(AGENT_MAX_FILES="50")
    spec = gameserver_spec("srv_filecap000001", free_port())
    spec["template"]["start_command"] = (
        "for i in $(seq 100); do : > file-$i; done; " + spec["template"]["start_command"]
    )
    server = Server(spec["id"], spec["allocation"]["port"], node)
    server.put(spec)
    # The quota's watch may stop it before or after its ready line (a loaded machine is slower
    # to print it): the start answers either way, and the event is the same.
    started = server.post("start")
    assert started.status_code in (200, 422)
    if started.status_code == 422:
        assert started.json()["error"]["code"] == "start_failed"
    events = control_plane.wait_for(lambda: control_plane.events_of(server.id), timeout=15)
    assert events[0]["type"] == "crashed"
    assert events[0]["reason"].startswith("over file quota: ")
    assert events[0]["reason"].endswith(" files of 50")


def test_a_server_over_its_disk_quota_is_stopped(make_server, control_plane):
    server = make_server()
    spec = gameserver_spec(server.id, server.port)
    spec["limits"]["disk_mb"] = 10
    server.put(spec)
    server.post("start")
    server.command("write 15")
    events = control_plane.wait_for(lambda: control_plane.events_of(server.id), timeout=15)
    assert events[0]["type"] == "crashed"
    assert events[0]["reason"].startswith("over disk quota: ")
    assert events[0]["reason"].endswith("of 10 MB")
    server.wait_for_status("stopped")
    assert "Stopping server" in server.logs()  # stopped gracefully, with the stop command


def _cgroup_v1_memory_writable() -> bool:
    memory = CGROUP_ROOT / "memory"
    return (memory / "memory.limit_in_bytes").exists() and os.access(memory, os.W_OK)


def test_the_memory_limit_kills_a_leaking_server(make_server, control_plane, agent):
    if not _cgroup_v1_memory_writable():
        pytest.skip("cgroup v1 memory controller not writable: no memory limit to hit")
    with agent.api() as api:
        assert api.get("/api/system").json()["limits"] == "cgroup-v1"
    server = make_server()
    spec = gameserver_spec(server.id, server.port)
    spec["limits"]["memory_mb"] = 128
    server.put(spec)
    server.post("start")
    server.command("leak 300")
    events = control_plane.wait_for(lambda: control_plane.events_of(server.id), timeout=20)
    assert events[0]["type"] == "crashed"
    assert events[0]["reason"] == "killed: out of memory (limit 128 MB)"
    wait_until(lambda: server.get()["status"] == "stopped", 5)


def test_without_cgroups_rlimits_bound_the_process(agents, control_plane):
    own = agents.start(AGENT_LIMITS="rlimit")
    with own.api() as api:
        assert api.get("/api/system").json()["limits"] == "rlimit"
    server = Server(f"srv_{secrets.token_hex(6)}", free_port(), own)
    created = server.put(gameserver_spec(server.id, server.port))
    assert created["limits"] == {
        "mechanism": "rlimit",
        "memory_mb": 256,
        "swap": "not limited",
        "cpu_percent": None,
        "pids": 64,
        "disk_mb": 200,
    }
    assert server.post("start").status_code == 200
    assert ask(server.port, "ping") == "pong"
    pid = server.get()["pid"]
    game = workload_of(pid)
    limits = Path(f"/proc/{game[0]}/limits").read_text()
    assert f"Max address space         {256 * 1024 * 1024}" in limits
    usage = wait_until(lambda: (server.get()["usage"] or {}).get("memory_bytes"), 5)
    assert usage > 1024 * 1024  # resident memory of the session's processes, from /proc
    assert server.post("kill").json() == {"status": "stopped"}
    assert all(gone(process) for process in [pid, *game])

"""Two customers' servers on one node, one of them hostile: every way out of its sandbox fails,
while its neighbour keeps running with its files unchanged (issue 26's hostile-tenant test)."""

import hashlib
import json
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import sandbox
from tests.agent.conftest import Server, gameserver_spec, wait_until
from tests.agent.harness import IS_ROOT, REPO, free_port
from tests.agent.test_lifecycle import ask, workload_of

ATTACKER = (REPO / "tests" / "agent" / "hostile_tenant.py").read_text()
SECRET = "victim-secret-MTA0Njg5NzY1NDMyMTA.Gx7yZz"

pytestmark = pytest.mark.skipif(not IS_ROOT, reason="the sandbox needs a root agent")


class Listener:
    """A service on the node's loopback (a database, say): counts who got through."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()


@pytest.fixture
def media(work_root) -> Path:
    """Like the control plane's media folder on a shared machine: private files."""
    folder = work_root / "media"
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / "attachment.txt").write_text("another customer's ticket attachment")
    (folder / "attachment.txt").chmod(0o600)
    return folder


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    }


def test_a_hostile_tenant_reaches_nothing_of_its_neighbour_nor_of_the_node(
    make_server, agent, control_plane, media
):
    assert agent.api().get("/api/system").json()["isolation"]["mode"] == "sandbox"
    victim_template = {"install_script": "echo the victim world > secret.txt"}
    victim = make_server(**victim_template)
    # The victim's secret lives in its environment, as a bot's DISCORD_TOKEN does.
    _put(victim, victim_template, environment={"DISCORD_TOKEN": SECRET})
    started = victim.post("start")
    assert started.status_code == 200, started.text
    victim_dir = agent.data_root / "servers" / victim.id
    before = _digest(victim_dir)
    victim_pid = workload_of(victim.get()["pid"])[-1]
    assert SECRET.encode() in Path(f"/proc/{victim_pid}/environ").read_bytes()

    database = Listener()
    agent_port = int(agent.url.rsplit(":", 1)[1])
    plane_port = int(control_plane.url.rsplit(":", 1)[1])
    ports = [agent_port, victim.port, database.port, plane_port]
    attacker_template = {
        "install_script": f"cat > attack.py <<'PYTHON'\n{ATTACKER}\nPYTHON\n",
        "start_command": "python3 attack.py",
        "ready_pattern": "^ATTACK ",
    }
    attacker = make_server(**attacker_template)
    _put(
        attacker,
        attacker_template,
        variables={
            "VICTIM_PID": str(victim_pid),
            "VICTIM_DIR": str(victim_dir),
            "MEDIA_DIR": str(media),
            "LOOPBACK_PORTS": ",".join(map(str, ports)),
        },
    )
    started = attacker.post("start")
    assert started.status_code == 200, started.text
    line = next(line for line in attacker.logs() if line.startswith("ATTACK "))
    got = json.loads(line.removeprefix("ATTACK "))

    assert got["proc_neighbours"] == []
    assert got["process_count"] <= 2  # the shell (pid 1) and itself
    for name in (
        "victim_environ",
        "victim_environ_by_pid",
        "victim_list",
        "victim_read",
        "victim_write",
        "victim_signal",
        "victim_ptrace",
        "servers_list",
        "media_list",
        "media_read",
        *(f"loopback_{port}" for port in ports),
        "hard_link",
        "symlink",
        "proc_root",
        "proc_self_root",
        "setuid_root",
        "own_setuid",
        "write_system",
        "write_root",
        "node_secrets",
        "agent_data",
        "user_namespace",
    ):
        assert str(got[name]).startswith("failed"), (name, got[name])
    assert got["uid"] == [1000, 1000]
    assert SECRET not in line

    # The victim runs on, untouched; nothing reached the node's loopback service.
    assert ask(victim.port, "ping") == "pong"
    assert victim.get()["status"] == "running"
    assert _digest(victim_dir) == before
    assert database.accepted == 0
    assert (media / "attachment.txt").read_text() == "another customer's ticket attachment"


def test_the_sandbox_sees_only_its_own_folder_and_a_read_only_system(make_server, agent):
    server = make_server(
        start_command=(
            "echo HOME=$HOME PWD=$(pwd) USER=$(id -u):$(id -g) HOST=$(hostname);"
            " touch /tmp/private && echo TMP=ok;"
            " (touch /usr/x 2>/dev/null && echo USR=writable) || echo USR=read-only;"
            " ls / | tr '\\n' ' ' | sed 's/^/ROOT=/'; echo;"
            " ls /etc | wc -l | sed 's/^/ETC=/';"
            " echo ready; exec sleep 600"
        ),
        ready_pattern="^ready$",
    )
    assert server.post("start").status_code == 200
    logs = "\n".join(server.logs())
    assert "HOME=/home/container PWD=/home/container USER=1000:1000 HOST=container" in logs
    assert "TMP=ok" in logs
    assert "USR=read-only" in logs
    root = next(line for line in logs.splitlines() if line.startswith("ROOT="))
    assert set(root.removeprefix("ROOT=").split()) <= {
        "bin",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "opt",
        "proc",
        "sbin",
        "tmp",
        "usr",
        "var",
    }
    assert not (agent.data_root / "servers" / server.id / "private").exists()


def test_two_servers_never_share_a_uid_and_a_deleted_ones_uid_is_freed(make_server, agent):
    first, second = make_server(), make_server()
    uids = agent.state()["uids"]
    assert uids[first.id] != uids[second.id]
    freed = uids[first.id]
    with first.api() as api:
        assert api.delete(first.path()).status_code == 204
    assert first.id not in agent.state()["uids"]
    third = make_server()
    assert agent.state()["uids"][third.id] == freed  # the folder is gone: the uid may return


@pytest.fixture
def client_host() -> Iterator[str]:
    """A test host of our own: a network namespace joined to the node by a veth pair, so that
    its traffic reaches a server as a player's would (through the sandbox's tap; pasta splices
    the node's own loopback clients past it). Yields the node's address on that link."""
    if shutil.which("ip") is None:
        pytest.skip("iproute2 is needed for a test host")
    tag = secrets.token_hex(3)
    name, host_side, client_side = f"hms-{tag}", f"hmsh{tag}", f"hmsc{tag}"
    subnet = f"10.231.{secrets.randbelow(250) + 1}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)  # noqa: S603, S607

    ip("netns", "add", name)
    try:
        ip("link", "add", host_side, "type", "veth", "peer", "name", client_side)
        ip("link", "set", client_side, "netns", name)
        ip("addr", "add", f"{subnet}.1/30", "dev", host_side)
        ip("link", "set", host_side, "up")
        ip("-n", name, "addr", "add", f"{subnet}.2/30", "dev", client_side)
        ip("-n", name, "link", "set", client_side, "up")
        ip("-n", name, "link", "set", "lo", "up")
        yield name, f"{subnet}.1"
    finally:
        subprocess.run(["ip", "link", "del", host_side], capture_output=True)  # noqa: S603, S607
        subprocess.run(["ip", "netns", "del", name], capture_output=True)  # noqa: S603, S607


PLAYER = """
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as connection:
    reader = connection.makefile("rb")
    for _ in range(500):
        connection.sendall(b"ping" + b"." * 95 + b"\\n")
        reader.readline()
"""


def test_network_counters_count_a_players_traffic(make_server, agent, client_host):
    namespace, address = client_host
    server = make_server()
    spec = gameserver_spec(server.id, server.port)
    spec["allocation"]["ip"] = address
    # Inside, the sandbox has the node's primary address (pasta copies it), not this link's.
    spec["template"]["start_command"] = spec["template"]["start_command"].replace(
        "{{SERVER_IP}}",
        "0.0.0.0",  # noqa: S104 - in the sandbox's own namespace
    )
    server.put(spec)
    assert server.post("start").status_code == 200

    def counting():
        usage = server.get()["usage"]
        return usage if usage and usage["network_rx_bytes"] is not None else None

    before = wait_until(counting, 5)
    command = [shutil.which("ip") or "ip", "netns", "exec", namespace, sys.executable]
    player = subprocess.run(  # noqa: S603 - our own arguments
        [*command, "-c", PLAYER, address, str(server.port)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert player.returncode == 0, player.stderr

    def counted():
        usage = server.get()["usage"]
        received = usage["network_rx_bytes"] - before["network_rx_bytes"]
        sent = usage["network_tx_bytes"] - before["network_tx_bytes"]
        return (received, sent) if received >= 50_000 else None

    received, sent = wait_until(counted, 10)
    # 500 requests of 100 bytes in, 500 answers ("Unknown command …") out, plus headers.
    assert 50_000 <= received < 200_000
    assert sent >= 500 * 20


def test_a_node_that_cannot_sandbox_runs_no_server(agents, control_plane):
    # No bubblewrap nor pasta on the agent's PATH: as on a node without them.
    node = agents.start(PATH="/nonexistent")
    isolation = node.api().get("/api/system").json()["isolation"]
    assert isolation["mode"] == "unavailable"
    assert "bwrap is not installed" in isolation["reason"]
    hello = control_plane.wait_for(lambda: [h for h in control_plane.hellos if h.get("isolation")])
    assert hello[-1]["isolation"] == "none"
    server = Server("srv_unisolated00001", free_port(), node)
    server.put(gameserver_spec(server.id, server.port))
    refused = server.post("start")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "not_isolated"
    assert "bwrap is not installed" in refused.json()["error"]["message"]
    assert server.post("install").json()["error"]["code"] == "not_isolated"
    assert "cannot sandbox its servers" in node.log()


def test_the_development_flag_runs_them_unisolated_and_says_so(agents):
    node = agents.start(PATH="/nonexistent", AGENT_ALLOW_UNISOLATED="1")
    system = node.api().get("/api/system").json()
    assert system["isolation"]["mode"] == "none"
    assert system["run_as"] == "nobody"
    assert "TENANTS ARE NOT ISOLATED" in node.log()
    server = Server("srv_unisolated00002", free_port(), node)
    server.put(gameserver_spec(server.id, server.port))
    assert server.post("start").status_code == 200
    assert ask(server.port, "ping") == "pong"
    for process in workload_of(server.get()["pid"]):
        status = Path(f"/proc/{process}/status").read_text()
        assert "\nUid:\t65534\t" in status  # the old way: one shared user, no namespaces
    assert "uids" not in node.state() or not node.state()["uids"]


def test_a_sandbox_that_cannot_reach_its_folder_fails_the_probe(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)  # root's: the probe's uid cannot pass
    with pytest.raises(sandbox.IsolationUnavailable, match="a test sandbox failed"):
        sandbox.probe(sandbox.find_tools(), 465535, locked)


def test_without_root_there_is_no_sandbox():
    with pytest.raises(sandbox.IsolationUnavailable, match="not root"):
        sandbox.detect(is_root=False, probe_uid=465535, workdir=Path("/nonexistent"))


def _put(server, template: dict, **fields) -> None:
    """PUT the server's spec again with ``fields`` (environment, variables) set."""
    server.put({**gameserver_spec(server.id, server.port, **template), **fields})

"""Two customers' servers on one node, one of them hostile: every way out of its sandbox fails,
while its neighbour keeps running with its files unchanged (issue 26's hostile-tenant test)."""

import hashlib
import json
import socket
import threading
from pathlib import Path

import pytest

from tests.agent.conftest import IS_ROOT, REPO, gameserver_spec, wait_until
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
    assert got["process_count"] <= 3  # bubblewrap's init, the shell (if any) and itself
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
        "bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "sbin",
        "tmp", "usr", "var",
    }  # fmt: skip
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


def test_network_counters_come_from_the_sandbox(make_server, agent):
    server = make_server()
    assert server.post("start").status_code == 200
    usage = wait_until(lambda: server.get()["usage"], 5)
    # Counters of the sandbox's tap interface. Loopback clients (the only ones a test may use)
    # are spliced by pasta past the tap, so here they only have to be there and count up.
    assert isinstance(usage["network_rx_bytes"], int)
    assert isinstance(usage["network_tx_bytes"], int)
    assert usage["network_rx_bytes"] >= 0 and usage["network_tx_bytes"] >= 0


def _put(server, template: dict, **fields) -> None:
    """PUT the server's spec again with ``fields`` (environment, variables) set."""
    server.put({**gameserver_spec(server.id, server.port, **template), **fields})

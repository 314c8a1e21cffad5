"""Real agents (``python -m agent`` subprocesses) on loopback, a fake control plane, console keys.

Most tests share one agent (started once per session, sampling fast) and make servers of their
own on it; tests that kill or reconfigure the agent start their own. Every process is cleaned up:
servers are deleted through the API, then whatever is left in their sessions and cgroups is
killed and the cgroups removed (tests/agent/harness.py, which bench/agent.py runs too).
"""

import json
import secrets
import shlex
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.test.testcases import LiveServerThread, _StaticFilesHandler

from tests.agent import harness
from tests.agent.fake_control_plane import FakeControlPlane
from tests.agent.harness import IS_ROOT, Agent, free_port, remove_cgroup_parents, stop_agent

NODE_ID = "node_TestNode0000000000000001"
BASE62 = string.digits + string.ascii_letters
# The tests' agents sample, post and scan fast, and log everything.
QUICK = {
    "AGENT_SAMPLE_SECONDS": "0.5",
    "AGENT_BATCH_SECONDS": "1",
    "AGENT_DISK_SCAN_SECONDS": "0.5",
    "AGENT_QUERY_INTERVAL_SECONDS": "0.5",
    "AGENT_QUERY_TIMEOUT_SECONDS": "0.5",
    "AGENT_LOG_LEVEL": "debug",
}
PYTHON = harness.workload_python()


def new_node_token() -> str:
    return "hmn_" + "".join(secrets.choice(BASE62) for _ in range(44))


def needs_python_for_nobody() -> None:
    if PYTHON is None:
        pytest.skip("no Python interpreter that the unprivileged user may run")


@pytest.fixture(scope="session")
def work_root() -> Iterator[Path]:
    """Where the agents' data roots (and the bots' repositories) live.

    Not pytest's tmp_path: the servers' user (nobody) must walk down to its server's folder,
    and pytest keeps its base folder at mode 0700 — resetting it at the start of every pytest
    session on the machine, so a chmod of ours would not even hold while we run.
    """
    root = Path(tempfile.mkdtemp(prefix="hms-agent-tests-"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)
    remove_cgroup_parents()


@pytest.fixture
def test_root(work_root, request) -> Path:
    """A folder of the test's own under ``work_root``, reachable by the servers' user."""
    folder = work_root / f"{request.node.name[:60]}-{secrets.token_hex(3)}"
    folder.mkdir(mode=0o711)
    return folder


# -- agents -------------------------------------------------------------------------------------


def start_agent(
    data_root: Path, *, token: str, control_plane_url: str = "", **settings: str
) -> Agent:
    """An agent as the tests run it: QUICK, unisolated where only root could sandbox (the
    hostile-tenant tests skip then), the workloads' interpreter as the runtime python-test."""
    defaults = dict(QUICK)
    if not IS_ROOT:
        defaults["AGENT_ALLOW_UNISOLATED"] = "1"
    if PYTHON:
        defaults["AGENT_RUNTIMES"] = json.dumps({"python-test": PYTHON})
    node_id = settings.pop("AGENT_NODE_ID", NODE_ID)
    return harness.start_agent(
        data_root,
        token=token,
        node_id=node_id,
        control_plane_url=control_plane_url,
        **(defaults | settings),
    )


@dataclass
class AgentPool:
    """Agents a test (or the session) started; all stopped and reaped at the end."""

    control_plane: FakeControlPlane
    root: Path
    agents: list[Agent] = field(default_factory=list)

    def start(self, *, data_root: Path | None = None, with_control_plane=True, **settings) -> Agent:
        data_root = data_root or self.root / f"node-{len(self.agents)}"
        agent = start_agent(
            data_root,
            token=self.control_plane.token,
            control_plane_url=self.control_plane.url if with_control_plane else "",
            **settings,
        )
        self.agents.append(agent)
        return agent

    def close(self) -> None:
        for agent in self.agents:
            stop_agent(agent)


# -- console tokens -----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def console_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def public_pem(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


@pytest.fixture(scope="session")
def console_token(console_key) -> Callable[..., str]:
    def make(
        server_id: str,
        *,
        permissions: tuple[str, ...] = ("console.read", "console.write"),
        lifetime: float = 300,
        issued_at: float | None = None,
        key: Ed25519PrivateKey | None = None,
        audience: str = NODE_ID,
    ) -> str:
        now = time.time() if issued_at is None else issued_at
        claims = {
            "iss": "hosting-control-plane",
            "aud": audience,
            "server_id": server_id,
            "sub": "usr_TestUser",
            "permissions": list(permissions),
            "iat": int(now),
            "exp": int(now + lifetime),
            "jti": secrets.token_hex(8),
        }
        return jwt.encode(claims, key or console_key, algorithm="EdDSA")

    return make


# -- the shared agent and its fake control plane ------------------------------------------------


@pytest.fixture(scope="session")
def control_plane(console_key) -> Iterator[FakeControlPlane]:
    plane = FakeControlPlane(token=new_node_token()).start()
    plane.hello_answer = {
        "node_id": NODE_ID,
        "console_public_key": public_pem(console_key),
        "servers": [],
    }
    yield plane
    plane.stop()


@dataclass(frozen=True)
class GitServer:
    port: int
    base: Path

    def url(self, repository: Path) -> str:
        return f"git://127.0.0.1:{self.port}/{repository.relative_to(self.base)}"


@pytest.fixture(scope="session")
def git_server(work_root) -> Iterator[GitServer]:
    """``git daemon`` on the node's loopback, serving every repository under ``work_root``.
    A sandbox reaches the node's loopback only on the ports of AGENT_SANDBOX_HOST_PORTS, which
    the shared agent opens for this one (as an operator would for a local mirror)."""
    port = free_port()
    daemon = subprocess.Popen(  # noqa: S603 - our own arguments
        [
            shutil.which("git") or "git",
            "-c",
            "safe.directory=*",
            "daemon",
            "--export-all",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={work_root}",
            str(work_root),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield GitServer(port, work_root)
    daemon.terminate()
    daemon.wait(10)


@pytest.fixture(scope="session")
def agent(control_plane, console_key, work_root, git_server) -> Iterator[Agent]:
    pool = AgentPool(control_plane, work_root / "shared")
    shared = pool.start(AGENT_SANDBOX_HOST_PORTS=str(git_server.port))
    with shared.api() as api:
        response = api.post(
            "/api/sync", json={"console_public_key": public_pem(console_key), "servers": []}
        )
        assert response.status_code == 200, response.text
    yield shared
    pool.close()


@pytest.fixture
def agents(control_plane, test_root) -> Iterator[AgentPool]:
    """Agents of the test's own, for tests that restart, kill or reconfigure one."""
    pool = AgentPool(control_plane, test_root)
    yield pool
    pool.close()


# -- servers ------------------------------------------------------------------------------------


def gameserver_spec(server_id: str, port: int, **template: Any) -> dict[str, Any]:
    python = shlex.quote(PYTHON or sys.executable)
    return {
        "id": server_id,
        "kind": "server",
        "template": {
            "install_script": "",
            "start_command": (
                f"{python} {{{{AGENT_WORKLOADS}}}}/gameserver.py"
                " --host {{SERVER_IP}} --port {{SERVER_PORT}}"
            ),
            "ready_pattern": r"Server ready on",
            "stop_command": "stop",
            "stop_signal": "SIGTERM",
            "stop_timeout_seconds": 5,
            "ready_timeout_seconds": 20,
            **template,
        },
        "variables": {},
        "environment": {},
        "limits": {"memory_mb": 256, "cpu_percent": 100, "disk_mb": 200, "pids": 64},
        "allocation": {"ip": "127.0.0.1", "port": port},
        "runtime": None,
        "source": None,
    }


@dataclass
class Server:
    id: str
    port: int
    agent: Agent

    def api(self) -> httpx.Client:
        return self.agent.api()

    def path(self, action: str = "") -> str:
        return f"/api/servers/{self.id}{'/' + action if action else ''}"

    def get(self) -> dict[str, Any]:
        with self.api() as api:
            return api.get(self.path()).json()

    def put(self, spec: dict[str, Any]) -> dict[str, Any]:
        with self.api() as api:
            response = api.put(self.path(), json=spec)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def post(self, action: str, body: dict | None = None) -> httpx.Response:
        with self.api() as api:
            return api.post(self.path(action), json=body or {})

    def command(self, command: str) -> None:
        response = self.post("commands", {"command": command})
        assert response.status_code == 200, response.text

    def logs(self, lines: int = 200) -> list[str]:
        with self.api() as api:
            return api.get(self.path("logs"), params={"lines": lines}).json()["lines"]

    def wait_for_line(self, text: str, timeout: float = 10) -> list[str]:
        return wait_until(lambda: any(text in line for line in self.logs()), timeout, self.logs)

    def wait_for_status(self, status: str, timeout: float = 10) -> dict[str, Any]:
        wait_until(lambda: self.get()["status"] == status, timeout, self.get)
        return self.get()


def wait_until(check: Callable[[], Any], timeout: float, show: Callable[[], Any] = lambda: None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s; last seen: {show()!r}")


@pytest.fixture
def make_server(agent) -> Iterator[Callable[..., Server]]:
    """PUT a game server spec (with overrides) on an agent (the shared one by default)."""
    made: list[Server] = []

    def make(on: Agent | None = None, *, spec: dict | None = None, **template: Any) -> Server:
        needs_python_for_nobody()
        on = on or agent
        server = Server(f"srv_{secrets.token_hex(6)}", free_port(), on)
        body = spec or gameserver_spec(server.id, server.port, **template)
        body["id"] = server.id
        with on.api() as api:
            response = api.put(server.path(), json=body)
        assert response.status_code == 201, response.text
        made.append(server)
        return server

    yield make
    for server in made:
        if server.agent.alive():
            with server.api() as api:
                api.delete(server.path())


# --- The real control plane (Django's live server and database) with a real agent --------------


@pytest.fixture
def control_plane_url(settings, transactional_db) -> Iterator[str]:
    """The control plane served on loopback for the agent, as pytest-django's live_server does,
    but started after this test's settings (plain HTTP), which its handler reads when made."""
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "127.0.0.1"]
    thread = LiveServerThread("127.0.0.1", _StaticFilesHandler, port=0)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield f"http://127.0.0.1:{thread.port}"
    thread.terminate()


@pytest.fixture
def node_agent(control_plane_url, test_root):
    # Imported here: tests/agent/loop.py imports this module (start_agent, PYTHON).
    from tests.agent.loop import node_with_agent

    needs_python_for_nobody()
    with node_with_agent(
        control_plane_url, test_root, AGENT_RUNTIMES=json.dumps({"python-3.13": PYTHON})
    ) as (node, agent):
        yield node, agent

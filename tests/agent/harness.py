"""Real node agents (``python -m agent`` subprocesses) on loopback, and their cleanup: what the
agent's tests (tests/agent/conftest.py) and its bench (bench/agent.py) both run.

No pytest and no Django here, so the bench imports it as it is. What is left of an agent's
servers is found the way the agent finds it, through ``agent.procfs``: a server is a session
(the launcher makes each one a session leader), and its cgroups.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agent import procfs

REPO = Path(__file__).resolve().parents[2]
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_CONTROLLERS = ("memory", "cpu", "cpuacct", "pids", "")  # v1's, then v2's unified tree
IS_ROOT = os.geteuid() == 0
START_SECONDS = 15


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def usable_by_others(path: str) -> bool:
    """Whether an unprivileged user (nobody) may execute ``path``: every folder above it must
    let others through (pyenv's interpreters under /root do not)."""
    real = Path(os.path.realpath(path))
    if not real.is_file() or not real.stat().st_mode & stat.S_IXOTH:
        return False
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in real.parents)


def workload_python() -> str | None:
    """An interpreter the servers' user may run for the test workloads (None: there is none)."""
    if not IS_ROOT:
        return sys.executable
    candidates = [shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin"), sys.executable]
    return next((path for path in candidates if path and usable_by_others(path)), None)


@dataclass
class Agent:
    process: subprocess.Popen
    url: str
    token: str
    data_root: Path
    log_path: Path
    tls: ssl.SSLContext | None = None

    def api(self, token: str | None = None, *, timeout: float = 60) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, verify=self.tls or True
        )

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log().splitlines()[-lines:])
        return ""

    def state(self) -> dict[str, Any]:
        return json.loads((self.data_root / "state.json").read_text())

    def servers(self) -> dict[str, dict[str, Any]]:
        """The state file's servers; none while it is missing or being replaced."""
        return servers_of(self.data_root)

    def statuses(self) -> dict[str, str]:
        return {key: record.get("status", "?") for key, record in self.servers().items()}

    def alive(self) -> bool:
        return self.process.poll() is None


def servers_of(data_root: Path) -> dict[str, dict[str, Any]]:
    try:
        return json.loads((data_root / "state.json").read_text())["servers"]
    except (OSError, ValueError, KeyError):
        return {}


def start_agent(
    data_root: Path,
    *,
    token: str,
    node_id: str,
    control_plane_url: str = "",
    port: int | None = None,
    log_path: Path | None = None,
    python_args: Sequence[str] = (),
    wait: bool = True,
    **settings: str,
) -> Agent:
    """``python -m agent`` in a session of its own, its output in ``log_path``; with ``wait``,
    once it answers ``GET /api/system``. ``settings`` are its AGENT_* variables."""
    data_root.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AGENT_TOKEN": token,
        "AGENT_NODE_ID": node_id,
        "AGENT_CONTROL_PLANE_URL": control_plane_url,
        "AGENT_LISTEN": f"127.0.0.1:{port}",
        "AGENT_DATA_ROOT": str(data_root),
        **settings,
    }
    log_path = log_path or data_root.parent / f"{data_root.name}-agent-{port}.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            [sys.executable, *python_args, "-m", "agent"],
            cwd=REPO,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    tls = None
    if settings.get("AGENT_TLS_CERT"):
        tls = ssl.create_default_context(cafile=settings["AGENT_TLS_CERT"])
    scheme = "https" if tls else "http"
    agent = Agent(process, f"{scheme}://127.0.0.1:{port}", token, data_root, log_path, tls)
    if wait:
        wait_until_answering(agent)
    return agent


def wait_until_answering(agent: Agent, timeout: float = START_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not agent.alive():
            raise AssertionError(
                f"the agent exited with {agent.process.returncode}:\n{agent.log()}"
            )
        try:
            with agent.api(timeout=5) as api:
                if api.get("/api/system").status_code == 200:
                    return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"the agent did not answer within {timeout:g} s:\n{agent.log()}")


def kill_group(pid: int) -> None:
    for send in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            send(pid, signal.SIGKILL)


def reap(data_root: Path) -> None:
    """Kill whatever the agent's servers left (an agent killed with SIGKILL leaves them running)
    and remove their cgroups."""
    servers = servers_of(data_root)
    leaders = {record["pid"] for record in servers.values() if record.get("pid")}
    members = [stat.pid for stat in procfs.all_processes() if stat.session in leaders]
    for pid in members + list(leaders):
        kill_group(pid)
    for server_id in servers:
        for controller in CGROUP_CONTROLLERS:
            _empty_and_remove(CGROUP_ROOT / controller / "hms-agent" / server_id)


def _empty_and_remove(group: Path) -> None:
    if not group.is_dir():
        return
    for _ in range(100):
        procs = (group / "cgroup.procs").read_text().split()
        if not procs:
            break
        for pid in procs:
            kill_group(int(pid))
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        group.rmdir()


def remove_cgroup_parents() -> None:
    """The agents' ``hms-agent`` cgroups, once empty (another agent's servers keep theirs)."""
    for parent in [*CGROUP_ROOT.glob("*/hms-agent"), CGROUP_ROOT / "hms-agent"]:
        with contextlib.suppress(OSError):
            parent.rmdir()


def stop_agent(agent: Agent, *, parallel: int = 1, timeout: float = 15) -> int:
    """Delete every server through the agent's API (``parallel`` at a time), stop the agent
    (SIGTERM, then SIGKILL to its session), reap; returns how many servers were deleted."""
    deleted = 0
    if agent.alive():

        def delete(server_id: str) -> bool:
            with contextlib.suppress(httpx.HTTPError), agent.api(timeout=30) as api:
                return api.delete(f"/api/servers/{server_id}").status_code in (204, 404)
            return False

        with ThreadPoolExecutor(parallel) as pool:
            deleted = sum(pool.map(delete, list(agent.servers())))
        agent.process.terminate()
        try:
            agent.process.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(agent.process.pid)
            agent.process.wait(5)
    kill_group(agent.process.pid)  # anything else of its session
    reap(agent.data_root)
    return deleted


def process_ticks(pid: int) -> tuple[int, int]:
    """(its own CPU, its reaped children's) of ``pid`` in clock ticks."""
    stat = procfs.process_stat(pid)
    if stat is None:
        raise ProcessLookupError(pid)
    return stat.cpu_ticks, stat.children_cpu_ticks

"""What the sandbox costs (issue 26): start time, idle CPU and the network counters.

Run as root on a node with bubblewrap and passt: ``.venv/bin/python bench/sandbox.py``.

- **Start:** the test-workload game server is launched through the agent's own launcher, in its
  sandbox and without it (as the same uid, same cgroup-less launcher), alternately, until its
  ready line; the medians are compared. Goal: at most 50 ms added.
- **Idle:** 100 sandboxed game servers sit idle; the CPU used over a window by their sandboxes'
  plumbing (pasta, bubblewrap) is measured from /proc. The agent's own idle CPU is measured by
  ``bench/agent.py``; the plumbing is what the sandbox adds to the node. Goal: < 1 % of a core.
- **Counters:** the agent's read of the 100 sandboxes' network counters (one /proc read each),
  timed per sampling round, as a share of one core at the default 5 s period. Goal: < 1 %.
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

from agent import launch, procfs, sandbox

WORKLOADS = Path(__file__).resolve().parent.parent / "agent" / "workloads"
UID = 465000
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn(tools, home: Path, port: int, *, sandboxed: bool, uid: int) -> subprocess.Popen:
    python = "/usr/bin/python3"
    workloads = sandbox.WORKLOADS if sandboxed else str(WORKLOADS)
    argv = [python, f"{workloads}/gameserver.py", "--host", "127.0.0.1", "--port", str(port)]
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    instructions = launch.Instructions(argv=argv, env=environment, cwd=str(home), uid=uid, gid=uid)
    if sandboxed:
        plan = sandbox.plan(
            tools,
            directory=home,
            argv=argv,
            environment={**environment, "HOME": sandbox.HOME},
            allocations=[("127.0.0.1", port, "both")],
            read_only={str(WORKLOADS): sandbox.WORKLOADS},
            host_ports="none",
            tmp_bytes=None,
        )
        instructions.argv, instructions.env = plan.argv, {}
        instructions.sandbox_args = plan.bwrap_args
    return launch.spawn(
        instructions, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def wait_ready(process: subprocess.Popen) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if b"Server ready on" in line:
            return
    raise RuntimeError(f"the server exited with {process.wait()} before it was ready")


def kill(process: subprocess.Popen) -> None:
    for pid in [*procfs.session_members(process.pid), process.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait()


def home_for(root: Path, name: str, uid: int) -> Path:
    home = root / name
    home.mkdir(mode=0o700)
    os.chown(home, uid, uid)
    return home


def measure_start(tools, root: Path, rounds: int) -> dict[str, float]:
    times: dict[bool, list[float]] = {True: [], False: []}
    for index in range(rounds):
        for sandboxed in (index % 2 == 0, index % 2 == 1):
            home = home_for(root, f"start-{index}-{sandboxed}", UID)
            began = time.perf_counter()
            process = spawn(tools, home, free_port(), sandboxed=sandboxed, uid=UID)
            wait_ready(process)
            times[sandboxed].append((time.perf_counter() - began) * 1000)
            kill(process)
    with_sandbox, without = statistics.median(times[True]), statistics.median(times[False])
    return {"with_ms": with_sandbox, "without_ms": without, "added_ms": with_sandbox - without}


def plumbing_ticks(pids: list[int]) -> int:
    total = 0
    for leader in pids:
        for pid in [*procfs.session_members(leader), leader]:
            stat = procfs.process_stat(pid)
            if stat is not None and procfs.command_name(pid) in sandbox.PLUMBING:
                total += stat.cpu_ticks
    return total


def measure_idle(tools, root: Path, servers: int, seconds: float) -> dict[str, float]:
    processes = []
    try:
        for index in range(servers):
            home = home_for(root, f"idle-{index}", UID - 1 - index)
            process = spawn(tools, home, free_port(), sandboxed=True, uid=UID - 1 - index)
            wait_ready(process)
            processes.append(process)
        pids = [process.pid for process in processes]
        time.sleep(10)  # pasta's first seconds (router solicitations, DAD) are not idle
        before = plumbing_ticks(pids)
        time.sleep(seconds)
        idle = (plumbing_ticks(pids) - before) / CLOCK_TICKS / seconds * 100
        inside = []
        for pid in pids:
            members = [p for p in procfs.session_members(pid) if p != pid]
            inside.append(next(p for p in members if procfs.command_name(p) != "passt.avx2"))
        began = time.perf_counter()
        rounds = 50
        for _ in range(rounds):
            for pid in inside:
                assert sandbox.network_bytes(pid) is not None
        per_round = (time.perf_counter() - began) / rounds
        return {
            "servers": servers,
            "plumbing_cpu_percent": idle,
            "counters_ms_per_round": per_round * 1000,
            "counters_cpu_percent_at_5s": per_round / 5 * 100,
        }
    finally:
        for process in processes:
            kill(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the sandbox gives each server a uid of its own")
    tools = sandbox.find_tools()
    sandbox.ensure_tun()
    root = Path(tempfile.mkdtemp(prefix="hms-bench-sandbox-"))
    root.chmod(0o711)
    try:
        start = measure_start(tools, root, args.rounds)
        print(
            f"start, median of {args.rounds}: {start['with_ms']:.1f} ms in the sandbox, "
            f"{start['without_ms']:.1f} ms without: {start['added_ms']:+.1f} ms (goal ≤ 50 ms)"
        )
        idle = measure_idle(tools, root, args.servers, args.seconds)
        print(
            f"{idle['servers']} idle sandboxes: their plumbing used "
            f"{idle['plumbing_cpu_percent']:.2f} % of a core (goal < 1 %); network counters "
            f"{idle['counters_ms_per_round']:.2f} ms a round, "
            f"{idle['counters_cpu_percent_at_5s']:.3f} % of a core at 5 s (goal < 1 %)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The node agent with 200 servers: placement and start, its own CPU, the console, usage ingest
(not a test).

    .venv/bin/python bench/agent.py [--servers 200] [--idle 100] [--cpu-seconds 30]
                                    [--spam-lines 200000] [--flood-rate 50000]
                                    [--flood-seconds 10] [--console-max-lines N]
                                    [--ingest-seconds 15] [--ingest-threads 3]
                                    [--ingest-batch 1000] [--start-budget 210]
                                    [--postgres URL] [--redis URL] [--profile-agent FILE]

1. **Control plane**: its own PostgreSQL database, ``hosting_bench_agent`` (dropped, created,
   migrated), bench/api.py's production settings with fresh secrets (DEBUG off), Django set up
   in this process, and ``gunicorn hosting.wsgi`` with the committed ``gunicorn.conf.py`` and
   ONE sync worker (``WEB_CONCURRENCY=1``) on 127.0.0.1. The ``test-workload`` game
   (servers/catalogue/test-workload/) with an interpreter the unprivileged user may run, an account,
   and a node (``node_create``) with ``--servers`` + 50 allocations on 127.0.0.1, consecutive
   free ports below the kernel's ephemeral range (a game port inside it can be taken by any
   outgoing connection meanwhile: the first runs lost 22 starts to that).
2. **Agent**: ``python -m agent`` as a subprocess (its own session) on a free loopback port,
   data root in a temporary folder of mode 0711, root → processes as ``nobody`` in cgroups,
   sampling at its defaults (5 s samples, 15 s batches, 30 s disk scans), and
   ``AGENT_CONTROL_PLANE_URL`` pointing at the gunicorn above: its ``hello`` hands it the
   control plane's public key (the request tokens of the driver's calls), its usage samples go
   to the real ``POST /v1/agent/usage``.
3. **Placement and start**: ``--servers`` times, one after the other: ``server_create``
   (placement on the node; timed), then ``AgentDriver.create`` + ``install`` (PUT, install
   script), then ``AgentDriver.start`` (PUT + start, answered once the ready line was seen;
   timed). Median, p95 and total of both; how many started. Stops early (and says so) after
   ``--start-budget`` seconds.
4. **Agent CPU**: utime + stime of the agent's process from /proc/<pid>/stat over
   ``--cpu-seconds`` with every started server running idle, then again after stopping all
   but ``--idle`` of them (graceful ``AgentDriver.stop``): % of one core, in all and per
   server (children's CPU, reaped helpers, shown apart).
5. **Console**: one aiohttp WebSocket with a console token (``servers.signing.console_token``)
   on the first server; after the history, ``spam --spam-lines`` as a console command (a burst
   of a tenth of a second), then ``spam`` commands every 0.1 s worth ``--flood-rate`` lines/s
   for ``--flood-seconds``: lines received per second (in all, and from the first second on,
   once the connection's token bucket has spent its initial second of allowance), lines
   dropped (``console throttled``), and a TCP ``ping`` to the game every 20 ms on one
   connection meanwhile (the game must answer within 100 ms). ``--console-max-lines`` sets the
   agent's throttle, to see what it could deliver beyond its default 20,000 lines/s.
6. **Usage ingest**: ``--ingest-threads`` client threads POST ``/v1/agent/usage`` batches of
   ``--ingest-batch`` samples (ids of the node's real servers) with the node token to the one
   gunicorn worker for ``--ingest-seconds``: samples stored per second, and the CPU of the
   worker and of the PostgreSQL backends per 1,000 samples.

Everything is cleaned up on the way out (also on errors and Ctrl-C): every server deleted
through the agent's API, the agent stopped (SIGTERM, then SIGKILL to its group), whatever its
servers left killed and their cgroups removed, gunicorn stopped, the temporary folder removed.
Prints a results table and PASS/FAIL per goal; exit status 1 when one fails. Needs root for the
cgroups and ``nobody`` (it runs without, under rlimits, as the agent would), PostgreSQL, and the
``--redis`` database (the control plane's cache; not emptied).
"""

import argparse
import asyncio
import concurrent.futures
import contextlib
import http.client
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent import procfs  # noqa: E402
from bench.api import (  # noqa: E402 - the path above makes the project importable
    Server,
    cpu_ticks,
    database_url,
    machine_summary,
    one_worker_environment,
    prepare_control_plane,
    start_server,
    stop_server,
    wait_until_listening,
)
from bench.billing import load_average  # noqa: E402
from tests.agent.harness import (  # noqa: E402
    Agent,
    free_port,
    process_ticks,
    remove_cgroup_parents,
    stop_agent,
    wait_until_answering,
    workload_python,
)
from tests.agent.harness import start_agent as start_agent_process  # noqa: E402

DB_NAME = "hosting_bench_agent"
GAME = "test-workload"
REGION = "eu-central"
RESOURCES = {"memory_mb": 256, "cpu_percent": 100, "disk_mb": 1024}
SPARE_ALLOCATIONS = 50
CLK_TCK = os.sysconf("SC_CLK_TCK")
SETTLE_SECONDS = 5
PING_EVERY = 0.02
# A console connection may send a second's worth of lines at once (its token bucket starts
# full): the steady rate of a flood counts from this many seconds after its first command.
STEADY_AFTER = 1.0
GOAL_AGENT_CPU_PERCENT = 1.0  # of one core, the whole agent, at 100 idle servers
GOAL_CONSOLE_LINES = 10_000  # per second, to one client
GOAL_PING_MS = 100
GOAL_INGEST = 5_000  # samples per second per web worker


# --- Helpers ---------------------------------------------------------------------------------


def port_range(count: int) -> int:
    """The first of ``count`` consecutive ports free on 127.0.0.1 below the kernel's ephemeral
    range (a game's port there could be taken meanwhile by any outgoing connection's end)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for base in range(20_000, low - count, 500):
        try:
            for port in range(base, base + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {count} consecutive free ports between 20000 and {low}")


def rss_mb(pid: int) -> float:
    stat = procfs.process_stat(pid)
    return stat.rss_bytes / 2**20 if stat else 0.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def backend_pids(conn: psycopg.Connection) -> list[int]:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'",
        (DB_NAME,),
    )
    return [row[0] for row in rows]


# --- Control plane ---------------------------------------------------------------------------


@dataclass
class Setup:
    account: Any
    node: Any
    token: str  # the node token
    agent_port: int


def create_node(servers: int, python: str) -> Setup:
    """The test workload's game, an account allowed ``servers`` servers, and the node."""
    from accounts.actors import SYSTEM
    from accounts.models import Account
    from servers.services.nodes import node_allocations_add, node_create
    from tests.agent.loop import install_test_workload

    install_test_workload(python)
    account = Account.objects.create(
        name="bench-agent", max_servers=servers + 10, max_memory_mb=(servers + 10) * 1024
    )
    agent_port = free_port()
    node, token = node_create(
        name="bench-node-1",
        region=REGION,
        agent_url=f"http://127.0.0.1:{agent_port}",
        memory_mb=(servers + 10) * RESOURCES["memory_mb"],
        disk_mb=(servers + 10) * RESOURCES["disk_mb"],
        cpu_percent=min(25_600, servers * RESOURCES["cpu_percent"]),
        actor=SYSTEM,
    )
    count = servers + SPARE_ALLOCATIONS
    base = port_range(count)
    node_allocations_add(
        node=node, ip="127.0.0.1", ports=f"{base}-{base + count - 1}", actor=SYSTEM
    )
    return Setup(account, node, token, agent_port)


# --- The agent -------------------------------------------------------------------------------


def start_agent(args, setup: Setup, work: Path, control_plane_url: str) -> Agent:
    """Sampling, batches and disk scans at their defaults (5 s, 15 s, 30 s): not set here."""
    data_root = work / "node"
    data_root.mkdir(mode=0o711)
    settings = {"AGENT_LOG_LEVEL": "info"}
    if args.console_max_lines:
        settings["AGENT_CONSOLE_MAX_LINES_PER_SECOND"] = str(args.console_max_lines)
    python_args = ["-m", "cProfile", "-o", args.profile_agent] if args.profile_agent else []
    return start_agent_process(
        data_root,
        token=setup.token,
        node_id=setup.node.id,
        control_plane_url=control_plane_url,
        port=setup.agent_port,
        log_path=work / "agent.log",
        python_args=python_args,
        wait=False,
        **settings,
    )


def wait_for_agent(agent: Agent, node, timeout: float = 30) -> None:
    """Until the agent answers with the node token, then until it takes the control plane's
    request tokens (it learnt the public key from its hello)."""
    from servers.drivers import DriverError
    from servers.drivers.agent import agent_call

    deadline = time.monotonic() + timeout
    wait_until_answering(agent, timeout)
    while time.monotonic() < deadline:
        with contextlib.suppress(DriverError):
            if agent_call(node, "GET", "system")[0] == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(
        f"the agent took no request token within {timeout:.0f} s (no hello?):\n{agent.log_tail()}"
    )


# --- 1. Placement and start ------------------------------------------------------------------


@dataclass
class Started:
    server: Any
    placement_ms: float
    prepare_ms: float = 0.0  # create + install: PUT, PUT, install script
    start_ms: float | None = None  # PUT + start, until the ready line
    error: str = ""


def place_and_start(args, setup: Setup) -> list[Started]:
    from accounts.actors import SYSTEM
    from servers.drivers import DriverError
    from servers.drivers.agent import AgentDriver
    from servers.services.instances import server_create

    driver = AgentDriver()
    done: list[Started] = []
    deadline = time.monotonic() + args.start_budget
    for number in range(args.servers):
        if time.monotonic() > deadline:
            print(f"start budget of {args.start_budget:.0f} s spent: stopped at {number}")
            break
        began = time.perf_counter()
        server = server_create(
            account=setup.account,
            name=f"Bench {number:03d}",
            game=GAME,
            region=REGION,
            resources=RESOURCES,
            actor=SYSTEM,
        )
        placed = time.perf_counter()
        entry = Started(server, (placed - began) * 1000)
        done.append(entry)
        try:
            driver.create(server)
            driver.install(server)
            prepared = time.perf_counter()
            entry.prepare_ms = (prepared - placed) * 1000
            driver.start(server)
            entry.start_ms = (time.perf_counter() - prepared) * 1000
        except DriverError as error:
            entry.error = str(error)
            print(f"  {server.id} ({server.address}): {error}")
        if (number + 1) % 25 == 0:
            started = sum(1 for e in done if e.start_ms is not None)
            print(f"  {number + 1} placed, {started} started; {load_average()}", flush=True)
    return done


def ping(address: str) -> float:
    """Milliseconds for a ``ping`` → ``pong`` on a new connection to the game."""
    host, _, port = address.rpartition(":")
    began = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"ping\n")
        answer = sock.makefile().readline().strip()
    if answer != "pong":
        raise RuntimeError(f"{address} answered {answer!r}")
    return (time.perf_counter() - began) * 1000


def stop_servers(entries: list[Started]) -> tuple[int, float]:
    """Graceful stops through the driver, 8 at a time: (stopped, seconds)."""
    from servers.drivers import DriverError
    from servers.drivers.agent import AgentDriver

    driver = AgentDriver()

    def stop(entry: Started) -> bool:
        try:
            driver.stop(entry.server)  # no database access: the game was loaded at start
        except DriverError as error:
            print(f"  stop {entry.server.id}: {error}")
            return False
        return True

    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        stopped = sum(pool.map(stop, entries))
    return stopped, time.monotonic() - began


# --- 2. The agent's CPU ----------------------------------------------------------------------


@dataclass
class CpuWindow:
    running: int
    seconds: float
    agent_percent: float  # of one core
    children_percent: float  # reaped children (helpers), of one core
    control_plane_percent: float  # gunicorn, receiving the agent's reports
    rss_mb: float

    @property
    def per_server(self) -> float:
        return self.agent_percent / self.running if self.running else 0.0


def measure_agent_cpu(agent: Agent, gunicorn: Server, seconds: float) -> CpuWindow:
    time.sleep(SETTLE_SECONDS)
    running = sum(1 for status in agent.statuses().values() if status == "running")
    pid = agent.process.pid
    app_pids = gunicorn.pids()
    app_before = cpu_ticks(app_pids)
    own_before, children_before = process_ticks(pid)
    began = time.monotonic()
    time.sleep(seconds)
    own_after, children_after = process_ticks(pid)
    wall = time.monotonic() - began
    app_after = cpu_ticks(app_pids)
    app_ticks = sum(app_after[p] - app_before.get(p, 0) for p in app_after)
    share = 100 / (CLK_TCK * wall)
    return CpuWindow(
        running=running,
        seconds=wall,
        agent_percent=(own_after - own_before) * share,
        children_percent=(children_after - children_before) * share,
        control_plane_percent=app_ticks * share,
        rss_mb=rss_mb(pid),
    )


# --- 3. The console --------------------------------------------------------------------------


@dataclass
class Flow:
    """What one console client received of one flood of ``spam`` commands."""

    commands: int
    offered: int  # spam lines the game printed
    lines: int = 0  # spam lines received by the client
    dropped: int = 0  # counted in "console throttled" events
    markers: int = 0  # "Spammed N lines" received (one per command)
    first_s: float | None = None  # from the first command sent to the first spam line
    last_s: float | None = None  # ... to the last spam line received
    steady_lines: int = 0  # spam lines received from STEADY_AFTER s on

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.last_s if self.last_s else 0.0

    @property
    def steady_per_second(self) -> float:
        """Lines/s once the token bucket's initial second of allowance is spent."""
        if not self.last_s or self.last_s <= STEADY_AFTER + 1:
            return 0.0
        return self.steady_lines / (self.last_s - STEADY_AFTER)


@dataclass
class ConsoleResult:
    burst: Flow  # one ``spam --spam-lines``
    sustained: Flow  # ``spam`` commands paced at --flood-rate lines/s for --flood-seconds
    pings_ms: list[float] = field(default_factory=list)
    ping_errors: int = 0


class Pinger(threading.Thread):
    """``ping`` on one TCP connection to the game every PING_EVERY s, timing each answer."""

    def __init__(self, address: str):
        super().__init__(daemon=True)
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.reader = self.sock.makefile("rb")
        self.stopping = threading.Event()
        self.times_ms: list[float] = []
        self.errors = 0

    def run(self) -> None:
        while not self.stopping.wait(PING_EVERY):
            began = time.perf_counter()
            try:
                self.sock.sendall(b"ping\n")
                answer = self.reader.readline().strip()
            except OSError:
                self.errors += 1
                continue
            if answer == b"pong":
                self.times_ms.append((time.perf_counter() - began) * 1000)
            else:
                self.errors += 1

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)
        with contextlib.suppress(OSError):
            self.sock.sendall(b"quit\n")
        self.reader.close()
        self.sock.close()


async def receive_flow(ws, flow: Flow, began: float, sender: asyncio.Task | None) -> None:
    """Count what arrives until every command's "Spammed" line came (then 1 s more for a
    trailing "console throttled"), 10 s of silence, or 2 minutes."""
    import aiohttp

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        finished = flow.markers >= flow.commands and (sender is None or sender.done())
        try:
            message = await ws.receive(timeout=1.0 if finished else 10.0)
        except TimeoutError:
            break
        if message.type != aiohttp.WSMsgType.TEXT:
            break
        now = time.perf_counter() - began
        frame = json.loads(message.data)
        if frame["event"] == "console output":
            spam = 0
            for line in frame["args"]:
                if line.startswith("spam line "):
                    spam += 1
                elif line.startswith("Spammed "):
                    flow.markers += 1
            if spam:
                flow.lines += spam
                flow.steady_lines += spam if now >= STEADY_AFTER else 0
                flow.first_s = now if flow.first_s is None else flow.first_s
                flow.last_s = now
        elif frame["event"] == "console throttled":
            flow.dropped += int(frame["args"][0])


async def console_floods(
    url: str, token: str, address: str, burst: int, rate: int, seconds: float
) -> ConsoleResult:
    import aiohttp

    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, max_msg_size=0) as ws,
    ):
        await ws.send_json({"event": "auth", "args": [token]})
        frame = json.loads((await ws.receive(timeout=10)).data)
        if frame["event"] != "auth success":
            raise RuntimeError(f"console auth: {frame}")
        with contextlib.suppress(TimeoutError):  # the history and the status: drained
            while True:
                await ws.receive(timeout=1)
        pinger = Pinger(address)
        pinger.start()
        try:
            one = Flow(commands=1, offered=burst)
            began = time.perf_counter()
            await ws.send_json({"event": "send command", "args": [f"spam {burst}"]})
            await receive_flow(ws, one, began, None)

            ticks = max(1, round(seconds * 10))
            per_tick = max(1, rate // 10)
            paced = Flow(commands=ticks, offered=ticks * per_tick)

            async def send_paced() -> None:
                for tick in range(ticks):
                    await asyncio.sleep(max(0.0, began + tick / 10 - time.perf_counter()))
                    await ws.send_json({"event": "send command", "args": [f"spam {per_tick}"]})

            began = time.perf_counter()
            sender = asyncio.create_task(send_paced())
            await receive_flow(ws, paced, began, sender)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
        finally:
            pinger.stop()
    return ConsoleResult(one, paced, pinger.times_ms, pinger.errors)


def measure_console(args, agent: Agent, node, entry: Started) -> ConsoleResult:
    from servers.signing import console_token

    token, _ = console_token(
        node_id=node.id, instance_id=entry.server.id, user_id="usr_bench", write=True
    )
    url = f"{agent.url.replace('http://', 'ws://')}/api/servers/{entry.server.id}/ws"
    return asyncio.run(
        console_floods(
            url, token, entry.server.address, args.spam_lines, args.flood_rate, args.flood_seconds
        )
    )


# --- 4. Usage ingest -------------------------------------------------------------------------


@dataclass
class IngestResult:
    seconds: float
    requests: int
    accepted: int
    errors: list[str]
    latencies_ms: list[float]
    app_cpu_ms: float
    db_cpu_ms: float

    @property
    def per_second(self) -> float:
        return self.accepted / self.seconds if self.seconds else 0.0


def usage_bodies(instance_ids: list[str], batch: int, count: int) -> list[bytes]:
    """``count`` request bodies of ``batch`` samples each, over the node's real servers."""
    now = datetime.now(UTC)
    bodies = []
    for number in range(count):
        samples = []
        for index in range(batch):
            at = now - timedelta(seconds=5 * (number * batch + index))
            samples.append(
                {
                    "instance_id": instance_ids[index % len(instance_ids)],
                    "at": at.isoformat(),
                    "cpu_percent": round(index % 97 * 0.37, 2),
                    "memory_bytes": 40_000_000 + index,
                    "disk_bytes": 28_672,
                    "network_rx_bytes": None,
                    "network_tx_bytes": None,
                    "uptime_seconds": 600 + index,
                }
            )
        bodies.append(json.dumps({"samples": samples}).encode())
    return bodies


def post_usage(port: int, token: str, body: bytes) -> tuple[int, int, bytes]:
    """(status, accepted, body) of one POST /v1/agent/usage."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            "POST",
            "/v1/agent/usage",
            body=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        answer = response.read()
    finally:
        connection.close()
    accepted = 0
    if response.status == 202:
        accepted = json.loads(answer)["data"]["accepted"]
    return response.status, accepted, answer


def measure_ingest(args, gunicorn: Server, setup: Setup, instance_ids: list[str]):
    bodies = usage_bodies(instance_ids, args.ingest_batch, 4)
    status, accepted, answer = post_usage(gunicorn.port, setup.token, bodies[0])  # warm-up
    if status != 202 or accepted != args.ingest_batch:
        raise RuntimeError(f"usage ingest answered {status}: {answer[:300]!r}")
    lock = threading.Lock()
    totals = {"requests": 0, "accepted": 0}
    errors: list[str] = []
    latencies: list[float] = []
    end = time.monotonic() + args.ingest_seconds

    def client(number: int) -> None:
        turn = number
        while time.monotonic() < end:
            began = time.perf_counter()
            try:
                status, accepted, answer = post_usage(
                    gunicorn.port, setup.token, bodies[turn % len(bodies)]
                )
            except OSError as error:
                status, accepted, answer = 0, 0, str(error).encode()
            took = (time.perf_counter() - began) * 1000
            turn += 1
            with lock:
                totals["requests"] += 1
                totals["accepted"] += accepted
                latencies.append(took)
                if status != 202:
                    errors.append(f"{status}: {answer[:200]!r}")

    with psycopg.connect(database_url(args.postgres, DB_NAME), autocommit=True) as db:
        app_pids, db_pids = gunicorn.pids(), backend_pids(db)
        app_before, db_before = cpu_ticks(app_pids), cpu_ticks(db_pids)
        began = time.monotonic()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.ingest_threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(args.ingest_seconds + 90)
        seconds = time.monotonic() - began
        app_after = cpu_ticks(gunicorn.pids())
        db_after = cpu_ticks(sorted(set(db_pids) | set(backend_pids(db))))

    def ms(before: dict[int, int], after: dict[int, int]) -> float:
        return sum(t - before.get(pid, 0) for pid, t in after.items()) * 1000 / CLK_TCK

    thousands = max(totals["accepted"], 1) / 1000
    return IngestResult(
        seconds=seconds,
        requests=totals["requests"],
        accepted=totals["accepted"],
        errors=errors,
        latencies_ms=latencies,
        app_cpu_ms=ms(app_before, app_after) / thousands,
        db_cpu_ms=ms(db_before, db_after) / thousands,
    )


# --- Report ----------------------------------------------------------------------------------


def summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return (
        f"{statistics.median(values):,.1f} | {percentile(values, 0.95):,.1f} | "
        f"{max(values):,.1f} | {sum(values) / 1000:,.1f}"
    )


def report(args, entries, start_cpu, stops, cpu_windows, console, ingest) -> list[tuple[str, bool]]:
    started = [e for e in entries if e.start_ms is not None]
    print("\n| Step | n | median ms | p95 ms | max ms | total s |\n|---|---:|---:|---:|---:|---:|")
    rows = [
        ("placement (`server_create`)", [e.placement_ms for e in entries]),
        ("create + install (PUT, PUT, install)", [e.prepare_ms for e in started]),
        ("start (PUT + start until ready)", [e.start_ms for e in started]),
    ]
    for label, values in rows:
        print(f"| {label} | {len(values)} | {summary(values)} |")
    print(f"\nstarted: {len(started)} of {args.servers} placed servers", end="")
    if started:
        print(
            f"; agent CPU per server placed and started {start_cpu[0] / len(started):.1f} ms "
            f"(+ {start_cpu[1] / len(started):.1f} ms of its reaped children: the installs, "
            "launcher included)",
            end="",
        )
    if stops:
        print(f"; stopped {stops[0]} gracefully in {stops[1]:.1f} s (8 at a time)")
    print(
        "\n| Agent CPU | running servers | window s | agent, % of a core | per server | "
        "reaped children, % | gunicorn (reports), % | agent RSS MB |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for window in cpu_windows:
        print(
            f"| idle servers | {window.running} | {window.seconds:.1f} | "
            f"{window.agent_percent:.2f} | {window.per_server:.4f} | "
            f"{window.children_percent:.2f} | {window.control_plane_percent:.2f} | "
            f"{window.rss_mb:.0f} |"
        )
    if console:
        print(
            "\n| Console flood (one client) | commands | lines printed | received | dropped "
            "(throttled) | first line ms | last line s | received lines/s | after 1 s |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
        floods = [
            (f"burst: `spam {args.spam_lines:,}`", console.burst),
            (f"paced: {args.flood_rate:,} lines/s for {args.flood_seconds:g} s", console.sustained),
        ]
        for label, flow in floods:
            print(
                f"| {label} | {flow.markers}/{flow.commands} | {flow.offered:,} | {flow.lines:,} "
                f"| {flow.dropped:,} | {(flow.first_s or 0) * 1000:.0f} | {flow.last_s or 0:.2f} "
                f"| {flow.lines_per_second:,.0f} | "
                + (f"{flow.steady_per_second:,.0f} |" if flow.steady_per_second else "n/a |")
            )
        pings = console.pings_ms
        print(
            f"\npings to the spamming game (one connection, every {PING_EVERY * 1000:.0f} ms): "
            f"{len(pings)}, median {statistics.median(pings) if pings else 0:.1f} ms, p99 "
            f"{percentile(pings, 0.99):.1f} ms, max {max(pings, default=0):.1f} ms, "
            f"errors {console.ping_errors}"
        )
    if ingest:
        print(
            f"\ningest: {ingest.accepted:,} samples stored in {ingest.seconds:.1f} s = "
            f"{ingest.per_second:,.0f} samples/s ({ingest.requests} requests of "
            f"{args.ingest_batch}, {args.ingest_threads} client threads, 1 gunicorn sync "
            f"worker); request p50 {statistics.median(ingest.latencies_ms):.0f} ms, p95 "
            f"{percentile(ingest.latencies_ms, 0.95):.0f} ms; CPU per 1,000 samples: gunicorn "
            f"{ingest.app_cpu_ms:.0f} ms + PostgreSQL {ingest.db_cpu_ms:.0f} ms; "
            f"errors {len(ingest.errors)}"
            + (f"; first: {ingest.errors[0]}" if ingest.errors else "")
        )

    goals = [
        (
            f"{len(started)} of {args.servers} servers placed and started on one agent",
            len(started) == args.servers,
        )
    ]
    idle = next((w for w in cpu_windows if w.running == args.idle), None)
    if idle:
        goals.append(
            (
                f"agent CPU with {idle.running} idle servers: {idle.agent_percent:.2f} % of a core "
                f"(goal < {GOAL_AGENT_CPU_PERCENT:g} %)",
                idle.agent_percent < GOAL_AGENT_CPU_PERCENT,
            )
        )
    if console:
        slowest = max(console.pings_ms, default=float("inf"))
        paced = console.sustained
        goals.append(
            (
                f"console: {paced.steady_per_second:,.0f} lines/s to one client, steady, over a "
                f"{args.flood_seconds:g} s flood of {args.flood_rate:,} lines/s (goal >= "
                f"{GOAL_CONSOLE_LINES:,}; whole flood {paced.lines_per_second:,.0f}, one-command "
                f"burst {console.burst.lines_per_second:,.0f})",
                paced.steady_per_second >= GOAL_CONSOLE_LINES,
            )
        )
        goals.append(
            (
                f"game not blocked while spamming: slowest ping {slowest:.1f} ms of "
                f"{len(console.pings_ms)} (goal <= {GOAL_PING_MS} ms)",
                slowest <= GOAL_PING_MS and not console.ping_errors,
            )
        )
    if ingest:
        goals.append(
            (
                f"usage ingest: {ingest.per_second:,.0f} samples/s with one web worker "
                f"(goal >= {GOAL_INGEST:,})",
                ingest.per_second >= GOAL_INGEST and not ingest.errors,
            )
        )
    print("\nGoals:")
    for text, passed in goals:
        print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    return goals


# --- Main ------------------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=200, help="servers placed and started")
    parser.add_argument("--idle", type=int, default=100, help="servers left running for CPU")
    parser.add_argument("--cpu-seconds", type=float, default=30, help="each CPU window")
    parser.add_argument("--spam-lines", type=int, default=200_000)
    parser.add_argument(
        "--flood-rate",
        type=int,
        default=50_000,
        help="lines/s of the paced console flood (spam commands every 0.1 s)",
    )
    parser.add_argument("--flood-seconds", type=float, default=10)
    parser.add_argument(
        "--console-max-lines",
        type=int,
        metavar="N",
        help="the agent's AGENT_CONSOLE_MAX_LINES_PER_SECOND (default: the agent's, 20,000)",
    )
    parser.add_argument("--ingest-seconds", type=float, default=15)
    parser.add_argument("--ingest-threads", type=int, default=3)
    parser.add_argument("--ingest-batch", type=int, default=1000, help="samples per request")
    parser.add_argument(
        "--start-budget",
        type=float,
        default=210,
        help="seconds for placing and starting; stops early past it",
    )
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432",
        help=f"server URL without a database name; the bench uses {DB_NAME} on it",
    )
    parser.add_argument(
        "--redis", default="redis://127.0.0.1:6379/12", help="the control plane's Redis database"
    )
    parser.add_argument(
        "--profile-agent",
        metavar="FILE",
        help="run the agent under cProfile and write its stats to FILE (slows it down)",
    )
    args = parser.parse_args()
    if not 0 < args.idle <= args.servers:
        parser.error("--idle must be 1 to --servers")
    if args.flood_seconds < STEADY_AFTER + 2:
        parser.error(f"--flood-seconds must be at least {STEADY_AFTER + 2:g}")
    return args


def main() -> int:
    args = parse_args()
    wall = time.monotonic()
    print(machine_summary(), flush=True)
    print(f"at the start: {load_average()}", flush=True)
    python = workload_python()
    if python is None:
        raise RuntimeError("no Python interpreter that the unprivileged user (nobody) may run")
    env = one_worker_environment(args.postgres, args.redis, DB_NAME)
    prepare_control_plane(args.postgres, DB_NAME, env)
    setup = create_node(args.servers, python)
    print(f"control plane ready ({time.monotonic() - wall:.0f} s); workload interpreter {python}")

    work = Path(tempfile.mkdtemp(prefix="hms-bench-agent-"))
    work.chmod(0o711)
    gunicorn = agent = None
    entries: list[Started] = []
    stops, cpu_windows, console, ingest = None, [], None, None
    start_cpu = [0.0, 0.0]
    try:
        gunicorn = start_server("control plane", "hosting.wsgi", free_port(), env)
        wait_until_listening(gunicorn)
        control_plane_url = f"http://127.0.0.1:{gunicorn.port}"
        agent = start_agent(args, setup, work, control_plane_url)
        wait_for_agent(agent, setup.node)
        print(f"agent pid {agent.process.pid} on {agent.url}, hello to {control_plane_url}")

        print(f"\n1. placing and starting {args.servers} servers", flush=True)
        ticks_before = process_ticks(agent.process.pid)
        entries = place_and_start(args, setup)
        ticks_after = process_ticks(agent.process.pid)
        start_cpu = [
            (after - before) * 1000 / CLK_TCK
            for before, after in zip(ticks_before, ticks_after, strict=True)
        ]
        running = [e for e in entries if e.start_ms is not None]
        if running:
            print(f"  ping {running[-1].server.address}: {ping(running[-1].server.address):.1f} ms")

        print(f"\n2. agent CPU: {len(running)} servers running", flush=True)
        cpu_windows.append(measure_agent_cpu(agent, gunicorn, args.cpu_seconds))
        if len(running) > args.idle:
            stops = stop_servers(running[args.idle :])
            running = running[: args.idle]
            print(f"  stopped {stops[0]} in {stops[1]:.1f} s; {args.idle} left", flush=True)
            cpu_windows.append(measure_agent_cpu(agent, gunicorn, args.cpu_seconds))
        for window in cpu_windows:
            print(f"  {window.running} running: agent {window.agent_percent:.2f} % of a core")

        if running:
            print(f"\n3. console: spam {args.spam_lines:,} on {running[0].server.id}", flush=True)
            console = measure_console(args, agent, setup.node, running[0])

        print(f"\n4. usage ingest for {args.ingest_seconds:.0f} s; {load_average()}", flush=True)
        ingest = measure_ingest(args, gunicorn, setup, [e.server.id for e in entries])
    finally:
        print("\ncleaning up", flush=True)
        if agent is not None:
            deleted = stop_agent(agent, parallel=8)
            remove_cgroup_parents()
            print(f"  {deleted} servers deleted through the agent's API; agent stopped")
            if agent.process.returncode not in (0, None):
                print(f"  agent exit status {agent.process.returncode}:\n{agent.log_tail(10)}")
        if gunicorn is not None:
            stop_server(gunicorn)
        shutil.rmtree(work, ignore_errors=True)
        from django.db import connections

        connections.close_all()

    goals = report(args, entries, start_cpu, stops, cpu_windows, console, ingest)
    print(f"\nat the end: {load_average()}; {time.monotonic() - wall:.0f} s in all")
    if args.profile_agent:
        print(f"agent profile: {args.profile_agent} (python -m pstats {args.profile_agent})")
    return 0 if all(passed for _, passed in goals) else 1


if __name__ == "__main__":
    sys.exit(main())

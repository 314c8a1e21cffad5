"""Usage samples of running servers, every AGENT_SAMPLE_SECONDS, and the disk quota.

CPU and memory come from the server's cgroup when it has one (cpuacct.usage / cpu.stat,
memory.usage_in_bytes / memory.current), else from /proc for every process of the server's
session. Disk usage is a walk of the server's directory, slower, so it is done every
AGENT_DISK_SCAN_SECONDS and reused in between. Network traffic is what crossed the sandbox's own
interface (its network namespace's counters since it started, loopback left out); without a
sandbox it cannot be told apart per process and is reported as null.
"""

import asyncio
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import procfs, sandbox
from agent.clock import iso
from agent.runtime import ServerRuntime

log = logging.getLogger(__name__)


def directory_usage(top: Path) -> tuple[int, int]:
    """(bytes, entries) under ``top``: blocks used, links not followed, hard-linked files
    counted once; every file, folder and link is one entry (an inode, as the file cap counts)."""
    total, count, seen, folders = 0, 0, set(), [str(top)]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    count += 1
                    if info.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                        if (info.st_dev, info.st_ino) in seen:
                            continue
                        seen.add((info.st_dev, info.st_ino))
                    total += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
        except OSError:
            continue
    return total, count


@dataclass
class _Previous:
    pid: int | None
    cpu_nanoseconds: int
    at: float


@dataclass
class _Disk:
    bytes: int = 0
    files: int = 0
    scanned_at: float = 0.0
    scanning: bool = False
    tasks: set = field(default_factory=set)


class UsageSampler:
    def __init__(
        self,
        servers: Callable[[], Iterable[ServerRuntime]],
        deliver: Callable[[dict[str, Any]], None],
        *,
        sample_seconds: float,
        disk_scan_seconds: float,
        query_fields: Callable[[str], dict[str, Any]] | None = None,
    ):
        self._servers = servers
        # What the game query last learnt of a server (agent.query): players, version, MOTD.
        self._query_fields = query_fields
        self._deliver = deliver
        self._sample_seconds = sample_seconds
        self._disk_scan_seconds = disk_scan_seconds
        self._previous: dict[str, _Previous] = {}
        self._disk: dict[str, _Disk] = defaultdict(_Disk)

    async def run(self) -> None:
        while True:
            try:
                self.sample_all()
            except Exception:
                log.exception("usage sampling failed")
            await asyncio.sleep(self._sample_seconds)

    def sample_all(self) -> None:
        running = [
            server
            for server in self._servers()
            if server.status in ("starting", "running") and server.pid is not None
        ]
        known = {server.id for server in running}
        for server_id in set(self._previous) - known:
            del self._previous[server_id]
        if not running:
            return
        sessions: dict[int, list[procfs.ProcessStat]] | None = None
        if any(server.backend.cpu_nanoseconds(server.id) is None for server in running):
            sessions = defaultdict(list)
            for stat in procfs.all_processes():
                sessions[stat.session].append(stat)
        for server in running:
            sample = self._sample(server, sessions)
            server.publish_usage(sample)
            self._deliver(sample)
            self._check_disk(server)

    def _sample(
        self, server: ServerRuntime, sessions: dict[int, list[procfs.ProcessStat]] | None
    ) -> dict[str, Any]:
        now = time.time()
        cpu = server.backend.cpu_nanoseconds(server.id)
        memory = server.backend.memory_bytes(server.id)
        if (cpu is None or memory is None) and sessions is not None and server.pid is not None:
            members = sessions.get(server.pid, [])
            if cpu is None:
                cpu = sum(stat.cpu_ticks for stat in members) * 1_000_000_000 // procfs.CLOCK_TICKS
            if memory is None:
                memory = sum(stat.rss_bytes for stat in members)
        started = server.started_epoch or now
        cpu_percent = 0.0  # the first sample of a run has no interval to measure over
        previous = self._previous.get(server.id)
        if cpu is not None and previous is not None and previous.pid == server.pid:
            elapsed = max(now - previous.at, 1e-3)
            cpu_percent = max(0, cpu - previous.cpu_nanoseconds) / (elapsed * 1e9) * 100
        if cpu is not None:
            self._previous[server.id] = _Previous(server.pid, cpu, now)
        network = self._network(server, sessions)
        query = self._query_fields(server.id) if self._query_fields else {}
        return query | {
            "instance_id": server.id,
            "at": iso(now),
            "cpu_percent": round(cpu_percent, 2),
            "memory_bytes": memory or 0,
            "disk_bytes": self._disk[server.id].bytes,
            "network_rx_bytes": network[0] if network else None,
            "network_tx_bytes": network[1] if network else None,
            "uptime_seconds": int(now - started),
        }

    @staticmethod
    def _network(
        server: ServerRuntime, sessions: dict[int, list[procfs.ProcessStat]] | None
    ) -> tuple[int, int] | None:
        """The counters of the sandbox's network namespace, read through one of its processes
        (pasta itself lives in the node's namespace)."""
        if not server.services.isolation.sandboxed or server.pid is None:
            return None
        members = server.backend.processes(server.id)
        if members is None:
            members = [stat.pid for stat in (sessions or {}).get(server.pid, [])]
        for pid in members:
            if pid != server.pid and procfs.command_name(pid) not in ("pasta", "passt.avx2"):
                counters = sandbox.network_bytes(pid)
                if counters is not None:
                    return counters
        return None

    def _check_disk(self, server: ServerRuntime) -> None:
        disk = self._disk[server.id]
        if disk.scanning or time.monotonic() - disk.scanned_at < self._disk_scan_seconds:
            return
        disk.scanning = True
        task = asyncio.get_running_loop().create_task(self._scan(server, disk))
        disk.tasks.add(task)
        task.add_done_callback(disk.tasks.discard)

    async def _scan(self, server: ServerRuntime, disk: _Disk) -> None:
        try:
            disk.bytes, disk.files = await asyncio.to_thread(directory_usage, server.directory)
        finally:
            disk.scanning = False
            disk.scanned_at = time.monotonic()
        await server.enforce_disk_quota(disk.bytes, disk.files)

    def forget(self, server_id: str) -> None:
        self._previous.pop(server_id, None)
        self._disk.pop(server_id, None)

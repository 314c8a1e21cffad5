"""Resource limits of a server's processes: cgroup v1, cgroup v2, or rlimits when neither is
writable (an agent not running as root, a container without cgroup access).

With cgroups a server's processes live in ``<root>/<controller>/hms-agent/<server id>/`` (v1) or
``<root>/hms-agent/<server id>/`` (v2): limits hold for the whole tree, the agent can count and
kill every process of the server, and an out-of-memory kill is recorded by the kernel. With
rlimits only the address space and the number of processes of the user are bounded, and CPU is
not limited at all (RLIMIT_CPU counts CPU seconds over the process's life, so it would kill a
long-running server rather than slow it down).
"""

import contextlib
import errno
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.spec import Limits

log = logging.getLogger(__name__)

MIB = 1024 * 1024
CGROUP_PARENT = "hms-agent"
CPU_PERIOD_US = 100_000


def _write(path: Path, value: str) -> None:
    with open(path, "w") as file:
        file.write(value)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_keyed(path: Path, key: str) -> int | None:
    """A value from a ``key value`` per line file (memory.oom_control, memory.events, cpu.stat)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def _procs(directory: Path) -> list[int]:
    try:
        return [int(line) for line in (directory / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _rmdir(directory: Path) -> None:
    try:
        directory.rmdir()
    except FileNotFoundError:
        pass
    except OSError as error:
        log.warning("cannot remove cgroup %s: %s", directory, error.strerror)


def _try_mkdir(directory: Path) -> bool:
    try:
        directory.mkdir(exist_ok=True)
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class LaunchLimits:
    """What ``agent.launch`` applies to itself before it runs the command."""

    cgroup_procs: list[str]
    rlimits: dict[str, int]


class LimitsBackend:
    """One way of limiting a server's processes; ``name`` is what GET /api/system shows."""

    name = "none"

    def apply(self, server_id: str, limits: Limits) -> dict[str, Any]:
        """Create the server's group if needed and set its limits; returns what was applied."""
        raise NotImplementedError

    def launch_limits(self, server_id: str, limits: Limits) -> LaunchLimits:
        raise NotImplementedError

    def processes(self, server_id: str) -> list[int] | None:
        """Every process of the server, or ``None`` when this backend cannot tell."""
        return None

    def kill_all(self, server_id: str) -> None:
        for pid in self.processes(server_id) or ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def oom_kills(self, server_id: str) -> int | None:
        return None

    def cpu_nanoseconds(self, server_id: str) -> int | None:
        return None

    def memory_bytes(self, server_id: str) -> int | None:
        return None

    def remove(self, server_id: str) -> None:
        """Remove the server's group; its processes must be gone."""


class CgroupV1(LimitsBackend):
    name = "cgroup-v1"
    CONTROLLERS = ("memory", "cpu", "cpuacct", "pids")

    def __init__(self, root: Path):
        self.root = root
        self.controllers = [
            controller
            for controller in self.CONTROLLERS
            if _try_mkdir(root / controller / CGROUP_PARENT)
        ]
        self.has_swap_accounting = (root / "memory" / "memory.memsw.limit_in_bytes").exists()

    @classmethod
    def available(cls, root: Path) -> bool:
        return (root / "memory" / "memory.limit_in_bytes").exists() and _try_mkdir(
            root / "memory" / CGROUP_PARENT
        )

    def _dir(self, controller: str, server_id: str) -> Path:
        return self.root / controller / CGROUP_PARENT / server_id

    def _dirs(self, server_id: str) -> list[Path]:
        """One directory per hierarchy: cpu and cpuacct are often one mount under two names."""
        seen, dirs = set(), []
        for controller in self.controllers:
            real = os.path.realpath(self.root / controller)
            if real not in seen:
                seen.add(real)
                dirs.append(self._dir(controller, server_id))
        return dirs

    def _set_memory(self, directory: Path, limit: int) -> None:
        # memsw (memory + swap) must never be below the memory limit: write the pair in the
        # order that keeps it so, whichever way the limit moves. Equal values: no swap use.
        files = [directory / "memory.limit_in_bytes"]
        if self.has_swap_accounting:
            files.append(directory / "memory.memsw.limit_in_bytes")
            current = _read_int(files[0]) or 0
            if limit == -1 or limit >= current:
                files.reverse()
        for file in files:
            _write(file, str(limit))

    def apply(self, server_id: str, limits: Limits) -> dict[str, Any]:
        for directory in self._dirs(server_id):
            directory.mkdir(parents=True, exist_ok=True)
        applied: dict[str, Any] = {"mechanism": self.name, "memory_mb": None, "cpu_percent": None}
        memory = self._dir("memory", server_id)
        self._set_memory(memory, limits.memory_mb * MIB if limits.memory_mb else -1)
        applied["memory_mb"] = limits.memory_mb
        applied["swap"] = "none" if self.has_swap_accounting else "not limited"
        if "cpu" in self.controllers:
            cpu = self._dir("cpu", server_id)
            _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            quota = limits.cpu_percent * CPU_PERIOD_US // 100 if limits.cpu_percent else -1
            _write(cpu / "cpu.cfs_quota_us", str(quota))
            applied["cpu_percent"] = limits.cpu_percent
        if "pids" in self.controllers:
            _write(self._dir("pids", server_id) / "pids.max", str(limits.pids or "max"))
            applied["pids"] = limits.pids
        else:
            applied["pids"] = None
        return applied

    def launch_limits(self, server_id: str, limits: Limits) -> LaunchLimits:
        return LaunchLimits(
            cgroup_procs=[str(directory / "cgroup.procs") for directory in self._dirs(server_id)],
            rlimits={},
        )

    def processes(self, server_id: str) -> list[int]:
        return _procs(self._dir("memory", server_id))

    def oom_kills(self, server_id: str) -> int | None:
        directory = self._dir("memory", server_id)
        kills = _read_keyed(directory / "memory.oom_control", "oom_kill")
        if kills is None:
            # Kernels before 4.13 have no oom_kill counter: hitting the limit is the next best.
            kills = _read_int(directory / "memory.failcnt")
        return kills

    def cpu_nanoseconds(self, server_id: str) -> int | None:
        if "cpuacct" not in self.controllers:
            return None
        return _read_int(self._dir("cpuacct", server_id) / "cpuacct.usage")

    def memory_bytes(self, server_id: str) -> int | None:
        return _read_int(self._dir("memory", server_id) / "memory.usage_in_bytes")

    def remove(self, server_id: str) -> None:
        for directory in self._dirs(server_id):
            _rmdir(directory)


class CgroupV2(LimitsBackend):
    name = "cgroup-v2"

    def __init__(self, root: Path):
        self.root = root
        self.parent = root / CGROUP_PARENT
        self.parent.mkdir(exist_ok=True)
        for directory in (root, self.parent):
            for controller in ("memory", "cpu", "pids"):
                try:
                    _write(directory / "cgroup.subtree_control", f"+{controller}")
                except OSError as error:
                    log.warning("cgroup v2: cannot enable %s: %s", controller, error.strerror)

    @classmethod
    def available(cls, root: Path) -> bool:
        return (root / "cgroup.controllers").exists() and _try_mkdir(root / CGROUP_PARENT)

    def _dir(self, server_id: str) -> Path:
        return self.parent / server_id

    def apply(self, server_id: str, limits: Limits) -> dict[str, Any]:
        directory = self._dir(server_id)
        directory.mkdir(parents=True, exist_ok=True)
        applied: dict[str, Any] = {"mechanism": self.name}
        memory = str(limits.memory_mb * MIB) if limits.memory_mb else "max"
        _write(directory / "memory.max", memory)
        applied["memory_mb"] = limits.memory_mb
        if (directory / "memory.swap.max").exists():
            _write(directory / "memory.swap.max", "0")
            applied["swap"] = "none"
        else:
            applied["swap"] = "not limited"
        quota = str(limits.cpu_percent * CPU_PERIOD_US // 100) if limits.cpu_percent else "max"
        _write(directory / "cpu.max", f"{quota} {CPU_PERIOD_US}")
        applied["cpu_percent"] = limits.cpu_percent
        _write(directory / "pids.max", str(limits.pids or "max"))
        applied["pids"] = limits.pids
        return applied

    def launch_limits(self, server_id: str, limits: Limits) -> LaunchLimits:
        return LaunchLimits(cgroup_procs=[str(self._dir(server_id) / "cgroup.procs")], rlimits={})

    def processes(self, server_id: str) -> list[int]:
        return _procs(self._dir(server_id))

    def kill_all(self, server_id: str) -> None:
        try:
            _write(self._dir(server_id) / "cgroup.kill", "1")
        except OSError:
            super().kill_all(server_id)

    def oom_kills(self, server_id: str) -> int | None:
        return _read_keyed(self._dir(server_id) / "memory.events", "oom_kill")

    def cpu_nanoseconds(self, server_id: str) -> int | None:
        usage = _read_keyed(self._dir(server_id) / "cpu.stat", "usage_usec")
        return None if usage is None else usage * 1000

    def memory_bytes(self, server_id: str) -> int | None:
        return _read_int(self._dir(server_id) / "memory.current")

    def remove(self, server_id: str) -> None:
        _rmdir(self._dir(server_id))


class Rlimits(LimitsBackend):
    name = "rlimit"

    def apply(self, server_id: str, limits: Limits) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "memory_mb": limits.memory_mb,  # as RLIMIT_AS: address space, not resident memory
            "swap": "not limited",
            "cpu_percent": None,  # not enforced without cgroups
            "pids": limits.pids,  # as RLIMIT_NPROC: counts every process of the run-as user
        }

    def launch_limits(self, server_id: str, limits: Limits) -> LaunchLimits:
        rlimits = {}
        if limits.memory_mb:
            rlimits["RLIMIT_AS"] = limits.memory_mb * MIB
        if limits.pids:
            rlimits["RLIMIT_NPROC"] = limits.pids
        return LaunchLimits(cgroup_procs=[], rlimits=rlimits)


class LimitsUnavailable(Exception):
    """AGENT_LIMITS=cgroup but no writable cgroup hierarchy was found."""


def choose_backend(mode: str, root: Path) -> LimitsBackend:
    """The backend for AGENT_LIMITS (auto: cgroup v2, then v1, then rlimits)."""
    if mode != "rlimit":
        try:
            if CgroupV2.available(root):
                return CgroupV2(root)
            if CgroupV1.available(root):
                return CgroupV1(root)
        except OSError as error:
            if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
        if mode == "cgroup":
            raise LimitsUnavailable(f"AGENT_LIMITS=cgroup but no writable cgroup under {root}.")
    return Rlimits()

"""What /proc says about processes: start times (to recognise a pid after a restart), sessions
(a server's process tree: the launcher makes each server the leader of its own session), CPU
ticks and resident memory."""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessStat:
    pid: int
    state: str
    ppid: int
    process_group: int
    session: int
    cpu_ticks: int
    children_cpu_ticks: int  # of its children it has waited for
    start_ticks: int
    rss_bytes: int


def _parse_stat(pid: int, text: str) -> ProcessStat:
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = text[text.rfind(")") + 2 :].split()
    return ProcessStat(
        pid=pid,
        state=fields[0],
        ppid=int(fields[1]),
        process_group=int(fields[2]),
        session=int(fields[3]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
        children_cpu_ticks=int(fields[13]) + int(fields[14]),
        start_ticks=int(fields[19]),
        rss_bytes=int(fields[21]) * PAGE_SIZE,
    )


def process_stat(pid: int) -> ProcessStat | None:
    try:
        return _parse_stat(pid, (PROC / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def all_processes() -> Iterator[ProcessStat]:
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            stat = process_stat(int(entry.name))
            if stat is not None:
                yield stat


def session_members(session: int) -> list[int]:
    return [stat.pid for stat in all_processes() if stat.session == session and stat.state != "Z"]


def boot_time() -> float:
    for line in (PROC / "stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise RuntimeError("/proc/stat has no btime")


def start_time(start_ticks: int) -> float:
    """The wall-clock time (epoch seconds) a process with these start ticks began."""
    return boot_time() + start_ticks / CLOCK_TICKS


def boot_id() -> str:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def uids(pid: int) -> tuple[int, ...] | None:
    """The real, effective, saved and filesystem uids of a process."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                return tuple(int(value) for value in line.split()[1:])
    except OSError:
        return None
    return None


def command_name(pid: int) -> str | None:
    """The process's command name (``comm``), or ``None`` once it is gone."""
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return None

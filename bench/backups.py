"""Backups on a real agent: 1 GB of game-like data backed up and restored through the agent
against ``tar`` with the same compressor (not a test).

    .venv/bin/python bench/backups.py [--size-mb 1024] [--rounds 2] [--level 6]

1. **Agent**: ``python -m agent`` through the tests' harness (as bench/files.py starts it),
   reporting to the tests' fake control plane (tests/agent/fake_control_plane.py), whose events
   say when a backup or restore ended. One server (its spec only: nothing runs), no disk limit,
   ``AGENT_BACKUP_GZIP_LEVEL`` = ``--level``.
2. **Data**, about ``--size-mb`` MiB shaped like a modded game server's folder, owned by the
   server's user: a world of region files (``world/region/r.X.Z.mca``, 16 MiB each: sectors of
   random bytes, as compressed chunks are, between runs of zeros and repeated structures), about
   20,000 small files of plugins' and mods' configuration and data (1 to 21 KiB of text), and a
   few large logs (text). Read once beforehand so that every run reads from the page cache.
3. **Backup**, ``--rounds`` times, alternately: ``POST …/backups`` to the node's storage, timed
   from the call to its ``backup_completed`` event; and ``tar -cf - -C <folder> . | gzip -<level>``
   into a file, then ``sync`` of that file (the agent ``fsync``s its archive before renaming it
   in). Same gzip level, same folder, same disk.
4. **Restore**, alternately too: the server's folder emptied (not timed), ``POST …/restore``
   timed to its ``backup_restored`` event (reading the archive, checking its sha256, unpacking
   it into a hidden folder and moving the members in); and ``gzip -dc <archive> | tar -xf -``
   into an empty folder.
5. **Memory**: the agent's resident set (``VmRSS``) sampled every 50 ms during each operation:
   at the start and its peak.

Prints a table and PASS/FAIL for issue 30's goal: backup and restore within 1.3 times tar's
time, the agent's memory flat; exit status 1 when one fails. Needs root (the servers' users),
tar and gzip; everything it started is stopped and its temporary folder removed.
"""

import argparse
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import machine_summary  # noqa: E402 - the path above makes the project importable
from bench.billing import load_average  # noqa: E402
from bench.files import node_token, spec  # noqa: E402
from tests.agent.fake_control_plane import FakeControlPlane  # noqa: E402
from tests.agent.harness import (  # noqa: E402
    IS_ROOT,
    Agent,
    remove_cgroup_parents,
    start_agent,
    stop_agent,
)

NODE_ID = "node_BenchBackups0000000000001"
MIB = 2**20
MB = 10**6
REGION_BYTES = 16 * MIB
SECTOR = 4096
SMALL_FILES = 20_000
LOG_BYTES = 32 * MIB
GOAL_RATIO = 1.3
GOAL_RSS_GROWTH_MIB = 100
WORDS = (
    "minecraft:stone minecraft:dirt block entity chunk spawn player world nether end config "
    "enabled true false 64 128 0.5 name: value: - item: amount: damage: lore: [INFO] [WARN] "
    "Server thread/INFO]: Saving chunks for level 'ServerLevel[world]'/minecraft:overworld "
).split()


# --- the data ------------------------------------------------------------------------------------


def text_block(size: int, seed: int) -> bytes:
    """``size`` bytes of text made of the words above, in an order that repeats rarely."""
    state = seed
    out = bytearray()
    while len(out) < size:
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out += WORDS[state % len(WORDS)].encode()
        out += b"\n" if state % 7 == 0 else b" "
    return bytes(out[:size])


def region_file(path: Path) -> None:
    """Sectors: a third random (compressed chunk data), a third zeros, a third structured."""
    structured = text_block(SECTOR, 7)
    with open(path, "wb") as file:
        for number in range(REGION_BYTES // SECTOR):
            kind = number % 3
            if kind == 0:
                file.write(os.urandom(SECTOR))
            elif kind == 1:
                file.write(bytes(SECTOR))
            else:
                file.write(structured)


def make_data(folder: Path, size_mb: int) -> tuple[int, int]:
    """The game-like folder: (files, bytes)."""
    total = size_mb * MIB
    small_bytes = total // 5
    logs = 4
    regions = max(1, (total - small_bytes - logs * LOG_BYTES) // REGION_BYTES)
    (folder / "world" / "region").mkdir(parents=True)
    for number in range(regions):
        region_file(folder / "world" / "region" / f"r.{number % 8}.{number // 8}.mca")
    (folder / "logs").mkdir()
    for number in range(logs):
        (folder / "logs" / f"server-{number}.log").write_bytes(text_block(LOG_BYTES, number))
    block = text_block(4 * MIB, 99)
    average = max(1, small_bytes // SMALL_FILES)
    position = 0
    for number in range(SMALL_FILES):
        group = folder / ("plugins" if number % 2 else "mods") / f"pack-{number % 40:02d}"
        group.mkdir(parents=True, exist_ok=True)
        size = (number * 7919) % (2 * average) + 1
        if position + size > len(block):
            position = 0
        (group / f"data-{number:05d}.yml").write_bytes(block[position : position + size])
        position += size
    files = 0
    written = 0
    for path in folder.rglob("*"):
        if path.is_file():
            files += 1
            written += path.stat().st_size
    return files, written


def chown_tree(folder: Path, uid: int) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, uid, uid)


def warm(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as file:
                while file.read(MIB):
                    pass


def empty(folder: Path, keep: set[str]) -> None:
    for path in folder.iterdir():
        if path.name in keep:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


# --- measuring -----------------------------------------------------------------------------------


@dataclass
class Memory:
    """The agent's VmRSS, sampled in a thread while an operation runs."""

    pid: int
    start_kib: int = 0
    peak_kib: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def rss(self) -> int:
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def cpu(self) -> float:
        """The agent's CPU seconds so far (user and system, all its threads)."""
        with open(f"/proc/{self.pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> "Memory":
        self.cpu_seconds = -self.cpu()
        self.start_kib = self.peak_kib = self.rss()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_kib = max(self.peak_kib, self.rss())

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_seconds += self.cpu()


def wait_for_event(plane: FakeControlPlane, server_id: str, backup_id: str, count: int) -> dict:
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        found = [e for e in plane.events_of(server_id) if e.get("backup_id") == backup_id]
        if len(found) >= count:
            return found[count - 1]
        time.sleep(0.01)
    raise RuntimeError(f"no event for {backup_id}")


def run(command: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of its processes) of a shell command."""
    before = os.times()
    began = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", command], check=True)
    after = os.times()
    cpu = after.children_user + after.children_system
    return time.perf_counter() - began, cpu - before.children_user - before.children_system


@dataclass
class Round:
    agent_backup: float
    tar_backup: float
    agent_restore: float
    tar_restore: float
    agent_size: int
    tar_backup_cpu: float
    tar_restore_cpu: float
    tar_size: int
    memory: list[Memory]

    @property
    def agent_backup_cpu(self) -> float:
        return self.memory[0].cpu_seconds

    @property
    def agent_restore_cpu(self) -> float:
        return self.memory[1].cpu_seconds


def one_round(args, agent: Agent, plane, server_id: str, folder: Path, work: Path) -> Round:
    node = {"kind": "node"}
    backup_id = "bkp_" + secrets.token_hex(12)
    backups = f"/api/servers/{server_id}/backups"

    def through_the_agent(path: str, body: dict, count: int, wanted: str):
        """(seconds from the call to its event, the event, the agent's memory meanwhile)."""
        with agent.api(timeout=3600) as api, Memory(agent.process.pid) as memory:
            began = time.perf_counter()
            answer = api.post(path, json=body)
            if answer.status_code != 202:
                raise RuntimeError(answer.text)
            event = wait_for_event(plane, server_id, backup_id, count)
            seconds = time.perf_counter() - began
        if event["type"] != wanted:
            raise RuntimeError(f"not {wanted}: {event}")
        return seconds, event, memory

    agent_backup, event, backing_up = through_the_agent(
        backups, {"backup_id": backup_id, "storage": node}, 1, "backup_completed"
    )
    archive = work / "tar.tar.gz"
    tar_backup, tar_backup_cpu = run(
        f"tar -cf - -C {folder} . | gzip -{args.level} > {archive} && sync {archive}"
    )
    tar_size = archive.stat().st_size

    keep = {name for name in os.listdir(folder) if name.startswith(".")}
    empty(folder, keep)
    agent_restore, _, restoring = through_the_agent(
        f"{backups}/{backup_id}/restore",
        {"storage": node, "checksum": event["checksum"], "truncate": False},
        2,
        "backup_restored",
    )
    extract = work / "extract"
    extract.mkdir()
    tar_restore, tar_restore_cpu = run(f"gzip -dc {archive} | tar -xf - -C {extract}")
    shutil.rmtree(extract)
    archive.unlink()
    stored = agent.data_root / "backups" / server_id / f"{backup_id}.tar.gz"
    agent_size = stored.stat().st_size
    stored.unlink()
    return Round(
        agent_backup=agent_backup,
        tar_backup=tar_backup,
        agent_restore=agent_restore,
        tar_restore=tar_restore,
        agent_size=agent_size,
        tar_size=tar_size,
        tar_backup_cpu=tar_backup_cpu,
        tar_restore_cpu=tar_restore_cpu,
        memory=[backing_up, restoring],
    )


# --- the report ----------------------------------------------------------------------------------


def report(args, files: int, size: int, rounds: list[Round]) -> list[tuple[str, bool]]:
    def median(name: str) -> float:
        return statistics.median(getattr(one, name) for one in rounds)

    backup_ratio = median("agent_backup") / median("tar_backup")
    restore_ratio = median("agent_restore") / median("tar_restore")
    mb = size / MB
    print(
        f"\n| {files:,} files, {size / MIB:,.0f} MiB, gzip -{args.level},"
        f" median of {len(rounds)} | seconds | MB/s | ratio | CPU seconds |"
    )
    print("|---|---:|---:|---:|---:|")
    for label, name, ratio in (
        ("backup, agent (node storage, to the event)", "agent_backup", backup_ratio),
        ("backup, tar piped to gzip, then sync", "tar_backup", 1.0),
        ("restore, agent (checksum, hidden folder, moved in)", "agent_restore", restore_ratio),
        ("restore, gzip -dc piped to tar -x", "tar_restore", 1.0),
    ):
        seconds, cpu = median(name), median(f"{name}_cpu")
        print(f"| {label} | {seconds:.1f} | {mb / seconds:,.0f} | {ratio:.2f} | {cpu:.1f} |")
    print(
        f"\narchive: agent {median('agent_size') / MIB:,.0f} MiB,"
        f" tar {median('tar_size') / MIB:,.0f} MiB"
    )
    growth = max(memory.peak_kib - memory.start_kib for one in rounds for memory in one.memory)
    for number, one in enumerate(rounds, 1):
        shown = ", ".join(
            f"{what} {memory.start_kib / 1024:.0f} → {memory.peak_kib / 1024:.0f} MiB"
            for what, memory in zip(("backup", "restore"), one.memory, strict=True)
        )
        print(f"agent RSS, round {number}: {shown}")
    return [
        (f"backup = {backup_ratio:.2f}x tar (goal <= {GOAL_RATIO}x)", backup_ratio <= GOAL_RATIO),
        (
            f"restore = {restore_ratio:.2f}x tar (goal <= {GOAL_RATIO}x)",
            restore_ratio <= GOAL_RATIO,
        ),
        (
            f"agent RSS grew at most {growth / 1024:.0f} MiB while {size / MIB:,.0f} MiB went"
            f" through it (goal: flat, < {GOAL_RSS_GROWTH_MIB} MiB)",
            growth < GOAL_RSS_GROWTH_MIB * 1024,
        ),
    ]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="the folder, about, MiB")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--level", type=int, default=6, help="gzip level of both")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if not IS_ROOT:
        raise SystemExit("run it as root: the agent's servers have users of their own")
    print(machine_summary(), flush=True)
    print(f"at the start: {load_average()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="hms-bench-backups-"))
    work.chmod(0o711)
    plane = FakeControlPlane(token=node_token()).start()
    agent = None
    try:
        agent = start_agent(
            work / "node",
            token=plane.token,
            node_id=NODE_ID,
            control_plane_url=plane.url,
            AGENT_LOG_LEVEL="warning",
            AGENT_BACKUP_GZIP_LEVEL=str(args.level),
        )
        server_id = f"srv_{secrets.token_hex(6)}"
        with agent.api() as api:
            made = api.put(f"/api/servers/{server_id}", json=spec(server_id))
        if made.status_code != 201:
            raise RuntimeError(f"create {made.text}")
        folder = agent.data_root / "servers" / server_id
        began = time.perf_counter()
        files, size = make_data(folder, args.size_mb)
        chown_tree(folder, folder.stat().st_uid)
        warm(folder)
        print(
            f"agent pid {agent.process.pid}; {files:,} files, {size / MIB:,.0f} MiB made in"
            f" {time.perf_counter() - began:.0f} s",
            flush=True,
        )
        rounds = []
        for number in range(args.rounds):
            one = one_round(args, agent, plane, server_id, folder, work)
            rounds.append(one)
            print(
                f"  round {number + 1}: backup agent {one.agent_backup:.1f} s"
                f" ({one.agent_backup_cpu:.1f} CPU) / tar {one.tar_backup:.1f} s"
                f" ({one.tar_backup_cpu:.1f} CPU); restore agent {one.agent_restore:.1f} s"
                f" ({one.agent_restore_cpu:.1f} CPU) / tar {one.tar_restore:.1f} s"
                f" ({one.tar_restore_cpu:.1f} CPU)",
                flush=True,
            )
        goals = report(args, files, size, rounds)
    finally:
        if agent is not None:
            stop_agent(agent)
        plane.stop()
        remove_cgroup_parents()
        shutil.rmtree(work, ignore_errors=True)
    print("\nGoals (issue 30):")
    for text, passed in goals:
        print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    print(f"\nat the end: {load_average()}")
    return 0 if all(passed for _, passed in goals) else 1


if __name__ == "__main__":
    sys.exit(main())

"""SFTP on a real agent against OpenSSH's own ``sftp-server`` on the same files (not a test).

    .venv/bin/python bench/sftp.py [--size-mb 1024] [--rounds 3] [--cipher aes128-gcm@openssh.com]

1. **Agent**: ``python -m agent`` through the tests' harness with ``AGENT_SFTP_LISTEN`` on a
   free loopback port, its sign-in questions answered by the tests' fake control plane
   (tests/agent/fake_control_plane.py: the one key below is allowed, read and write). One
   server (its spec only, no disk limit); the bench signs in as ``bench.<short id>``.
2. **OpenSSH**: Debian's ``sshd`` (``apt-get install openssh-server``) with a configuration of
   the bench's own on another loopback port: the same key in an ``AuthorizedKeysFile`` for root,
   ``Subsystem sftp /usr/lib/openssh/sftp-server`` (OpenSSH's own SFTP server), no PAM.
3. **Transfers**: a ``--size-mb`` file of random bytes in the server's folder, read once so that
   both servers read it from the page cache. OpenSSH's ``sftp -b`` (the same client, the same
   ``--cipher`` for both, so that neither wins by its cipher) gets it to ``/dev/null`` and puts
   a local copy back under a new name, alternately from the agent and from sshd, ``--rounds``
   times: MB/s (10^6 bytes) of the whole ``sftp`` run, sign-in included, median.

The agent writes an upload to a hidden partial file and renames it in on close, charging
each write to the server's disk limit; sftp-server writes in place. Prints a table and
PASS/FAIL for the goal of issue 30 (SFTP >= 0.5x OpenSSH's sftp-server); exit status 1 when
it fails. Needs root (the agent's servers' users, sshd); everything it started is stopped and
its temporary folder removed on the way out.
"""

import argparse
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import machine_summary  # noqa: E402 - the path above makes the project importable
from bench.billing import load_average  # noqa: E402
from bench.files import BLOCK, MB, MIB, node_token, spec, write_big_file  # noqa: E402
from tests.agent.fake_control_plane import FakeControlPlane  # noqa: E402
from tests.agent.harness import IS_ROOT, free_port, start_agent, stop_agent  # noqa: E402

NODE_ID = "node_BenchSftp00000000000000001"
GOAL_RATIO = 0.5
SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
SSHD_CONFIG = """
Port {port}
ListenAddress 127.0.0.1
HostKey {work}/ssh_host_ed25519_key
PidFile {work}/sshd.pid
AuthorizedKeysFile {work}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp {sftp_server}
"""


@dataclass
class Target:
    label: str
    port: int
    username: str
    folder: str  # the server's folder as the target's sftp sees it
    down: list[float]
    up: list[float]


def keygen(path: Path) -> str:
    subprocess.run(
        ["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True
    )
    return path.with_suffix(".pub").read_text().strip()


def start_sshd(work: Path, key_line: str) -> tuple[subprocess.Popen, int]:
    if not Path(SSHD).exists() or not Path(SFTP_SERVER).exists():
        raise SystemExit("OpenSSH's server is missing: apt-get install openssh-server")
    keygen(work / "ssh_host_ed25519_key")
    (work / "authorized_keys").write_text(key_line + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    port = free_port()
    config = work / "sshd_config"
    config.write_text(SSHD_CONFIG.format(port=port, work=work, sftp_server=SFTP_SERVER))
    process = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)],
        stderr=open(work / "sshd.log", "wb"),  # noqa: SIM115 - closed with the process
        start_new_session=True,
    )
    return process, port


def sftp_run(args, target: Target, key: Path, commands: str, work: Path) -> float:
    """Seconds of one ``sftp -b`` run against the target, sign-in included."""
    batch = work / f"batch-{secrets.token_hex(3)}"
    batch.write_text(commands)
    command = [shutil.which("sftp") or "/usr/bin/sftp", "-q", "-b", str(batch), "-i", str(key)]
    command += ["-P", str(target.port), "-c", args.cipher]
    for option in (
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/dev/null",
        "IdentitiesOnly=yes",
        "PasswordAuthentication=no",
        "BatchMode=yes",
        "LogLevel=ERROR",
    ):
        command += ["-o", option]
    began = time.perf_counter()
    done = subprocess.run(
        [*command, f"{target.username}@127.0.0.1"],
        capture_output=True,
        text=True,
        cwd=work,
        check=False,
        timeout=3600,
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{target.label}: sftp failed: {done.stderr.strip()}")
    return seconds


def wait_for_port(port: int, what: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port}")


def measure(args, targets: list[Target], key: Path, folder: Path, work: Path) -> None:
    size = args.size_mb * MIB
    big = folder / "big.bin"
    write_big_file(big, size)
    uid = folder.stat().st_uid
    os.chown(big, uid, uid)
    with open(big, "rb") as warm:  # both read it from the page cache
        while warm.read(BLOCK):
            pass
    local = work / "local.bin"
    os.link(big, local)
    for number in range(args.rounds):
        for target in targets:
            seconds = sftp_run(args, target, key, f"get {target.folder}/big.bin /dev/null\n", work)
            target.down.append(size / MB / seconds)
            name = f"up-{number}-{secrets.token_hex(2)}.bin"
            seconds = sftp_run(args, target, key, f"put {local} {target.folder}/{name}\n", work)
            target.up.append(size / MB / seconds)
            if (folder / name).stat().st_size != size:
                raise RuntimeError(f"{target.label}: the upload is not whole")
            (folder / name).unlink()
        print(
            f"  round {number + 1}: "
            + "; ".join(
                f"{target.label} down {target.down[-1]:,.0f} up {target.up[-1]:,.0f} MB/s"
                for target in targets
            ),
            flush=True,
        )


def report(args, agent: Target, openssh: Target) -> list[tuple[str, bool]]:
    down = statistics.median(agent.down) / statistics.median(openssh.down)
    up = statistics.median(agent.up) / statistics.median(openssh.up)
    print(f"\n| {args.size_mb:,} MiB, {args.cipher}, median of {args.rounds} | MB/s | ratio |")
    print("|---|---:|---:|")
    print(f"| download, agent (asyncssh) | {statistics.median(agent.down):,.0f} | {down:.2f} |")
    print(f"| download, OpenSSH sftp-server | {statistics.median(openssh.down):,.0f} | 1 |")
    print(f"| upload, agent (asyncssh) | {statistics.median(agent.up):,.0f} | {up:.2f} |")
    print(f"| upload, OpenSSH sftp-server | {statistics.median(openssh.up):,.0f} | 1 |")
    return [
        (f"SFTP download = {down:.2f}x sftp-server (goal >= {GOAL_RATIO}x)", down >= GOAL_RATIO),
        (f"SFTP upload = {up:.2f}x sftp-server (goal >= {GOAL_RATIO}x)", up >= GOAL_RATIO),
    ]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="the transferred file, MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cipher", default="aes128-gcm@openssh.com")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if not IS_ROOT:
        raise SystemExit("run it as root: the agent's servers have users of their own, and sshd")
    print(machine_summary(), flush=True)
    print(f"at the start: {load_average()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="hms-bench-sftp-"))
    work.chmod(0o711)
    token = node_token()
    control_plane = FakeControlPlane(token).start()
    agent = sshd = None
    try:
        key = work / "client_key"
        key_line = keygen(key)
        sftp_port = free_port()
        agent = start_agent(
            work / "node",
            token=token,
            node_id=NODE_ID,
            control_plane_url=control_plane.url,
            AGENT_LOG_LEVEL="warning",
            AGENT_SFTP_LISTEN=f"127.0.0.1:{sftp_port}",
        )
        server_id = f"srv_{secrets.token_hex(6)}"
        with agent.api() as api:
            made = api.put(f"/api/servers/{server_id}", json=spec(server_id))
        if made.status_code != 201:
            raise RuntimeError(f"create {made.text}")
        control_plane.sftp_allow("bench", server_id, key_line)
        folder = agent.data_root / "servers" / server_id
        sshd, sshd_port = start_sshd(work, key_line)
        wait_for_port(sftp_port, "the agent's SFTP")
        wait_for_port(sshd_port, "sshd")
        targets = [
            Target("agent", sftp_port, f"bench.{server_id[4:12]}", "", [], []),
            Target("OpenSSH", sshd_port, "root", str(folder), [], []),
        ]
        print(
            f"agent pid {agent.process.pid}, SFTP on {sftp_port}; sshd on {sshd_port}\n"
            f"\n{args.size_mb:,} MiB down and up, {args.rounds} rounds",
            flush=True,
        )
        measure(args, targets, key, folder, work)
        goals = report(args, *targets)
    finally:
        if sshd is not None:
            sshd.terminate()
            sshd.wait(10)
        if agent is not None:
            stop_agent(agent)
        control_plane.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"at the end: {load_average()}")
    for text, passed in goals:
        print(f"{'PASS' if passed else 'FAIL'}  {text}")
    return 0 if all(passed for _, passed in goals) else 1


if __name__ == "__main__":
    sys.exit(main())

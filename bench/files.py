"""The file manager on a real agent: a big folder's listing, and 1 GB through the signed URLs
against nginx (not a test).

    .venv/bin/python bench/files.py [--files 10000] [--rounds 5] [--size-mb 1024]
                                    [--transfer-rounds 3]

Measured against the agent directly, on loopback: in production the control plane only signs
(a request token for the listing, a transfer token for the URL) and stays out of the bytes'
way, so what is measured here is the agent's part of "listing 10,000 files through the API"
(the control plane's own hop, its authentication and its JSON envelope come on top of it).

1. **Agent**: ``python -m agent`` through the tests' harness (tests/agent/harness.py, as
   bench/agent.py starts it), no control plane; a fresh Ed25519 key handed to it with
   ``POST /api/sync`` signs the transfer tokens, as the control plane's key does. One server
   (its spec only: nothing runs, its folder is what is measured), no disk limit.
2. **Listing**: ``--files`` small files made in the server's folder (``/many``, owned by its
   user); ``GET …/files/list?path=/many`` every page of 1,000 and of 100, ``--rounds`` times,
   one keep-alive connection with the node token: p50/p95/max per request. (The agent reads
   and sorts the whole folder for each page: a page of 100 costs nearly what one of 1,000 does.)
3. **Download**: a ``--size-mb`` file of random bytes (a 16 MiB block of ``os.urandom``
   repeated; no holes) in the server's folder and, hard-linked, in nginx's root, read once
   beforehand so that both come from the page cache. ``curl -o /dev/null`` on the signed URL
   and on nginx, alternately, ``--transfer-rounds`` times: MB/s (10^6 bytes) of each, median.
4. **Upload**: ``curl -T`` (a streamed PUT) of the same file to the signed upload URL (a fresh
   token and a new path each round) and to nginx's WebDAV ``PUT`` (``dav_methods PUT``), each
   landing on the same disk; also ``dd`` of the same bytes to a file on that disk with
   ``conv=fsync``, since the agent ``fsync``s an upload before putting it in place and nginx
   does not.

nginx (Debian's ``nginx-light``: ``apt-get install nginx-light``) runs with a configuration
of the bench's own (one worker, ``sendfile on``, no access log) on a free loopback port.
Prints a table and PASS/FAIL for the goals of issue 30: listing 10,000 files p95 ≤ 150 ms,
transfers ≥ 0.7 times curl against the static server; exit status 1 when one fails. Needs root
(the agent's servers' users) and curl; everything it started is stopped and its temporary
folder removed on the way out.
"""

import argparse
import contextlib
import os
import secrets
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.agent import percentile  # noqa: E402 - the path above makes the project importable
from bench.api import machine_summary  # noqa: E402
from bench.billing import load_average  # noqa: E402
from tests.agent.harness import (  # noqa: E402
    IS_ROOT,
    Agent,
    free_port,
    remove_cgroup_parents,
    start_agent,
    stop_agent,
)

NODE_ID = "node_BenchFiles000000000000001"
BASE62 = string.digits + string.ascii_letters
MB = 10**6
MIB = 2**20
BLOCK = 16 * MIB
PAGES = (1000, 100)
GOAL_LIST_P95_MS = 150
GOAL_TRANSFER_RATIO = 0.7
NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
user root root;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_max_body_size 0;
    client_body_temp_path {work}/nginx-body;
    types {{ }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ dav_methods PUT; create_full_put_path on; }}
    }}
}}
"""


def node_token() -> str:
    return "hmn_" + "".join(secrets.choice(BASE62) for _ in range(44))


def spec(server_id: str) -> dict:
    """A server that is never started: only its folder and its user are measured."""
    return {
        "id": server_id,
        "kind": "server",
        "template": {
            "install_script": "",
            "start_command": "true",
            "ready_pattern": "ready",
            "stop_command": "",
            "stop_signal": "SIGTERM",
            "stop_timeout_seconds": 5,
            "ready_timeout_seconds": 10,
        },
        "variables": {},
        "environment": {},
        "limits": {"memory_mb": 256, "cpu_percent": 100, "disk_mb": 0, "pids": 64},
        "allocation": {"ip": "127.0.0.1", "port": free_port()},
        "runtime": None,
        "source": None,
    }


def transfer_token(key: Ed25519PrivateKey, server_id: str, path: str, permission: str) -> str:
    """A token as the control plane signs it (PROTOCOL.md, "Downloads and uploads")."""
    now = int(time.time())
    claims = {
        "iss": "hosting-control-plane",
        "aud": NODE_ID,
        "sub": "usr_Bench",
        "server_id": server_id,
        "path": path,
        "permissions": [permission],
        "iat": now,
        "exp": now + 900,
        "jti": secrets.token_urlsafe(12),
    }
    return jwt.encode(claims, key, algorithm="EdDSA")


def curl(*args: str) -> tuple[float, int, int]:
    """(seconds, bytes moved, HTTP status) of one curl run."""
    command = [shutil.which("curl") or "curl", "-sS", "-o", "/dev/null", "-w"]
    command += ["%{time_total} %{size_download} %{size_upload} %{http_code}", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds, down, up, status = done.stdout.split()
    return float(seconds), max(int(float(down)), int(float(up))), int(status)


def write_big_file(path: Path, size: int) -> None:
    block = os.urandom(BLOCK)
    with open(path, "wb") as file:
        left = size
        while left:
            left -= file.write(block[: min(BLOCK, left)])
        file.flush()
        os.fsync(file.fileno())


def drop_from_page_cache(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


# --- the steps -----------------------------------------------------------------------------------


@dataclass
class Nginx:
    process: subprocess.Popen
    url: str


def start_nginx(work: Path, root: Path) -> Nginx:
    binary = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin")
    if binary is None:
        raise SystemExit("nginx is missing: apt-get install nginx-light")
    port = free_port()
    (work / "nginx-body").mkdir()
    conf = work / "nginx.conf"
    conf.write_text(NGINX_CONF.format(work=work, port=port, root=root))
    process = subprocess.Popen([binary, "-c", str(conf), "-p", str(work)], start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            httpx.get(url + "/", timeout=1)
            return Nginx(process, url)
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"nginx did not answer:\n{(work / 'nginx-error.log').read_text()}")


def measure_listing(agent: Agent, server_id: str, files: int, rounds: int) -> dict[int, list]:
    timings: dict[int, list[float]] = {page: [] for page in PAGES}
    with agent.api() as api:
        path = f"/api/servers/{server_id}/files/list"
        api.get(path, params={"path": "/many", "limit": "1000"})  # one warm-up
        for _ in range(rounds):
            for page in PAGES:
                for offset in range(0, files, page):
                    params = {"path": "/many", "offset": str(offset), "limit": str(page)}
                    began = time.perf_counter()
                    response = api.get(path, params=params)
                    timings[page].append((time.perf_counter() - began) * 1000)
                    listed = response.json()
                    if response.status_code != 200 or listed["total"] != files:
                        raise RuntimeError(f"listing answered {response.status_code}")
                    if len(listed["entries"]) != min(page, files - offset):
                        raise RuntimeError("a page of the wrong length")
    return timings


@dataclass
class Transfer:
    label: str
    rates: list[float]  # MB/s per round

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def measure_transfers(args, agent: Agent, key, server_id: str, folder: Path, nginx: Nginx, work):
    size = args.size_mb * MIB
    big = folder / "big.bin"
    write_big_file(big, size)
    uid = folder.stat().st_uid
    os.chown(big, uid, uid)
    os.link(big, work / "static" / "big.bin")
    with open(big, "rb") as warm:  # both read it from the page cache
        while warm.read(BLOCK):
            pass
    agent_down, nginx_down = Transfer("download, agent (signed URL)", []), Transfer("", [])
    agent_up, nginx_up, dd_up = Transfer("", []), Transfer("", []), Transfer("", [])
    for number in range(args.transfer_rounds):
        token = transfer_token(key, server_id, "/big.bin", "files.download")
        seconds, moved, status = curl(
            f"{agent.url}/api/servers/{server_id}/files/download?token={token}"
        )
        check(status, moved, size, "agent download")
        agent_down.rates.append(size / MB / seconds)
        seconds, moved, status = curl(f"{nginx.url}/big.bin")
        check(status, moved, size, "nginx download")
        nginx_down.rates.append(size / MB / seconds)

        name = f"up-{number}.bin"
        token = transfer_token(key, server_id, f"/{name}", "files.upload")
        url = f"{agent.url}/api/servers/{server_id}/files/upload?token={token}"
        seconds, moved, status = curl("-T", str(big), url)
        check(status, moved, size, "agent upload")
        agent_up.rates.append(size / MB / seconds)
        (folder / name).unlink()
        seconds, moved, status = curl("-T", str(big), f"{nginx.url}/up/{name}")
        check(status, moved, size, "nginx upload")
        nginx_up.rates.append(size / MB / seconds)
        (work / "static" / "up" / name).unlink()
        target = work / name
        began = time.perf_counter()
        subprocess.run(
            ["dd", f"if={big}", f"of={target}", f"bs={MIB}", "conv=fsync", "status=none"],
            check=True,
        )
        dd_up.rates.append(size / MB / (time.perf_counter() - began))
        target.unlink()
        print(
            f"  round {number + 1}: download agent {agent_down.rates[-1]:,.0f} / nginx"
            f" {nginx_down.rates[-1]:,.0f} MB/s; upload agent {agent_up.rates[-1]:,.0f} / nginx"
            f" {nginx_up.rates[-1]:,.0f} / dd {dd_up.rates[-1]:,.0f} MB/s",
            flush=True,
        )
    drop_from_page_cache(big)
    return agent_down, nginx_down, agent_up, nginx_up, dd_up


def check(status: int, moved: int, size: int, what: str) -> None:
    if status not in (200, 201, 204) or moved != size:
        raise RuntimeError(f"{what}: HTTP {status}, {moved:,} of {size:,} bytes")


# --- the report --------------------------------------------------------------------------------


def report(args, timings, transfers) -> list[tuple[str, bool]]:
    print(f"\n| Listing /many ({args.files:,} files) | requests | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for page, values in timings.items():
        print(
            f"| page of {page:,} | {len(values)} | {percentile(values, 0.5):.1f}"
            f" | {percentile(values, 0.95):.1f} | {max(values):.1f} |"
        )
    agent_down, nginx_down, agent_up, nginx_up, dd_up = transfers
    down_ratio = agent_down.median / nginx_down.median
    up_ratio = agent_up.median / nginx_up.median
    print(f"\n| {args.size_mb:,} MiB, median of {args.transfer_rounds} | MB/s | ratio |")
    print("|---|---:|---:|")
    print(f"| download, agent (signed URL, curl) | {agent_down.median:,.0f} | {down_ratio:.2f} |")
    print(f"| download, nginx (curl) | {nginx_down.median:,.0f} | 1 |")
    print(f"| upload, agent (signed URL, curl -T) | {agent_up.median:,.0f} | {up_ratio:.2f} |")
    print(f"| upload, nginx WebDAV PUT (curl -T) | {nginx_up.median:,.0f} | 1 |")
    dd_ratio = agent_up.median / dd_up.median
    print(
        f"| write, dd conv=fsync (the agent's upload / dd) | {dd_up.median:,.0f} | {dd_ratio:.2f} |"
    )
    worst = max(percentile(values, 0.95) for values in timings.values())
    return [
        (
            f"listing {args.files:,} files p95 = {worst:.1f} ms"
            f" (goal <= {GOAL_LIST_P95_MS} ms; the agent's part)",
            worst <= GOAL_LIST_P95_MS,
        ),
        (
            f"download = {down_ratio:.2f}x nginx (goal >= {GOAL_TRANSFER_RATIO}x)",
            down_ratio >= GOAL_TRANSFER_RATIO,
        ),
        (
            f"upload = {up_ratio:.2f}x nginx PUT (goal >= {GOAL_TRANSFER_RATIO}x)",
            up_ratio >= GOAL_TRANSFER_RATIO,
        ),
    ]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="times every page is listed")
    parser.add_argument("--size-mb", type=int, default=1024, help="the transferred file, MiB")
    parser.add_argument("--transfer-rounds", type=int, default=3)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if not IS_ROOT:
        raise SystemExit("run it as root: the agent's servers have users of their own")
    print(machine_summary(), flush=True)
    print(f"at the start: {load_average()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="hms-bench-files-"))
    work.chmod(0o711)
    (work / "static").mkdir(mode=0o755)
    key = Ed25519PrivateKey.generate()
    agent = nginx = None
    try:
        agent = start_agent(
            work / "node", token=node_token(), node_id=NODE_ID, AGENT_LOG_LEVEL="warning"
        )
        public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        server_id = f"srv_{secrets.token_hex(6)}"
        with agent.api() as api:
            synced = api.post(
                "/api/sync", json={"console_public_key": public.decode(), "servers": []}
            )
            made = api.put(f"/api/servers/{server_id}", json=spec(server_id))
        if synced.status_code != 200 or made.status_code != 201:
            raise RuntimeError(f"sync {synced.text}; create {made.text}")
        folder = agent.data_root / "servers" / server_id
        uid = folder.stat().st_uid
        many = folder / "many"
        many.mkdir()
        for number in range(args.files):
            (many / f"file-{number:05d}.txt").write_bytes(b"x" * (number % 500))
        for path in [many, *many.iterdir()]:
            os.chown(path, uid, uid)
        print(f"agent pid {agent.process.pid} on {agent.url}; {args.files:,} files made")

        print(f"\n1. listing /many, pages of {' and '.join(map(str, PAGES))}", flush=True)
        timings = measure_listing(agent, server_id, args.files, args.rounds)

        nginx = start_nginx(work, work / "static")
        print(f"\n2. {args.size_mb:,} MiB down and up; nginx on {nginx.url}", flush=True)
        transfers = measure_transfers(args, agent, key, server_id, folder, nginx, work)

        goals = report(args, timings, transfers)
    finally:
        if nginx is not None:
            nginx.process.terminate()
            nginx.process.wait(10)
        if agent is not None:
            stop_agent(agent)
        remove_cgroup_parents()
        shutil.rmtree(work, ignore_errors=True)
    print("\nGoals (issue 30):")
    for text, passed in goals:
        print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    print(f"\nat the end: {load_average()}")
    return 0 if all(passed for _, passed in goals) else 1


if __name__ == "__main__":
    sys.exit(main())

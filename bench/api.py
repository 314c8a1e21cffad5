"""GET /v1/servers against a raw WSGI app and an idiomatic DRF one, with wrk (not a test).

    .venv/bin/python bench/api.py [--duration 10] [--rounds 3] [--connections 8] [--threads 2]
                                  [--warmup 3] [--reuse-dataset] [--postgres URL]

1. Builds the dataset in its own PostgreSQL database, ``hosting_bench`` (dropped and created
   again, then migrated): 1,000,000 servers, of which 100, 10,000 and 100,000 belong to three
   measured accounts and the rest to 1,000 filler accounts, loaded with COPY in creation order
   (accounts interleaved, ``created_at`` spread over a year), then ``VACUUM ANALYZE``. Each
   measured account gets an owner and a ``servers:read`` key from ``api_key_create``.
   ``--reuse-dataset`` keeps an existing dataset (still migrating it and making fresh keys).
   The 100-server account also gets 100 bots, invoices, tickets and events (the other hot
   lists of issue 35).
2. Starts four gunicorn servers from the committed ``gunicorn.conf.py`` on 127.0.0.1: the
   service (``hosting.wsgi``, DEBUG off, Redis db 3, generated secrets, a rate limit too high
   to refuse), the same service without Redis (key lookups from the database, rate limits in
   SQLite), the raw baseline ``bench/raw_app.py`` (psycopg 3 + orjson, same SQL) and the
   idiomatic DRF reference ``bench/drf_app.py``.
3. Checks that both answer 200 with the same servers, warms every target up, then runs wrk
   on each target in turn, round after round (A/B/A/B...), and reports requests/s, p50/p99
   latency, server CPU per request (gunicorn master + workers and the PostgreSQL backends of
   the bench database, from /proc) and the goals of issue 35 as PASS/FAIL.

Everything it starts is stopped before it exits. Exit status 1 when a goal fails or a target
answered errors. Needs wrk (``apt-get install wrk``) and Redis at 127.0.0.1:6379.
"""

import argparse
import json
import os
import platform
import random
import re
import secrets
import shutil
import signal
import statistics
import string
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "hosting_bench"
REDIS_URL = "redis://127.0.0.1:6379/3"
APP_PORT, RAW_PORT, NO_REDIS_PORT, DRF_PORT = 8811, 8812, 8813, 8814
# Each list endpoint of issue 35's "other hot lists", with OTHER_ROWS rows in the 100-server
# account: the path and its list key.
OTHER_LISTS = (("bots", "/v1/bots"), ("invoices", "/v1/invoices"), ("tickets", "/v1/tickets"))
OTHER_LISTS += (("events", "/v1/events"),)
OTHER_ROWS = 100
KEY_SCOPES = ["servers:read", "bots:read", "billing:read", "tickets:read", "webhooks:read"]
TOTAL_SERVERS = 1_000_000
MEASURED_SIZES = (100, 10_000, 100_000)
FILLER_ACCOUNTS = 1_000
DEEP_PAGE = 2_000  # of 4,000 pages of 25 for the 100,000-server account
BASE62 = string.digits + string.ascii_letters
STATUSES = ["running"] * 50 + ["stopped"] * 35 + ["suspended"] * 5 + ["install_failed"] * 3
STATUSES += ["provisioning", "installing", "starting", "stopping"] * 2
WORDS = (
    "Survival Creative Hardcore Modded Vanilla Skyblock Factions Prison Arena Lobby Test Event "
    "Community Private Staging"
).split()
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- Environment ---------------------------------------------------------------------------


def bench_environment(database_url: str) -> dict[str, str]:
    """The production settings, with fresh secrets, pointed at the bench database."""
    from cryptography.fernet import Fernet

    env = dict(os.environ)
    for name in ("DEBUG", "DATABASE_CONN_MAX_AGE", "GUNICORN_ACCESS_LOG", "GUNICORN_BIND"):
        env.pop(name, None)
    env.update(
        DJANGO_SETTINGS_MODULE="hosting.settings",
        DATABASE_URL=database_url,
        REDIS_URL=REDIS_URL,
        SECRET_KEY=secrets.token_urlsafe(50),
        API_KEY_PEPPERS=f"bench={secrets.token_urlsafe(40)}",
        SECRET_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        EMAIL_CONSOLE_ALLOWED="true",  # the bench sends no e-mail
        SECURE_SSL_REDIRECT="false",
        ALLOWED_HOSTS="127.0.0.1",
        RATE_LIMIT_PER_MINUTE=str(10**9),
        WEB_CONCURRENCY=env.get("WEB_CONCURRENCY", "2"),
        GUNICORN_LOG_LEVEL="warning",
    )
    return env


def database_url(admin_url: str, name: str) -> str:
    return f"{admin_url.rstrip('/')}/{name}"


def database_exists(admin_url: str, name: str) -> bool:
    with psycopg.connect(database_url(admin_url, "postgres"), autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        return row is not None


def recreate_database(admin_url: str, name: str) -> None:
    with psycopg.connect(database_url(admin_url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def migrate(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, env=env, check=True
    )


def one_worker_environment(postgres: str, redis: str, db_name: str) -> dict[str, str]:
    """The production settings of a bench with its own database and ONE sync web worker."""
    env = bench_environment(database_url(postgres, db_name))
    env.update(REDIS_URL=redis, WEB_CONCURRENCY="1", DEBUG="false")
    return env


def prepare_control_plane(postgres: str, db_name: str, env: dict[str, str]) -> None:
    """The bench's database made afresh and migrated, and Django set up in this process."""
    import django

    recreate_database(postgres, db_name)
    migrate(env)
    os.environ.update(env)
    django.setup()


def flush_redis() -> None:
    """Empty the bench's own Redis database (rate-limit counters, cached keys of old runs)."""
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


# --- Dataset -------------------------------------------------------------------------------


def create_accounts() -> tuple[dict[int, str], list[str]]:
    """The measured accounts by size (each with an owner) and the filler account ids."""
    from accounts.models import Account, Membership, User
    from accounts.roles import Role

    measured = {}
    for size in MEASURED_SIZES:
        account = Account.objects.create(name=f"bench-{size}", max_servers=TOTAL_SERVERS)
        user = User.objects.create_user(email=f"bench-{size}@example.com", password=None)
        Membership.objects.create(account=account, user=user, role=Role.OWNER)
        measured[size] = account.pk
    fillers = Account.objects.bulk_create(
        Account(name=f"filler-{n:04d}") for n in range(FILLER_ACCOUNTS)
    )
    return measured, [account.pk for account in fillers]


def existing_accounts() -> dict[int, str]:
    """The measured accounts of an existing dataset, by size."""
    from accounts.models import Account

    names = {f"bench-{size}": size for size in MEASURED_SIZES}
    return {names[a.name]: a.pk for a in Account.objects.filter(name__in=names)}


def account_per_row(measured: dict[int, str], fillers: list[str], rng: random.Random) -> list:
    """One account id per server row, shuffled: servers of all accounts created interleaved."""
    owners = [account for size, account in measured.items() for _ in range(size)]
    rest = TOTAL_SERVERS - len(owners)
    owners += [fillers[n % len(fillers)] for n in range(rest)]
    rng.shuffle(owners)
    return owners


def server_copy_columns() -> tuple[list[str], str]:
    """The columns the loader fills row by row, and the COPY text of every other column."""
    from servers.models import Server

    varying = ["id", "account_id", "name", "game_id", "status", "created_at", "updated_at"]
    constant = {}
    for model_field in Server._meta.concrete_fields:
        if model_field.column in varying:
            continue
        value = model_field.get_default()
        if model_field.column == "region_id":
            value = "eu-central"
        constant[model_field.column] = _copy_text(value)
    return varying + list(constant), "\t".join(constant.values())


def _copy_text(value) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def server_lines(owners: list, games: list[str], rng: random.Random, constant: str):
    """COPY text lines in creation order, ``created_at`` spread over the last year."""
    end = datetime.now(UTC) - timedelta(minutes=5)
    year = 365 * 24 * 3600
    offsets = sorted(rng.random() * year for _ in owners)
    start = end - timedelta(seconds=year)
    for number, (account_id, offset) in enumerate(zip(owners, offsets, strict=True)):
        server_id = "srv_" + "".join(rng.choices(BASE62, k=24))
        name = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {number % 997}"
        created = (start + timedelta(seconds=offset)).isoformat()
        yield (
            f"{server_id}\t{account_id}\t{name}\t{rng.choice(games)}\t{rng.choice(STATUSES)}"
            f"\t{created}\t{created}\t{constant}\n"
        )


def load_servers(db_url: str, owners: list) -> None:
    """COPY the servers in chunks of 10,000 rows, in one transaction."""
    rng = random.Random(6)
    columns, constant = server_copy_columns()
    with psycopg.connect(db_url, autocommit=True) as conn:
        games = [row[0] for row in conn.execute("SELECT slug FROM servers_game ORDER BY slug")]
        with conn.transaction(), conn.cursor() as cursor:
            # As a bulk import would: the counting trigger is off for the load and the counts
            # are rebuilt from the table afterwards (build_dataset), in one statement.
            cursor.execute("ALTER TABLE servers_server DISABLE TRIGGER servers_server_count")
            sql = f"COPY servers_server ({', '.join(columns)}) FROM STDIN"
            with cursor.copy(sql) as copy:
                chunk = []
                for line in server_lines(owners, games, rng, constant):
                    chunk.append(line)
                    if len(chunk) == 10_000:
                        copy.write("".join(chunk))
                        chunk.clear()
                copy.write("".join(chunk))
            # The deferred foreign-key checks of the COPY must run before the table can be
            # altered again ("pending trigger events").
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("ALTER TABLE servers_server ENABLE TRIGGER servers_server_count")


def build_dataset(db_url: str) -> dict[int, str]:
    started = time.monotonic()
    measured, fillers = create_accounts()
    owners = account_per_row(measured, fillers, random.Random(1))
    load_servers(db_url, owners)
    create_other_rows(measured[100])
    from servers.counts import instance_counts_rebuild

    instance_counts_rebuild()
    print(f"dataset: {TOTAL_SERVERS:,} servers loaded in {time.monotonic() - started:.0f} s")
    return measured


def create_other_rows(account_id: str) -> None:
    """OTHER_ROWS bots, invoices, tickets and events of the 100-server account (the other hot
    lists), created in bulk with plain values as a busy account has them."""
    from billing.models import Invoice
    from events.models import Event
    from servers.models import Bot, Region
    from support.models import Department, Ticket

    region = Region.objects.order_by("slug").first()
    department = Department.objects.order_by("pk").first()
    if department is None:
        department = Department.objects.create(name="Support")
    Bot.objects.bulk_create(
        Bot(
            account_id=account_id,
            name=f"bot {n}",
            region=region,
            runtime="python",
            start_command="python bot.py",
            token_encrypted="-",
            token_last4="abcd",
        )
        for n in range(OTHER_ROWS)
    )
    Invoice.objects.bulk_create(
        Invoice(account_id=account_id, billing_reason="manual", currency="EUR")
        for _ in range(OTHER_ROWS)
    )
    Ticket.objects.bulk_create(
        Ticket(
            number=900_000 + n,
            subject=f"Question {n}",
            account_id=account_id,
            requester_email="bench-100@example.com",
            department=department,
            channel="api",
        )
        for n in range(OTHER_ROWS)
    )
    Event.objects.bulk_create(
        Event(
            account_id=account_id, type="server.updated", object_type="server", object_id=f"srv_{n}"
        )
        for n in range(OTHER_ROWS)
    )


def make_keys(measured: dict[int, str]) -> dict[int, str]:
    """A fresh ``servers:read`` key of each measured account's owner (older bench keys go)."""
    from accounts.models import Account, ApiKey, Membership
    from accounts.services import api_key_create

    tokens = {}
    for size, account_id in measured.items():
        account = Account.objects.get(pk=account_id)
        owner = Membership.objects.select_related("user").get(account=account).user
        ApiKey.objects.filter(account=account).delete()
        _, tokens[size] = api_key_create(
            account=account, user=owner, name="bench", scopes=KEY_SCOPES
        )
    return tokens


# --- Servers -------------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen

    def pids(self) -> list[int]:
        """The gunicorn master and its workers."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [self.process.pid, *map(int, children.read_text().split())]
        except OSError:
            return [self.process.pid]


def start_server(name: str, app: str, port: int, env: dict[str, str]) -> Server:
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", app, "-c", "gunicorn.conf.py"],
        cwd=ROOT,
        env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}"},
        start_new_session=True,
    )
    return Server(name, port, process)


def wait_until_listening(server: Server, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with status {server.process.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/nothing", timeout=2)
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
        else:
            return
    raise RuntimeError(f"{server.name} did not listen on port {server.port} in {timeout:.0f} s")


def stop_server(server: Server) -> None:
    """SIGTERM to the gunicorn master (a graceful stop), SIGKILL to its group if it hangs."""
    if server.process.poll() is not None:
        return
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=5)


# --- Measuring -----------------------------------------------------------------------------


@dataclass
class Target:
    label: str
    server: Server
    path: str
    token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}{self.path}"


@dataclass
class Run:
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    app_cpu_ms: float  # gunicorn, per request
    db_cpu_ms: float  # PostgreSQL backends, per request

    @property
    def cpu_ms(self) -> float:
        return self.app_cpu_ms + self.db_cpu_ms


@dataclass
class Result:
    target: Target
    runs: list[Run] = field(default_factory=list)

    def median(self, name: str) -> float:
        return statistics.median(getattr(run, name) for run in self.runs)


def fetch(target: Target) -> tuple[int, dict]:
    request = urllib.request.Request(
        target.url, headers={"Authorization": f"Bearer {target.token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, {"body": error.read()[:300].decode(errors="replace")}


def check_answers(pairs: list[tuple[Target, Target]]) -> None:
    """Every target answers 200; the service and the raw app give the same page."""
    for raw, real in pairs:
        (raw_status, raw_body), (status, body) = fetch(raw), fetch(real)
        if raw_status != 200 or status != 200:
            raise RuntimeError(f"{real.label}: raw {raw_status}, service {status}: {body}")
        if raw_body["data"] != body["data"]:
            print(
                f"note: {real.label}: the service's page differs from the raw app's "
                f"(pagination {body['data'].get('pagination')} vs "
                f"{raw_body['data']['pagination']})"
            )


def check_lists(targets: list[Target]) -> None:
    """The other lists answer 200 with a full first page."""
    for target in targets:
        status, body = fetch(target)
        key = target.path.split("?")[0].rsplit("/", 1)[1]
        if status != 200 or len(body["data"][key]) != 25:
            raise RuntimeError(f"{target.label}: {status}: {str(body)[:300]}")


def backend_pids(conn: psycopg.Connection) -> list[int]:
    """Client backends connected to the bench database, except the bench's own (autovacuum
    workers are left out: they are not the requests' work)."""
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'",
        (DB_NAME,),
    )
    return [row[0] for row in rows]


def cpu_ticks(pids: list[int]) -> dict[int, int]:
    """utime + stime of each live process, in clock ticks."""
    ticks = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "(comm)", fields start at state (3)
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime (14), stime (15)
    return ticks


def cpu_ms_between(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU used between two samples; a process born in between counts from zero."""
    return sum(ticks - before.get(pid, 0) for pid, ticks in after.items()) * 1000 / CLK_TCK


_LATENCY = re.compile(r"^\s*(50|99)(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def parse_wrk(output: str) -> tuple[int, float, float, float, int]:
    """Requests, requests/s, p50 and p99 in ms, and errors (non-2xx answers, socket errors)."""
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    latency = {pct: float(v) * _UNIT_MS[unit] for pct, v, unit in _LATENCY.findall(output)}
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", output))
    socket = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    if socket:
        errors += sum(int(n) for n in socket.groups())
    return requests, rps, latency["50"], latency["99"], errors


def wrk(target: Target, args, duration: float) -> str:
    command = [
        "wrk",
        f"-t{args.threads}",
        f"-c{args.connections}",
        f"-d{duration:g}s",
        "--latency",
        "-H",
        f"Authorization: Bearer {target.token}",
        target.url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=duration + 30)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed on {target.label}: {done.stderr.strip()}")
    return done.stdout


def wait_until_idle(pids: list[int], timeout: float = 15) -> None:
    """Wait until these processes used no CPU for 0.3 s: requests that wrk left queued when
    it stopped must not be counted in (or slow down) the next run."""
    deadline = time.monotonic() + timeout
    previous = cpu_ticks(pids)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        current = cpu_ticks(pids)
        if current == previous:
            return
        previous = current


def measure(target: Target, args, db: psycopg.Connection, servers: list[Server]) -> Run:
    """One wrk run, with the CPU of the target's gunicorn and of the PostgreSQL backends,
    started once every server and backend is idle."""
    app_pids, db_pids = target.server.pids(), backend_pids(db)
    wait_until_idle([pid for server in servers for pid in server.pids()] + db_pids)
    app_before, db_before = cpu_ticks(app_pids), cpu_ticks(db_pids)
    output = wrk(target, args, args.duration)
    app_after = cpu_ticks(target.server.pids())
    db_after = cpu_ticks(sorted(set(db_pids) | set(backend_pids(db))))
    requests, rps, p50, p99, errors = parse_wrk(output)
    per_request = max(requests, 1)
    return Run(
        requests=requests,
        rps=rps,
        p50_ms=p50,
        p99_ms=p99,
        errors=errors,
        app_cpu_ms=cpu_ms_between(app_before, app_after) / per_request,
        db_cpu_ms=cpu_ms_between(db_before, db_after) / per_request,
    )


# --- Report --------------------------------------------------------------------------------


def print_table(results: list[Result]) -> None:
    print()
    print(
        "| Target | req/s | p50 ms | p99 ms | CPU ms/req (gunicorn + PostgreSQL) | errors |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    for result in results:
        errors = sum(run.errors for run in result.runs)
        print(
            f"| {result.target.label} | {result.median('rps'):,.0f} "
            f"| {result.median('p50_ms'):.2f} | {result.median('p99_ms'):.2f} "
            f"| {result.median('cpu_ms'):.2f} ({result.median('app_cpu_ms'):.2f} + "
            f"{result.median('db_cpu_ms'):.2f}) | {errors} |"
        )
    print("\n(medians of the rounds; req/s per round: ", end="")
    print(
        "; ".join(
            f"{r.target.label}: " + "/".join(f"{run.rps:.0f}" for run in r.runs) for r in results
        )
        + ")"
    )


def check_goals(results: list[Result], connections: int) -> list[bool]:
    """Print each goal of issue 35 (which keeps issue 6's large-account and deep-page goals)
    with PASS/FAIL; return the outcomes."""
    raw, small, no_redis, drf, _, large, deep = results[:7]
    others = [r for r in results if not r.target.path.startswith("/v1/servers")]
    goals = []
    for label, service in (("with Redis", small), ("without Redis", no_redis)):
        rps_ratio = service.median("rps") / raw.median("rps")
        cpu_ratio = service.median("cpu_ms") / raw.median("cpu_ms")
        goals += [
            (f"/v1/servers {label}: req/s = {rps_ratio:.2f}x raw (goal >= 0.6x)", rps_ratio >= 0.6),
            (f"/v1/servers {label}: CPU/req = {cpu_ratio:.2f}x raw (goal <= 2x)", cpu_ratio <= 2),
            (
                f"/v1/servers {label}: p99 = {service.median('p99_ms'):.1f} ms at "
                f"{connections} connections (goal <= 10 ms)",
                service.median("p99_ms") <= 10,
            ),
        ]
    drf_ratio = small.median("rps") / drf.median("rps")
    large_ratio = large.median("rps") / small.median("rps")
    deep_rps = deep.median("rps") / large.median("rps")
    deep_p50 = deep.median("p50_ms") / large.median("p50_ms")
    goals += [
        (f"/v1/servers req/s = {drf_ratio:.2f}x the DRF reference's (goal >= 2x)", drf_ratio >= 2),
        (
            f"100,000-server account req/s = {large_ratio:.2f}x the 100-server account's "
            "(goal >= 0.5x)",
            large_ratio >= 0.5,
        ),
        (
            f"page {DEEP_PAGE:,} vs page 1: req/s {deep_rps:.2f}x, p50 {deep_p50:.2f}x "
            "(goal: within 2x)",
            deep_rps >= 0.5 or deep_p50 <= 2,
        ),
    ]
    for other in others:
        ratio = other.median("cpu_ms") / small.median("cpu_ms")
        goals.append(
            (
                f"{other.target.label}: CPU/req = {ratio:.2f}x /v1/servers' (goal <= 1.5x)",
                ratio <= 1.5,
            )
        )
    print("\nGoals (issue 35):")
    for text, passed in goals:
        print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    return [passed for _, passed in goals]


# --- Main ----------------------------------------------------------------------------------


def machine_summary() -> str:
    """The CPU and the Python build (PGO/LTO or not): both change the absolute numbers, so
    they belong beside them (bench/README.md, seventh run)."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            names = (line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line)
            model = next(names, model)
    except OSError:
        pass
    flags = sysconfig.get_config_var("CONFIG_ARGS") or ""
    build = [
        name
        for flag, name in (("--enable-optimizations", "PGO"), ("--with-lto", "LTO"))
        if flag in flags
    ]
    return (
        f"machine: {os.cpu_count()} CPUs ({model}); Python {platform.python_version()} "
        f"({sys.executable}), built {'with ' + ' + '.join(build) if build else 'without PGO/LTO'}"
    )


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds after the warm-up")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--warmup", type=float, default=3, help="seconds of warm-up per target")
    parser.add_argument(
        "--reuse-dataset",
        action="store_true",
        help=f"keep an existing {DB_NAME} database instead of building it again",
    )
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432",
        help="server URL without a database name; the bench uses its own database on it",
    )
    return parser.parse_args()


def prepare_dataset(args, env: dict[str, str]) -> dict[int, str]:
    """Build (or keep) the dataset and return a fresh token per measured account size."""
    import django

    reuse = args.reuse_dataset and database_exists(args.postgres, DB_NAME)
    if not reuse:
        recreate_database(args.postgres, DB_NAME)
    migrate(env)
    os.environ.update(env)
    django.setup()
    measured = existing_accounts() if reuse else {}
    if len(measured) != len(MEASURED_SIZES):
        if reuse:
            print(f"{DB_NAME} has no complete dataset: building it again")
            recreate_database(args.postgres, DB_NAME)
            migrate(env)
        measured = build_dataset(env["DATABASE_URL"])
    else:
        from servers.models import Bot

        if not Bot.objects.filter(account_id=measured[100]).exists():
            create_other_rows(measured[100])  # a dataset of an older bench
        from servers.counts import instance_counts_rebuild

        instance_counts_rebuild()  # as the load leaves them, whatever an earlier run did
    tokens = make_keys(measured)
    from django.db import connections

    connections.close_all()
    settle_database(env["DATABASE_URL"])
    return tokens


def settle_database(db_url: str) -> None:
    """VACUUM ANALYZE (statistics and visibility map as a long-lived table has them) and a
    CHECKPOINT, so that no background write of the load lands in a measured run."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


def targets_for(servers: dict[str, Server], tokens: dict[int, str]) -> list[Target]:
    raw, app = servers["raw"], servers["service"]
    page = "/v1/servers?per_page=25"
    deep = f"/v1/servers?page={DEEP_PAGE}&per_page=25"
    return [
        Target("(a) raw baseline, 100 servers", raw, page, tokens[100]),
        Target("(b) /v1/servers, 100 servers", app, page, tokens[100]),
        Target("(c) /v1/servers, 100 servers, no Redis", servers["no_redis"], page, tokens[100]),
        Target("(d) DRF reference, 100 servers", servers["drf"], page, tokens[100]),
        Target("/v1/servers, 10,000 servers", app, page, tokens[10_000]),
        Target("/v1/servers, 100,000 servers, page 1", app, page, tokens[100_000]),
        Target(f"/v1/servers, 100,000 servers, page {DEEP_PAGE:,}", app, deep, tokens[100_000]),
        # Context, not goals: what the same SQL costs without Django for the large account.
        Target("raw, 100,000 servers, page 1", raw, page, tokens[100_000]),
        Target(f"raw, 100,000 servers, page {DEEP_PAGE:,}", raw, deep, tokens[100_000]),
        *(
            Target(f"{path}, {OTHER_ROWS} {name}", app, f"{path}?per_page=25", tokens[100])
            for name, path in OTHER_LISTS
        ),
    ]


def benchmark(args, env: dict[str, str], tokens: dict[int, str]) -> list[Result]:
    no_redis = {
        **env,
        "REDIS_URL": "",
        "RATE_LIMIT_SQLITE_PATH": str(ROOT / "var" / "bench-ratelimit.sqlite3"),
    }
    named = {
        "service": start_server("service", "hosting.wsgi", APP_PORT, env),
        "raw": start_server("raw app", "bench.raw_app:application", RAW_PORT, env),
        "no_redis": start_server("service without Redis", "hosting.wsgi", NO_REDIS_PORT, no_redis),
        "drf": start_server(
            "DRF reference",
            "bench.drf_app:application",
            DRF_PORT,
            {**env, "DJANGO_SETTINGS_MODULE": "bench.drf_settings"},
        ),
    }
    servers = list(named.values())
    try:
        for server in servers:
            wait_until_listening(server)
        raw = named["raw"]
        targets = targets_for(named, tokens)
        servers_targets = [t for t in targets if t.path.startswith("/v1/servers")]
        check_answers([(Target(t.label, raw, t.path, t.token), t) for t in servers_targets[1:]])
        check_lists([t for t in targets if not t.path.startswith("/v1/servers")])
        results = [Result(target) for target in targets]
        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as db:
            for target in targets:
                wrk(target, args, args.warmup)
            for number in range(1, args.rounds + 1):
                for result in results:
                    run = measure(result.target, args, db, servers)
                    result.runs.append(run)
                    print(
                        f"round {number}: {result.target.label:<42} {run.rps:8,.0f} req/s  "
                        f"p50 {run.p50_ms:6.2f} ms  p99 {run.p99_ms:6.2f} ms  "
                        f"CPU {run.cpu_ms:5.2f} ms/req  errors {run.errors}",
                        flush=True,
                    )
        return results
    finally:
        for server in servers:
            stop_server(server)


def main() -> int:
    args = parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install wrk (Debian/Ubuntu), then run again.")
        return 2
    print(machine_summary(), flush=True)
    env = bench_environment(database_url(args.postgres, DB_NAME))
    flush_redis()
    tokens = prepare_dataset(args, env)
    results = benchmark(args, env, tokens)
    print_table(results)
    raw = results[0]
    for service in results[1:4]:
        print(
            f"\n{service.target.label} against (a): "
            f"req/s {service.median('rps') / raw.median('rps'):.2f}, "
            f"CPU/req {service.median('cpu_ms') / raw.median('cpu_ms'):.2f}, "
            f"p50 {service.median('p50_ms') / raw.median('p50_ms'):.2f}, "
            f"p99 {service.median('p99_ms') / raw.median('p99_ms'):.2f}",
            end="",
        )
    print()
    outcomes = check_goals(results, args.connections)
    errors = sum(run.errors for result in results for run in result.runs)
    return 0 if all(outcomes) and not errors else 1


if __name__ == "__main__":
    sys.exit(main())

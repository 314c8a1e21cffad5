"""The support desk's staff queue at 100,000 tickets, on PostgreSQL (not a test).

    .venv/bin/python bench/support.py [--tickets 100000] [--rounds 20] [--reuse-dataset]
                                      [--postgres URL] [--redis URL] [--show-queries] [--explain]

1. **Dataset** in its own database, ``hosting_bench_support`` (dropped, created, migrated):
   an SLA policy, 4 departments (Technical, Billing and Abuse under the policy, Sales without
   one), a staff account with the measured staff member (``is_staff``, a member of every
   department) and 12 agents (each in one or two departments), ``ACCOUNTS`` customer accounts
   with an owner each, and ``--tickets`` tickets loaded with ``COPY`` in creation order over
   the last year (numbered from 1000 in that order, the ticket counter set after them): a
   realistic mix of departments, priorities, channels and statuses (older tickets mostly
   closed, the last weeks' open, answered, waiting on staff, on hold or resolved), most
   assigned, 3 % from guests without an account, the SLA fields as ``support.services.sla``
   sets them (due times from the policy's targets, the clock running only while the ticket
   waits on staff, breaches flagged). Then ``VACUUM ANALYZE`` and ``CHECKPOINT``.
   ``--reuse-dataset`` keeps a complete dataset of the same size (still migrating it).
2. **API**: ``GET /v1/admin/tickets`` in-process through Django's test client (the production
   middleware, DEBUG off, the key cache and the rate limit in the ``--redis`` database) with a
   real ``admin:read`` key of the staff member (``api_key_create``): page 1, page 2,000 and
   the last page, 4,000 (25 per page, the default), each after 3 warm-up requests: its
   statements with their parameters (``connection.execute_wrapper``), then the median and p95
   latency of ``--rounds`` interleaved requests.
3. **Desk**: ``GET /desk`` (``support.views.desk.DeskQueueView``, 25 per page, ordered by when a
   ticket next needs staff) signed in with ``force_login`` as the same staff member, the same
   way: ``?status=all`` (every ticket: the 100,000) at pages 1, 2,000 and 4,000 (the last),
   and the default queue (the unfinished tickets only) at page 1 and ``?page=last``. Measured
   only when the view is the real one (a ``ListControlsMixin`` list), not the placeholder.
   The query goal counts the statements that read tickets (the total, the page, the queue
   tabs' counts); the layout's, the menus' and the sign-in's are shown apart.
4. **Plans**: every statement of the measured requests that reads ``support_ticket`` is run
   again under ``EXPLAIN (ANALYZE, BUFFERS)`` with the parameters it ran with; the summary
   says whether PostgreSQL read the whole table and sorted it (``--explain`` prints the plans).

Prints tables and PASS/FAIL for each goal of the issue (at most 3 queries per list request,
page 2,000 within 2x of page 1); exit status 1 when one fails. The ``--redis`` database is
emptied.
"""

import argparse
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import (  # noqa: E402 - the path above makes the project importable
    bench_environment,
    database_url,
    machine_summary,
    migrate,
    recreate_database,
    settle_database,
)
from bench.billing import (  # noqa: E402
    copy_rows,
    database_comment,
    load_average,
    random_id,
)

DB_NAME = "hosting_bench_support"
ACCOUNTS = 20_000
PER_PAGE = 25  # the default of both the API and the desk
PAGES = (1, 2_000, 4_000)  # 4,000 is the last page of 100,000 tickets
DEEP_PAGE = 2_000
LIST_QUERY_GOAL = 3
DEEP_RATIO_GOAL = 2.0
# name, share of tickets in %, under the SLA policy
DEPARTMENTS = [
    ("Technical", 50, True),
    ("Billing", 25, True),
    ("Sales", 15, False),
    ("Abuse", 10, True),
]
TARGETS = {  # business minutes, around the clock (no calendar)
    "urgent": {"first_response_minutes": 60, "resolution_minutes": 240},
    "high": {"first_response_minutes": 120, "resolution_minutes": 480},
    "normal": {"first_response_minutes": 240, "resolution_minutes": 1440},
    "low": {"first_response_minutes": 480, "resolution_minutes": 2880},
}
PRIORITIES = ["normal"] * 60 + ["high"] * 20 + ["low"] * 12 + ["urgent"] * 8
CHANNELS = ["web"] * 55 + ["email"] * 35 + ["api"] * 10
# Tickets older than two weeks are mostly closed; the recent ones are the working queue.
OLD_STATUSES = ["closed"] * 90 + ["resolved"] * 2 + ["on_hold"] * 3 + ["pending_customer"] * 3
OLD_STATUSES += ["open", "pending_staff"]
RECENT_STATUSES = ["open"] * 25 + ["pending_customer"] * 25 + ["pending_staff"] * 15
RECENT_STATUSES += ["on_hold"] * 5 + ["resolved"] * 20 + ["closed"] * 10
SUBJECTS = [
    "Server does not start",
    "Cannot connect to my server",
    "Refund request",
    "Invoice address",
    "Lag spikes in the evening",
    "Upgrade to a bigger plan",
    "Mod pack install failed",
    "Backup restore",
    "DDoS on my server",
    "Discord bot offline",
    "Question about pricing",
    "Abuse report",
    "Password reset does not arrive",
    "Change the game",
    "Disk full",
]
TICKET_FIELDS = [
    "id",
    "number",
    "subject",
    "account_id",
    "requester_id",
    "requester_email",
    "requester_name",
    "department_id",
    "priority",
    "status",
    "assignee_id",
    "channel",
    "sla_seconds_used",
    "sla_running_since",
    "first_response_due_at",
    "resolution_due_at",
    "first_response_breached",
    "resolution_breached",
    "first_response_at",
    "last_customer_message_at",
    "last_staff_message_at",
    "resolved_at",
    "closed_at",
    "created_at",
    "updated_at",
]
STAFF_EMAIL = "desk@hosting.example"


# --- Environment -----------------------------------------------------------------------------


def environment(admin_url: str, redis_url: str) -> dict[str, str]:
    """bench/api.py's production settings (fresh secrets), on this bench's database and Redis."""
    env = bench_environment(database_url(admin_url, DB_NAME))
    env.update(REDIS_URL=redis_url, ALLOWED_HOSTS="127.0.0.1,testserver")
    return env


# --- Dataset ---------------------------------------------------------------------------------


@dataclass
class Desk:
    departments: list  # (Department, share, under the SLA policy)
    agents: dict[str, list[str]]  # department id: the ids of its agents


def create_desk(rng: random.Random) -> Desk:
    """The SLA policy, the departments, the staff account, the measured staff member (in every
    department) and the agents tickets are assigned to."""
    from accounts.models import Account, Membership, User
    from accounts.roles import Role
    from support.models import Department, SlaPolicy

    policy = SlaPolicy.objects.create(name="Standard", targets=TARGETS)
    departments = [
        (
            Department.objects.create(
                name=name,
                email=f"{name.lower()}@desk.example",
                sla_policy=policy if sla else None,
            ),
            share,
            sla,
        )
        for name, share, sla in DEPARTMENTS
    ]
    company = Account.objects.create(name="Hosting Company")
    staff = User.objects.create_user(email=STAFF_EMAIL, password=None, is_staff=True)
    Membership.objects.create(account=company, user=staff, role=Role.OWNER)
    agents: dict[str, list[str]] = {department.id: [] for department, _, _ in departments}
    for n in range(12):
        agent = User.objects.create_user(
            email=f"agent-{n:02d}@hosting.example", password=None, is_staff=True
        )
        for department, _, _ in rng.sample(departments, rng.choice((1, 1, 2))):
            department.members.add(agent)
            agents[department.id].append(agent.id)
    for department, _, _ in departments:
        department.members.add(staff)
        agents[department.id] = agents[department.id] or [staff.id]
    return Desk(departments, agents)


def load_customers(db_url: str, rng: random.Random) -> list[tuple[str, str, str, str]]:
    """``ACCOUNTS`` accounts with an owner each: (account, user, e-mail, name)."""
    from accounts.models import Account, Membership, User

    joined = datetime.now(UTC) - timedelta(days=400)
    customers = [
        (
            random_id(rng, "acct"),
            random_id(rng, "usr"),
            f"customer-{n:05d}@example.com",
            f"Customer {n:05d}",
        )
        for n in range(ACCOUNTS)
    ]
    with psycopg.connect(db_url) as conn, conn.cursor() as cursor:
        copy_rows(
            cursor,
            Account,
            ["id", "name", "created_at"],
            ((account, f"{name}'s team", joined) for account, _, _, name in customers),
        )
        copy_rows(
            cursor,
            User,
            ["id", "email", "name", "password", "date_joined"],
            ((user, email, name, "!bench-unusable", joined) for _, user, email, name in customers),
        )
        copy_rows(
            cursor,
            Membership,
            ["account_id", "user_id", "role", "created_at"],
            ((account, user, "owner", joined) for account, user, _, _ in customers),
        )
    return customers


def ticket_rows(count: int, desk: Desk, customers: list, now: datetime, rng: random.Random):
    """``count`` tickets in creation order over the last year, with their SLA fields as
    ``support.services.sla`` would have left them (around the clock: plain arithmetic)."""
    year = 365 * 24 * 3600
    created = sorted(now - timedelta(seconds=rng.uniform(600, year)) for _ in range(count))
    departments = [(department, sla) for department, _, sla in desk.departments]
    shares = [share for _, share, _ in desk.departments]
    recent = now - timedelta(days=14)
    for n, at in enumerate(created):
        department, sla = rng.choices(departments, shares)[0]
        priority = rng.choice(PRIORITIES)
        status = rng.choice(RECENT_STATUSES if at > recent else OLD_STATUSES)
        if rng.random() < 0.03:  # a guest's mail: no account until staff link one
            account = user = None
            email, name = f"guest-{n:06d}@mail.example", ""
        else:
            account, user, email, name = rng.choice(customers)
        waiting_on_staff = status in ("open", "pending_staff")
        answered = status != "open" or rng.random() < 0.2
        assignee = (
            rng.choice(desk.agents[department.id]) if answered or rng.random() < 0.4 else None
        )
        first_response_at = at + timedelta(minutes=rng.uniform(5, 600)) if answered else None
        first_due = resolution_due = None
        first_breached = resolution_breached = False
        used, running_since = 0, None
        resolved_at = closed_at = None
        if status in ("resolved", "closed"):
            resolved_at = (first_response_at or at) + timedelta(hours=rng.uniform(0.5, 96))
            resolved_at = min(resolved_at, now)
        if status == "closed":
            closed_at = min(resolved_at + timedelta(days=7), now)
        last_customer = (
            at + timedelta(hours=rng.uniform(0, 48)) if status == "pending_staff" else at
        )
        last_customer = min(last_customer, now)
        if sla:
            first_minutes = TARGETS[priority]["first_response_minutes"]
            resolution_minutes = TARGETS[priority]["resolution_minutes"]
            first_due = at + timedelta(minutes=first_minutes)
            first_breached = (first_response_at or now) > first_due
            if waiting_on_staff:  # the clock runs: due is the rest of the target from now
                used = int(rng.uniform(0, resolution_minutes * 60 * 0.8))
                running_since = last_customer
                resolution_due = running_since + timedelta(seconds=resolution_minutes * 60 - used)
                resolution_breached = resolution_due < now
            else:  # paused (or over): the clock stood still while the customer was asked
                paused = timedelta(hours=rng.uniform(0, 72))
                resolution_due = at + timedelta(minutes=resolution_minutes) + paused
                used = int(rng.uniform(0.2, 1.3) * resolution_minutes * 60)
                resolution_breached = (resolved_at or at + paused) > resolution_due
        updated = closed_at or resolved_at or max(last_customer, first_response_at or at)
        yield (
            random_id(rng, "tkt"),
            1000 + n,
            f"{rng.choice(SUBJECTS)} ({n % 997})",
            account,
            user,
            email,
            name,
            department.id,
            priority,
            status,
            assignee,
            rng.choice(CHANNELS),
            used,
            running_since,
            first_due,
            resolution_due,
            first_breached,
            resolution_breached,
            first_response_at,
            last_customer,
            first_response_at,
            resolved_at,
            closed_at,
            at,
            min(updated, now),
        )


def build_dataset(args, env: dict[str, str]) -> None:
    from support.models import Ticket, TicketCounter

    started = time.monotonic()
    recreate_database(args.postgres, DB_NAME)
    migrate(env)
    rng = random.Random(11)
    desk = create_desk(rng)
    db_url = env["DATABASE_URL"]
    customers = load_customers(db_url, rng)
    now = datetime.now(UTC)
    with psycopg.connect(db_url) as conn, conn.cursor() as cursor:
        copy_rows(
            cursor, Ticket, TICKET_FIELDS, ticket_rows(args.tickets, desk, customers, now, rng)
        )
    TicketCounter.objects.update_or_create(pk=1, defaults={"next_number": 1000 + args.tickets})
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(f"COMMENT ON DATABASE {DB_NAME} IS 'tickets={args.tickets}'")
    print(
        f"dataset: {args.tickets:,} tickets of {ACCOUNTS:,} accounts loaded in "
        f"{time.monotonic() - started:.0f} s",
        flush=True,
    )


def dataset_usable(admin_url: str, tickets: int) -> bool:
    """A dataset of this size whose load finished (the comment is written last)."""
    return database_comment(admin_url, DB_NAME) == f"tickets={tickets}"


def prepare(args, env: dict[str, str]) -> None:
    import django

    os.environ.update(env)
    django.setup()
    if args.reuse_dataset and dataset_usable(args.postgres, args.tickets):
        migrate(env)
        print(f"dataset: reusing {DB_NAME}", flush=True)
    else:
        build_dataset(args, env)
    from django.db import connection

    connection.close()
    settle_database(env["DATABASE_URL"])
    import redis

    redis.Redis.from_url(args.redis).flushdb()


# --- Measuring -------------------------------------------------------------------------------


@dataclass
class Statement:
    sql: str
    params: object
    ms: float


@dataclass
class PageResult:
    label: str
    path: str
    status: int = 0
    items: int = 0
    statements: list[Statement] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95_ms(self) -> float:
        return statistics.quantiles(self.times_ms, n=20, method="inclusive")[18]

    @property
    def sign_in(self) -> list[Statement]:
        """The session and user lookups of a signed-in page: not the list's own work."""
        return [s for s in self.statements if _is_sign_in(s.sql)]

    @property
    def list_statements(self) -> list[Statement]:
        return [s for s in self.statements if not _is_sign_in(s.sql)]

    @property
    def ticket_statements(self) -> list[Statement]:
        """The statements that read tickets: the list's total and page (and the desk's tab
        counts); the rest of a dashboard page is its layout, menus and departments."""
        return [s for s in self.statements if '"support_ticket"' in s.sql]


def _is_sign_in(sql: str) -> bool:
    return (
        '"django_session"' in sql
        or re.match(r'SELECT .* FROM "accounts_user" WHERE "accounts_user"\."id" = ', sql)
        is not None
    )


def capture(client, path: str) -> tuple[object, list[Statement]]:
    """One request and its statements with their parameters (to explain them afterwards)."""
    from django.db import connection

    statements: list[Statement] = []

    def record(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            ms = (time.perf_counter() - started) * 1000
            statements.append(Statement(sql, params, ms))

    with connection.execute_wrapper(record):
        response = client.get(path)
    return response, statements


def measure(client, results: list[PageResult], rounds: int, items_of) -> None:
    """Each page's statements after 3 warm-up requests (the key's first use and the key cache
    are behind them), then ``rounds`` interleaved timed requests of them all."""
    for result in results:
        for _ in range(3):
            client.get(result.path)
        response, result.statements = capture(client, result.path)
        result.status = response.status_code
        result.items = items_of(response)
    for _ in range(rounds):
        for result in results:
            started = time.perf_counter()
            client.get(result.path)
            result.times_ms.append((time.perf_counter() - started) * 1000)


def staff_member():
    from accounts.models import User

    return User.objects.get(email=STAFF_EMAIL)


@dataclass
class PageList:
    """A list measured at several pages; ``deep`` is the one the 2x goal compares to page 1."""

    name: str
    pages: list[PageResult]
    deep: PageResult
    # The query goal counts the statements that read tickets (a dashboard page's layout and
    # menus apart, shown in the table), or every statement of the request (the API's).
    tickets_only: bool = False

    def counted(self, result: PageResult) -> list[Statement]:
        return result.ticket_statements if self.tickets_only else result.list_statements


def pages_of(base: str, pages: list) -> list[PageResult]:
    """Page 1 at ``base`` itself, the others with ``page=`` added (a number, or ``last``)."""
    joined = "&" if "?" in base else "?"
    return [
        PageResult(
            f"{base}, page {page:,}" if isinstance(page, int) else f"{base}, page {page}",
            base if page == 1 else f"{base}{joined}page={page}",
        )
        for page in pages
    ]


def measure_api(rounds: int) -> list[PageList]:
    from django.test import Client

    from accounts.models import Account
    from accounts.services import api_key_create

    user = staff_member()
    company = Account.objects.get(name="Hosting Company")
    _, token = api_key_create(account=company, user=user, name="bench", scopes=["admin:read"])
    client = Client(headers={"authorization": f"Bearer {token}"})
    results = pages_of("/v1/admin/tickets", list(PAGES))

    def items(response) -> int:
        return len(response.json().get("data", {}).get("tickets", []))

    measure(client, results, rounds, items)
    return [PageList("GET /v1/admin/tickets", results, results[1])]


def desk_is_real() -> bool:
    from hosting.dashboard.lists import ListControlsMixin
    from support.views.desk import DeskQueueView

    return issubclass(DeskQueueView, ListControlsMixin)


def measure_desk(rounds: int) -> list[PageList]:
    """The queue of every ticket (``?status=all``: the 100,000) at pages 1, 2,000 and 4,000,
    and the default queue (the unfinished tickets only) at page 1 and its last page."""
    from django.test import Client

    client = Client()
    client.force_login(staff_member())

    def items(response) -> int:  # the rows of the queue's table
        return response.content.count(b'<tr id="ticket-')

    every = pages_of("/desk?status=all", list(PAGES))
    unfinished = pages_of("/desk", [1, "last"])
    measure(client, every + unfinished, rounds, items)
    return [
        PageList("GET /desk?status=all (every ticket)", every, every[1], tickets_only=True),
        PageList(
            "GET /desk (the default queue: unfinished tickets)",
            unfinished,
            unfinished[1],
            tickets_only=True,
        ),
    ]


# --- Plans -----------------------------------------------------------------------------------


@dataclass
class Plan:
    result: str
    sql: str
    text: str
    execution_ms: float
    scanned_rows: int  # rows a sequential scan of support_ticket kept, all workers (0: none)
    sort_methods: list[str]  # "top-N heapsort  Memory: 31kB", "external merge  Disk: …"


def explain(results: list[PageResult]) -> list[Plan]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of each statement of the measured requests that reads
    the tickets, with the parameters it ran with."""
    from django.db import connection

    plans = []
    with connection.cursor() as cursor:
        for result in results:
            for statement in result.statements:
                sql = statement.sql
                if '"support_ticket"' not in sql or not sql.startswith("SELECT"):
                    continue
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, statement.params)
                text = "\n".join(row[0] for row in cursor.fetchall())
                executed = re.search(r"Execution Time: ([\d.]+) ms", text)
                scans = re.findall(
                    r"Seq Scan on support_ticket .*?actual time=\S+ rows=(\d+) loops=(\d+)", text
                )
                plans.append(
                    Plan(
                        result.label,
                        sql,
                        text,
                        float(executed.group(1)) if executed else 0.0,
                        sum(int(rows) * int(loops) for rows, loops in scans),
                        [" ".join(m.split()) for m in re.findall(r"Sort Method: (.*)", text)],
                    )
                )
    return plans


# --- Report ----------------------------------------------------------------------------------


def print_results(results: list[PageResult], show_queries: bool) -> None:
    print(
        "\n| Page (in-process, 25 per page) | status | items | statements: tickets + other "
        "+ sign-in | median ms | p95 ms | SQL ms of the ticket statements |"
        "\n|---|---:|---:|---:|---:|---:|---|"
    )
    for result in results:
        sql_ms = " + ".join(f"{s.ms:.1f}" for s in result.ticket_statements)
        tickets = len(result.ticket_statements)
        other = len(result.list_statements) - tickets
        print(
            f"| {result.label} | {result.status} | {result.items} "
            f"| {tickets} + {other} + {len(result.sign_in)} "
            f"| {result.median_ms:.1f} | {result.p95_ms:.1f} | {sql_ms} |"
        )
    if show_queries:
        for result in results:
            print(f"\n{result.label}:")
            for statement in result.statements:
                print(f"  {statement.ms:6.1f} ms  {statement.sql}  {statement.params}")


def print_plans(plans: list[Plan], show: bool) -> None:
    print("\nPlans of the statements that read support_ticket (EXPLAIN ANALYZE):")
    for plan in plans:
        scan = (
            f"seq scan of the whole table, {plan.scanned_rows:,} tickets kept"
            if plan.scanned_rows
            else "no seq scan of the tickets"
        )
        sort = "".join(f", sort: {method}" for method in plan.sort_methods)
        print(f"  {plan.result}: {plan.execution_ms:.1f} ms, {scan}{sort}: {plan.sql[:90]}…")
        if show:
            print("    " + plan.text.replace("\n", "\n    "))


def goals(lists: list[PageList]) -> list[tuple[str, bool]]:
    outcome = []
    for page_list in lists:
        first, deep = page_list.pages[0], page_list.deep
        worst = max(len(page_list.counted(r)) for r in page_list.pages)
        counts = ", ".join(
            f"{len(page_list.counted(r))} at {r.label.rsplit(', ', 1)[1]}" for r in page_list.pages
        )
        what = "statements reading tickets" if page_list.tickets_only else "queries"
        totals = {len(r.statements) for r in page_list.pages}
        outcome.append(
            (
                f"{page_list.name}: {what} {counts}, every page 200 with tickets (goal <= "
                f"{LIST_QUERY_GOAL}; {'/'.join(map(str, sorted(totals)))} statements in all)",
                worst <= LIST_QUERY_GOAL
                and all(r.status == 200 and r.items for r in page_list.pages),
            )
        )
        if page_list.tickets_only:
            outcome.append(
                (
                    f"{page_list.name}: the same number of statements at every page "
                    f"({', '.join(str(len(r.statements)) for r in page_list.pages)})",
                    len(totals) == 1,
                )
            )
        ratios = "; ".join(
            f"{r.label.rsplit(', ', 1)[1]}: {r.median_ms / first.median_ms:.2f}x"
            for r in page_list.pages[1:]
        )
        ratio = deep.median_ms / first.median_ms
        outcome.append(
            (
                f"{page_list.name}: {deep.label.rsplit(', ', 1)[1]} at {ratio:.2f}x the median "
                f"latency of page 1 (goal <= {DEEP_RATIO_GOAL:g}x; {ratios})",
                ratio <= DEEP_RATIO_GOAL,
            )
        )
    return outcome


# --- Main ------------------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20, help="timed requests of each page")
    parser.add_argument(
        "--reuse-dataset",
        action="store_true",
        help=f"keep an existing complete {DB_NAME} of the same size instead of building it",
    )
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432",
        help="server URL without a database name; the bench uses its own database on it",
    )
    parser.add_argument(
        "--redis",
        default="redis://127.0.0.1:6379/5",
        help="the key cache's and rate limit's Redis database (emptied)",
    )
    parser.add_argument("--show-queries", action="store_true", help="print every statement")
    parser.add_argument("--explain", action="store_true", help="print the ticket queries' plans")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    print(machine_summary(), flush=True)
    print(f"at the start: {load_average()}", flush=True)
    env = environment(args.postgres, args.redis)
    prepare(args, env)

    lists = measure_api(args.rounds)
    print(f"API measured; {load_average()}", flush=True)
    if desk_is_real():
        lists += measure_desk(args.rounds)
        print(f"desk measured; {load_average()}", flush=True)
    else:
        print("desk: support.views.desk.DeskQueueView is still the placeholder: not measured")
    results = [result for page_list in lists for result in page_list.pages]
    plans = explain(results)

    print_results(results, args.show_queries)
    print_plans(plans, args.explain)
    outcome = goals(lists)
    print("\nGoals:")
    for text, passed in outcome:
        print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    print(f"\nat the end: {load_average()}")
    return 0 if all(passed for _, passed in outcome) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The billing job and the billing lists at scale, on PostgreSQL (not a test).

    .venv/bin/python bench/billing.py [--subscriptions 100000] [--workers 2] [--rounds 15]
                                      [--time-limit SECONDS] [--reuse-dataset]
                                      [--postgres URL] [--show-queries]

1. **Dataset**, built once in ``hosting_bench_billing_template`` (dropped, created, migrated)
   and copied for every run to ``hosting_bench_billing`` (the renewal run changes it): a small
   catalogue (3 server plans, monthly, quarterly and yearly EUR prices, tax rates for BE, NL,
   DE and FR) and ``--subscriptions`` customer accounts, each with an owner, a billing profile
   (with an e-mail address, in one of those countries), a game server, and one ``active``
   subscription whose period ended in the hour before the load, so every one of them is due
   for its renewal invoice now. 90 % of the accounts hold prepaid credit (twice the plan's
   price, a staff adjustment in the ledger), so their renewal is paid from credit at once; the
   other 10 % have none, so theirs stays open and the subscription goes ``past_due``: a run
   takes both paths. One more account, ``bench-list``, holds 100,000 subscriptions (not due)
   and 100,000 paid invoices (one or two lines, numbered in their year's series), for the
   lists. Rows go in with ``COPY``; the servers with ``bench/api.py``'s loader. Then
   ``VACUUM ANALYZE``. ``--reuse-dataset`` copies a template of the same size built less than
   20 days ago (migrating it first) instead of building one.
2. **Lists**, in-process through Django's test client with a real ``billing:read`` key
   (``api_key_create``) and the production middleware (DEBUG off, Redis db 4 for the key
   cache and the rate limit): the queries of ``GET /v1/invoices`` and ``GET
   /v1/subscriptions`` at page 1 and page 2,000 (25 per page), and the median latency of
   ``--rounds`` interleaved requests of each.
3. **Queries per subscription**: ``billing_run(shard=…)`` in-process on two samples of the
   due subscriptions (shards r/450 and r'/90 with 2 workers, about 0.3 % and 1 % of them),
   counting the statements (``connection.execute_wrapper``) of each batch of renewals and of
   each subscription taken one at a time.
4. **Renewal run**: one ``manage.py billing_run --shard 0/9`` alone (a ninth), then ``--workers``
   processes ``manage.py billing_run --shard i/N`` at once over everything still due; wall
   time, renewal invoices per second (and per worker), CPU per invoice of the workers and of
   their PostgreSQL backends, and how often a busy backend waited for a lock. The e-mails are
   queued as tasks for the task worker (not run here). ``--time-limit`` stops each phase's
   workers (SIGTERM) after that many seconds.
5. **Checks**: one renewal invoice per subscription, for the period that just ended (after a
   stopped run: none yet, still due); every invoice series numbered 1..n without a gap or a
   repeat, its sequence at n + 1.

Prints tables and PASS/FAIL for each goal; exit status 1 when one fails. Redis db 4 is emptied.
"""

import argparse
import calendar
import math
import os
import random
import re
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import (  # noqa: E402 - the path above makes the project importable
    bench_environment,
    cpu_ms_between,
    cpu_ticks,
    database_exists,
    database_url,
    load_servers,
    machine_summary,
    migrate,
    recreate_database,
)

DB_NAME = "hosting_bench_billing"
TEMPLATE = "hosting_bench_billing_template"
REDIS_URL = "redis://127.0.0.1:6379/4"
LIST_SIZE = 100_000  # invoices and subscriptions of the account whose lists are measured
DEEP_PAGE = 2_000  # of 4,000 pages of 25
TEMPLATE_MAX_AGE = timedelta(days=20)  # older, a second period would come due in the run
CREDIT_SHARE = 0.9
RATE_GOAL = 200  # renewal invoices per second per worker
LIST_QUERY_GOAL = 3
DEEP_RATIO_GOAL = 2.0
BASE62 = string.digits + string.ascii_letters
COUNTRIES = ["BE"] * 4 + ["NL"] * 2 + ["DE"] * 2 + ["FR"] * 2
TAX_RATES = {"BE": Decimal(21), "NL": Decimal(21), "DE": Decimal(19), "FR": Decimal(20)}
CITIES = {"BE": "Brussels", "NL": "Utrecht", "DE": "Berlin", "FR": "Lyon"}
# name, memory MB, CPU %, disk MB, prices: (cents, interval, count, share of subscriptions in %)
PLANS = [
    ("Starter 2 GB", 2048, 100, 10_240, [(499, "month", 1, 40), (1_347, "month", 3, 6)]),
    ("Standard 4 GB", 4096, 200, 20_480, [(999, "month", 1, 30), (9_990, "year", 1, 4)]),
    ("Pro 8 GB", 8192, 400, 40_960, [(1_999, "month", 1, 15), (5_397, "month", 3, 5)]),
]


# --- Environment -----------------------------------------------------------------------------


def environment(admin_url: str) -> dict[str, str]:
    """bench/api.py's production settings (fresh secrets), on this bench's database and Redis."""
    env = bench_environment(database_url(admin_url, DB_NAME))
    env.update(REDIS_URL=REDIS_URL, ALLOWED_HOSTS="127.0.0.1,testserver")
    return env


def use_database(name: str) -> None:
    """Point Django's connection at another database of the same server."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


def load_average() -> str:
    return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- Dataset ---------------------------------------------------------------------------------


def random_id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}_{''.join(rng.choices(BASE62, k=24))}"


def shift_months(moment: datetime, months: int) -> datetime:
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def copy_rows(cursor: psycopg.Cursor, model, names: list[str], rows) -> None:
    """COPY ``rows`` (tuples of the fields ``names``, by attname) into ``model``'s table; every
    other column gets its field's default, the same in every row (``auto_now``: now)."""
    from django.db import models

    now = datetime.now(UTC)
    rest = []
    for model_field in model._meta.concrete_fields:
        if model_field.attname in names or isinstance(model_field, models.AutoField):
            continue
        if getattr(model_field, "auto_now", False) or getattr(model_field, "auto_now_add", False):
            value = now
        else:
            value = model_field.get_default()
        if value is None and not model_field.null:
            raise ValueError(f"{model.__name__}.{model_field.attname} needs a value")
        if isinstance(model_field, models.JSONField):
            value = Jsonb(value)
        rest.append((model_field.column, value))
    columns = [model._meta.get_field(name).column for name in names] + [c for c, _ in rest]
    constants = tuple(value for _, value in rest)
    quoted = ", ".join(f'"{column}"' for column in columns)  # "order" is a keyword
    sql = f'COPY "{model._meta.db_table}" ({quoted}) FROM STDIN'
    with cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row + constants)


@dataclass
class Catalogue:
    prices: list  # billing.models.Price
    weights: list[int]  # the share of subscriptions on each price
    list_price: object  # the list account's plan


def create_catalogue() -> Catalogue:
    from billing.models import Price, Product, TaxRate

    prices, weights = [], []
    for name, memory, cpu, disk, offers in PLANS:
        product = Product.objects.create(
            name=name, kind="server", memory_mb=memory, cpu_percent=cpu, disk_mb=disk
        )
        for amount, interval, count, share in offers:
            price = Price.objects.create(
                product=product,
                currency="EUR",
                unit_amount=amount,
                interval=interval,
                interval_count=count,
            )
            prices.append(price)
            weights.append(share)
    for country, percentage in TAX_RATES.items():
        if not TaxRate.objects.filter(country=country, region="", active=True).exists():
            TaxRate.objects.create(country=country, percentage=percentage)
    standard = [p for p in prices if p.product.name.startswith("Standard")]
    return Catalogue(prices, weights, next(p for p in standard if p.interval == "month"))


@dataclass
class Customer:
    account_id: str
    name: str
    country: str
    price: object = None
    credit: int = 0


def load_accounts(db_url: str, count: int, catalogue: Catalogue, rng: random.Random) -> list:
    """The customers (an owner, a billing profile, credit for most), then the list account."""
    from accounts.models import Account, Membership, User
    from billing.models import BalanceTransaction, BillingProfile

    customers = []
    for n in range(count):
        price = rng.choices(catalogue.prices, catalogue.weights)[0]
        credit = 2 * price.unit_amount if rng.random() < CREDIT_SHARE else 0  # covers the tax
        customers.append(
            Customer(
                random_id(rng, "acct"), f"Customer {n:06d}", rng.choice(COUNTRIES), price, credit
            )
        )
    everyone = [*customers, Customer(random_id(rng, "acct"), "bench-list", "BE")]
    users = [random_id(rng, "usr") for _ in everyone]
    joined = datetime.now(UTC) - timedelta(days=400)
    with psycopg.connect(db_url) as conn, conn.cursor() as cursor:
        copy_rows(
            cursor,
            Account,
            ["id", "name", "created_at"],
            ((c.account_id, c.name, joined) for c in everyone),
        )
        copy_rows(
            cursor,
            User,
            ["id", "email", "password", "date_joined"],
            (
                (user, f"owner-{n:06d}@example.com", "!bench-unusable", joined)
                for n, user in enumerate(users)
            ),
        )
        copy_rows(
            cursor,
            Membership,
            ["account_id", "user_id", "role", "created_at"],
            (
                (c.account_id, user, "owner", joined)
                for c, user in zip(everyone, users, strict=True)
            ),
        )
        copy_rows(
            cursor,
            BillingProfile,
            [
                "account_id",
                "legal_name",
                "email",
                "address_line1",
                "postal_code",
                "city",
                "country",
                "currency",
            ],
            (
                (
                    c.account_id,
                    f"{c.name} BV",
                    f"billing-{n:06d}@example.com",
                    f"{n % 200 + 1} Main Street",
                    f"{1000 + n % 8000}",
                    CITIES[c.country],
                    c.country,
                    "EUR",
                )
                for n, c in enumerate(everyone)
            ),
        )
        copy_rows(
            cursor,
            BalanceTransaction,
            [
                "id",
                "account_id",
                "kind",
                "amount",
                "currency",
                "ending_balance",
                "description",
                "created_at",
            ],
            (
                (
                    random_id(rng, "btx"),
                    c.account_id,
                    "adjustment",
                    c.credit,
                    "EUR",
                    c.credit,
                    "Prepaid credit",
                    joined,
                )
                for c in customers
                if c.credit
            ),
        )
    return everyone


def period_bounds(anchor: datetime, price, after: datetime) -> tuple[datetime, datetime]:
    """The period of ``price`` counted from ``anchor`` that contains ``after``."""
    from billing.rules.periods import nth_period_end

    n = 1
    while nth_period_end(anchor, price.interval, price.interval_count, n) <= after:
        n += 1
    return (
        nth_period_end(anchor, price.interval, price.interval_count, n - 1),
        nth_period_end(anchor, price.interval, price.interval_count, n),
    )


SUBSCRIPTION_FIELDS = [
    "id",
    "account_id",
    "price_id",
    "status",
    "server_id",
    "order",
    "billing_cycle_anchor",
    "current_period_start",
    "current_period_end",
    "created_at",
]
INVOICE_FIELDS = [
    "id",
    "account_id",
    "subscription_id",
    "number",
    "status",
    "billing_reason",
    "currency",
    "period_start",
    "period_end",
    "subtotal",
    "tax",
    "tax_percentage",
    "total",
    "amount_paid",
    "amount_remaining",
    "due_date",
    "buyer",
    "seller",
    "created_at",
    "finalized_at",
    "paid_at",
]
LINE_FIELDS = [
    "id",
    "invoice_id",
    "position",
    "description",
    "price_id",
    "unit_amount",
    "amount",
    "tax_amount",
    "period_start",
    "period_end",
]


def renewal_subscriptions(customers: list, servers: dict, now: datetime, rng: random.Random):
    """One active subscription per customer, on its server; its period ended in the last
    hour, after 1 to 24 months of periods from its anchor: all due now."""
    from billing.rules.periods import nth_period_end

    for customer in customers:
        price = customer.price
        months = price.interval_count * (12 if price.interval == "year" else 1)
        periods = rng.randint(1, max(1, 24 // months))
        ended = now - timedelta(seconds=rng.uniform(60, 3600))
        anchor = shift_months(ended, -months * periods)
        start = nth_period_end(anchor, price.interval, price.interval_count, periods - 1)
        end = nth_period_end(anchor, price.interval, price.interval_count, periods)
        assert end <= now, (anchor, end)
        server_id, name, game = servers[customer.account_id]
        order = {"name": name, "region": "eu-central", "game": game, "variables": {}}
        yield (
            random_id(rng, "sub"),
            customer.account_id,
            price.id,
            "active",
            server_id,
            Jsonb(order),
            anchor,
            start,
            end,
            anchor,
        )


def list_rows(account_id: str, price, now: datetime, rng: random.Random):
    """The list account's subscriptions (not due), their first invoices (paid, numbered in
    their year's series) and lines (one, or two with a setup fee), oldest first; and the next
    number of each series."""
    from django.conf import settings

    from billing.rules.periods import nth_period_end

    year = 365 * 24 * 3600
    created = sorted(now - timedelta(seconds=rng.uniform(3600, year)) for _ in range(LIST_SIZE))
    not_due_until = now + timedelta(days=settings.BILLING_RENEWAL_DAYS_BEFORE + 1)
    buyer = Jsonb(
        {
            "name": "bench-list BV",
            "email": "billing-list@example.com",
            "address_lines": ["1 Main Street", "1000 Brussels"],
            "country": "BE",
            "vat_id": "",
            "tax_exempt": False,
        }
    )
    seller = Jsonb(dict(settings.BILLING_SELLER))
    rate = TAX_RATES["BE"]
    series_next: dict[str, int] = {}
    subscriptions, invoices, lines = [], [], []
    for n, at in enumerate(created):
        subscription_id, invoice_id = random_id(rng, "sub"), random_id(rng, "inv")
        start, end = period_bounds(at, price, not_due_until)
        order = {"name": f"List server {n}", "region": "eu-central", "game": "minecraft"}
        subscriptions.append(
            (
                subscription_id,
                account_id,
                price.id,
                "active",
                None,
                Jsonb(order),
                at,
                start,
                end,
                at,
            )
        )
        first_end = nth_period_end(at, price.interval, price.interval_count, 1)
        charges = [(f"{price.product.name} (first period)", price.unit_amount, at, first_end)]
        if n % 10 == 0:
            charges.append(("Setup fee", 500, None, None))
        taxes = [round(amount * rate / 100) for _, amount, _, _ in charges]
        subtotal, tax = sum(c[1] for c in charges), sum(taxes)
        series = f"INV-{at:%Y}"
        number = series_next.get(series, 1)
        series_next[series] = number + 1
        invoices.append(
            (
                invoice_id,
                account_id,
                subscription_id,
                f"{series}-{number:06d}",
                "paid",
                "subscription_create",
                "EUR",
                at,
                first_end,
                subtotal,
                tax,
                rate,
                subtotal + tax,
                subtotal + tax,
                0,
                at + timedelta(days=7),
                buyer,
                seller,
                at,
                at,
                at,
            )
        )
        for position, ((description, amount, since, until), line_tax) in enumerate(
            zip(charges, taxes, strict=True)
        ):
            lines.append(
                (
                    random_id(rng, "il"),
                    invoice_id,
                    position,
                    description,
                    price.id,
                    amount,
                    amount,
                    line_tax,
                    since,
                    until,
                )
            )
    return subscriptions, invoices, lines, series_next


def build_template(args, env: dict[str, str]) -> None:
    from billing.models import DocumentSequence, Invoice, InvoiceLine, Subscription
    from servers.counts import instance_counts_rebuild

    started = time.monotonic()
    template_url = database_url(args.postgres, TEMPLATE)
    recreate_database(args.postgres, TEMPLATE)
    migrate({**env, "DATABASE_URL": template_url})
    use_database(TEMPLATE)
    rng = random.Random(8)
    catalogue = create_catalogue()
    *customers, list_account = load_accounts(template_url, args.subscriptions, catalogue, rng)
    # One game server per customer, with bench/api.py's loader (the counting trigger off
    # for the COPY, the counts rebuilt after it).
    load_servers(template_url, [c.account_id for c in customers])
    instance_counts_rebuild()
    with psycopg.connect(template_url) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT account_id, id, name, game_id FROM servers_server")
        servers = {account: (server, name, game) for account, server, name, game in cursor}
        now = datetime.now(UTC)
        renewals = renewal_subscriptions(customers, servers, now, rng)
        copy_rows(cursor, Subscription, SUBSCRIPTION_FIELDS, renewals)
        listed = list_rows(list_account.account_id, catalogue.list_price, now, rng)
        subscriptions, invoices, lines, series = listed
        copy_rows(cursor, Subscription, SUBSCRIPTION_FIELDS, subscriptions)
        copy_rows(cursor, Invoice, INVOICE_FIELDS, invoices)
        copy_rows(cursor, InvoiceLine, LINE_FIELDS, lines)
        copy_rows(cursor, DocumentSequence, ["series", "next_number"], series.items())
    use_database(DB_NAME)
    with psycopg.connect(template_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute(
            f"COMMENT ON DATABASE {TEMPLATE} IS "
            f"'subscriptions={args.subscriptions} built={datetime.now(UTC).isoformat()}'"
        )
    print(
        f"dataset: {args.subscriptions:,} due subscriptions and {LIST_SIZE:,} listed invoices "
        f"loaded in {time.monotonic() - started:.0f} s",
        flush=True,
    )


def database_comment(admin_url: str, name: str) -> str:
    """The comment of database ``name`` ("" when there is none or no such database): what a
    finished load writes last, so a half-loaded dataset is never reused."""
    if not database_exists(admin_url, name):
        return ""
    with psycopg.connect(database_url(admin_url, "postgres"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (name,),
        ).fetchone()
    return (row and row[0]) or ""


def template_usable(admin_url: str, count: int) -> bool:
    found = re.fullmatch(r"subscriptions=(\d+) built=(\S+)", database_comment(admin_url, TEMPLATE))
    if not found or int(found.group(1)) != count:
        return False
    return datetime.now(UTC) - datetime.fromisoformat(found.group(2)) < TEMPLATE_MAX_AGE


def copy_template(admin_url: str) -> None:
    use_database(TEMPLATE)  # closes Django's connection: CREATE … TEMPLATE needs none open
    with psycopg.connect(database_url(admin_url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}" TEMPLATE "{TEMPLATE}"')
    use_database(DB_NAME)
    with psycopg.connect(database_url(admin_url, DB_NAME), autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def prepare(args, env: dict[str, str]) -> None:
    import django

    os.environ.update(env)
    django.setup()
    if args.reuse_dataset and template_usable(args.postgres, args.subscriptions):
        migrate({**env, "DATABASE_URL": database_url(args.postgres, TEMPLATE)})
        print(f"dataset: reusing {TEMPLATE}", flush=True)
    else:
        build_template(args, env)
    copy_template(args.postgres)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


# --- Lists -----------------------------------------------------------------------------------


@dataclass
class ListResult:
    label: str
    path: str
    status: int = 0
    items: int = 0
    queries: list[tuple[str, float]] = field(default_factory=list)  # (SQL, ms)
    times_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)


def list_key() -> str:
    from accounts.models import Account, Membership
    from accounts.services import api_key_create

    account = Account.objects.get(name="bench-list")
    owner = Membership.objects.select_related("user").get(account=account).user
    _, token = api_key_create(account=account, user=owner, name="bench", scopes=["billing:read"])
    return token


def measure_lists(rounds: int) -> list[tuple[ListResult, ListResult]]:
    """Page 1 and page 2,000 of each billing list, in-process, interleaved."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(headers={"authorization": f"Bearer {list_key()}"})
    pairs = []
    for key in ("invoices", "subscriptions"):
        first = ListResult(f"/v1/{key}, page 1", f"/v1/{key}")
        deep = ListResult(f"/v1/{key}, page {DEEP_PAGE:,}", f"/v1/{key}?page={DEEP_PAGE}")
        if client.get(first.path).status_code == 404:
            print(f"lists: GET /v1/{key} does not exist (yet): not measured")
            continue
        for result in (first, deep):
            for _ in range(3):  # the first request records the key's use; then steady state
                client.get(result.path)
            with CaptureQueriesContext(connection) as captured:
                response = client.get(result.path)
            result.status = response.status_code
            result.items = len(response.json().get("data", {}).get(key, []))
            result.queries = [(q["sql"], float(q["time"]) * 1000) for q in captured]
        for _ in range(rounds):
            for result in (first, deep):
                started = time.perf_counter()
                client.get(result.path)
                result.times_ms.append((time.perf_counter() - started) * 1000)
        pairs.append((first, deep))
    return pairs


# --- Queries per subscription ----------------------------------------------------------------


def shard_plan(workers: int) -> tuple[int, list[tuple[int, int]]]:
    """The one-worker run takes shard 0/m, m the first number from 9 prime to ``workers``, so
    it takes as much from each of the split run's shards (shard 0/10 would all come from shard
    0/2). The two query samples are shards of other residues mod m, chosen to hold about
    0.3 % and 1 % of the due subscriptions; the sizes are counted, not assumed (``hash_shard``
    summed the id's bytes until it took CRC-32, and spread unevenly over a large modulus)."""
    from billing.models import Subscription
    from billing.services.job.renewals import hash_shard

    m = 9
    while math.gcd(m, workers) != 1:
        m += 1
    ids = Subscription.objects.exclude(account__name="bench-list").values_list("id", flat=True)
    ids = list(ids)
    samples: list[tuple[int, int]] = []
    for modulus, share in ((50 * m, 0.003), (10 * m, 0.01)):
        sizes = Counter(hash_shard(subscription_id, modulus) for subscription_id in ids)
        taken = {residue % modulus for residue, _ in samples}
        candidates = [r for r in range(modulus) if r % m and r not in taken]
        best = min(candidates, key=lambda r: abs(sizes[r] - share * len(ids)))
        samples.append((best, modulus))
    return m, samples


@dataclass
class Sample:
    shard: tuple[int, int]
    batches: list[tuple[int, int]]  # each batch's subscriptions and statements
    singles: list[int]  # the statements of each subscription taken one at a time
    outside: int  # statements of the run outside both
    seconds: float
    cpu_seconds: float  # this process's CPU: Python's side, not PostgreSQL's
    report: str
    statements: dict[str, list[str]]  # the SQL of one batch, and of one single subscription

    @property
    def subscriptions(self) -> int:
        return sum(size for size, _ in self.batches) + len(self.singles)

    @property
    def per_subscription(self) -> float:
        statements = sum(n for _, n in self.batches) + sum(self.singles)
        return statements / max(self.subscriptions, 1)


def sample_queries(shard: tuple[int, int]) -> Sample:
    """``billing_run(shard=…)`` in-process, counting the statements of each batch and of each
    subscription taken one at a time."""
    from django.db import connection

    from billing.services.job import renewals

    total = [0]
    current: list[str] = []

    def count(execute, sql, params, many, context):
        total[0] += 1
        current.append(sql)
        return execute(sql, params, many, context)

    batches: list[tuple[int, int]] = []
    singles: list[int] = []
    statements: dict[str, list[str]] = {}
    original_batch, original_step = renewals.renew_batch, renewals._subscription_step

    def counted_batch(ids, clocks, report):
        before = total[0]
        current.clear()
        result = original_batch(ids, clocks, report)
        passed, _ = result
        batches.append((len(ids) - len(passed), total[0] - before))
        statements.setdefault("batch", list(current))
        return result

    def counted_step(subscription_id, clocks, report, **kwargs):
        before = total[0]
        current.clear()
        original_step(subscription_id, clocks, report, **kwargs)
        singles.append(total[0] - before)
        statements.setdefault("single", list(current))

    renewals.renew_batch, renewals._subscription_step = counted_batch, counted_step
    started, cpu = time.perf_counter(), time.process_time()
    try:
        with connection.execute_wrapper(count):
            report = renewals.billing_run(shard=shard)
    finally:
        renewals.renew_batch, renewals._subscription_step = original_batch, original_step
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    outside = total[0] - sum(n for _, n in batches) - sum(singles)
    return Sample(shard, batches, singles, outside, seconds, cpu, str(report), statements)


# --- The renewal run -------------------------------------------------------------------------


@dataclass
class Worker:
    shard: str
    process: subprocess.Popen
    started: float
    tail: bytearray = field(default_factory=bytearray)
    seconds: float = 0.0

    def report(self) -> dict[str, int]:
        """The counts of the command's last line (the run's report), empty if it was stopped."""
        lines = [line for line in self.tail.decode(errors="replace").splitlines() if line]
        last = lines[-1] if lines else ""
        return {step: int(n) for step, n in re.findall(r"(\w+): (\d+)", last)}


@dataclass
class Phase:
    label: str
    workers: list[Worker]
    wall: float
    invoices: int
    worker_cpu_ms: float
    db_cpu_ms: float
    lock_wait_share: float  # of the samples of a busy worker backend, waiting for a lock
    stopped: bool  # at --time-limit

    @property
    def rate(self) -> float:
        return self.invoices / self.wall

    @property
    def per_worker(self) -> float:
        return self.rate / len(self.workers)

    def steps(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for worker in self.workers:
            for step, n in worker.report().items():
                total[step] = total.get(step, 0) + n
        return total


def _keep_tail(stream, tail: bytearray) -> None:
    """Read a worker's output (mostly the console backend's e-mails), keeping its end."""
    while chunk := stream.read(1 << 16):
        tail.extend(chunk)
        del tail[:-8192]


class BackendSampler(threading.Thread):
    """The PostgreSQL client backends of the bench database while a phase runs, every 0.2 s:
    their CPU from /proc (a backend's last moments before it exits are missed) and how often
    one that is in a transaction waits for a lock (the invoice sequence's row lock, mostly)."""

    def __init__(self, db_url: str):
        super().__init__(daemon=True)
        self.db_url = db_url
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.before: dict[int, int] = {}
        self.seen: dict[int, int] = {}
        self.busy = self.waiting = 0

    def _backends(self, conn) -> list[tuple[int, str, str]]:
        return conn.execute(
            "SELECT pid, coalesce(state, ''), coalesce(wait_event_type, '')"
            " FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'",
            (DB_NAME,),
        ).fetchall()

    def run(self) -> None:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            self.before = cpu_ticks([pid for pid, _, _ in self._backends(conn)])
            self.ready.set()
            while not self.stop.wait(0.2):
                backends = self._backends(conn)
                for pid, ticks in cpu_ticks([pid for pid, _, _ in backends]).items():
                    self.seen[pid] = max(self.seen.get(pid, 0), ticks)
                for _, state, wait in backends:
                    if state != "idle":
                        self.busy += 1
                        self.waiting += wait == "Lock"

    def cpu_ms(self) -> float:
        return cpu_ms_between(self.before, {**self.before, **self.seen})


def renewal_invoices(db_url: str) -> int:
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM billing_invoice WHERE billing_reason = 'subscription_cycle'"
        ).fetchone()
        return row[0]


def run_phase(
    label: str, shards: list[str], env: dict[str, str], log_dir: Path, time_limit: float
) -> Phase:
    """``manage.py billing_run --shard …`` for each shard at once; wait for them all (or stop
    them with SIGTERM at ``time_limit`` seconds: a stopped worker's open transaction is
    rolled back, numbers and all)."""
    db_url = env["DATABASE_URL"]
    before = renewal_invoices(db_url)
    sampler = BackendSampler(db_url)
    sampler.start()
    sampler.ready.wait()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    workers, readers, logs = [], [], []
    for shard in shards:
        logs.append((log_dir / f"worker-{shard.replace('/', '-')}.log").open("wb"))
        process = subprocess.Popen(
            [sys.executable, "manage.py", "billing_run", "--shard", shard],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=logs[-1],
        )
        worker = Worker(shard, process, time.monotonic())
        readers.append(threading.Thread(target=_keep_tail, args=(process.stdout, worker.tail)))
        readers[-1].start()
        workers.append(worker)
    stopped = False
    waiting = list(workers)
    try:
        while waiting:
            time.sleep(0.05)
            if time_limit and not stopped and time.monotonic() - started > time_limit:
                stopped = True
                for worker in waiting:
                    worker.process.terminate()
            for worker in list(waiting):
                if worker.process.poll() is not None:
                    worker.seconds = time.monotonic() - worker.started
                    waiting.remove(worker)
    finally:  # an error or Ctrl-C here leaves no worker running
        for worker in waiting:
            worker.process.terminate()
            worker.process.wait()
    wall = time.monotonic() - started
    for reader in readers:
        reader.join()
    for log in logs:
        log.close()
    sampler.stop.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    failed = [w for w in workers if w.process.returncode not in (0, -15 if stopped else 0)]
    for worker in failed:
        log = (log_dir / f"worker-{worker.shard.replace('/', '-')}.log").read_text()
        print(f"worker {worker.shard} exited with {worker.process.returncode}:\n{log[-3000:]}")
    if failed:
        raise RuntimeError(f"{label}: {len(failed)} worker(s) failed")
    cpu = (after.ru_utime - children.ru_utime + after.ru_stime - children.ru_stime) * 1000
    return Phase(
        label,
        workers,
        wall,
        renewal_invoices(db_url) - before,
        cpu,
        sampler.cpu_ms(),
        sampler.waiting / max(sampler.busy, 1),
        stopped,
    )


# --- Checks ----------------------------------------------------------------------------------


def check_invoices(db_url: str, expected: int, complete: bool) -> list[tuple[str, bool]]:
    """Each due subscription renewed once, for the period that just ended (or, after a run
    stopped at --time-limit, not yet and still due); every series gapless."""
    checks = []
    with psycopg.connect(db_url) as conn:
        renewed, left, wrong = conn.execute(
            """
            SELECT count(*) FILTER (WHERE n = 1 AND this_period = 1),
                   count(*) FILTER (WHERE n = 0 AND current_period_end <= now()),
                   count(*) FILTER (WHERE NOT (n = 1 AND this_period = 1
                                               OR n = 0 AND current_period_end <= now()))
            FROM (
                SELECT s.current_period_end, count(i.id) AS n,
                       count(i.id) FILTER (WHERE i.period_start = s.current_period_start)
                           AS this_period
                FROM billing_subscription s
                JOIN accounts_account a ON a.id = s.account_id AND a.name <> 'bench-list'
                LEFT JOIN billing_invoice i ON i.subscription_id = s.id
                    AND i.billing_reason = 'subscription_cycle' AND i.status <> 'void'
                GROUP BY s.id
            ) per_subscription
            """
        ).fetchone()
        checks.append(
            (
                f"one renewal invoice per subscription, for the period that just ended: "
                f"{renewed:,} of {expected:,} renewed, {left:,} left for the next run, "
                f"{wrong:,} wrong (twice, another period, or not renewed yet moved on)",
                wrong == 0 and renewed + left == expected and (left == 0 or not complete),
            )
        )
        series = conn.execute(
            """
            SELECT left(number, length(number) - 7) AS series, count(*),
                   count(DISTINCT right(number, 6)::int), min(right(number, 6)::int),
                   max(right(number, 6)::int), q.next_number
            FROM billing_invoice i
            LEFT JOIN billing_documentsequence q ON q.series = left(number, length(number) - 7)
            WHERE number IS NOT NULL
            GROUP BY 1, q.next_number ORDER BY 1
            """
        ).fetchall()
        for name, count, distinct, low, high, next_number in series:
            checks.append(
                (
                    f"series {name}: {count:,} numbers, {low}..{high}, next {next_number} "
                    "(gapless, none repeated)",
                    count == distinct == high and low == 1 and next_number == high + 1,
                )
            )
    return checks


# --- Report ----------------------------------------------------------------------------------


def print_lists(pairs: list[tuple[ListResult, ListResult]], show_queries: bool) -> None:
    print(
        "\n| List (in-process, 25 per page) | status | items | queries | median ms | SQL ms |\n"
        "|---|---:|---:|---:|---:|---|"
    )
    for pair in pairs:
        for result in pair:
            sql_ms = " + ".join(f"{ms:.1f}" for _, ms in result.queries)
            print(
                f"| {result.label} | {result.status} | {result.items} | {len(result.queries)} "
                f"| {result.median_ms:.1f} | {sql_ms} |"
            )
    if show_queries:
        for pair in pairs:
            for result in pair:
                print(f"\n{result.label}:")
                for sql, ms in result.queries:
                    print(f"  {ms:6.1f} ms  {sql}")


def print_samples(samples: list[Sample], show_queries: bool) -> None:
    print(
        "\n| billing_run in-process | subscriptions | batches: subscriptions, statements (max) "
        "| taken one at a time: statements (max) | statements outside | statements per "
        "subscription | ms/subscription (CPU) |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    for sample in samples:
        in_batches = sum(size for size, _ in sample.batches)
        batch_cell = (
            f"{len(sample.batches)}: {in_batches:,}, {sum(n for _, n in sample.batches):,} "
            f"({max(n for _, n in sample.batches)})"
            if sample.batches
            else "-"
        )
        single_cell = (
            f"{len(sample.singles)}: {sum(sample.singles):,} ({max(sample.singles)})"
            if sample.singles
            else "-"
        )
        n = max(sample.subscriptions, 1)
        print(
            f"| shard {sample.shard[0]}/{sample.shard[1]} | {sample.subscriptions:,} "
            f"| {batch_cell} | {single_cell} | {sample.outside} "
            f"| {sample.per_subscription:.2f} "
            f"| {sample.seconds * 1000 / n:.2f} ({sample.cpu_seconds * 1000 / n:.2f}) |"
        )
    if show_queries:
        for path, sqls in samples[0].statements.items():
            print(f"\nThe {len(sqls)} statements of one {path}:")
            for n, sql in enumerate(sqls, 1):
                print(f"  {n:3d}. {sql[:160]}")


def print_phases(phases: list[Phase]) -> None:
    print(
        "\n| Renewal run (manage.py billing_run) | workers | invoices | wall s | invoices/s "
        "| per worker | CPU ms/invoice (workers + PostgreSQL) | lock waits |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for phase in phases:
        n = max(phase.invoices, 1)
        stopped = " (stopped at --time-limit)" if phase.stopped else ""
        print(
            f"| {phase.label}{stopped} | {len(phase.workers)} | {phase.invoices:,} "
            f"| {phase.wall:.1f} | {phase.rate:.1f} | {phase.per_worker:.1f} "
            f"| {(phase.worker_cpu_ms + phase.db_cpu_ms) / n:.1f} "
            f"({phase.worker_cpu_ms / n:.1f} + {phase.db_cpu_ms / n:.1f}) "
            f"| {phase.lock_wait_share:.0%} |"
        )
    for phase in phases:
        for worker in phase.workers:
            print(
                f"  {phase.label}, --shard {worker.shard}: {worker.seconds:.1f} s, "
                f"{worker.report() or 'stopped'}"
            )


def goals(
    pairs: list[tuple[ListResult, ListResult]],
    samples: list[Sample],
    phases: list[Phase],
    checks: list[tuple[str, bool]],
) -> list[tuple[str, bool]]:
    single, split = phases
    outcome = [
        (
            f"one worker: {single.rate:.1f} invoices/s (goal >= {RATE_GOAL})",
            single.rate >= RATE_GOAL,
        ),
        (
            f"{len(split.workers)} workers at once: {split.per_worker:.1f} invoices/s per "
            f"worker (goal >= {RATE_GOAL})",
            split.per_worker >= RATE_GOAL,
        ),
    ]
    small, large = samples
    for label, low, high in (
        ("a batch", [n for _, n in small.batches], [n for _, n in large.batches]),
        ("a subscription taken one at a time", small.singles, large.singles),
    ):
        if low and high:
            outcome.append(
                (
                    f"statements of {label}: at most {max(low)} over "
                    f"{small.subscriptions:,} subscriptions, {max(high)} over "
                    f"{large.subscriptions:,} (bounded: not growing)",
                    max(high) <= max(low),
                )
            )
    steps = split.steps()
    if not split.stopped:
        outcome.append(
            (
                f"split run: no step deferred ({steps.get('deferred', 0)}); subscriptions another "
                f"worker held, skipped: {steps.get('skipped_locked', 0)}",
                not steps.get("deferred"),
            )
        )
    outcome += checks
    for first, deep in pairs:
        worst = max(len(first.queries), len(deep.queries))
        ratio = deep.median_ms / first.median_ms
        outcome += [
            (
                f"{first.path}: {len(first.queries)} queries at page 1, {len(deep.queries)} at "
                f"page {DEEP_PAGE:,} (goal <= {LIST_QUERY_GOAL})",
                worst <= LIST_QUERY_GOAL and first.status == deep.status == 200,
            ),
            (
                f"{first.path}: page {DEEP_PAGE:,} at {ratio:.2f}x the latency of page 1 "
                f"(goal <= {DEEP_RATIO_GOAL:g}x)",
                ratio <= DEEP_RATIO_GOAL,
            ),
        ]
    return outcome


# --- Main ------------------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=100_000, help="due the same day")
    parser.add_argument("--workers", type=int, default=2, help="processes of the split run")
    parser.add_argument("--rounds", type=int, default=15, help="requests of each list page")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=0,
        help="stop each renewal phase's workers after this many seconds (0: run to the end)",
    )
    parser.add_argument(
        "--reuse-dataset",
        action="store_true",
        help=f"copy an existing {TEMPLATE} of the same size instead of building it again",
    )
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432",
        help="server URL without a database name; the bench uses its own databases on it",
    )
    parser.add_argument(
        "--show-queries",
        action="store_true",
        help="print the statements of the list requests and of one subscription of each path",
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    print(machine_summary(), flush=True)
    print(f"at the start: {load_average()}", flush=True)
    env = environment(args.postgres)
    prepare(args, env)

    pairs = measure_lists(args.rounds)
    single, sample_shards = shard_plan(args.workers)
    samples = [sample_queries(shard) for shard in sample_shards]
    print(f"lists and query samples done; {load_average()}", flush=True)
    from django.db import connection

    connection.close()
    shards = [f"{i}/{args.workers}" for i in range(args.workers)]
    with tempfile.TemporaryDirectory(prefix="bench-billing-") as log_dir:
        phases = []
        for label, run in (
            (f"one worker, shard 0/{single}", [f"0/{single}"]),
            (f"{args.workers} workers, the rest", shards),
        ):
            phases.append(run_phase(label, run, env, Path(log_dir), args.time_limit))
            print(
                f"{label}: {phases[-1].invoices:,} invoices in {phases[-1].wall:.1f} s; "
                f"{load_average()}",
                flush=True,
            )
    complete = not any(phase.stopped for phase in phases)
    checks = check_invoices(env["DATABASE_URL"], args.subscriptions, complete)

    print_lists(pairs, args.show_queries)
    print_samples(samples, args.show_queries)
    print_phases(phases)
    outcome = goals(pairs, samples, phases, checks)
    print("\nGoals:")
    for text, passed in outcome:
        print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    print(f"\nat the end: {load_average()}")
    return 0 if all(passed for _, passed in outcome) else 1


if __name__ == "__main__":
    sys.exit(main())

"""What the per-server permission check adds to the hot paths (not a test).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name> .venv/bin/python bench/permissions.py
        [--servers 1000] [--requests 300] [--no-redis]

With Redis (``REDIS_URL``, ``redis://127.0.0.1:6379/3`` unless set; as every deployment runs)
the shared API key cache carries each key's grants; ``--no-redis`` measures the path without
it, where the grants are read once per request.

Needs the test settings' environment (``source /tmp/testenv.sh``) and a database it may empty:
it migrates ``DATABASE_URL`` (SQLite when unset) and writes into it. One account with
``--servers`` servers on a node, its owner, and a guest holding a grant on every tenth server
(plus one grant of console view and command); each with a key. Then ``--requests`` times each:

- ``GET /v1/servers`` (the first page) as the owner and as the guest;
- ``POST /v1/servers/{id}/console`` as the owner and as the guest.

What the permission check adds is measured from inside, not as a difference of two noisy
runs: the queries of their own on the grants' table (``FROM servers_servergrant``) are
counted, and the time spent in the check's functions (``servers.services.permissions``: the
caller, the visibility filter, ``instance_may``, the grants' scopes for a key whose role falls
short) is summed per request, with and without the time its query took in the database.
Prints the medians and p99 per request and PASS/FAIL for the goal of issue 31 (at most 1 query
and 0.3 ms of the check's own work more per request; the query's time is shown beside it, as it
depends on the database's load more than on the code); exit status 1 when one fails.
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hosting.settings")
# The requests go through Django's test client, in this process: its host, plain HTTP.
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("RATE_LIMIT_PER_MINUTE", str(10**9))
if "--no-redis" in sys.argv:
    os.environ.pop("REDIS_URL", None)
else:
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/3")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from accounts.actors import SYSTEM  # noqa: E402
from accounts.models import Account, Membership, User  # noqa: E402
from accounts.roles import SCOPES, Role  # noqa: E402
from accounts.services import api_key_create  # noqa: E402
from servers import views as _pages  # noqa: E402, F401 - loads the whole servers app
from servers.api import views as api_views  # noqa: E402
from servers.models import Game, Region, Server, ServerGrant, ServerStatus  # noqa: E402
from servers.services import permissions  # noqa: E402
from servers.services.nodes import node_allocations_add, node_create  # noqa: E402

GOAL_QUERIES = 1
GOAL_MS = 0.3
GRANTS_TABLE = 'FROM "servers_servergrant"'
spent = [0.0]


def timed(function: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    return wrapper


def instrument() -> None:
    """Time the permission functions wherever the API views call them."""
    for name in ("instance_may", "instances_visible_q"):
        setattr(api_views, name, timed(getattr(permissions, name)))
    api_views.Caller.of_principal = classmethod(timed(permissions.Caller.of_principal.__func__))
    from hosting.api import permissions as scope_checks

    scope_checks._extra_scopes[:] = [timed(permissions.principal_grant_scopes)]


def dataset(count: int):
    call_command("migrate", verbosity=0)
    ServerGrant.objects.all().delete()
    Account.objects.filter(name="Permissions bench").delete()
    account = Account.objects.create(name="Permissions bench")
    owner = User.objects.create_user(email=f"owner-{time.time_ns()}@bench.test", password=None)
    guest = User.objects.create_user(email=f"guest-{time.time_ns()}@bench.test", password=None)
    Membership.objects.create(account=account, user=owner, role=Role.OWNER)
    Membership.objects.create(account=account, user=guest, role=Role.GUEST)
    region = Region.objects.first()
    game = Game.objects.first()
    node, _ = node_create(
        name=f"bench-{time.time_ns()}",
        region=region.slug,
        agent_url="http://127.0.0.1:9",
        memory_mb=10**7,
        disk_mb=10**8,
        cpu_percent=25600,
        actor=SYSTEM,
    )
    node_allocations_add(node=node, ip="127.0.0.1", ports="30000-30001", actor=SYSTEM)
    servers = Server.objects.bulk_create(
        Server(
            account=account,
            name=f"bench {number}",
            region=region,
            game=game,
            node=node,
            status=ServerStatus.RUNNING,
        )
        for number in range(count)
    )
    ServerGrant.objects.bulk_create(
        ServerGrant(
            account=account,
            server=server,
            user=guest,
            permissions=["console.view", "console.command", "files.read"],
        )
        for server in servers[::10]
    )
    every = [scope for scope in SCOPES if scope.split(":")[0] in {"servers", "files"}]
    owner_key = api_key_create(account=account, user=owner, name="bench", scopes=list(SCOPES))[1]
    guest_key = api_key_create(account=account, user=guest, name="bench", scopes=every)[1]
    return servers, owner_key, guest_key


class GrantQueries:
    """The queries of their own on the grants (a list's join on them is inside its one query),
    and the time the driver spent on them."""

    def __init__(self):
        self.count, self.seconds = 0, 0.0

    def __call__(self, execute, sql, params, many, context):
        if GRANTS_TABLE not in sql:
            return execute(sql, params, many, context)
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.count += 1
            self.seconds += time.perf_counter() - started


def measure(client: APIClient, method: str, path: str, requests: int) -> dict:
    grant_queries, milliseconds, own, statuses = [], [], [], set()
    for _ in range(requests):
        spent[0] = 0.0
        ours = GrantQueries()
        with connection.execute_wrapper(ours):
            answer = getattr(client, method)(path)
        statuses.add(answer.status_code)
        grant_queries.append(ours.count)
        milliseconds.append(spent[0] * 1000)
        own.append((spent[0] - ours.seconds) * 1000)
    milliseconds.sort()
    own.sort()
    return {
        "statuses": statuses,
        "queries": max(grant_queries),
        "median_ms": statistics.median(milliseconds),
        "own_median_ms": statistics.median(own),
        "own_p99_ms": own[int(len(own) * 0.99) - 1],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--no-redis", action="store_true", help="Without the shared key cache.")
    options = parser.parse_args()
    servers, owner_key, guest_key = dataset(options.servers)
    instrument()
    clients = {}
    for who, token in (("owner", owner_key), ("guest", guest_key)):
        clients[who] = APIClient()
        clients[who].credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    granted = servers[0].pk
    failed = False
    print(
        f"{'request':<32} {'who':<6} {'queries':>7} {'with query ms':>13} {'own ms':>7} "
        f"{'own p99':>7}"
    )
    for label, method, path in (
        ("GET /v1/servers", "get", "/v1/servers"),
        ("POST /v1/servers/{id}/console", "post", f"/v1/servers/{granted}/console"),
    ):
        for who, client in clients.items():
            result = measure(client, method, path, options.requests)
            ok = (
                result["statuses"] == {200}
                and result["queries"] <= GOAL_QUERIES
                and result["own_median_ms"] <= GOAL_MS
            )
            failed |= not ok
            print(
                f"{label:<32} {who:<6} {result['queries']:>7} {result['median_ms']:>13.3f} "
                f"{result['own_median_ms']:>7.3f} {result['own_p99_ms']:>7.3f}  "
                f"{'PASS' if ok else 'FAIL'} {sorted(result['statuses'])}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

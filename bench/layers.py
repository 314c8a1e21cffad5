"""Where one GET /v1/servers request's CPU goes, layer by layer, in-process (not a test).

    .venv/bin/python bench/layers.py [--requests 3000] [--rounds 3]

Run ``bench/api.py`` first: this reuses its ``hosting_bench`` database and its 100-server
account. Every request goes through Django's WSGI handler with the production middleware and
settings (DEBUG off, Redis db 3, a real key), and the process's CPU time (``process_time``) is
divided by the number of requests; the table gives the median of the rounds. gunicorn's own
HTTP work, which the raw app pays as well, is not included.

The paths, each adding one layer to the one before:

1. a plain Django view returning a constant JSON answer;
2. a DRF ``APIView`` without authentication, returning the same;
3. the same with our authentication and rate limit (the key cache and counter in Redis);
4. the same plus the page query through the ORM (``values()``, 25 rows);
5. ``GET /v1/servers?per_page=25`` itself;
6. the same endpoint with its total and page read by two hand-written SQL statements on
   Django's cursor instead of the filter-built queryset: what leaving the ORM on this endpoint
   would save (an experiment: the service does not do this, see bench/README.md).
"""

import argparse
import io
import os
import statistics
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import (  # noqa: E402 - the path above makes the project importable
    DB_NAME,
    bench_environment,
    database_exists,
    database_url,
    machine_summary,
)

PAGE_SQL = (
    "SELECT id, name, game_id, status, created_at FROM servers_server "
    "WHERE account_id = %s AND deleted_at IS NULL "
    "ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s"
)


def probe_urlconf():
    """URL patterns for the probes, put in front of the service's own."""
    from django.http import JsonResponse
    from django.urls import path
    from rest_framework.response import Response
    from rest_framework.views import APIView

    from hosting import urls
    from hosting.api.pagination import MAX_PAGE, PageNumberPagination
    from hosting.api.params import integer_value
    from servers.api.serializers import SERVER_LIST_COLUMNS, ServerSerializer
    from servers.api.views import ServerViewSet
    from servers.counts import live_instance_count
    from servers.selectors import servers_of_account

    answer = {"ok": True}

    def plain(request):
        return JsonResponse(answer)

    class Open(APIView):
        authentication_classes = ()
        permission_classes = ()

        def get(self, request):
            return Response(answer)

    class Authenticated(APIView):
        required_scopes = {"get": ["servers:read"]}

        def get(self, request):
            return Response(answer)

    class WithPageQuery(Authenticated):
        def get(self, request):
            account_id = request.auth.account.id
            rows = list(servers_of_account(account_id=account_id).values(*SERVER_LIST_COLUMNS)[:25])
            return Response({"count": len(rows)})

    class RawSqlPagination(PageNumberPagination.for_key("servers")):
        def paginate_queryset(self, account_id, request, view=None):
            from django.db import connection

            self.request = request
            params = request.query_params
            self.page = integer_value(params, "page", default=1, minimum=1, maximum=MAX_PAGE)
            self.per_page = integer_value(params, "per_page", default=25, minimum=1, maximum=100)
            self.total = live_instance_count(account_id=account_id, kind="server", statuses=None)
            with connection.cursor() as cursor:
                offset = (self.page - 1) * self.per_page
                cursor.execute(PAGE_SQL, [account_id, self.per_page, offset])
                names = [column.name for column in cursor.description]
                return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    class RawSqlServers(ServerViewSet):
        pagination_class = RawSqlPagination
        serializer_class = ServerSerializer

        def get_queryset(self):
            return self.request.auth.account.id

        def filter_queryset(self, queryset):
            return queryset

        def list_query(self):
            return None  # the hand-written SQL above, not the SQL the ORM built once

    return [
        path("bench/plain", plain),
        path("bench/open", Open.as_view()),
        path("bench/authenticated", Authenticated.as_view()),
        path("bench/page-query", WithPageQuery.as_view()),
        path("bench/raw-sql-servers", RawSqlServers.as_view({"get": "list"})),
        *urls.urlpatterns,
    ]


PATHS = [
    ("a plain Django view returning a constant JSON", "/bench/plain"),
    ("a DRF APIView without authentication", "/bench/open"),
    ("a DRF APIView with our authentication and rate limit", "/bench/authenticated"),
    ("the same plus one ORM page query (values()[:25])", "/bench/page-query"),
    ("GET /v1/servers (total, pagination, serialization, Link)", "/v1/servers"),
    ("GET /v1/servers with total and page in hand-written SQL", "/bench/raw-sql-servers"),
]


def measure(app, token: str, path: str, requests: int) -> float:
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "per_page=25",
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8811",
        "HTTP_HOST": "127.0.0.1:8811",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
    }
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    def one():
        body = app({**environ, "wsgi.input": io.BytesIO(b"")}, start_response)
        b"".join(body)
        body.close()

    for _ in range(200):
        one()
    if not statuses[-1].startswith("200"):
        raise SystemExit(f"{path} answered {statuses[-1]}")
    started = time.process_time()
    for _ in range(requests):
        one()
    return (time.process_time() - started) / requests * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    if not database_exists(args.postgres, DB_NAME):
        print(f"No {DB_NAME} database: run bench/api.py first (it builds the dataset).")
        return 2
    os.environ.update(bench_environment(database_url(args.postgres, DB_NAME)))
    import django

    django.setup()
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    from accounts.models import Account, ApiKey, Membership
    from accounts.services import api_key_create

    probes = types.ModuleType("bench_probe_urls")
    probes.urlpatterns = probe_urlconf()
    settings.ROOT_URLCONF = probes
    account = Account.objects.get(name="bench-100")
    owner = Membership.objects.get(account=account).user
    ApiKey.objects.filter(account=account, name="layers").delete()
    _, token = api_key_create(account=account, user=owner, name="layers", scopes=["servers:read"])
    app = WSGIHandler()

    runs = {path: [] for _, path in PATHS}
    for _ in range(args.rounds):
        for _, path in PATHS:  # interleaved, so a slow moment touches every path alike
            runs[path].append(measure(app, token, path, args.requests))
    print(machine_summary())
    print("| Path (same middleware, same key) | CPU ms/request |")
    print("|---|---:|")
    for label, path in PATHS:
        print(f"| {label} | {statistics.median(runs[path]):.2f} |")
    ApiKey.objects.filter(account=account, name="layers").delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())

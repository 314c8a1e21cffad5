"""Lists whose SQL the ORM builds once per shape, then run with new values (issue 35).

Every shape answers exactly what the ORM-built list answers (the same rows, order, totals and
pages), a second request of a shape compiles nothing, and what cannot be kept (a search, whose
SQL depends on its value) is built by the ORM as before.
"""

from datetime import timedelta
from unittest import mock

import pytest
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone

from accounts.roles import Role
from hosting import queries as compiled
from hosting.api import pagination
from servers.api.views import BotViewSet, ServerViewSet
from servers.models import Server, ServerGrant
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db

SHAPES = [
    "",
    "per_page=3",
    "per_page=3&page=2",
    "per_page=3&page=99",
    "status=stopped",
    "status=running,stopped",
    "status=running&ordering=name",
    "ordering=-name",
    "ordering=status,-created_at",
    "game=minecraft-java",
    "game=minecraft-java&status=running",
    "created_after={after}",
    "created_before={before}&per_page=4",
    "created_after={after}&created_before={before}&ordering=created_at",
    "search=Server%201",
]


@pytest.fixture
def servers(account):
    now = timezone.now().replace(microsecond=0)
    made = []
    for n in range(12):
        made.append(
            ServerFactory(
                account=account,
                name=f"Server {n % 5} {n}",
                status=["running", "stopped", "suspended"][n % 3],
                created_at=now - timedelta(days=n, hours=n),
            )
        )
    ServerFactory.create_batch(3)  # another account's
    return made


@pytest.fixture(autouse=True)
def _fresh_cache():
    compiled.cache_clear()
    yield
    compiled.cache_clear()


def _orm_only():
    """The same views with the compiled path off: the ORM builds every list."""
    return mock.patch.multiple(
        "servers.api.views.InstanceViewSet", list_query=lambda self: None, create=False
    )


def _lists_kept() -> list:
    """The lists' kept queries (keyed by their view; the key lookup keeps its own too)."""
    return [query for key, query in compiled._cache.items() if isinstance(key[0], type)]


def _compiled_for(as_sql, model) -> int:
    """How many queries of ``model``'s table the ORM compiled (authentication compiles its
    own key lookup when there is no shared cache)."""
    return sum(1 for call in as_sql.call_args_list if call.args[0].query.model is model)


def _answer(api, path):
    response = api.get(path)
    return response.status_code, response.json(), response.get("Link")


def _queries(shape: str, servers) -> str:
    after = (servers[8].created_at).isoformat().replace("+00:00", "Z")
    before = (servers[2].created_at).isoformat().replace("+00:00", "Z")
    return shape.format(after=after, before=before)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("path", ["/v1/servers", "/v1/bots"])
def test_every_shape_answers_what_the_orm_built_list_answers(
    owner_api, account, servers, shape, path
):
    if path == "/v1/bots":
        sources = [
            {},
            {"source_type": "git", "source_url": "https://example.com/b.git", "source_ref": "v1"},
            {"source_type": "archive", "source_url": "https://example.com/bot.tar.gz"},
            {"source_type": "upload", "source_archive": "bots/acc/bot.tar.gz"},
        ]
        for n, server in enumerate(servers):
            BotFactory(
                account=account,
                name=server.name,
                status=server.status,
                created_at=server.created_at,
                environment={"PREFIX": "!", "SHARDS": n, "NESTED": {"a": [n, None]}}
                if n % 2
                else {},
                **sources[n % len(sources)],
            )
        shape = shape.replace("game=minecraft-java", "runtime=python-3.13")
    url = f"{path}?{_queries(shape, servers)}"
    fast = _answer(owner_api, url)
    kept = _lists_kept()
    if "search" in shape:
        assert not kept  # built by the ORM
    elif "page=99" in shape:
        assert None not in kept  # past the end: the total says so, no page is read
    else:
        assert kept and None not in kept  # answered from kept SQL, none refused
    with _orm_only():
        built = _answer(owner_api, url)
    assert fast == built
    assert fast[0] == 200


def test_a_second_request_of_a_shape_compiles_nothing(owner_api, outsider_api, servers):
    owner_api.get("/v1/servers?status=running&per_page=5")
    with mock.patch.object(
        SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql
    ) as sql:
        # Another account, other values, the same shape.
        response = outsider_api.get("/v1/servers?status=stopped&per_page=7&page=2")
        again = owner_api.get("/v1/servers?status=suspended&per_page=5")
    assert response.status_code == again.status_code == 200
    assert _compiled_for(sql, Server) == 0
    assert [s["status"] for s in again.json()["data"]["servers"]] == ["suspended"] * 4
    assert response.json()["data"]["servers"] == []


def test_a_search_is_built_by_the_orm_each_time(owner_api, servers):
    owner_api.get("/v1/servers?search=Server 1")
    with mock.patch.object(
        SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql
    ) as sql:
        response = owner_api.get("/v1/servers?search=Server 2")
    assert _compiled_for(sql, Server) > 0
    assert {s["name"].split()[1] for s in response.json()["data"]["servers"]} == {"2"}


def test_deep_pages_keys_first_and_from_their_month_answer_as_the_orm(
    owner_api, account, servers, monkeypatch
):
    monkeypatch.setattr(pagination, "DEEP_OFFSET", 2)
    for query in ("per_page=2&page=3", "per_page=2&page=4&ordering=name", "per_page=5&page=2"):
        fast = _answer(owner_api, f"/v1/servers?{query}")
        with _orm_only():
            built = _answer(owner_api, f"/v1/servers?{query}")
        assert fast == built
        assert fast[1]["data"]["servers"]


def test_a_guest_sees_only_the_servers_of_their_grants(account, servers, make_token, client_for):
    guest = MembershipFactory(account=account, role=Role.GUEST).user
    api = client_for(make_token(guest, account, scopes=["servers:read"]))
    for server in servers[:3]:
        ServerGrant.objects.create(
            account=account, server=server, user=guest, permissions=["console.view"]
        )
    fast = _answer(api, "/v1/servers?ordering=name")
    with _orm_only():
        built = _answer(api, "/v1/servers?ordering=name")
    assert fast == built
    assert {s["id"] for s in fast[1]["data"]["servers"]} == {s.id for s in servers[:3]}


def test_a_bad_parameter_is_refused_as_before(owner_api, servers):
    fast = _answer(owner_api, "/v1/servers?status=nope")
    with _orm_only():
        built = _answer(owner_api, "/v1/servers?status=nope")
    for answer in (fast, built):
        answer[1]["error"].pop("request_id")
    assert fast == built
    assert fast[0] == 400


def test_the_views_compile_their_lists():
    assert hasattr(ServerViewSet, "list_base") and hasattr(BotViewSet, "list_base")


@pytest.fixture
def invoices_and_tickets(account, owner):
    from tests.factories import DepartmentFactory, InvoiceFactory, TicketFactory

    department = DepartmentFactory()
    for n in range(7):
        InvoiceFactory(account=account, finalize=n % 2 == 0)
        TicketFactory(
            account=account,
            department=department,
            subject=f"Question {n}",
            priority=["low", "normal", "high"][n % 3],
        )
    InvoiceFactory()  # another account's
    TicketFactory(department=department)


@pytest.mark.parametrize(
    "url",
    [
        "/v1/invoices",
        "/v1/invoices?per_page=3&page=2",
        "/v1/invoices?status=open",
        "/v1/invoices?status=draft,open&ordering=total",
        "/v1/invoices?ordering=-due_date&per_page=2",
        "/v1/invoices?currency=eur",
        "/v1/tickets",
        "/v1/tickets?priority=high,low&per_page=2&page=2",
        "/v1/tickets?status=open",
        "/v1/tickets?search=Question",
    ],
)
def test_invoices_and_tickets_answer_what_the_orm_built_lists_answer(
    owner_api, invoices_and_tickets, url
):
    fast = _answer(owner_api, url)
    kept = _lists_kept()
    if "search" in url:
        assert not kept  # a filter with a method of its own: built by the ORM
    else:
        assert kept and None not in kept
    with mock.patch.multiple(
        "hosting.api.views.AccountListMixin", list_query=lambda self: None, create=False
    ):
        built = _answer(owner_api, url)
    assert fast == built
    assert fast[0] == 200
    assert fast[1]["data"][url.split("?")[0].rsplit("/", 1)[1]]


@pytest.fixture
def events(account, owner, teammate):
    from events.models import Event

    now = timezone.now()
    for n in range(9):
        user = owner if n % 2 else teammate
        Event.objects.create(
            account=account,
            type=["server.updated", "api_key.created", "bot.updated"][n % 3],
            object_type=["server", "api_key", "bot"][n % 3],
            object_id=f"obj_{n % 4}",
            data={"object": {"id": f"obj_{n % 4}", "user": user.id}},
            created_at=now - timedelta(hours=n),
        )


@pytest.mark.parametrize(
    "query",
    ["", "per_page=2&page=2", "object_id=obj_1", "created_after={after}", "type=server.*"],
)
@pytest.mark.parametrize("who", ["owner", "teammate"])
def test_events_answer_what_the_orm_built_list_answers(
    account, owner, teammate, make_token, client_for, events, query, who
):
    from events.api.views import EventViewSet

    user = owner if who == "owner" else teammate
    scopes = ["webhooks:read", "api_keys:read", "servers:read", "bots:read"]
    api = client_for(make_token(user, account, scopes))
    after = (timezone.now() - timedelta(hours=4, minutes=30)).isoformat().replace("+00:00", "Z")
    url = f"/v1/events?{query.format(after=after)}"
    fast = _answer(api, url)
    kept = _lists_kept()
    assert (not kept) if "type=" in query else (kept and None not in kept)
    with mock.patch.object(EventViewSet, "list_query", lambda self: None):
        built = _answer(api, url)
    assert fast == built
    assert fast[0] == 200 and fast[1]["data"]["events"]
    if who == "teammate":  # a developer sees the api_key events of their own keys only
        shown = [e for e in fast[1]["data"]["events"] if e["type"].startswith("api_key.")]
        assert all(e["data"]["object"]["user"] == teammate.id for e in shown)


def test_an_invoices_lines_are_read_from_kept_sql_as_the_orm_prefetches_them(
    owner_api, account, django_assert_num_queries
):
    from billing.models import Invoice, InvoiceLine
    from tests.factories import InvoiceFactory

    invoices = [InvoiceFactory(account=account) for _ in range(4)]
    # One with no line at all, one with three (their order is the lines' own).
    InvoiceLine.objects.filter(invoice=invoices[0]).delete()
    for n in range(2):
        line = InvoiceLine.objects.filter(invoice=invoices[1]).first()
        line.pk, line.description = InvoiceLine._meta.pk.get_default(), f"Extra line {n}"
        line.position += n + 1
        line.save(force_insert=True)
    fast = _answer(owner_api, "/v1/invoices?per_page=4")
    kept = [key for key in compiled._cache if key[0] == "children"]
    assert kept == [key for key in kept if key[1] == InvoiceLine._meta.label and key[3] == 4]
    assert compiled._cache[kept[0]] is not None
    with mock.patch.multiple(
        "hosting.api.views.AccountListMixin", list_query=lambda self: None, create=False
    ):
        built = _answer(owner_api, "/v1/invoices?per_page=4")
    assert fast == built
    lines = {item["id"]: len(item["lines"]) for item in fast[1]["data"]["invoices"]}
    assert lines[invoices[0].id] == 0
    assert lines[invoices[1].id] == InvoiceLine.objects.filter(invoice=invoices[1]).count() > 2
    # The children know their parent, and the parent's related queryset its rows: no query.
    rows = compiled.compiled(
        ("probe",),
        lambda: compiled.compile_queryset(
            Invoice.objects.prefetch_related("lines").filter(account_id=compiled.Param("a")),
            paged=False,
        ),
    ).rows({"a": account.id}, using="default")
    with django_assert_num_queries(0):
        for invoice in rows:
            for line in invoice.lines.all():
                assert line.invoice is invoice
            assert invoice.lines.count() == len(invoice.lines.all())
    assert {invoice.id: len(invoice.lines.all()) for invoice in rows} == {
        invoice.id: invoice.lines.count() for invoice in Invoice.objects.filter(account=account)
    }


def test_records_hold_what_a_representation_reads_of_the_instances(
    account, django_assert_num_queries
):
    """A model list compiled as records: each row's fields by attribute name, ``pk``, its
    annotations and its lines (``all()``, ``count()``), each line holding its invoice; the
    same values the model instances hold, with no query once read."""
    from django.db.models import Value

    from billing.models import Invoice, InvoiceLine
    from tests.factories import InvoiceFactory

    invoices = [InvoiceFactory(account=account) for _ in range(3)]
    InvoiceLine.objects.filter(invoice=invoices[0]).delete()
    queryset = (
        Invoice.objects.prefetch_related("lines")
        .filter(account_id=compiled.Param("a"))
        .annotate(marker=Value(7))
        .order_by("created_at", "id")
    )
    records = compiled.compiled(
        ("records probe",), lambda: compiled.compile_queryset(queryset, paged=False, records=True)
    ).rows({"a": account.id}, using="default")
    instances = list(Invoice.objects.filter(account=account).order_by("created_at", "id"))
    fields = [field.attname for field in Invoice._meta.concrete_fields]
    line_fields = [field.attname for field in InvoiceLine._meta.concrete_fields]
    assert [type(record) for record in records] == [compiled.Record] * 3
    with django_assert_num_queries(0):
        for record, instance in zip(records, instances, strict=True):
            assert {name: getattr(record, name) for name in fields} == {
                name: getattr(instance, name) for name in fields
            }
            assert (record.pk, record.marker) == (instance.pk, 7)
            lines = record.lines.all()
            assert record.lines.count() == len(lines) == len(list(record.lines))
            for line in lines:
                assert line.invoice is record
    for record, instance in zip(records, instances, strict=True):
        expected = list(instance.lines.all())
        assert [
            {name: getattr(line, name) for name in line_fields} for line in record.lines.all()
        ] == [{name: getattr(line, name) for name in line_fields} for line in expected]
    assert records[0].lines.count() == 0 and records[1].lines.count() > 0


def test_a_list_with_select_related_stays_model_instances_when_records_are_asked():
    from billing.models import Invoice

    queryset = Invoice.objects.select_related("account").filter(account_id=compiled.Param("a"))
    assert not compiled.compile_queryset(queryset, paged=False, records=True).records
    queryset = Invoice.objects.prefetch_related("payments__invoice")
    assert not compiled.compile_queryset(queryset, paged=False, records=True).records


def test_the_invoices_tickets_and_bots_lists_keep_records(owner_api, account, invoices_and_tickets):
    BotFactory(account=account, source_type="upload", source_archive="bots/acc/code.zip")
    for path in ("/v1/invoices", "/v1/tickets", "/v1/bots"):
        compiled.cache_clear()
        assert owner_api.get(path).status_code == 200
        kept = [query for query in _lists_kept() if query.model is not None]
        assert kept and all(query.records for query in kept), path


SERVERS_TABLES = ("servers_server", "servers_instancecount")


# A page past the end has no row to carry the total: it reads the total on its own.
@pytest.mark.parametrize(
    ("url", "tables", "statements"),
    [
        ("/v1/servers?per_page=4", SERVERS_TABLES, 1),
        ("/v1/servers?status=running&per_page=4", SERVERS_TABLES, 1),
        ("/v1/servers?game=minecraft-java", SERVERS_TABLES, 1),
        ("/v1/servers?per_page=4&page=2", SERVERS_TABLES, 1),
        ("/v1/servers?per_page=4&page=99", SERVERS_TABLES, 2),
        ("/v1/invoices?per_page=2", ("billing_invoice",), 1),
        ("/v1/tickets?per_page=2&page=50", ("support_ticket",), 2),
    ],
)
def test_a_page_and_its_total_are_read_in_one_statement(
    owner_api, servers, invoices_and_tickets, url, tables, statements
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    owner_api.get(url)  # the shape compiled
    with CaptureQueriesContext(connection) as captured:
        fast = _answer(owner_api, url)
    touching = [
        query["sql"]
        for query in captured.captured_queries
        if any(
            f'FROM "{table}"' in query["sql"] or f"FROM {table} " in query["sql"]
            for table in tables
        )
    ]
    assert len(touching) == statements, touching
    with (
        _orm_only(),
        mock.patch.multiple(
            "hosting.api.views.AccountListMixin", list_query=lambda self: None, create=False
        ),
    ):
        built = _answer(owner_api, url)
    assert fast == built
    pagination = fast[1]["data"]["pagination"]
    assert pagination["total"] > 0


def test_an_empty_list_answers_a_total_of_zero(owner_api):
    for url in ("/v1/servers", "/v1/servers?status=running", "/v1/invoices", "/v1/bots"):
        answer = owner_api.get(url)
        assert answer.status_code == 200
        data = answer.json()["data"]
        assert data["pagination"] == {"page": 1, "per_page": 25, "total": 0, "total_pages": 1}
        assert data[url.split("?")[0].rsplit("/", 1)[1]] == []
    assert any("hms_total" in query.sql for query in compiled._cache.values() if query)

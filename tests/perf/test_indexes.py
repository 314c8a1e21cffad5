"""Every documented filter and ordering of GET /v1/servers is served by an index (PostgreSQL)."""

import datetime

import pytest
from django.db import connection
from django.http import QueryDict
from django.utils import timezone

from hosting.api.pagination import DEEP_OFFSET, page_of
from servers.filters import ServerFilter
from servers.selectors import servers_of_account
from tests.factories import ServerFactory

QUERIES = [
    "",
    "status=running",
    "status=running,stopped",
    "game=minecraft-java",
    "search=smp",
    "created_after=2026-01-01T00:00:00Z",
    "created_before=2026-01-01T00:00:00Z",
    "ordering=name",
    "ordering=-name",
    "ordering=status",
    "ordering=created_at",
    "status=running&game=rust&ordering=-created_at",
]


def filtered_list(account, query: str):
    return ServerFilter(QueryDict(query), queryset=servers_of_account(account_id=account.pk)).qs


def plan_of(queryset) -> str:
    with connection.cursor() as cursor:
        # With sequential scans priced out, any that remains means no index fits the query.
        cursor.execute("SET LOCAL enable_seqscan = off")
        sql, params = queryset.query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize("query", QUERIES)
def test_a_filtered_list_never_scans_the_servers_table(account, other_account, query):
    if connection.vendor != "postgresql":
        pytest.skip("EXPLAIN plans are PostgreSQL's")
    ServerFactory.create_batch(30, account=account)
    ServerFactory.create_batch(30, account=other_account)
    plan = plan_of(filtered_list(account, query)[:25])
    assert "Seq Scan on servers_server" not in plan, plan


@pytest.mark.parametrize("query", ["", "status=running", "ordering=name"])
def test_a_deep_page_reads_its_keys_from_an_index(account, query):
    if connection.vendor != "postgresql":
        pytest.skip("EXPLAIN plans are PostgreSQL's")
    ServerFactory.create_batch(30, account=account)
    plan = plan_of(page_of(filtered_list(account, query), DEEP_OFFSET + 25, 25))
    assert "Seq Scan on servers_server" not in plan, plan
    # The keys come from one of the list indexes (servers/models.py), never from a sort of
    # every row of the account.
    assert "Scan using server_account_" in plan, plan


def test_a_deep_page_started_at_its_month_reads_an_index(account):
    if connection.vendor != "postgresql":
        pytest.skip("EXPLAIN plans are PostgreSQL's")
    now = timezone.now()
    for days in range(0, 120, 4):
        ServerFactory(account=account, created_at=now - datetime.timedelta(days=days))
    before = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    page = page_of(filtered_list(account, "").filter(created_at__lt=before), 10, 25)

    plan = plan_of(page)

    assert "Seq Scan on servers_server" not in plan, plan

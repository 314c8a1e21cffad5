"""Maintained server and bot counts (servers/counts.py) and the list totals built on them."""

import datetime
import threading
from collections import Counter

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from accounts.actors import Actor
from hosting.api import pagination
from servers.counts import (
    instance_counts_compact,
    instance_counts_rebuild,
    live_instance_count,
    live_instance_months,
    month_boundary,
)
from servers.models import Bot, InstanceCount, Server, ServerStatus
from servers.services import bot_create
from tests.conftest import auth_queries
from tests.factories import ServerFactory
from tests.servers.helpers import MINECRAFT, run_worker

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GabcDE.abcdefghijklmnopqrstuvwxyz0123456789AB"


def true_counts(model, account_id) -> Counter:
    return Counter(
        model.objects.filter(account_id=account_id, deleted_at=None).values_list(
            "status", flat=True
        )
    )


def kept_counts(kind, account_id) -> Counter:
    return Counter(
        {
            status: live_instance_count(account_id=account_id, kind=kind, statuses=[status])
            for status in ServerStatus.values
            if live_instance_count(account_id=account_id, kind=kind, statuses=[status])
        }
    )


def assert_counts_match(account_id):
    assert kept_counts("server", account_id) == true_counts(Server, account_id)
    assert (
        live_instance_count(account_id=account_id, kind="server")
        == Server.objects.filter(account_id=account_id, deleted_at=None).count()
    )


def test_every_kind_of_change_is_counted(account, other_account):
    servers = ServerFactory.create_batch(6, account=account)
    ServerFactory.create_batch(2, account=other_account, status=ServerStatus.STOPPED)
    assert_counts_match(account.pk)

    servers[0].status = ServerStatus.STOPPED
    servers[0].save()
    servers[1].name = "renamed only"  # a save that changes nothing counted
    servers[1].save()
    Server.objects.filter(pk=servers[2].pk).update(status=ServerStatus.SUSPENDED)
    Server.objects.filter(pk=servers[3].pk).update(deleted_at=timezone.now())  # soft delete
    servers[4].delete()  # gone for good
    Server.objects.filter(pk=servers[5].pk).update(account=other_account)  # moved by staff

    assert_counts_match(account.pk)
    assert_counts_match(other_account.pk)
    assert live_instance_count(account_id=account.pk, kind="server") == 3
    assert live_instance_count(account_id=other_account.pk, kind="server") == 3


def test_a_server_deleted_twice_or_revived_is_counted_once(account):
    server = ServerFactory(account=account)
    Server.objects.filter(pk=server.pk).update(deleted_at=timezone.now())
    Server.objects.filter(pk=server.pk).update(deleted_at=timezone.now(), status="deleting")
    assert live_instance_count(account_id=account.pk, kind="server") == 0

    Server.objects.filter(pk=server.pk).update(deleted_at=None, status="stopped")  # by staff
    assert kept_counts("server", account.pk) == Counter({"stopped": 1})


def test_bots_are_counted_apart_from_servers(owner, account):
    ServerFactory.create_batch(2, account=account)
    bot = bot_create(
        account=account,
        name="Moderator",
        region="eu-west",
        runtime="node-22",
        start_command="node index.js",
        token=TOKEN,
        actor=Actor(user=owner),
    )

    assert live_instance_count(account_id=account.pk, kind="bot") == 1
    assert live_instance_count(account_id=account.pk, kind="server") == 2
    Bot.objects.filter(pk=bot.pk).update(deleted_at=timezone.now())
    assert live_instance_count(account_id=account.pk, kind="bot") == 0


def test_compaction_folds_the_rows_and_keeps_every_total(account, other_account):
    servers = ServerFactory.create_batch(5, account=account)
    ServerFactory.create_batch(3, account=other_account)
    for server in servers[:3]:
        Server.objects.filter(pk=server.pk).update(status=ServerStatus.STOPPED)
    Server.objects.filter(pk=servers[4].pk).update(deleted_at=timezone.now())
    rows_before = InstanceCount.objects.count()

    removed = instance_counts_compact()

    assert removed > 0
    assert InstanceCount.objects.count() == rows_before - removed
    # One row per (account, kind, status) is left, none of them zero.
    assert InstanceCount.objects.count() == 3  # running, stopped; the other account's running
    assert not InstanceCount.objects.filter(delta=0).exists()
    assert_counts_match(account.pk)
    assert_counts_match(other_account.pk)
    assert instance_counts_compact() == 0  # nothing left to fold


def test_housekeeping_folds_the_rows(account):
    server = ServerFactory(account=account)
    Server.objects.filter(pk=server.pk).update(status=ServerStatus.STOPPED)

    call_command("housekeeping", stdout=open("/dev/null", "w"))  # noqa: SIM115

    assert InstanceCount.objects.count() == 1
    assert_counts_match(account.pk)


def test_a_rebuild_recounts_from_the_tables(account):
    ServerFactory.create_batch(4, account=account)
    InstanceCount.objects.all().delete()  # as after a bulk load with the triggers off

    instance_counts_rebuild()

    assert_counts_match(account.pk)


def test_the_triggers_are_installed_by_migrate(db):
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        names = {row[0] for row in cursor.fetchall()}
    assert {"servers_server", "servers_bot"} <= {name.rsplit("_count", 1)[0] for name in names}


def test_totals_follow_a_server_through_its_lifecycle(owner_api):
    """Through the API and the real worker: created, installed, started, deleted."""

    def totals():
        return {
            query: owner_api.get(f"/v1/servers?{query}").json()["data"]["pagination"]["total"]
            for query in ("", "status=provisioning", "status=stopped", "status=running")
        }

    created = owner_api.post("/v1/servers", MINECRAFT, format="json")
    server_id = created.json()["data"]["server"]["id"]
    assert totals() == {"": 1, "status=provisioning": 1, "status=stopped": 0, "status=running": 0}

    run_worker()
    assert totals() == {"": 1, "status=provisioning": 0, "status=stopped": 1, "status=running": 0}

    owner_api.post(f"/v1/servers/{server_id}/actions", {"type": "start"}, format="json")
    run_worker()
    assert totals() == {"": 1, "status=provisioning": 0, "status=stopped": 0, "status=running": 1}

    owner_api.delete(f"/v1/servers/{server_id}")
    run_worker()
    assert totals() == {"": 0, "status=provisioning": 0, "status=stopped": 0, "status=running": 0}
    assert Server.objects.filter(pk=server_id).exists()  # kept for staff, no longer counted


# --- The list totals ---------------------------------------------------------------------


@pytest.fixture
def fleet(account, other_account):
    ServerFactory.create_batch(4, account=account, status=ServerStatus.RUNNING)
    ServerFactory.create_batch(3, account=account, status=ServerStatus.STOPPED, game_id="rust")
    ServerFactory.create_batch(5, account=other_account)
    deleted = ServerFactory(account=account)
    Server.objects.filter(pk=deleted.pk).update(deleted_at=timezone.now())


@pytest.mark.parametrize(
    ("query", "total"),
    [
        ("", 7),
        ("status=running", 4),
        ("status=running,stopped", 7),
        ("status=suspended", 0),
        ("game=rust", 3),  # counted from the rows
        ("status=running&game=rust", 0),
        ("search=Server", 7),
        ("ordering=name", 7),
    ],
)
def test_totals_are_exact_for_every_filter(owner_api, fleet, query, total):
    data = owner_api.get(f"/v1/servers?{query}").json()["data"]

    assert data["pagination"]["total"] == total
    assert len(data["servers"]) == total


def test_the_teammate_sees_the_same_total_and_the_outsider_only_their_own(
    owner_api, teammate_api, outsider_api, fleet
):
    for api, total in ((owner_api, 7), (teammate_api, 7), (outsider_api, 5)):
        assert api.get("/v1/servers").json()["data"]["pagination"]["total"] == total


def test_the_maintained_total_is_not_used_for_other_lists_of_the_view(owner_api, account):
    server = ServerFactory(account=account)

    data = owner_api.get(f"/v1/servers/{server.pk}/actions").json()["data"]

    assert data["pagination"]["total"] == 0


# --- Deep pages ----------------------------------------------------------------------------


def spread_over_months(account, count: int, status=ServerStatus.RUNNING):
    """Servers created over the last few months, several in the same second at month edges."""
    now = timezone.now().replace(microsecond=0)
    servers = []
    for number in range(count):
        created = now - datetime.timedelta(days=9 * (number // 3), hours=number % 3)
        if number % 7 == 0:  # exactly on the first of a month, where the boundary lies
            created = created.replace(day=1, hour=0, minute=0, second=0)
        servers.append(ServerFactory(account=account, status=status, created_at=created))
    return servers


@pytest.mark.parametrize(
    "query",
    [
        "",
        "ordering=-created_at",
        "status=stopped",
        "status=running,stopped",
        "ordering=name",  # not newest first: keys first, no month seek
        "ordering=created_at",
        "game=rust",  # counted from rows
    ],
)
def test_deep_pages_hold_the_same_rows_as_plain_offsets(owner_api, account, monkeypatch, query):
    spread_over_months(account, 23, status=ServerStatus.STOPPED)
    spread_over_months(account, 14)
    ServerFactory.create_batch(3, account=account, game_id="rust")

    def walk():
        pages = [
            owner_api.get(f"/v1/servers?per_page=4&{query}&page={page}").json()["data"]
            for page in range(1, 13)
        ]
        return [s["id"] for data in pages for s in data["servers"]], [
            data["pagination"] for data in pages
        ]

    plain, plain_pagination = walk()
    monkeypatch.setattr(pagination, "DEEP_OFFSET", 4)  # every page after the first is "deep"
    deep, deep_pagination = walk()

    assert deep == plain
    assert deep_pagination == plain_pagination
    assert len(deep) == len(set(deep)) == plain_pagination[0]["total"] > 0


def test_a_deep_page_starts_at_its_month(
    owner_api, account, monkeypatch, django_assert_num_queries
):
    spread_over_months(account, 30)
    monkeypatch.setattr(pagination, "DEEP_OFFSET", 4)
    owner_api.get("/v1/servers")  # the key's first use is written once; steady state after

    with django_assert_num_queries(2 + auth_queries()):  # the month counts, then the page
        data = owner_api.get("/v1/servers?per_page=4&page=6").json()["data"]

    expected = list(Server.objects.filter(account=account).order_by("-created_at", "-id")[20:24])
    assert [s["id"] for s in data["servers"]] == [server.pk for server in expected]
    assert data["pagination"]["total"] == 30


def test_counts_follow_a_changed_creation_time(account):
    server = ServerFactory(account=account)
    Server.objects.filter(pk=server.pk).update(
        created_at=server.created_at - datetime.timedelta(days=100)
    )

    months = live_instance_months(account_id=account.pk, kind="server")
    assert months == [((server.created_at - datetime.timedelta(days=100)).date().replace(day=1), 1)]


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (0, (datetime.date(2026, 12, 1), 0)),
        (2, (datetime.date(2026, 12, 1), 2)),
        (3, (datetime.date(2026, 10, 1), 0)),
        (6, (datetime.date(2026, 10, 1), 3)),
        (7, (datetime.date(2026, 1, 1), 0)),  # across a year
        (8, None),
    ],
)
def test_month_boundary(offset, expected):
    months = [
        (datetime.date(2026, 11, 1), 3),
        (datetime.date(2026, 9, 1), 4),
        (datetime.date(2025, 12, 1), 1),
    ]
    found = month_boundary(months, offset)
    if expected is None:
        assert found is None
    else:
        before, skip = found
        assert (before.date(), skip) == expected
        assert before.tzinfo is datetime.UTC and before.time() == datetime.time()


def test_the_recount_command_repairs_counts_written_around_the_triggers(account):
    ServerFactory.create_batch(3, account=account)
    InstanceCount.objects.filter(account_id=account.pk).delete()
    assert live_instance_count(account_id=account.pk, kind="server") == 0

    call_command("recount_instances", stdout=open("/dev/null", "w"))  # noqa: SIM115

    assert_counts_match(account.pk)


# --- Concurrency (PostgreSQL: real concurrent writers) -------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_counts_stay_exact_under_concurrent_changes_and_compaction(account):
    """Writers flipping statuses (each change its own transaction) and compaction running
    beside them: no deadlock, no lost or doubled change."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serializes every writer")
    servers = ServerFactory.create_batch(6, account=account, status=ServerStatus.STOPPED)
    failures: list[BaseException] = []
    barrier = threading.Barrier(3)

    def flip(mine) -> None:
        try:
            barrier.wait(timeout=10)
            for round_number in range(40):
                for server in mine:
                    status = ServerStatus.RUNNING if round_number % 2 == 0 else "stopped"
                    with transaction.atomic():
                        Server.objects.filter(pk=server.pk).update(status=status)
        except BaseException as failure:
            failures.append(failure)
        finally:
            connection.close()

    def compact() -> None:
        try:
            barrier.wait(timeout=10)
            for _ in range(40):
                instance_counts_compact()
        except BaseException as failure:
            failures.append(failure)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=flip, args=(servers[:3],)),
        threading.Thread(target=flip, args=(servers[3:],)),
        threading.Thread(target=compact),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not failures, failures
    assert_counts_match(account.pk)
    instance_counts_compact()
    assert_counts_match(account.pk)
    assert InstanceCount.objects.filter(account_id=account.pk).count() == 1  # all "stopped"

"""Several ports per server (issue 32): a server's primary allocation and the additional ones its
plan allows, through the API; the game's named ports taken at create and given to the scripts by
name; what the agent is told."""

import importlib

import pytest

from accounts.actors import SYSTEM
from events.models import Event
from servers.drivers.spec import instance_spec
from servers.game_checks import template_problems
from servers.models import Allocation, Game, Server
from servers.services import server_create
from servers.services.nodes import instance_release
from tests.envelopes import error_of
from tests.servers.test_nodes import create_server, new_node

pytestmark = pytest.mark.django_db


@pytest.fixture
def placed(account):
    """A server placed on a node of 6 ports, its plan allowing 3 allocations."""
    new_node(ports="25565-25570")
    server = create_server(account)
    server.plan = {"allocation_limit": 3}
    server.save(update_fields=["plan"])
    return server


def allocations(api, server):
    answer = api.get(f"/v1/servers/{server.pk}/allocations")
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]["allocations"]


def add(api, server, body=None):
    return api.post(f"/v1/servers/{server.pk}/allocations", body or {}, format="json")


def test_a_new_server_holds_its_primary_allocation(owner_api, placed):
    [primary] = allocations(owner_api, placed)
    stored = Allocation.objects.get(server=placed)
    assert primary == {
        "id": stored.public_id,
        "server_id": placed.id,
        "ip": "127.0.0.1",
        "port": 25565,
        "address": "127.0.0.1:25565",
        "is_primary": True,
        "name": "game",
        "note": "",
        "assigned_at": primary["assigned_at"],
    }
    assert primary["id"].startswith("alloc_") and primary["assigned_at"].endswith("Z")
    assert placed.address == "127.0.0.1:25565"


def test_the_owner_adds_allocations_up_to_the_plans_limit(owner_api, placed):
    answer = add(owner_api, placed, {"port": 25569, "note": "Voice"})
    assert answer.status_code == 201, answer.content
    added = answer.json()["data"]["allocation"]
    assert (added["port"], added["note"], added["is_primary"]) == (25569, "Voice", False)
    assert answer["Location"].endswith(f"/v1/servers/{placed.pk}/allocations/{added['id']}")
    lowest = add(owner_api, placed).json()["data"]["allocation"]
    assert lowest["port"] == 25566
    error = error_of(add(owner_api, placed), 409, "allocation_limit_reached")
    assert error["details"] == {"limit": 3}
    assert [row["port"] for row in allocations(owner_api, placed)] == [25565, 25569, 25566]
    assert Allocation.objects.filter(server=placed).count() == 3
    event = Event.objects.filter(type="server.allocation_added").order_by("created_at").first()
    assert event.data["object"]["port"] == 25569 and event.related_id == placed.id


def test_a_port_that_is_not_free_is_refused(owner_api, account, placed):
    other = create_server(account, name="Other")
    taken = Allocation.objects.get(server=other).port
    error = error_of(add(owner_api, placed, {"port": taken}), 409, "port_unavailable")
    assert error["details"] == {"port": taken}
    error_of(add(owner_api, placed, {"port": 30000}), 409, "port_unavailable")
    assert Allocation.objects.filter(server=placed).count() == 1


def test_a_plan_without_allocations_gives_the_primary_only(owner_api, placed):
    placed.plan = {}
    placed.save(update_fields=["plan"])
    error = error_of(add(owner_api, placed), 409, "allocation_limit_reached")
    assert error["details"] == {"limit": 1}


def test_another_allocation_becomes_primary_and_the_address_follows(owner_api, placed):
    extra = add(owner_api, placed, {"port": 25568}).json()["data"]["allocation"]
    path = f"/v1/servers/{placed.pk}/allocations/{extra['id']}"
    answer = owner_api.patch(path, {"is_primary": True}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["allocation"]["is_primary"] is True
    placed.refresh_from_db()
    assert placed.address == "127.0.0.1:25568"
    rows = allocations(owner_api, placed)
    assert [(row["port"], row["is_primary"]) for row in rows] == [(25568, True), (25565, False)]
    event = Event.objects.get(type="server.allocation_updated")
    assert event.data["previous_attributes"] == {"is_primary": False}
    refused = owner_api.patch(path, {"is_primary": False}, format="json")
    error_of(refused, 409, "primary_allocation")
    former = next(row for row in rows if not row["is_primary"])
    former_path = f"/v1/servers/{placed.pk}/allocations/{former['id']}"
    unchanged = owner_api.patch(former_path, {"is_primary": False}, format="json")
    assert unchanged.status_code == 200, unchanged.content  # what it is already: nothing changes
    assert Event.objects.filter(type="server.allocation_updated").count() == 1


def test_a_note_is_changed_and_the_primary_is_never_removed(owner_api, placed):
    [primary] = allocations(owner_api, placed)
    path = f"/v1/servers/{placed.pk}/allocations/{primary['id']}"
    answer = owner_api.patch(path, {"note": "  Game port "}, format="json")
    assert answer.json()["data"]["allocation"]["note"] == "Game port"
    error_of(owner_api.delete(path), 409, "primary_allocation")
    extra = add(owner_api, placed).json()["data"]["allocation"]
    gone = owner_api.delete(f"/v1/servers/{placed.pk}/allocations/{extra['id']}")
    assert gone.json()["data"] == {"id": extra["id"], "deleted": True}
    freed = Allocation.objects.get(public_id=extra["id"])
    assert (freed.server_id, freed.note, freed.is_primary) == (None, "", False)
    assert Event.objects.filter(type="server.allocation_removed").count() == 1


def test_an_outsider_gets_404_and_another_servers_allocation_is_not_found(
    owner_api, outsider_api, account, placed
):
    error_of(outsider_api.get(f"/v1/servers/{placed.pk}/allocations"), 404, "not_found")
    error_of(add(outsider_api, placed), 404, "not_found")
    other = create_server(account, name="Other")
    foreign = Allocation.objects.get(server=other).public_id
    path = f"/v1/servers/{placed.pk}/allocations/{foreign}"
    error_of(owner_api.patch(path, {"note": "x"}, format="json"), 404, "not_found")
    error_of(owner_api.delete(path), 404, "not_found")


def test_a_key_without_servers_write_cannot_change_them(
    owner, account, make_token, client_for, placed
):
    reader = client_for(make_token(owner, account, ["servers:read"]))
    assert len(allocations(reader, placed)) == 1
    error_of(add(reader, placed), 403, "insufficient_scope")


def test_a_deleted_servers_allocations_all_go_back_to_the_pool(owner_api, placed):
    add(owner_api, placed)
    instance_release(placed)
    assert not Allocation.objects.filter(server=placed).exists()
    assert not Allocation.objects.filter(is_primary=True, server=None).exists()


@pytest.fixture
def query_game(db):
    game = Game.objects.get(slug="minecraft-java")
    game.template = game.template | {
        "ports": [
            {"name": "query", "protocol": "udp", "description": "Server list query"},
            {"name": "rcon", "protocol": "tcp", "description": "Remote console"},
        ]
    }
    game.save(update_fields=["template"])
    return game


def test_a_games_named_ports_are_taken_at_create_and_reach_the_agent(account, query_game):
    new_node(ports="25565-25570")
    server = create_server(account)
    held = list(Allocation.objects.filter(server=server).order_by("port"))
    assert [(item.port, item.is_primary) for item in held] == [
        (25565, True),
        (25566, False),
        (25567, False),
    ]
    spec = instance_spec(server)
    assert spec["allocation"] == {"ip": "127.0.0.1", "port": 25565}
    assert spec["allocations"] == [
        {"ip": "127.0.0.1", "port": 25565, "name": "game", "protocol": "both"},
        {"ip": "127.0.0.1", "port": 25566, "name": "query", "protocol": "udp"},
        {"ip": "127.0.0.1", "port": 25567, "name": "rcon", "protocol": "tcp"},
    ]
    assert spec["variables"]["PORT_QUERY"] == "25566"
    assert spec["variables"]["PORT_RCON"] == "25567"


def test_a_server_whose_game_needs_more_ports_than_any_node_has_free_is_refused(
    account, query_game
):
    new_node(ports="25565-25566")
    with pytest.raises(Exception) as refused:
        server_create(
            account=account,
            name="SMP",
            game="minecraft-java",
            region="eu-central",
            variables={"EULA": True},
            resources={"memory_mb": 2048, "disk_mb": 10240},
            actor=SYSTEM,
        )
    assert getattr(refused.value, "code", None) == "no_capacity"
    assert not Server.objects.filter(name="SMP").exists()
    assert not Allocation.objects.exclude(server=None).exists()


@pytest.mark.parametrize(
    "ports,problem",
    [
        ([{"name": "query", "protocol": "udp", "description": "Query"}], None),
        ([{"name": "Query"}], "ports[0].name is lowercase"),
        ([{"name": "game"}], "ports[0].name is lowercase"),
        ([{"name": "rcon", "protocol": "sctp"}], "ports[0].protocol is one of tcp, udp, both."),
        ([{"name": "rcon"}, {"name": "rcon"}], "ports names each port once."),
        ([{"name": "rcon", "port": 1}], "ports[0] is an object of"),
        ("query", "ports is a list of at most 10 named ports."),
    ],
)
def test_a_templates_named_ports_are_checked_before_it_is_saved(ports, problem):
    template = {"start_command": "run --query {{PORT_QUERY}}", "ports": ports}
    problems = template_problems(template, set())
    if problem is None:
        assert problems == []
    else:
        assert any(line.startswith(problem) for line in problems), problems


def test_the_admin_shows_a_servers_allocations(staff_client, owner_api, placed):
    add(owner_api, placed, {"port": 25569, "note": "Voice chat"})
    page = staff_client.get(f"/admin/servers/server/{placed.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "allocations (ports)" in text.lower()
    assert "25565" in text and "25569" in text and "Voice chat" in text


def test_the_migration_makes_each_servers_one_allocation_its_primary(account):
    """Migration 0021's data step on rows as they stood before it: a server held one allocation,
    which becomes its primary; a free one stays free and not primary."""
    from django.apps import apps

    migration = importlib.import_module("servers.migrations.0021_server_allocations")
    new_node(ports="25565-25566")
    server = create_server(account)
    Allocation.objects.filter(server=server).update(is_primary=False)
    migration.name_and_mark_primary(apps, None)
    held = Allocation.objects.get(server=server)
    free = Allocation.objects.get(server=None)
    assert (held.is_primary, free.is_primary) == (True, False)
    assert held.public_id.startswith("alloc_") and held.public_id != free.public_id

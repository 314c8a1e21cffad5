"""Named ports at an offset of the game port (``offset``): ports a game opens itself (Valheim's
query on + 1, Arma 3's + 1 to + 4). Placement takes only a primary whose port + offset is free
beside it and gives exactly those; the customer cannot move the primary away from them nor
remove them."""

import pytest

from accounts.actors import SYSTEM
from servers.drivers.spec import instance_spec
from servers.game_checks import template_problems
from servers.models import Allocation, Game, Server
from servers.services import server_create
from servers.services.nodes import node_allocations_add
from tests.envelopes import error_of
from tests.servers.test_nodes import create_server, new_node

pytestmark = pytest.mark.django_db

QUERY = {"name": "query", "protocol": "udp", "description": "Steam queries", "offset": 1}
RCON = {"name": "rcon", "protocol": "tcp", "description": "Remote console"}


def with_ports(*ports):
    game = Game.objects.get(slug="minecraft-java")
    game.template = game.template | {"ports": list(ports)}
    game.save(update_fields=["template"])
    return game


def held(server):
    """``{name: port}`` as the agent is told them."""
    return {item["name"]: item["port"] for item in instance_spec(server)["allocations"]}


@pytest.mark.parametrize(
    "ports,problem",
    [
        ([QUERY, RCON], None),
        ([QUERY | {"offset": 100}], None),
        ([QUERY | {"offset": 0}], "ports[0].offset is a whole number of 1 to 100"),
        ([QUERY | {"offset": 101}], "ports[0].offset is a whole number of 1 to 100"),
        ([QUERY | {"offset": "1"}], "ports[0].offset is a whole number of 1 to 100"),
        ([QUERY | {"offset": True}], "ports[0].offset is a whole number of 1 to 100"),
        ([QUERY | {"offset": 1.0}], "ports[0].offset is a whole number of 1 to 100"),
        ([QUERY, RCON | {"offset": 1}], "ports gives each offset to one port."),
    ],
)
def test_an_offset_is_a_whole_number_of_1_to_100_given_once(ports, problem):
    template = {"start_command": "run", "ports": ports}
    problems = template_problems(template, set())
    if problem is None:
        assert problems == []
    else:
        assert any(line.startswith(problem) for line in problems), problems


def test_the_offset_port_is_the_primarys_port_plus_offset(account):
    with_ports(QUERY, RCON)
    new_node(ports="25565-25570")
    server = create_server(account)
    assert held(server) == {"game": 25565, "query": 25566, "rcon": 25567}
    assert instance_spec(server)["variables"]["PORT_QUERY"] == "25566"


def test_a_primary_whose_port_plus_offset_is_taken_is_passed_over(account):
    node, _ = new_node(ports="30000")
    other = create_server(account, name="Other")
    node_allocations_add(node=node, ip="127.0.0.1", ports="25565-25570", actor=SYSTEM)
    Allocation.objects.filter(node=node, port=25566).update(server=other)
    with_ports(QUERY, RCON)
    server = create_server(account)
    # 25565 (the game's port) would give 25566, which is taken; 25567 is the lowest that fits.
    assert held(server) == {"game": 25567, "query": 25568, "rcon": 25569}


def test_several_offsets_all_free_and_the_told_port_after_them(account):
    steam = {"name": "steam", "protocol": "udp", "offset": 2}
    with_ports(QUERY, steam, RCON)
    new_node(ports="25565-25566,25568-25575")
    server = create_server(account)
    # 25565 and 25566 lack + 1 or + 2 (25567 is no allocation), 25568 has both.
    assert held(server) == {"game": 25568, "query": 25569, "steam": 25570, "rcon": 25571}


def test_a_node_without_an_adjacent_pair_is_skipped_for_one_with(account):
    with_ports(QUERY)
    new_node(name="fra-1", memory_mb=16384, ports="25565,25567,25569,25571")
    small, _ = new_node(name="fra-2", memory_mb=8192, ports="26000,26002-26003")
    server = create_server(account)
    assert server.node_id == small.id  # the roomier node has four free ports, none adjacent
    assert held(server) == {"game": 26002, "query": 26003}


def test_no_node_with_an_adjacent_pair_is_no_capacity_and_nothing_is_taken(account):
    with_ports(QUERY)
    new_node(ports="25565,25567,25569")
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


@pytest.fixture
def valheimish(account):
    """A server of a game with a query on + 1 and a told rcon port, placed on 25565, its plan
    allowing 5 allocations."""
    with_ports(QUERY, RCON)
    new_node(ports="25565-25575")
    server = create_server(account)
    server.plan = {"allocation_limit": 5}
    server.save(update_fields=["plan"])
    return server


def allocation_path(server, port):
    allocation = Allocation.objects.get(server=server, port=port)
    return f"/v1/servers/{server.pk}/allocations/{allocation.public_id}"


def add(api, server, port):
    answer = api.post(f"/v1/servers/{server.pk}/allocations", {"port": port}, format="json")
    assert answer.status_code == 201, answer.content


def test_the_primary_moves_only_where_the_server_holds_its_port_plus_offset(owner_api, valheimish):
    add(owner_api, valheimish, 25569)
    path = allocation_path(valheimish, 25569)
    refused = owner_api.patch(path, {"is_primary": True}, format="json")
    error = error_of(refused, 409, "derived_ports")
    assert error["details"] == {"ports": {"query": 25570}}
    valheimish.refresh_from_db()
    assert valheimish.address == "127.0.0.1:25565"
    assert held(valheimish) == {"game": 25565, "query": 25566, "rcon": 25567, "": 25569}
    add(owner_api, valheimish, 25570)
    moved = owner_api.patch(path, {"is_primary": True}, format="json")
    assert moved.status_code == 200, moved.content
    valheimish.refresh_from_db()
    assert valheimish.address == "127.0.0.1:25569"
    # The query follows the primary; the told rcon port keeps its allocation.
    spec = instance_spec(valheimish)
    assert [(item["name"], item["port"]) for item in spec["allocations"]] == [
        ("game", 25569),
        ("query", 25570),
        ("rcon", 25567),
        ("", 25566),
        ("", 25565),
    ]
    assert spec["variables"]["PORT_QUERY"] == "25570"
    listed = owner_api.get(f"/v1/servers/{valheimish.pk}/allocations").json()["data"]
    assert [(row["name"], row["port"]) for row in listed["allocations"]] == [
        ("game", 25569),
        ("query", 25570),
        ("rcon", 25567),
        ("", 25566),
        ("", 25565),
    ]


def test_the_primary_moves_onto_its_offset_port_when_the_next_one_is_held(owner_api, valheimish):
    # 25566 (the query) as primary needs 25567, which the server holds (as its rcon port).
    moved = owner_api.patch(allocation_path(valheimish, 25566), {"is_primary": True}, format="json")
    assert moved.status_code == 200, moved.content
    assert held(valheimish) == {"game": 25566, "query": 25567, "rcon": 25565}


def test_the_offset_ports_allocation_is_not_removed_the_told_ones_is(owner_api, valheimish):
    refused = owner_api.delete(allocation_path(valheimish, 25566))
    error = error_of(refused, 409, "derived_ports")
    assert error["details"] == {"ports": {"query": 25566}}
    assert Allocation.objects.get(port=25566).server_id == valheimish.pk
    gone = owner_api.delete(allocation_path(valheimish, 25567))
    assert gone.status_code == 200, gone.content
    assert held(valheimish) == {"game": 25565, "query": 25566}


def test_a_told_port_named_before_an_offset_port_is_not_removed_either(owner_api, account):
    """Names go to the additional allocations in order: removing the one before the offset port
    would give the offset port's name to another port."""
    with_ports(RCON, QUERY)
    new_node(ports="25565-25570")
    server = create_server(account)
    assert held(server) == {"game": 25565, "rcon": 25567, "query": 25566}
    error_of(owner_api.delete(allocation_path(server, 25567)), 409, "derived_ports")


def test_a_server_placed_before_its_port_had_an_offset_still_gives_back_others(owner_api, account):
    """Its query was not on + 1 before the offset was declared: removing an unrelated allocation
    breaks nothing that held, so it is not refused."""
    with_ports(RCON | {"name": "query"}, RCON)
    new_node(ports="25565-25570")
    server = create_server(account)
    server.plan = {"allocation_limit": 4}
    server.save(update_fields=["plan"])
    Allocation.objects.filter(server=server, port=25566).update(server=None, assigned_at=None)
    add(owner_api, server, 25569)  # now the query
    add(owner_api, server, 25570)
    with_ports(QUERY, RCON)
    assert held(server) == {"game": 25565, "query": 25567, "rcon": 25569, "": 25570}
    gone = owner_api.delete(allocation_path(server, 25570))
    assert gone.status_code == 200, gone.content

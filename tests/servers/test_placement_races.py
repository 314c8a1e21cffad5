"""Simultaneous creates on one node: never the same port, never more memory than it has.

Threads with their own database connections, on PostgreSQL, where the node row locks are real.
"""

import pytest
from django.db import connection

from accounts.roles import Role
from servers.models import Allocation, Game, Server
from tests.factories import AccountFactory, MembershipFactory
from tests.servers.test_concurrency import at_once
from tests.servers.test_nodes import new_node

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's row locks"),
]


def body(name: str, memory_mb: int = 1024) -> dict:
    return {
        "name": name,
        "game": "minecraft-java",
        "region": "eu-central",
        "variables": {"EULA": True},
        "resources": {"memory_mb": memory_mb},
    }


def test_two_creates_for_the_last_port_one_wins(make_token, client_for):
    new_node(ports="25565")
    clients = []
    for name in ("a", "b"):
        account = AccountFactory(name=name)
        user = MembershipFactory(account=account, role=Role.OWNER).user
        clients.append(client_for(make_token(user, account)))
    for _ in range(5):
        answers = at_once(
            *(lambda c=c: c.post("/v1/servers", body("x"), format="json") for c in clients)
        )
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [201, 409], [answer.content for answer in answers]
        Server.objects.all().delete()  # frees the allocation for the next round
        assert Allocation.objects.filter(server__isnull=False).count() == 0


def test_many_creates_never_overbook_memory(make_token, client_for):
    new_node(memory_mb=8192, ports="25565-25600")
    account = AccountFactory(name="big", max_memory_mb=10**6)
    user = MembershipFactory(account=account, role=Role.OWNER).user
    api = client_for(make_token(user, account))
    answers = at_once(
        *(lambda n=n: api.post("/v1/servers", body(f"s{n}", 2048), format="json") for n in range(6))
    )
    assert sorted(answer.status_code for answer in answers) == [201] * 4 + [409] * 2
    servers = Server.objects.all()
    assert sum(server.memory_mb for server in servers) == 8192
    assert len({server.address for server in servers}) == 4


def test_two_creates_for_the_one_pair_of_adjacent_ports_one_wins(make_token, client_for):
    """A game whose query is on its game port + 1: the node has four free ports but one pair
    side by side, so the second create finds none (not the first one's ports, not a pair that is
    not one)."""
    game = Game.objects.get(slug="minecraft-java")
    query = {"name": "query", "protocol": "udp", "offset": 1}
    game.template = game.template | {"ports": [query]}
    game.save(update_fields=["template"])
    new_node(ports="25565,25567-25568,25570")
    clients = []
    for name in ("a", "b"):
        account = AccountFactory(name=name)
        user = MembershipFactory(account=account, role=Role.OWNER).user
        clients.append(client_for(make_token(user, account)))
    for _ in range(5):
        answers = at_once(
            *(lambda c=c: c.post("/v1/servers", body("x"), format="json") for c in clients)
        )
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [201, 409], [answer.content for answer in answers]
        [server] = Server.objects.all()
        held = Allocation.objects.filter(server=server).order_by("port")
        assert [(item.port, item.is_primary) for item in held] == [(25567, True), (25568, False)]
        Server.objects.all().delete()  # frees the allocations for the next round
        assert Allocation.objects.filter(server__isnull=False).count() == 0

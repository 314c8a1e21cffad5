"""Issue 32 end to end: a real control plane (Django's live server, the real worker) with a real
agent on loopback.

- Players: a game whose template names a query (the test workload answering Minecraft's Server
  List Ping) is asked by the agent; its players reach the usage samples, the server page
  ("12 / 20 players") and the metrics API's players series.
- An imported egg (our runnable test egg, servers/eggs.py through the import service) is a game
  customers create servers of through the API: placed with an allocation for its named port,
  installed with bash in /mnt/server, its configuration files edited, running on both ports,
  stopped by ^C."""

import socket
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from accounts.actors import SYSTEM
from analytics.models import UsageLatest
from servers.models import Allocation, Game, Server
from servers.services.nodes import node_allocations_add
from tests.agent.aio import run
from tests.agent.harness import free_port
from tests.agent.loop import wait_for
from tests.agent.test_control_plane import act, console_session, create_server
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
if connection.vendor == "sqlite":  # pragma: no cover - documented skip
    pytestmark = [
        pytestmark,
        pytest.mark.skip(
            reason="the live server shares SQLite's in-memory test database with the test's "
            "thread; this loop runs on PostgreSQL"
        ),
    ]

EGG = Path(__file__).parent.parent / "servers" / "eggs" / "runnable_ptdl_v2.json"


def answer(address: str) -> str:
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        return sock.recv(64).decode()


def test_players_reach_the_samples_the_server_page_and_the_metrics(node_agent, owner, owner_api):
    from tests.dashboard import signed_in

    game = Game.objects.get(slug="test-workload")
    game.template = game.template | {
        "query": {"protocol": "minecraft", "port": "game"},
        "start_command": game.template["start_command"]
        + " --query minecraft --max-players 20 --motd 'Loop world'",
    }
    game.save(update_fields=["template"])
    server = create_server(owner_api)
    run_worker()
    server = act(owner_api, server, "start")
    assert server.status == "running", server.status_reason

    def latest(players: int):
        row = UsageLatest.objects.filter(instance_id=server.id).first()
        return row if row is not None and row.players == players else None

    row = wait_for(lambda: latest(0), what="a sample with the query's players")
    assert (row.max_players, row.motd, row.game_version) == (20, "Loop world", "1.21.4")

    console = owner_api.post(f"/v1/servers/{server.id}/console").json()["data"]["console"]
    run(console_session(console, "players 12", None))
    wait_for(lambda: latest(12), what="the 12 players in the samples")

    page = signed_in(owner).get(f"/servers/{server.id}").content.decode()
    assert "12 / 20 players" in page
    # A 10 s step over the last minutes: read from the raw samples, as they arrive.
    start = (timezone.now() - timedelta(minutes=3)).isoformat()

    def peak() -> float | None:
        metrics = owner_api.get(
            f"/v1/servers/{server.id}/metrics",
            {"metrics": "players", "start": start, "aggregate": "max", "step": 10},
        )
        assert metrics.status_code == 200, metrics.content
        series = metrics.json()["data"]["metrics"]["series"]
        players = next(item for item in series if item["metric"] == "players")
        values = [point[1] for point in players["points"] if point[1] is not None]
        return max(values) if values and max(values) == 12 else None

    wait_for(peak, what="12 players in the metrics' players series")


def test_an_imported_eggs_server_runs_through_the_whole_loop(node_agent, owner_api):
    from servers.services.games import game_import

    node, agent = node_agent
    # The loop's node has one port: the egg's named port (QUERY_PORT) needs a second.
    node_allocations_add(node=node, ip="127.0.0.1", ports=str(free_port()), actor=SYSTEM)
    game = game_import(content=EGG.read_bytes(), default_port=27960).game
    server = create_server(owner_api, game=game.slug, variables={"MOTD": "Loop eggs"})
    held = list(Allocation.objects.filter(server=server).order_by("port"))
    assert len(held) == 2
    run_worker()  # create and install
    server.refresh_from_db()
    assert server.status == "stopped", server.status_reason
    server = act(owner_api, server, "start")
    assert server.status == "running", server.status_reason
    assert answer(server.address) == "game Loop eggs"
    query = next(item for item in held if not item.is_primary)
    assert answer(f"{query.ip}:{query.port}") == "query 12"
    server = act(owner_api, server, "stop")
    assert server.status == "stopped"
    logs = agent.api().get(f"/api/servers/{server.id}/logs").json()["lines"]
    assert "Stopping on signal SIGINT" in logs
    assert Server.objects.get(pk=server.pk).game_id == game.slug

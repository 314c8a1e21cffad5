"""Game query through the real agent (agent/query.py): the test workload answers Minecraft's
Server List Ping, Valve's A2S_INFO and Minecraft Bedrock's RakNet ping, read by mcstatus and
python-a2s; the players, max players,
version and MOTD reach the usage samples; a server that stops answering while its process runs
is reported not responding (an event, ``responding: false`` in its samples), and again
responding once it answers."""

import pytest

from agent.query import NOT_RESPONDING_AFTER
from tests.agent.conftest import gameserver_spec

QUERY_FLAGS = " --query {protocol} --max-players 32 --motd 'Test world'"


def start(make_server, protocol: str):
    command = gameserver_spec("srv_any", 1)["template"]["start_command"]
    server = make_server(
        start_command=command + QUERY_FLAGS.format(protocol=protocol),
        query={"protocol": protocol, "port": "game"},
    )
    assert server.post("start").status_code == 200
    server.wait_for_status("running", timeout=20)
    return server


def answered(control_plane, server, **expected):
    def check():
        samples = control_plane.samples_of(server.id)
        return next(
            (s for s in reversed(samples) if all(s.get(k) == v for k, v in expected.items())),
            None,
        )

    return control_plane.wait_for(check, timeout=15)


@pytest.mark.parametrize("protocol", ["minecraft", "source", "bedrock"])
def test_players_version_and_motd_from_the_games_own_protocol(make_server, control_plane, protocol):
    server = start(make_server, protocol)
    sample = answered(control_plane, server, players=0, responding=True)
    assert sample["max_players"] == 32
    assert sample["game_version"] == "1.21.4"
    assert sample["motd"] == "Test world"
    server.command("players 12")
    answered(control_plane, server, players=12, max_players=32)


def test_a_server_that_stops_answering_is_not_responding_until_it_answers_again(
    make_server, control_plane
):
    server = start(make_server, "minecraft")
    answered(control_plane, server, responding=True)
    server.command("freeze")
    event = control_plane.wait_for(
        lambda: next(
            (e for e in control_plane.events_of(server.id) if e["type"] == "not_responding"),
            None,
        ),
        timeout=15,
    )
    assert f"{NOT_RESPONDING_AFTER} times in a row" in event["reason"]
    sample = answered(control_plane, server, responding=False)
    assert sample["players"] is None
    assert server.get()["status"] == "running"  # the process runs on: the agent only reports
    server.command("thaw")
    control_plane.wait_for(
        lambda: any(e["type"] == "responding" for e in control_plane.events_of(server.id)),
        timeout=15,
    )
    answered(control_plane, server, players=0, responding=True)


def test_a_server_without_a_query_reports_no_players(make_server, control_plane):
    server = make_server()
    assert server.post("start").status_code == 200
    server.wait_for_status("running", timeout=20)
    sample = control_plane.wait_for(lambda: control_plane.samples_of(server.id), timeout=15)[-1]
    assert "players" not in sample and "responding" not in sample

"""Game query on the control plane (issue 32): what a node's samples say of a game's players,
max players, version and MOTD is kept with its newest figures; a not-responding report records
its event and leaves the server running unless its policy says restart."""

from datetime import timedelta

import pytest

from analytics.models import UsageLatest, UsageSample
from events.models import Event
from servers.models import Action, Server
from tests.servers.test_nodes import MEASURED_AT, NOW, create_server, new_node, sample

pytestmark = pytest.mark.django_db


def post_samples(client_for, token, *samples):
    answer = client_for(token).post("/v1/agent/usage", {"samples": list(samples)}, format="json")
    assert answer.status_code == 202, answer.content
    return answer


def test_the_newest_sample_keeps_what_the_games_query_said(account, client_for):
    _, token = new_node()
    server = create_server(account)
    later = (MEASURED_AT + timedelta(seconds=15)).isoformat()
    post_samples(
        client_for,
        token,
        sample(server.id, players=3, max_players=20, game_version="1.21.3", motd="Old"),
        sample(
            server.id,
            at=later,
            players=12,
            max_players=20,
            game_version="1.21.4",
            motd="A Minecraft Server",
            responding=True,
        ),
    )
    latest = UsageLatest.objects.get(instance_id=server.id)
    assert (latest.players, latest.max_players, latest.game_version, latest.motd) == (
        12,
        20,
        "1.21.4",
        "A Minecraft Server",
    )
    assert latest.responding is True
    assert sorted(UsageSample.objects.values_list("players", flat=True)) == [3, 12]
    # Not responding: no players, the flag false.
    post_samples(
        client_for,
        token,
        sample(
            server.id,
            at=(MEASURED_AT + timedelta(seconds=30)).isoformat(),
            players=None,
            max_players=None,
            game_version=None,
            motd=None,
            responding=False,
        ),
    )
    latest.refresh_from_db()
    assert (latest.players, latest.max_players, latest.motd, latest.responding) == (
        None,
        None,
        "",
        False,
    )


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"max_players": -1}, "samples.0.max_players"),
        ({"motd": "x" * 201}, "samples.0.motd"),
        ({"game_version": 7}, "samples.0.game_version"),
        ({"responding": "yes"}, "samples.0.responding"),
    ],
)
def test_a_bad_query_field_refuses_the_batch(account, client_for, bad, field):
    _, token = new_node()
    server = create_server(account)
    answer = client_for(token).post(
        "/v1/agent/usage", {"samples": [sample(server.id, **bad)]}, format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["details"]["fields"][0]["name"] == field
    assert not UsageSample.objects.exists()


def report(client_for, token, server, type_):
    answer = client_for(token).post(
        "/v1/agent/events",
        {
            "events": [
                {
                    "instance_id": server.id,
                    "type": type_,
                    "at": NOW,
                    "reason": "The server has not answered its game query 3 times in a row.",
                }
            ]
        },
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"] == {"accepted": 1, "rejected": 0}


def test_not_responding_is_an_event_and_the_server_runs_on_by_default(account, client_for):
    _, token = new_node()
    server = create_server(account)
    Server.objects.filter(pk=server.pk).update(status="running")
    Action.objects.update(status="succeeded")
    report(client_for, token, server, "not_responding")
    server.refresh_from_db()
    assert server.status == "running"
    assert Event.objects.filter(type="server.not_responding", object_id=server.id).exists()
    assert not Action.objects.filter(server=server, status="pending").exists()
    report(client_for, token, server, "responding")
    assert Event.objects.filter(type="server.responding", object_id=server.id).exists()


def test_a_stopped_server_not_responding_is_ignored(account, client_for):
    _, token = new_node()
    server = create_server(account)
    Server.objects.filter(pk=server.pk).update(status="stopped")
    report(client_for, token, server, "not_responding")
    assert not Event.objects.filter(type="server.not_responding").exists()


def test_the_server_page_shows_players_version_motd_and_not_responding(account, owner, client_for):
    from tests.dashboard import signed_in

    _, token = new_node()
    server = create_server(account)
    post_samples(
        client_for,
        token,
        sample(
            server.id,
            players=12,
            max_players=20,
            game_version="1.21.4",
            motd="A Minecraft Server",
            responding=True,
        ),
    )
    page = signed_in(owner).get(f"/servers/{server.id}").content.decode()
    assert "12 / 20 players" in page
    assert "1.21.4" in page and "A Minecraft Server" in page
    assert "Not responding" not in page
    post_samples(
        client_for,
        token,
        sample(server.id, at=(MEASURED_AT + timedelta(seconds=15)).isoformat(), responding=False),
    )
    page = signed_in(owner).get(f"/servers/{server.id}").content.decode()
    assert "Not responding" in page and "players" not in page.split('data-usage="players"')[1][:80]


def test_a_game_without_a_query_shows_no_players_row(account, owner, client_for):
    from tests.dashboard import signed_in

    _, token = new_node()
    server = create_server(account)
    post_samples(client_for, token, sample(server.id))
    page = signed_in(owner).get(f"/servers/{server.id}").content.decode()
    assert 'data-usage="players"' not in page


def test_with_the_policy_on_a_server_not_responding_is_restarted(account, client_for, owner_api):
    _, token = new_node()
    server = create_server(account)
    Server.objects.filter(pk=server.pk).update(status="running")
    Action.objects.update(status="succeeded")
    answer = owner_api.patch(
        f"/v1/servers/{server.id}", {"restart_when_not_responding": True}, format="json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["server"]["restart_when_not_responding"] is True
    report(client_for, token, server, "not_responding")
    assert Event.objects.filter(type="server.not_responding", object_id=server.id).exists()
    restart = Action.objects.get(server=server, status="pending")
    assert (restart.type, restart.requested_by_user, restart.requested_by_key) == (
        "restart",
        None,
        None,
    )


def test_the_edit_form_sets_the_policy(account, owner):
    from tests.dashboard import signed_in

    new_node()
    server = create_server(account)
    Action.objects.update(status="succeeded")
    client = signed_in(owner)
    page = client.get(f"/servers/{server.id}/edit").content.decode()
    assert 'name="restart_when_not_responding"' in page
    detail = client.get(f"/servers/{server.id}").content.decode()
    assert "Shown, runs on" in detail  # Minecraft answers a query; the policy is off

"""``servers.services.games`` where the API's tests cannot reach by themselves: two creates of the
same slug at once (the second committed between the first's check and its insert)."""

import pytest

from events.models import Event
from servers.models import Game
from servers.services import games
from tests.envelopes import error_of

pytestmark = pytest.mark.django_db

TEMPLATE = {
    "install_script": "echo installed",
    "start_command": "exec sleep 3600",
    "ready_pattern": "ready",
    "stop_command": "",
    "stop_signal": "SIGTERM",
    "stop_timeout_seconds": 10,
    "ready_timeout_seconds": 60,
    "backup_commands": {"before": [], "after": []},
}


def test_a_create_that_loses_the_race_for_its_slug_is_409_not_a_500(staff_api, monkeypatch):
    checked = games._checked

    def other_create_commits_meanwhile(game: Game) -> None:
        # As another transaction's insert that committed after this one's check (here in the
        # same transaction, so it is rolled back with the refusal).
        checked(game)
        Game.objects.create(
            slug=game.slug, name="The other create", default_port=1, template=TEMPLATE
        )

    monkeypatch.setattr(games, "_checked", other_create_commits_meanwhile)
    body = {
        "slug": "raced",
        "name": "Raced",
        "default_port": 27015,
        "template": TEMPLATE,
        "variables": [],
    }
    error = error_of(staff_api.post("/v1/admin/games", body, format="json"), 409, "game_exists")
    assert error["details"] == {"slug": "raced"}
    assert not Event.objects.filter(type="game.created", object_id="raced").exists()


def test_a_variable_a_game_gains_reaches_existing_servers_with_its_default(account):
    from servers.drivers.spec import instance_spec
    from tests.servers.test_nodes import create_server, new_node

    new_node()
    server = create_server(account)
    game = server.game
    game.variables = [
        *game.variables,
        {"key": "NEW_SETTING", "name": "New", "type": "string", "default": "fresh"},
    ]
    game.save(update_fields=["variables"])
    server.refresh_from_db()
    assert "NEW_SETTING" not in server.variables
    assert instance_spec(server)["variables"]["NEW_SETTING"] == "fresh"
    # The server's own value wins over a default.
    server.variables = server.variables | {"NEW_SETTING": "mine"}
    server.save(update_fields=["variables"])
    assert instance_spec(server)["variables"]["NEW_SETTING"] == "mine"

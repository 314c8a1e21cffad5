"""Staff manage the game catalogue in the Django admin through the games' services: a game is
added and changed with the checks the agent will apply (every problem shown on its field,
nothing saved), each change a staff event; only games nothing uses are removed; an egg file is
imported (its notes shown) and any game downloaded as an egg."""

import json
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile

from events.models import Event
from servers.models import Game
from tests.accounts.test_admin import admin_url
from tests.servers.test_nodes import create_server, new_node

pytestmark = pytest.mark.django_db

EGGS = Path(__file__).parent / "eggs"


def form(**changes) -> dict:
    game = Game.objects.get(slug="minecraft-java")
    return {
        "slug": "my-game",
        "name": "My game",
        "default_port": "30000",
        "template": json.dumps(game.template),
        "variables": json.dumps(game.variables),
    } | changes


def said(response) -> str:
    return " | ".join(str(message) for message in get_messages(response.wsgi_request))


def test_a_game_is_added_and_changed_through_the_service(staff_client):
    response = staff_client.post(admin_url(Game, "add"), form(), follow=True)
    assert response.status_code == 200
    game = Game.objects.get(slug="my-game")
    assert game.template == Game.objects.get(slug="minecraft-java").template
    assert Event.objects.filter(type="game.created", object_id="my-game").exists()
    page = staff_client.get(admin_url(Game, "change", "my-game")).content.decode()
    assert "Download as an egg" in page
    assert "\n  &quot;install_script&quot;: " in page  # shown indented, to be read
    changed = form(name="Renamed")
    changed.pop("slug")
    staff_client.post(admin_url(Game, "change", "my-game"), changed, follow=True)
    assert Game.objects.get(slug="my-game").name == "Renamed"
    event = Event.objects.get(type="game.updated", object_id="my-game")
    assert event.data["previous_attributes"] == {"name": "My game"}


def test_a_bad_template_shows_every_problem_and_saves_nothing(staff_client):
    template = Game.objects.get(slug="minecraft-java").template | {
        "stop_signal": "SIGNOPE",
        "ready_pattern": "(",
    }
    response = staff_client.post(admin_url(Game, "add"), form(template=json.dumps(template)))
    assert response.status_code == 200
    errors = " ".join(response.context["adminform"].form.errors.get("template", []))
    assert "stop_signal" in errors and "ready_pattern" in errors
    assert not Game.objects.filter(slug="my-game").exists()
    response = staff_client.post(admin_url(Game, "add"), form(template="{not json"))
    assert "template" in response.context["adminform"].form.errors
    assert not Game.objects.filter(slug="my-game").exists()


def test_only_games_nothing_uses_are_removed(staff_client, account):
    staff_client.post(admin_url(Game, "add"), form())
    new_node()
    used = create_server(account).game_id
    response = staff_client.post(
        admin_url(Game, "changelist"),
        {"action": "remove_unused", "_selected_action": [used, "my-game"]},
        follow=True,
    )
    text = said(response)
    assert "still used by 1 server" in text and "Removed 1 game" in text
    assert not Game.objects.filter(slug="my-game").exists()
    assert Game.objects.filter(slug=used).exists()
    assert Event.objects.filter(type="game.deleted", object_id="my-game").exists()


def test_an_egg_file_is_imported_with_its_notes_and_a_game_downloaded_as_one(staff_client):
    page = staff_client.get(admin_url(Game, "changelist")).content.decode()
    assert "Import an egg" in page
    upload = SimpleUploadedFile(
        "egg-test-survival.yaml", (EGGS / "plcn_v3.yaml").read_bytes(), "application/yaml"
    )
    response = staff_client.post(
        admin_url(Game, "import_egg"),
        {"egg": upload, "slug": "survival", "default_port": "27015"},
        follow=True,
    )
    game = Game.objects.get(slug="survival")
    assert response.redirect_chain[-1][0].endswith(admin_url(Game, "change", "survival"))
    text = said(response)
    assert "Imported Test Survival (Pelican v3)" in text and "not offered" in text
    assert game.origin["format"] == "PLCN_v3"
    assert "PLCN_v3 egg by eggs@example.com" in response.content.decode()

    bad = SimpleUploadedFile("bad.json", b'{"meta": {"version": "PTDL_v9"}}')
    refused = staff_client.post(admin_url(Game, "import_egg"), {"egg": bad, "default_port": "1"})
    assert refused.status_code == 200
    assert "PTDL_v9 is none of the formats read" in refused.content.decode()

    download = staff_client.get(admin_url(Game, "egg", "survival"))
    assert download["Content-Disposition"] == 'attachment; filename="egg-survival.json"'
    egg = json.loads(download.content)
    assert egg["meta"]["version"] == "PTDL_v2" and egg["name"] == game.name


def test_a_game_that_takes_no_settings_is_added_and_changed(staff_client):
    template = Game.objects.get(slug="minecraft-java").template | {
        "install_script": "echo installed",
        "start_command": "exec sleep 3600",
        "config_files": [],
    }
    staff_client.post(
        admin_url(Game, "add"),
        form(template=json.dumps(template), variables="[]"),
        follow=True,
    )
    assert Game.objects.get(slug="my-game").variables == []
    changed = form(name="Renamed", template=json.dumps(template), variables="[]")
    changed.pop("slug")
    staff_client.post(admin_url(Game, "change", "my-game"), changed, follow=True)
    assert Game.objects.get(slug="my-game").name == "Renamed"

    emptied = form(name="Emptied", template=json.dumps(template), variables="")
    emptied.pop("slug")
    refused = staff_client.post(admin_url(Game, "change", "my-game"), emptied)
    assert refused.context["adminform"].form.errors["variables"]
    assert Game.objects.get(slug="my-game").name == "Renamed"

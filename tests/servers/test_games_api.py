"""``/v1/admin/games``: staff add, list, read, change and remove the catalogue's games through
the same checks ``Game.clean`` runs (a bad template refused when saved, every problem listed),
import Pterodactyl/Pelican eggs (a new game, or the one imported from the same egg before) and
export any game as one; a game servers or plans use is not removed; the fleet's staff scope,
customers' keys refused; staff events. And what customers see of an imported egg's game: its
hidden variables neither shown nor settable, its locked ones shown but not changed."""

import copy
import json
from pathlib import Path

import pytest

from accounts.roles import StaffRole
from events.models import Event
from servers.models import Game, Server
from tests.envelopes import error_of, field_errors
from tests.factories import MembershipFactory, ProductFactory, UserFactory
from tests.servers.test_nodes import create_server, new_node

pytestmark = pytest.mark.django_db

PATH = "/v1/admin/games"
EGGS = Path(__file__).parent / "eggs"


def body(**changes) -> dict:
    game = (
        Game.objects.get(slug="test-workload")
        if Game.objects.filter(slug="test-workload").exists()
        else Game.objects.get(slug="minecraft-java")
    )
    return {
        "slug": "my-game",
        "name": "My game",
        "default_port": 30000,
        "template": copy.deepcopy(game.template),
        "variables": copy.deepcopy(game.variables),
    } | changes


def test_staff_add_a_game_customers_then_see_and_events_say_so(staff_api, owner_api):
    answer = staff_api.post(PATH, body(), format="json")
    assert answer.status_code == 201, answer.content
    shown = answer.json()["data"]["game"]
    assert answer["Location"].endswith(f"{PATH}/my-game")
    assert shown | {"template": None, "variables": None} == {
        "id": "my-game",
        "slug": "my-game",
        "name": "My game",
        "default_port": 30000,
        "template": None,
        "variables": None,
        "origin": None,
        "servers": 0,
        "deleted_servers": 0,
    }
    assert Event.objects.get(type="game.created", object_id="my-game").account_id is None
    listed = owner_api.get("/v1/games").json()["data"]["games"]
    assert "my-game" in [game["slug"] for game in listed]
    error_of(staff_api.post(PATH, body(), format="json"), 409, "game_exists")


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"template": {"start_command": ""}}, "template", "start_command is required"),
        (
            {"template": "stop_signal"},
            "template",
            "template is a JSON object",
        ),
        (
            {"variables": [{"key": "X", "name": "X", "type": "colour"}]},
            "variables",
            "type is one of",
        ),
        ({"slug": "Not A Slug"}, "slug", ""),
        ({"slug": "import"}, "slug", "not import"),
        ({"default_port": 70000}, "default_port", ""),
    ],
)
def test_a_bad_game_is_refused_when_saved_with_every_problem(staff_api, change, field, words):
    answer = staff_api.post(PATH, body(**change), format="json")
    assert answer.status_code == 400, answer.content
    assert field in [name for name, _ in field_errors(answer)]
    assert words in json.dumps(answer.json())
    assert not Game.objects.filter(slug=change.get("slug", "my-game")).exists()


def test_every_problem_of_a_template_is_listed_at_once(staff_api):
    template = body()["template"] | {"stop_signal": "SIGNOPE", "ready_pattern": "(", "x": 1}
    answer = staff_api.post(PATH, body(template=template), format="json")
    messages = [e["message"] for e in answer.json()["error"]["details"]["fields"]]
    assert any("stop_signal" in m for m in messages)
    assert any("ready_pattern" in m for m in messages)
    assert any("'x' is not a template key" in m for m in messages)


def test_a_change_is_checked_whole_and_the_slug_stays(staff_api):
    staff_api.post(PATH, body(), format="json")
    bad = staff_api.patch(f"{PATH}/my-game", {"template": {"start_command": ""}}, format="json")
    error_of(bad, 400, "validation_failed")
    error_of(staff_api.patch(f"{PATH}/my-game", {"slug": "other"}, format="json"), 400)
    changed = staff_api.patch(f"{PATH}/my-game", {"name": "Renamed"}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["data"]["game"]["name"] == "Renamed"
    event = Event.objects.get(type="game.updated", object_id="my-game")
    assert event.data["previous_attributes"] == {"name": "My game"}
    # Nothing changed: no event.
    staff_api.patch(f"{PATH}/my-game", {"name": "Renamed"}, format="json")
    assert Event.objects.filter(type="game.updated").count() == 1


def test_a_game_servers_or_plans_use_is_not_removed(staff_api, account):
    new_node()
    server = create_server(account)
    slug = server.game_id
    refused = error_of(staff_api.delete(f"{PATH}/{slug}"), 409, "game_in_use")
    assert refused["details"]["servers"] == 1
    Server.objects.filter(pk=server.pk).update(deleted_at=server.created_at)
    refused = error_of(staff_api.delete(f"{PATH}/{slug}"), 409, "game_in_use")
    assert (refused["details"]["servers"], refused["details"]["deleted_servers"]) == (0, 1)

    staff_api.post(PATH, body(), format="json")
    product = ProductFactory(games=["minecraft-java", "my-game"])
    refused = error_of(staff_api.delete(f"{PATH}/my-game"), 409, "game_in_use")
    assert refused["details"]["products"] == [product.pk]
    product.games = ["minecraft-java"]
    product.save(update_fields=["games"])
    gone = staff_api.delete(f"{PATH}/my-game")
    assert gone.json()["data"] == {"id": "my-game", "deleted": True}
    assert Event.objects.filter(type="game.deleted", object_id="my-game").exists()
    error_of(staff_api.get(f"{PATH}/my-game"), 404, "not_found")


def test_the_list_searches_filters_and_orders(staff_api):
    staff_api.post(
        f"{PATH}/import",
        {"egg": json.loads((EGGS / "plcn_v1.json").read_text()), "default_port": 28000},
        format="json",
    )
    every = staff_api.get(PATH).json()["data"]["games"]
    assert len(every) == Game.objects.count()
    names = [game["name"] for game in every]
    assert names == sorted(names)
    found = staff_api.get(f"{PATH}?search=ARENA").json()["data"]["games"]
    assert [game["name"] for game in found] == ["Test Bot Arena (Pelican v1)"]
    imported = staff_api.get(f"{PATH}?imported=true").json()["data"]["games"]
    assert [game["slug"] for game in imported] == ["test-bot-arena-pelican-v1"]
    others = staff_api.get(f"{PATH}?imported=false").json()["data"]["games"]
    assert len(others) == len(every) - 1
    by_port = staff_api.get(f"{PATH}?ordering=-default_port").json()["data"]["games"]
    ports = [game["default_port"] for game in by_port]
    assert ports == sorted(ports, reverse=True)
    error_of(staff_api.get(f"{PATH}?imported=maybe"), 400, "invalid_parameter")


@pytest.mark.parametrize(
    "name", ["ptdl_v1_every_field.json", "ptdl_v2_every_field.json", "plcn_v1.json", "plcn_v3.yaml"]
)
def test_an_egg_of_each_format_imports_as_a_game_and_again_updates_it(staff_api, name):
    text = (EGGS / name).read_text()
    egg = text if name.endswith(".yaml") else json.loads(text)
    answer = staff_api.post(f"{PATH}/import", {"egg": egg, "default_port": 27015}, format="json")
    assert answer.status_code == 201, answer.content
    result = answer.json()["data"]["import"]
    assert result["created"] is True and result["notes"]
    game = Game.objects.get(slug=result["game"]["slug"])
    game.full_clean()
    assert result["game"]["origin"]["format"] in ("PTDL_v1", "PTDL_v2", "PLCN_v1", "PLCN_v3")
    assert Event.objects.filter(type="game.created", object_id=game.slug).exists()
    again = staff_api.post(f"{PATH}/import", {"egg": egg}, format="json")
    if game.origin.get("uuid"):
        # The same egg (its uuid) updates the game it made: nothing changed, nothing recorded.
        assert again.status_code == 200, again.content
        assert again.json()["data"]["import"]["created"] is False
        assert Game.objects.filter(origin__uuid=game.origin["uuid"]).count() == 1
    else:
        # No uuid (PTDL_v1): a new game each time, which needs its port.
        error_of(again, 400, "validation_failed")


def test_an_egg_that_cannot_run_here_is_refused_with_its_reasons(staff_api):
    egg = json.loads((EGGS / "plcn_v1.json").read_text())
    egg["scripts"]["installation"]["script"] = "apt-get install -y lib32gcc-s1\n"
    refused = error_of(
        staff_api.post(f"{PATH}/import", {"egg": egg, "default_port": 1}, format="json"),
        400,
        "invalid_egg",
    )
    assert "lib32gcc-s1" in refused["details"]["problems"][0]
    error_of(
        staff_api.post(f"{PATH}/import", {"egg": "{not json", "default_port": 1}, format="json"),
        400,
        "invalid_egg",
    )
    assert not Game.objects.filter(origin__uuid=egg["uuid"]).exists()


def test_each_game_exports_as_an_egg_that_imports_back(staff_api):
    exported = staff_api.get(f"{PATH}/minecraft-java/egg")
    assert exported.status_code == 200, exported.content
    egg = exported.json()["data"]["egg"]
    assert egg["meta"]["version"] == "PTDL_v2"
    back = staff_api.post(
        f"{PATH}/import", {"egg": egg, "default_port": 25570, "slug": "mc-again"}, format="json"
    )
    assert back.status_code == 201, back.content
    ours = Game.objects.get(slug="minecraft-java")
    theirs = Game.objects.get(slug="mc-again")
    assert [v["key"] for v in theirs.variables] == [v["key"] for v in ours.variables]


def test_readers_read_customers_and_other_staff_are_refused(
    staff_reader_api, owner_api, make_token, client_for, staff_account
):
    assert staff_reader_api.get(f"{PATH}/minecraft-java").status_code == 200
    assert staff_reader_api.get(f"{PATH}/minecraft-java/egg").status_code == 200
    error_of(
        staff_reader_api.patch(f"{PATH}/minecraft-java", {"name": "x"}, format="json"),
        403,
        "insufficient_scope",
    )
    error_of(staff_reader_api.post(f"{PATH}/import", {"egg": {}}, format="json"), 403)
    error_of(owner_api.get(PATH), 403, "insufficient_scope")
    error_of(owner_api.get(f"{PATH}/minecraft-java/egg"), 403, "insufficient_scope")

    def staff_key(role: str, scopes: list[str]):
        user = UserFactory(is_staff=True, staff_role=role)
        MembershipFactory(account=staff_account, user=user)
        return client_for(make_token(user, staff_account, scopes))

    fleet = staff_key(StaffRole.FLEET, ["admin:nodes:write"])
    assert fleet.get(PATH).status_code == 200
    changed = fleet.patch(f"{PATH}/minecraft-java", {"name": "Minecraft"}, format="json")
    assert changed.status_code == 200, changed.content
    billing = staff_key(StaffRole.BILLING, ["admin:billing:write"])
    error_of(billing.get(PATH), 403, "insufficient_scope")


def test_customers_neither_see_nor_set_an_eggs_hidden_variables(staff_api, owner_api, account):
    egg = json.loads((EGGS / "ptdl_v1_every_field.json").read_text())
    imported = staff_api.post(
        f"{PATH}/import", {"egg": egg, "default_port": 25565, "slug": "craft"}, format="json"
    )
    assert imported.status_code == 201, imported.content
    catalogue = {game["slug"]: game for game in owner_api.get("/v1/games").json()["data"]["games"]}
    keys = [variable["key"] for variable in catalogue["craft"]["variables"]]
    assert "LICENCE_KEY" not in keys and "BUILD_NUMBER" in keys
    new_node(ports="25565-25570")
    create = {"name": "Craft", "game": "craft", "region": "eu-central"}
    refused = owner_api.post(
        "/v1/servers", create | {"variables": {"LICENCE_KEY": "zzz999"}}, format="json"
    )
    assert ("variables.LICENCE_KEY", "variable_locked") in field_errors(refused)
    made = owner_api.post("/v1/servers", create, format="json")
    assert made.status_code == 201, made.content
    server_id = made.json()["data"]["server"]["id"]
    shown = owner_api.get(f"/v1/servers/{server_id}").json()["data"]["server"]["variables"]
    assert "LICENCE_KEY" not in shown and shown["BUILD_NUMBER"] == "latest"
    assert Server.objects.get(pk=server_id).variables["LICENCE_KEY"] == "abc123"
    locked = owner_api.patch(
        f"/v1/servers/{server_id}", {"variables": {"BUILD_NUMBER": "1234"}}, format="json"
    )
    assert ("variables.BUILD_NUMBER", "variable_locked") in field_errors(locked)


def test_the_pages_keep_hidden_variables_out_and_locked_ones_unchangeable(
    staff_api, owner, account
):
    from tests.dashboard import signed_in

    egg = json.loads((EGGS / "ptdl_v1_every_field.json").read_text())
    staff_api.post(
        f"{PATH}/import", {"egg": egg, "default_port": 25565, "slug": "craft"}, format="json"
    )
    new_node(ports="25565-25570")
    client = signed_in(owner)
    create_page = client.get("/servers/new?game=craft").content.decode()
    assert "variable_BUILD_NUMBER" in create_page and "variable_LICENCE_KEY" not in create_page
    created = client.post(
        "/servers/new?game=craft",
        {
            "name": "Craft",
            "region": "eu-central",
            "memory_mb": 2048,
            "cpu_percent": 100,
            "disk_mb": 10240,
            "auto_restart": "on",
            "variable_SERVER_JARFILE": "server.jar",
            "variable_MOTD": "Hello",
            "variable_MAX_PLAYERS": 20,
            "variable_DIFFICULTY": "normal",
            "variable_AUTO_UPDATE": "1",
            "variable_EGG_SERVER_MEMORY": 1024,
            # A disabled field's value is not taken: the host's value holds.
            "variable_BUILD_NUMBER": "999",
        },
    )
    assert created.status_code == 302, created.content.decode()[:2000]
    server = Server.objects.get(game_id="craft")
    assert server.variables["BUILD_NUMBER"] == "latest"
    assert server.variables["LICENCE_KEY"] == "abc123"
    page = client.get(f"/servers/{server.id}").content.decode()
    assert "abc123" not in page and "LICENCE_KEY" not in page
    edit = client.get(f"/servers/{server.id}/edit").content.decode()
    assert "variable_LICENCE_KEY" not in edit
    assert 'name="variable_BUILD_NUMBER"' in edit and "Set by the host." in edit

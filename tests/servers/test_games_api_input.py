"""``/v1/admin/games`` under input of any JSON type where the schema takes any JSON (a game's
template and variables, an egg): refused with 400 by field, never a 500 (the fuzz step sends
every type there)."""

import pytest

from servers.models import Game
from tests.envelopes import error_of

pytestmark = pytest.mark.django_db

PATH = "/v1/admin/games"
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
# Every JSON type; for variables, all but the empty list (a game may take no settings).
EVERY_TYPE = [5, 1.5, True, [1], ["x"], {"x": 1}, "", "text", {}, []]
SHAPES = [("template", value) for value in EVERY_TYPE] + [
    ("variables", value) for value in EVERY_TYPE if value != []
]


def game_body(**changes) -> dict:
    return {
        "slug": "typed",
        "name": "Typed",
        "default_port": 27015,
        "template": TEMPLATE,
        "variables": [],
    } | changes


@pytest.mark.parametrize(("field", "value"), SHAPES, ids=repr)
def test_a_template_or_variables_of_another_shape_is_refused_on_its_field(staff_api, field, value):
    made = staff_api.post(PATH, game_body(**{field: value}), format="json")
    assert {problem["name"] for problem in error_of(made, 400)["details"]["fields"]} == {field}
    assert not Game.objects.filter(slug="typed").exists()
    assert staff_api.post(PATH, game_body(), format="json").status_code == 201
    changed = staff_api.patch(f"{PATH}/typed", {field: value}, format="json")
    assert {problem["name"] for problem in error_of(changed, 400)["details"]["fields"]} == {field}
    assert Game.objects.get(slug="typed").template == TEMPLATE


@pytest.mark.parametrize("egg", [5, 1.5, True, [1], [{"meta": {}}]], ids=repr)
def test_an_egg_that_is_neither_an_object_nor_text_is_refused_on_its_field(staff_api, egg):
    answer = staff_api.post(f"{PATH}/import", {"egg": egg, "default_port": 27015}, format="json")
    error = error_of(answer, 400, "validation_failed")
    assert [(p["name"], p["code"]) for p in error["details"]["fields"]] == [("egg", "not_an_egg")]


@pytest.mark.parametrize("egg", ["", "text", "[]", "5", "{}", {}], ids=repr)
def test_text_or_an_object_that_is_no_egg_is_refused_with_its_problems(staff_api, egg):
    answer = staff_api.post(f"{PATH}/import", {"egg": egg, "default_port": 27015}, format="json")
    assert error_of(answer, 400, "invalid_egg")["details"]["problems"]

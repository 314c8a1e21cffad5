"""scripts/schemathesis-objects.toml pins the fuzzer's operations to objects scripts/fuzz.py
seeds, so that each reaches a 2xx (the run fails on one that never does): a pin that names an
operation the schema no longer has pins nothing, and a pinned body the service refuses reaches
no 2xx. Checked here against the live schema and the real services, without running the
fuzzer: the staff API's games, as one example of the whole."""

import importlib.util
import json
import tomllib
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.actors import SYSTEM
from servers.models import Game

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def fuzz():
    spec = importlib.util.spec_from_file_location("fuzz_script", SCRIPTS / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pinned(config: str) -> list[dict]:
    operations = tomllib.loads((SCRIPTS / config).read_text())["operations"]
    for operation in operations:
        ids = operation.get("include-operation-id", [])
        operation["ids"] = [ids] if isinstance(ids, str) else ids
    return operations


def parameters_of(operation_id: str) -> dict:
    [operation] = [op for op in pinned("schemathesis-objects.toml") if operation_id in op["ids"]]
    return operation["parameters"]


def test_every_operation_the_fuzz_configuration_names_is_in_the_schema():
    schema = APIClient().get("/v1/openapi.json").json()
    operations = {
        operation["operationId"]
        for item in schema["paths"].values()
        for method, operation in item.items()
        if method in {"get", "put", "post", "patch", "delete"}
    }
    for config in ("schemathesis.toml", "schemathesis-objects.toml"):
        named = {name for operation in pinned(config) for name in operation["ids"]}
        assert named - operations == set(), config
    games = {name for name in operations if name.startswith("admin_games_")}
    pins = {name for operation in pinned("schemathesis-objects.toml") for name in operation["ids"]}
    assert games - {"admin_games_list"} <= pins


def test_the_pinned_game_create_is_one_the_service_accepts_once(fuzz, staff_api):
    pins = parameters_of("admin_games_create")
    assert pins["body.template"] == fuzz.FUZZ_GAME_TEMPLATE
    assert pins["body.variables"] == fuzz.FUZZ_GAME_VARIABLES
    body = {key.removeprefix("body."): value for key, value in pins.items()} | {"name": "Fuzzed"}

    made = staff_api.post("/v1/admin/games", body, format="json")
    assert made.status_code == 201, made.content
    again = staff_api.post("/v1/admin/games", body, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "game_exists")


def test_the_seeded_games_and_egg_reach_a_2xx_on_each_pinned_operation(fuzz, staff_api):
    seeded = fuzz.games_setup(SYSTEM)
    path = "/v1/admin/games"
    read = parameters_of("admin_games_retrieve")["path.id"]
    assert Game.objects.filter(slug=read).exists()
    assert staff_api.get(f"{path}/{read}").status_code == 200
    assert staff_api.get(f"{path}/{read}/egg").status_code == 200

    spare = seeded["FUZZ_SPARE_GAME_ID"]
    assert parameters_of("admin_games_partial_update")["path.id"] == "${FUZZ_SPARE_GAME_ID}"
    renamed = staff_api.patch(f"{path}/{spare}", {"name": "Fuzzed"}, format="json")
    assert renamed.status_code == 200, renamed.content

    assert parameters_of("admin_games_destroy")["path.id"] == "${FUZZ_DELETED_GAME_ID}"
    removed = staff_api.delete(f"{path}/{seeded['FUZZ_DELETED_GAME_ID']}")
    assert removed.status_code == 200, removed.content

    pins = parameters_of("admin_games_import_create")
    assert pins["body.egg"] == "${FUZZ_EGG}"
    body = {key.removeprefix("body."): value for key, value in pins.items()}
    body["egg"] = seeded["FUZZ_EGG"]
    assert isinstance(json.loads(body["egg"]), dict)  # the egg's text, as a file holds it
    first = staff_api.post(f"{path}/import", body, format="json")
    assert first.status_code == 201, first.content
    second = staff_api.post(f"{path}/import", body, format="json")
    assert second.status_code == 200, second.content
    assert second.json()["data"]["import"]["game"]["slug"] == pins["body.slug"]

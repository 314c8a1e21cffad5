"""Pterodactyl and Pelican eggs (servers.eggs): our own test eggs of each format version
(tests/servers/eggs/) with every field type, read into games the catalogue's checks accept;
Laravel rules mapped or listed; what cannot run refused with its reasons; and each game of ours
exported as a PTDL_v2 egg that reads back into the same game."""

import contextlib
import json
import re
from pathlib import Path

import pytest

from servers.catalogue import load_catalogue
from servers.eggs import (
    NODE_PACKAGES,
    EggError,
    egg_load,
    egg_to_game,
    game_to_egg,
    php_pattern,
    split_rules,
)
from servers.game_checks import template_problems, variables_problems
from servers.models import Game
from servers.services.validation import validate_variables

EGGS = Path(__file__).parent / "eggs"


def read(name: str):
    return egg_to_game(egg_load((EGGS / name).read_bytes()))


def variables_of(imported) -> dict[str, dict]:
    return {variable["key"]: variable for variable in imported.entry["variables"]}


def game_of(imported) -> Game:
    return Game(
        slug="egg",
        name=imported.entry["name"],
        default_port=25565,
        **{key: imported.entry[key] for key in ("template", "variables")},
    )


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("ptdl_v1_every_field.json", "PTDL_v1"),
        ("ptdl_v2_every_field.json", "PTDL_v2"),
        ("plcn_v1.json", "PLCN_v1"),
        ("plcn_v3.yaml", "PLCN_v3"),
    ],
)
def test_each_format_version_reads_into_a_game_the_catalogue_checks_accept(name, version):
    imported = read(name)
    entry = imported.entry
    keys = {variable["key"] for variable in entry["variables"]}
    assert variables_problems(entry["variables"]) == []
    assert template_problems(entry["template"], keys) == []
    # Game.clean (what admin and the staff API run) agrees.
    game_of(imported).clean()
    assert imported.origin["format"] == version
    assert imported.origin["notes"] == imported.notes


def test_ptdl_v1_startup_placeholders_read_the_environment_under_bash():
    template = read("ptdl_v1_every_field.json").entry["template"]
    start = template["start_command"]
    assert start.startswith("exec bash -c ")
    # {{VAR}} is an environment read, expanded (split, as the egg expects for flags), never
    # evaluated; "{{MOTD}}" in quotes stays one word.
    assert "-Xmx${SERVER_MEMORY}M" in start
    assert "-jar ${SERVER_JARFILE}" in start
    assert "${EXTRA_FLAGS}" in start
    assert '--motd "${MOTD}"' in start
    # The query port became a named port: its allocation's number, under the egg's name too.
    assert "--query ${PORT_QUERY}" in start
    assert 'QUERY_PORT="${PORT_QUERY}"; export QUERY_PORT' in start
    assert template["ports"] == [
        {"name": "query", "protocol": "both", "description": "QUERY_PORT of the egg"}
    ]


def test_ptdl_v1_stop_done_install_and_config_files():
    imported = read("ptdl_v1_every_field.json")
    template = imported.entry["template"]
    assert (template["stop_command"], template["stop_signal"]) == ("", "SIGINT")  # ^C
    assert re.search(template["ready_pattern"], '[12:00] Done (3.2s)! For help, type "help"')
    assert not re.search(template["ready_pattern"], "Starting minecraft server")
    assert template["install_shell"] == "bash"
    install = template["install_script"]
    assert install.startswith("#!/bin/bash\nQUERY_PORT=")
    assert "\r" not in install
    assert "apt install" not in install and "\ntrue\ntrue\n" in install
    files = {item["file"]: item for item in template["config_files"]}
    assert set(files) == {
        "server.properties",
        "config/settings.yml",
        "config.json",
        "game.ini",
        "settings.xml",
        "start.cfg",
    }
    assert {item["parser"] for item in files.values()} == {
        "properties",
        "yaml",
        "json",
        "ini",
        "xml",
        "file",
    }
    assert files["server.properties"]["replace"] == [
        {"match": "server-ip", "value": "0.0.0.0"},  # noqa: S104 - the egg's text
        {"match": "server-port", "value": "{{SERVER_PORT}}"},
        {"match": "query.port", "value": "{{PORT_QUERY}}"},
        {"match": "motd", "value": "{{MOTD}}"},
    ]
    assert {"match": "memory", "value": "{{SERVER_MEMORY}}"} in files["config/settings.yml"][
        "replace"
    ]
    assert {"match": "network.public", "value": True} in files["config.json"]["replace"]
    assert {"match": "slots", "value": 20} in files["config.json"]["replace"]
    # What could not be mapped is listed, not dropped silently.
    notes = "\n".join(imported.notes)
    assert "{{config.docker.interface}} has no counterpart" in notes
    assert "config.logs: not used" in notes
    assert "features: ['eula'] not used" in notes
    assert "file_denylist: ['*.jar'] not used" in notes
    assert "userInteraction" in notes
    assert "apt update; apt install -y curl jq unzip" in notes
    assert "ghcr.io/pterodactyl/yolks:java_21" in notes


def test_laravel_rules_map_onto_our_variables():
    variables = variables_of(read("ptdl_v1_every_field.json"))
    assert variables["SERVER_JARFILE"]["pattern"] == r"^([\w\d._-]+)(\.jar)$"
    assert variables["SERVER_JARFILE"]["required"] is True
    assert variables["VERSION"]["pattern"].startswith("(?i)")
    assert variables["VERSION"]["max_length"] == 20
    assert "required" not in variables["VERSION"]
    assert (variables["MOTD"]["min_length"], variables["MOTD"]["max_length"]) == (3, 59)
    assert variables["MAX_PLAYERS"] | {} == {
        "key": "MAX_PLAYERS",
        "name": "Max players",
        "type": "integer",
        "min": 1,
        "max": 500,
        "required": True,
        "default": 20,
    }
    assert variables["DIFFICULTY"]["choices"] == ["peaceful", "easy", "normal", "hard"]
    assert (variables["AUTO_UPDATE"]["type"], variables["AUTO_UPDATE"]["choices"]) == (
        "enum",
        ["1", "0"],
    )
    assert variables["BUILD_NUMBER"]["editable"] is False
    assert "visible" not in variables["BUILD_NUMBER"]
    assert (variables["LICENCE_KEY"]["visible"], variables["LICENCE_KEY"]["editable"]) == (
        False,
        False,
    )
    # A reserved name is renamed; an integer named like a port became a named port.
    assert "EGG_SERVER_MEMORY" in variables and "SERVER_MEMORY" not in variables
    assert "QUERY_PORT" not in variables
    notes = "\n".join(read("ptdl_v1_every_field.json").notes)
    assert "OWNER_EMAIL: rules not mapped (not checked by us): email, different:MOTD" in notes


def test_optional_values_keep_laravels_rule_that_an_empty_one_is_allowed():
    variables = variables_of(read("ptdl_v2_every_field.json"))
    game = game_of(read("ptdl_v2_every_field.json"))
    token = variables["STEAM_ACC"]
    assert "min_length" not in token and token["default"] == ""
    values = validate_variables(game, {"RCON_PASSWORD": "secret"})
    assert values["STEAM_ACC"] == ""
    with pytest.raises(Exception) as error:
        validate_variables(game, {"RCON_PASSWORD": "secret", "STEAM_ACC": "short"})
    assert error.value.details["fields"][0]["code"] == "invalid_format"
    assert validate_variables(game, {"RCON_PASSWORD": "s", "STEAM_ACC": "A" * 32})["STEAM_ACC"]
    # url + starts_with: both must hold.
    with pytest.raises(Exception) as error:
        validate_variables(game, {"RCON_PASSWORD": "s", "WEBSITE": "http://example.com"})
    assert error.value.details["fields"][0]["name"] == "variables.WEBSITE"
    # required without a default: asked of the customer, as the egg's "required" asks.
    with pytest.raises(Exception) as error:
        validate_variables(game, {})
    assert error.value.details["fields"][0]["code"] == "required"


def test_locked_and_hidden_variables_keep_the_hosts_value():
    game = game_of(read("ptdl_v1_every_field.json"))
    values = validate_variables(game, {})
    assert values["LICENCE_KEY"] == "abc123" and values["BUILD_NUMBER"] == "latest"
    # Giving the value it has is fine; changing it is refused.
    assert validate_variables(game, {"BUILD_NUMBER": "latest"})["BUILD_NUMBER"] == "latest"
    for key in ("BUILD_NUMBER", "LICENCE_KEY"):
        with pytest.raises(Exception) as error:
            validate_variables(game, {key: "other1"}, current=values)
        assert error.value.details["fields"][0] == {
            "name": f"variables.{key}",
            "code": "variable_locked",
            "message": error.value.details["fields"][0]["message"],
        }


def test_ptdl_v2_if_values_signal_and_command_stop_and_done_regex():
    imported = read("ptdl_v2_every_field.json")
    template = imported.entry["template"]
    assert (template["stop_command"], template["stop_signal"]) == ("quit", "SIGTERM")
    pattern = re.compile(template["ready_pattern"])
    assert pattern.search("Connection to Steam servers successful.")
    assert pattern.search("Assigned gameserver Steam ID [A:1:2:3].")
    assert not pattern.search("Loading map")
    assert template["install_shell"] == "sh"  # entrypoint ash
    files = {item["file"]: item["replace"] for item in template["config_files"]}
    assert {
        "match": "rcon_password",
        "if_value": "changeme",
        "value": 'rcon_password "{{RCON_PASSWORD}}"',
    } in files["cfg/server.cfg"]
    assert {"match": "enable-query", "if_value": "regex:^no$", "value": "true"} in files[
        "motd.properties"
    ]
    # A placeholder of no variable reads an empty environment variable, as the images do.
    assert "${UNDEFINED_THING}" in template["start_command"]
    assert "{{UNDEFINED_THING}} is no variable of the egg" in "\n".join(imported.notes)
    assert imported.origin["uuid"] == "7b2a4f55-4bbd-4a58-9c47-1df0bd3c8d10"
    assert imported.origin["update_url"] == "https://example.com/eggs/test-source.json"


def test_pelican_placeholders_rules_lists_and_startup_commands():
    v1 = read("plcn_v1.json")
    replace = v1.entry["template"]["config_files"][0]["replace"]
    assert [item["value"] for item in replace] == [
        "{{SERVER_PORT}}",
        "{{ARENA_NAME}}",
        "{{SERVER_MEMORY}}",
        "{{PORT_RCON}}",
    ]
    assert variables_of(v1)["ARENA_NAME"]["pattern"] == "^[a-z0-9-]+$"
    assert variables_of(v1)["ACCEPT"]["default"] == "false"  # a JSON false, the egg's spelling
    assert v1.entry["template"]["stop_signal"] == "SIGTERM"  # ^SIGTERM
    v3 = read("plcn_v3.yaml")
    assert "./survival --port ${SERVER_PORT}" in v3.entry["template"]["start_command"]
    assert "'Modded') are not offered" in "\n".join(v3.notes)
    assert v3.entry["template"]["stop_signal"] == "SIGINT"


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ("required|string|max:20", ["required", "string", "max:20"]),
        (
            r"required|regex:/^(latest|[0-9]+)$/|max:5",
            ["required", r"regex:/^(latest|[0-9]+)$/", "max:5"],
        ),
        (r"regex:/a\/b|c/i", [r"regex:/a\/b|c/i"]),
        ("nullable|", ["nullable"]),
    ],
)
def test_rules_split_on_bars_but_not_inside_a_regex(rules, expected):
    assert split_rules(rules) == expected


def test_php_patterns_become_python_ones_or_are_refused():
    assert php_pattern("/^[a-z]+$/i") == "(?i)^[a-z]+$"
    assert php_pattern("#^a/b$#") == "^a/b$"
    assert php_pattern("/[unclosed/") is None
    assert php_pattern("/x/e") is None  # PHP's eval flag has no meaning here


def egg(**changes):
    data = json.loads((EGGS / "plcn_v1.json").read_text())
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        target = data
        for part in path:
            target = target[part]
        if value is None:
            target.pop(last)
        else:
            target[last] = value
    return data


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"meta__version": "PTDL_v9"}, "meta.version: PTDL_v9 is none of the formats read"),
        ({"startup": ""}, "startup: is required"),
        ({"name": ""}, "name: is required"),
        (
            {"scripts__installation__script": "apt-get install -y lib32gcc-s1 curl\n"},
            "installs packages the nodes do not provide: lib32gcc-s1",
        ),
        (
            {"scripts__installation__entrypoint": "python3"},
            "'python3' is no shell we run",
        ),
        (
            {"config__files": '{"a.conf": {"parser": "toml", "find": {}}}'},
            "config.files['a.conf'].parser: 'toml' is none of",
        ),
        ({"config__files": "{not json"}, "config.files: is not JSON"),
        (
            {"config__files": '{"../x.cfg": {"parser": "file", "find": {"a": "b"}}}'},
            "is no file inside the server's folder",
        ),
        ({"config__extends": 12}, "config.extends"),
        ({"config__startup": '{"done": "regex:(unclosed"}'}, "config.startup.done"),
        ({"variables": [{"env_variable": "1BAD", "name": "x"}]}, "env_variable is a name"),
        ({"docker_images": 5}, "docker_images: is an object"),
        ({"scripts": 5}, "scripts: is an object"),
        ({"variables": 5}, "variables: is a list"),
        ({"config": [1]}, "config: is an object"),
    ],
)
def test_what_cannot_be_imported_is_refused_with_its_reason(changes, problem):
    with pytest.raises(EggError) as error:
        egg_to_game(egg(**changes))
    assert any(problem in line for line in error.value.problems), error.value.problems


def test_config_file_names_are_normalised_inside_the_folder():
    data = egg(config__files='{"./cfg//a.json": {"parser": "json", "find": {"a": 1}}}')
    assert egg_to_game(data).entry["template"]["config_files"][0]["file"] == "cfg/a.json"


def test_a_host_whose_nodes_have_more_packages_names_them():
    data = egg(scripts__installation__script="apt-get install -y lib32gcc-s1 curl\n")
    imported = egg_to_game(data, packages=NODE_PACKAGES | {"lib32gcc-s1"})
    assert imported.entry["template"]["install_script"].endswith("\ntrue\n")


@pytest.mark.parametrize(
    "content",
    [b"", b"\xff\xfe", b"[1, 2]", b"{bad json", b"key: [unclosed", b"x" * (1024 * 1024 + 1)],
)
def test_what_is_no_egg_file_is_refused(content):
    with pytest.raises(EggError):
        egg_load(content)


@pytest.mark.parametrize("slug", sorted(load_catalogue()))
def test_each_game_of_ours_exports_as_an_egg_that_reads_back(slug):
    entry = load_catalogue()[slug]
    exported = game_to_egg(
        name=entry["name"],
        slug=slug,
        template=entry["template"],
        variables=entry["variables"],
        author="staff@example.com",
    )
    assert exported["meta"]["version"] == "PTDL_v2"
    text = json.dumps(exported)
    back = egg_to_game(egg_load(text))
    ours = {variable["key"]: variable for variable in entry["variables"]}
    theirs = variables_of(back)
    assert set(theirs) == set(ours)
    for key, variable in ours.items():
        assert theirs[key]["name"] == variable["name"]
        assert theirs[key].get("required", False) == variable.get("required", False)
        if variable["type"] in ("integer", "enum"):
            assert theirs[key]["type"] == variable["type"]
            assert theirs[key].get("default") == variable.get("default")
        if variable["type"] == "integer":
            assert (theirs[key].get("min"), theirs[key].get("max")) == (
                variable.get("min"),
                variable.get("max"),
            )
    # Named ports go out as variables (QUERY_PORT) and come back as the same named ports.
    assert [port["name"] for port in back.entry["template"].get("ports", [])] == [
        port["name"] for port in entry["template"].get("ports", [])
    ]
    template = back.entry["template"]
    assert template["stop_signal"] == entry["template"]["stop_signal"]
    assert template["stop_command"] == entry["template"]["stop_command"]
    ready = entry["template"]["ready_pattern"]
    assert template["ready_pattern"] == ready
    # The install writes our start script, each placeholder now an environment read.
    install = exported["scripts"]["installation"]["script"]
    assert "cat > .hms-start.sh <<'HMS_START_EOF'" in install
    assert not re.search(r"\{\{\s*\w+\s*\}\}", install)


def _paths(value, prefix=()):
    """Every key path of a parsed egg (into objects and lists)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


WRONG = [None, 5, -1, 1.5, True, False, "", "x", [], [1], {}, {"a": 1}]


@pytest.mark.parametrize(
    "name", ["ptdl_v1_every_field.json", "ptdl_v2_every_field.json", "plcn_v1.json", "plcn_v3.yaml"]
)
def test_any_value_of_the_wrong_type_anywhere_is_read_or_refused_never_a_crash(name):
    original = egg_load((EGGS / name).read_bytes())
    for path in list(_paths(original)):
        for wrong in WRONG:
            data = json.loads(json.dumps(original))
            target = data
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = wrong
            with contextlib.suppress(EggError):
                egg_to_game(data)

"""A template's ``config_files`` and ``install_shell`` as the control plane checks them
(servers.game_checks, the same rules as agent/spec.py), and as the catalogue's manifests carry
them ([[template.config_files]], template.install_shell)."""

import copy
import math
from typing import Any

import pytest

from agent.errors import ValidationFailed
from agent.spec import parse_spec
from servers.catalogue import load_game
from servers.game_checks import config_files_problems, template_problems
from tests.agent.conftest import gameserver_spec
from tests.servers.test_catalogue import MANIFEST, game, problems

TEMPLATE: dict[str, Any] = {
    "install_script": "",
    "start_command": "./run",
    "ready_pattern": "",
    "stop_command": "stop",
    "stop_signal": "SIGTERM",
    "stop_timeout_seconds": 30,
    "ready_timeout_seconds": 60,
    "backup_commands": {"before": [], "after": []},
}
SOUND = [
    {
        "file": "server.properties",
        "parser": "properties",
        "replace": [
            {"match": "server-port", "value": "{{SERVER_PORT}}"},
            {"match": "motd", "value": "{{MOTD}}", "if_value": "A Minecraft Server"},
            {"match": "online-mode", "value": True},
            {"match": "view-distance", "value": 10},
            {"match": "ratio", "value": 1.5},
        ],
    },
    {"file": "config/paper-global.yml", "parser": "yaml", "replace": []},
    {"file": "a..b/c", "parser": "file", "replace": []},
]


def edits(**item: Any) -> list[dict[str, Any]]:
    return [{"file": "x.json", "parser": "json", "replace": [], **item}]


def agent_refuses(config_files: Any) -> bool:
    spec = gameserver_spec("srv_x", 25565, config_files=config_files)
    try:
        parse_spec(spec, server_id="srv_x")
    except ValidationFailed:
        return True
    return False


def test_sound_config_files_pass_here_and_on_the_agent():
    assert config_files_problems(SOUND) == []
    assert template_problems({**TEMPLATE, "config_files": SOUND}, {"MOTD"}) == []
    assert not agent_refuses(SOUND)


@pytest.mark.parametrize(
    ("config_files", "expected"),
    [
        ({}, "config_files is a list of at most 32 files."),
        (edits() * 33, "config_files is a list of at most 32 files."),
        (["x"], "config_files[0] is an object of file, parser and replace."),
        (edits(mode="0644"), "config_files[0] is an object of file, parser and replace."),
        (edits(parser="toml"), "config_files[0].parser is one of properties, yaml, json,"),
        (edits(replace={"a": 1}), "config_files[0].replace is a list of at most 100."),
        (
            edits(replace=[{"match": "a", "value": 1}] * 101),
            "config_files[0].replace is a list of at most 100.",
        ),
        (edits(replace=["a=1"]), "config_files[0].replace[0] is an object of match, value and"),
        (edits(replace=[{"match": "", "value": 1}]), "config_files[0].replace[0].match is text"),
        (edits(replace=[{"match": 5, "value": 1}]), "config_files[0].replace[0].match is text"),
        (edits(replace=[{"match": "a"}]), "config_files[0].replace[0].value is text, a number"),
        (
            edits(replace=[{"match": "a", "value": None}]),
            "config_files[0].replace[0].value is text, a number",
        ),
        (
            edits(replace=[{"match": "a", "value": {"b": 1}}]),
            "config_files[0].replace[0].value is text, a number",
        ),
        (
            edits(replace=[{"match": "a", "value": math.inf}]),
            "config_files[0].replace[0].value is text, a number",
        ),
        (
            edits(replace=[{"match": "a", "value": "v" * 65537}]),
            "config_files[0].replace[0].value has at most 65536 characters.",
        ),
        (
            edits(replace=[{"match": "a", "value": 1, "if_value": 25565}]),
            "config_files[0].replace[0].if_value is text.",
        ),
    ],
)
def test_each_mistake_is_named_and_the_agent_refuses_it_too(config_files, expected):
    found = config_files_problems(config_files)
    assert len(found) == 1 and found[0].startswith(expected), found
    assert agent_refuses(config_files)


@pytest.mark.parametrize(
    "path",
    ["", "/etc/passwd", "..", "../x", "a/../../x", "a/..", "./x", "a//b", "a/", "a\nb", 5, None],
)
def test_a_path_out_of_the_servers_folder_is_refused(path):
    found = config_files_problems(edits(file=path))
    assert found == [
        "config_files[0].file is a relative path inside the server's folder (no leading /, "
        "no .., at most 1024 characters)."
    ]
    assert agent_refuses(edits(file=path))


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_the_install_shell_is_sh_or_bash(shell):
    assert template_problems({**TEMPLATE, "install_shell": shell}, set()) == []
    template = copy.deepcopy(TEMPLATE) | {"install_shell": shell}
    spec = gameserver_spec("srv_x", 25565, **template)
    assert parse_spec(spec, server_id="srv_x").template.install_shell == shell


@pytest.mark.parametrize("shell", ["zsh", "/bin/bash", "", None, ["bash"]])
def test_another_install_shell_is_refused(shell):
    assert template_problems({**TEMPLATE, "install_shell": shell}, set()) == [
        "install_shell is one of sh, bash."
    ]


def test_a_manifest_carries_config_files_as_tables_and_the_shell_as_text(tmp_path):
    extra = (
        'install_shell = "bash"\n'
        "\n[[template.config_files]]\n"
        'file = "server.properties"\nparser = "properties"\n'
        "[[template.config_files.replace]]\n"
        'match = "server-port"\nvalue = "{{SERVER_PORT}}"\n'
        "[[template.config_files.replace]]\n"
        'match = "max-players"\nvalue = 20\nif_value = "10"\n'
    )
    manifest = MANIFEST.replace(
        "\n[template.backup_commands]", extra + "\n[template.backup_commands]"
    )
    entry = load_game(game(tmp_path, manifest))
    assert entry["template"]["install_shell"] == "bash"
    assert entry["template"]["config_files"] == [
        {
            "file": "server.properties",
            "parser": "properties",
            "replace": [
                {"match": "server-port", "value": "{{SERVER_PORT}}"},
                {"match": "max-players", "value": 20, "if_value": "10"},
            ],
        }
    ]

    wrong = manifest.replace('parser = "properties"', 'parser = "toml"')
    other = game(tmp_path, wrong.replace('slug = "a-game"', 'slug = "b-game"'), slug="b-game")
    assert problems(other) == [
        "template: config_files[0].parser is one of properties, yaml, json, ini, xml, file."
    ]

"""The spec's JSON Schema (agent/spec.schema.json) and the agent's own reading of a spec
(agent/spec.py) agree: what one accepts the other accepts, what one refuses the other refuses.

The agent checks a spec by hand (the schema would cost it jsonschema and its Rust extension on
every node), so this is what keeps the two from drifting: a table of each field's edge cases,
then hypothesis putting arbitrary JSON in every field. Where they knowingly differ, the cases are
listed once, in ``known_difference``, each with why.
"""

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.errors import ValidationFailed
from agent.spec import parse_spec
from tests.agent.schema import schema_errors

SERVER_ID = "srv_TestServer0000000000001"
MISSING = object()  # a field left out of the spec

SERVER_SPEC: dict[str, Any] = {
    "id": SERVER_ID,
    "kind": "server",
    "template": {
        "install_script": "echo installing",
        "start_command": "python3 {{AGENT_WORKLOADS}}/gameserver.py --port {{SERVER_PORT}}",
        "ready_pattern": r"Server ready on",
        "stop_command": "stop",
        "stop_signal": "SIGTERM",
        "stop_timeout_seconds": 5,
        "ready_timeout_seconds": 20,
    },
    "variables": {"MOTD": "hello", "MAX_PLAYERS": "20"},
    "environment": {},
    "limits": {"memory_mb": 256, "cpu_percent": 100, "disk_mb": 200, "pids": 64},
    "allocation": {"ip": "127.0.0.1", "port": 25565},
    "runtime": None,
    "source": None,
}
BOT_SPEC: dict[str, Any] = {
    **SERVER_SPEC,
    "kind": "bot",
    "template": {"start_command": "python bot.py", "ready_pattern": ""},
    "variables": {},
    "environment": {"DISCORD_TOKEN": "secret", "PREFIX": "!"},
    "allocation": None,
    "runtime": "python-3.13",
    "source": {"type": "git", "url": "https://example.com/bot.git", "ref": "main"},
}


def with_value(spec: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``spec`` with the field at ``path`` (dotted) set to ``value``, or removed (MISSING)."""
    changed = copy.deepcopy(spec)
    *parents, name = path.split(".")
    target = changed
    for parent in parents:
        target = target[parent]
    if value is MISSING:
        target.pop(name, None)
    else:
        target[name] = value
    return changed


def agent_accepts(spec: Any) -> bool:
    server_id = spec.get("id") if isinstance(spec, dict) else None
    try:
        parse_spec(spec, server_id=server_id if isinstance(server_id, str) else SERVER_ID)
    except ValidationFailed:
        return False
    return True


def known_difference(path: str, value: Any) -> str | None:
    """Why the agent and the schema may differ on ``value`` at ``path`` (None: they may not)."""
    if path == "allocation.ip" and isinstance(value, str) and "%" in value:
        return "the agent takes a scoped IPv6 address; the schema's ipv6 format does not"
    if path.startswith("limits.") and value is False:
        return "the agent reads false as 0 (no limit)"
    if path == "source.ref" and not value and value not in (None, ""):
        return "the agent reads any empty value as no ref"
    integral = isinstance(value, float) and value.is_integer()
    if integral and (path.startswith("limits.") or path == "allocation.port"):
        return "JSON Schema's integer is any integral number; the agent's has no fraction"
    if isinstance(value, float) and math.isnan(value):
        return "NaN is not JSON"
    if isinstance(value, float) and math.isinf(value) and path.endswith(".value"):
        return "an infinite number is not JSON, and JSON Schema's number takes it"
    return None


def has_known_difference(path: str, value: Any) -> bool:
    """Whether ``value`` at ``path``, or a field inside it, is a known difference."""
    if known_difference(path, value):
        return True
    if isinstance(value, dict):
        return any(has_known_difference(f"{path}.{key}", inner) for key, inner in value.items())
    if isinstance(value, list):
        return any(has_known_difference(path, inner) for inner in value)
    return False


def assert_agree(spec: dict[str, Any], path: str, value: Any) -> None:
    changed = with_value(spec, path, value)
    errors = schema_errors(changed)
    accepted = agent_accepts(changed)
    if not has_known_difference(path, value):
        assert accepted == (not errors), (
            f"{path} = {value!r}: agent {'accepts' if accepted else 'refuses'}, schema says "
            f"{errors or 'valid'}"
        )


def test_the_example_specs_are_valid_for_both():
    for spec in (SERVER_SPEC, BOT_SPEC):
        assert schema_errors(spec) == []
        assert agent_accepts(spec)


def edits(*replace: dict[str, Any]) -> list[dict[str, Any]]:
    """A template's config_files: one JSON file with ``replace``."""
    return [{"file": "x", "parser": "json", "replace": list(replace)}]


# Per field: values both must accept, values both must refuse.
CASES: dict[str, tuple[list[Any], list[Any]]] = {
    "id": ([MISSING, SERVER_ID, "a", "A-b_c" + "x" * 59], ["", "-a", "a" * 65, "a b", None, 5]),
    "kind": ([MISSING, "server", "bot"], ["", "Server", None, 1, "game"]),
    "template": ([{"start_command": "x"}], [MISSING, None, [], "x", {}]),
    "template.start_command": (
        ["x", " run ", "a" * 65536],
        [MISSING, None, "", "  \n\t", 5, ["x"], "a" * 65537],
    ),
    "template.install_script": ([MISSING, None, "", "#!/bin/sh\necho hi"], [5, False, [], {}]),
    "template.stop_command": ([MISSING, None, "", "stop"], [1.5, True, "a" * 65537]),
    "template.ready_pattern": (
        [MISSING, None, "", r"Done \(\d+\.\d+s\)!", "(?i)ready"],
        ["(", "[a-", "*", 7, ["x"]],
    ),
    "template.stop_signal": (
        [
            MISSING,
            None,
            "",
            "SIGTERM",
            "term",
            "SigInt",
            "usr1",
            "SIGKILL",
            "hup",
            "\u017f\u0131gquit",
        ],
        ["SIGSTOP", "TERM\n", "SIG", "SIGTERM ", "15", 15, True, "sig-term"],
    ),
    "template.stop_timeout_seconds": (
        [MISSING, None, 0.001, 1, 30, 86400, 86399.5],
        [0, -1, 86400.5, "30", True, False, [], float("inf")],
    ),
    "template.ready_timeout_seconds": ([MISSING, None, 120], [0, "120", True, -0.0]),
    "template.install_shell": ([MISSING, None, "sh", "bash"], ["", "zsh", "Bash", "/bin/bash", 1]),
    "template.config_files": (
        [
            MISSING,
            None,
            [],
            [{"file": "server.properties", "parser": "properties", "replace": []}],
            [
                {
                    "file": "config/a..b/..c/x.yml",
                    "parser": "yaml",
                    "replace": [
                        {"match": "servers.*.address", "value": "0.0.0.0:{{SERVER_PORT}}"},
                        {"match": "a", "value": 5, "if_value": "4"},
                        {"match": "b", "value": 1.5, "if_value": None},
                        {"match": "c", "value": False},
                    ],
                }
            ],
            [{"file": "a" * 1024, "parser": "file", "replace": []}],
            [{"file": "x", "parser": "xml", "replace": [{"match": "m", "value": "v" * 65536}]}],
            [{"file": "x", "parser": "ini", "replace": []}] * 32,
        ],
        [
            {},
            "server.properties",
            [{"file": "x", "parser": "toml", "replace": []}],
            [{"file": "x", "parser": "json"}],
            [{"file": "x", "parser": "json", "replace": [], "extra": 1}],
            edits({"match": "", "value": "v"}),
            edits({"match": "a"}),
            edits({"match": "a", "value": None}),
            edits({"match": "a", "value": [1]}),
            edits({"match": "a", "value": "", "x": 1}),
            edits({"match": "a", "value": 1, "if_value": 1}),
            edits({"match": "a" * 1025, "value": 1}),
            edits(*[{"match": "a", "value": 1}] * 101),
            [{"file": "x", "parser": "ini", "replace": []}] * 33,
            *(
                [{"file": path, "parser": "file", "replace": []}]
                for path in (
                    "",
                    "/etc/passwd",
                    "..",
                    "../x",
                    "a/../../x",
                    "a/..",
                    "./x",
                    "a//b",
                    "a/",
                    "a\nb",
                    "x\n",
                    "a\x00",
                    "a" * 1025,
                    5,
                )
            ),
        ],
    ),
    "variables": (
        [MISSING, None, {}, {"A": "1", "_b": 2, "c9": 1.5, "EULA": "true"}, {"A" * 128: ""}],
        [
            [],
            "A=1",
            {"1A": "x"},
            {"A-B": "x"},
            {"A": None},
            {"A": True},
            {"A": "x\0y"},
            {"A": ["x"]},
            {"A" * 129: ""},
            {"": "x"},
            {"A B": "x"},
        ],
    ),
    "environment": (
        [MISSING, None, {"DISCORD_TOKEN": "t"}, {"N": 0}],
        [{"N": False}, {"é": "x"}, {"A": {}}, 5],
    ),
    "limits": ([MISSING, None, {}, {"memory_mb": 0}], [[], 5, "none"]),
    "limits.memory_mb": ([MISSING, None, 0, 1, 65536, 2**40], [-1, "256", True, 1.5, []]),
    "limits.pids": ([MISSING, None, 0, 1024], [-5, "x"]),
    "allocation": ([MISSING, None], [[], "127.0.0.1:25565", {}, {"ip": "127.0.0.1"}]),
    "allocation.ip": (
        ["127.0.0.1", "10.0.0.0", "::1", "2001:db8::7", "::ffff:127.0.0.1"],
        [
            MISSING,
            None,
            "",
            "localhost",
            "127.0.0.256",
            "127.0.0.01",
            "[::1]",
            "1.2.3.4/32",
            [],
            2130706433,
        ],
    ),
    "allocation.port": (
        [1, 25565, 65535],
        [MISSING, None, 0, 65536, -1, "25565", True, 25565.5],
    ),
    "runtime": ([MISSING, None, "python-3.13", "x"], ["", 3, True, []]),
    "source": (
        [
            MISSING,
            None,
            {"type": "git", "url": "file:///srv/repo"},
            {"type": "git", "url": "ssh://git@example.com/r.git", "ref": None},
            {"type": "archive", "url": "https://example.com/code.tar.gz"},
            {"type": "archive", "url": "/v1/agent/bots/bot_1/source"},
        ],
        [
            {},
            [],
            {"type": "git"},
            {"type": "svn", "url": "https://example.com/r"},
            {"type": "git", "url": ""},
            {"type": "git", "url": "/v1/agent/bots/bot_1/source"},
            {"type": "archive", "url": "file:///etc/passwd"},
            {"type": "archive", "url": "ftp://example.com/code.zip"},
            {"type": "git", "url": "ext::sh -c touch% /tmp/pwned"},
            {"type": None, "url": "https://example.com/r.git"},
            {"type": "git", "url": 5},
        ],
    ),
    "source.ref": (
        [MISSING, None, "", "main", "v1.2.3", "feature/x_y-z", "a" * 200],
        ["-main", "--upload-pack=sh", "a b", "\n", "a" * 201, ".hidden", 5, True, ["main"]],
    ),
}


@pytest.mark.parametrize("path", sorted(CASES))
def test_the_schema_and_the_agent_agree_on_each_fields_edge_cases(path):
    spec = BOT_SPEC if path.startswith("source") or path == "runtime" else SERVER_SPEC
    accept, refuse = CASES[path]
    for value in accept:
        assert schema_errors(with_value(spec, path, value)) == [], (path, value)
        assert agent_accepts(with_value(spec, path, value)), (path, value)
    for value in refuse:
        assert schema_errors(with_value(spec, path, value)) != [], (path, value)
        assert not agent_accepts(with_value(spec, path, value)), (path, value)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("allocation.ip", "fe80::1%eth0"),
        ("limits.memory_mb", False),
        ("source.ref", 0),
        ("limits.disk_mb", 1024.0),
        ("allocation.port", 25565.0),
        (
            "template.config_files",
            edits({"match": "a", "value": math.inf}),
        ),
    ],
)
def test_the_known_differences_are_still_differences(path, value):
    """Each listed difference is real: when one is closed, its exception goes too."""
    spec = BOT_SPEC if path.startswith("source") else SERVER_SPEC
    changed = with_value(spec, path, value)
    assert has_known_difference(path, value)
    assert agent_accepts(changed) == bool(schema_errors(changed))


def test_the_whole_spec_must_be_an_object():
    for value in (None, [], "spec", 5):
        assert schema_errors(value) != []
        assert not agent_accepts(value)


def test_unknown_fields_are_ignored_by_both():
    """The contract's rule (clients ignore unknown fields), and sync's items carry "desired"."""
    spec = {**SERVER_SPEC, "desired": "running", "future": {"x": 1}}
    spec["template"] = {**spec["template"], "new_option": True}
    assert schema_errors(spec) == []
    assert agent_accepts(spec)


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)
# What each kind of field is made of, so that arbitrary values come near its edges too.
TOKENS = {
    "template.stop_signal": [
        "SIG",
        "sig",
        "\u017f\u0131g",
        "term",
        "TERM",
        "Int",
        "usr",
        "1",
        "2",
        "kill",
        "hup",
        "quit",
        "\u0131",
        "\u017f",
        "\n",
        " ",
    ],
    "allocation": ["127.0.0.1", "::1", "fe80::1", "%", ".", ":", "0", "1", "256", "/", "[", " "],
    "source": [
        "https://",
        "git://",
        "file://",
        "/v1/agent/",
        "ftp://",
        "-",
        ".",
        "/",
        "_",
        "a",
        " ",
        "\n",
    ],
    "template": ["(", ")", "\\d", "[", "*", "?", "a", " ", "\n", "\t", "{{", "}}"],
    "": ["A", "a", "_", "9", "-", " ", "\0", "\n", "\u00e9", "srv_", "x" * 64],
}


def near_misses(path: str) -> st.SearchStrategy[str]:
    prefix = next(prefix for prefix in TOKENS if path.startswith(prefix))
    return st.lists(st.sampled_from(TOKENS[prefix] + TOKENS[""]), max_size=5).map("".join)


def field_values(path: str) -> st.SearchStrategy[Any]:
    strings = near_misses(path)
    return st.one_of(
        strings,
        strings,
        JSON_VALUES,
        st.just(MISSING),
        st.dictionaries(strings, JSON_SCALARS | strings, max_size=3),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["git", "archive", "zip"]), "url": strings},
            optional={"ref": strings | JSON_SCALARS},
        ),
        st.fixed_dictionaries(
            {"ip": strings | JSON_SCALARS, "port": st.integers(-2, 70000) | JSON_SCALARS}
        ),
    )


@pytest.mark.parametrize("path", sorted(CASES))
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # "[[" as a pattern
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_schema_and_the_agent_agree_on_any_value_of_any_field(path, data):
    spec = BOT_SPEC if path.startswith("source") or path == "runtime" else SERVER_SPEC
    assert_agree(spec, path, data.draw(field_values(path), label=path))

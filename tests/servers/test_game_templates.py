"""The game templates (servers.game_templates): one for every game of the catalogue, with sound
POSIX sh, known placeholders, ready patterns that match what the servers really print, and
variables the catalogue's validation accepts.

The install scripts and start commands are also run, with the network and the game servers
replaced by stand-ins on PATH (curl serving local fixtures, a SteamCMD that records its
arguments, a program per server that records how it was started): no test here downloads
anything.
"""

import contextlib
import hashlib
import importlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from servers.catalogue import (
    CATALOGUE_DIR,
    SHARED_DIR,
    TEMPLATE_FIELDS,
    load_catalogue,
    template_for,
)
from servers.game_checks import port_built_ins
from servers.game_templates import BUILT_INS, TEMPLATE_KEYS

GAMES = importlib.import_module("servers.migrations.0002_seed_game_catalogue").GAMES
LIFECYCLE = importlib.import_module("servers.migrations.0003_lifecycle")
CATALOGUE = {slug: (name, port) for slug, name, port in GAMES}
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
SH = "/bin/sh"
TEMPLATES = load_catalogue()
ALL_SLUGS = sorted(TEMPLATES)

# What each server prints once it is ready (and the test workload's), as they print it.
READY_LINES = {
    "minecraft-java": [
        '[14:02:07] [Server thread/INFO]: Done (4.213s)! For help, type "help"',
    ],
    "minecraft-bedrock": ["[2025-01-12 10:31:52:118 INFO] Server started."],
    "rust": ["Server startup complete"],
    "valheim": [
        "01/12/2025 10:33:01: Game server connected",
        "01/12/2025 10:32:55: DungeonDB Start 1736678000",
    ],
    "counter-strike-2": [
        "SV:  Connection to Steam servers successful.",
        "Assigned anonymous gameserver Steam ID [A:1:3051232261:33079].",
    ],
    "terraria": ["Server started"],
    "ark-survival-evolved": [
        '[2025.01.12-10.40.01:123][  0]2025.01.12_10.40.01: Server: "An ARK server" has '
        "successfully started!",
        "[2025.01.12-10.40.01:124][  0]Full Startup: 187.42 seconds (BP compile: 0.00 seconds)",
    ],
    "ark-survival-ascended": [
        "[2025.01.12-10.41.09:331][  0]Server has completed startup and is now advertising for "
        "join.",
    ],
    "palworld": ["Running Palworld dedicated server on :8211"],
    "garrys-mod": ["Assigned anonymous gameserver Steam ID [A:1:2806484993:32391]."],
    "factorio": [
        "   3.512 Info ServerMultiplayerManager.cpp:797: Hosting game at IP ADDR:({0.0.0.0:34197})"
    ],
    "7-days-to-die": ["2025-01-12T10:45:12 61.204 INF StartGame done"],
    "project-zomboid": [
        "LOG  : General     , 1736678760123> 15,273,118> *** SERVER STARTED ****.",
    ],
    "satisfactory": [
        "[2025.01.12-10.47.03:552][  0]LogServer: Display: Server startup time elapsed and "
        "saving/level loading is done",
    ],
    "enshrouded": [
        "[Session] 'HostOnline' (up)!",
        "[Session] finished transition from 'Host_Starting' to 'Host_Online' "
        "(current='Host_Online')!",
    ],
    "team-fortress-2": ["Connection to Steam servers successful."],
    "v-rising": ["[Server] Startup Completed - Disabling Scene Loading Systems"],
    "conan-exiles": [
        "[2025.01.12-10.52.44:801][  3]LogServerStats: Sending report: exe=4, cpu=12.52",
    ],
    "dont-starve-together": [
        "[00:01:03]: Sim paused",
        "[00:01:08]: Registering master server in EU lobby",
    ],
    "unturned": ["Loading level: 100%"],
    "space-engineers": [
        "2025-01-12 10:55:31.114 - Thread:   1 ->  Game ready... ",
    ],
    "arma-3": ["10:57:02 Host identity created."],
    "dayz": ["10:58:40 Mission read."],
    "starbound": [
        "[10:59:12.004] [Info] UniverseServer: listening for incoming TCP connections on "
        "0.0.0.0:21025",
    ],
    "test-workload": ["Server ready on 127.0.0.1:27960"],
}

# Lines every server prints on its way up, which no ready pattern may take for readiness.
NOT_READY_LINES = [
    "",
    "Loading Steam API...OK",
    "[S_API FAIL] SteamAPI_Init() failed; SteamAPI_IsSteamRunning() failed.",
    " Update state (0x61) downloading, progress: 10.85 (199802015 / 1841403368)",
    "[14:01:59] [Server thread/INFO]: Starting minecraft server version 1.21.4",
    '[14:02:01] [Server thread/INFO]: Preparing level "world"',
    "Starting the server...",
    "[Session] started transition from 'Host_Starting' to 'Host_Online'",
]

# The dedicated servers' Steam app ids, as Valve lists them (steamdb.info).
STEAM_APP_IDS = {
    "rust": 258550,
    "valheim": 896660,
    "counter-strike-2": 730,
    "ark-survival-evolved": 376030,
    "ark-survival-ascended": 2430930,
    "palworld": 2394010,
    "garrys-mod": 4020,
    "7-days-to-die": 294420,
    "project-zomboid": 380870,
    "satisfactory": 1690800,
    "enshrouded": 2278520,
    "team-fortress-2": 232250,
    "v-rising": 1829350,
    "conan-exiles": 443030,
    "dont-starve-together": 343050,
    "unturned": 1110390,
    "space-engineers": 298740,
    "arma-3": 233780,
    "dayz": 223350,
    "starbound": 211820,
}
WINDOWS_ONLY = {
    "ark-survival-ascended",
    "enshrouded",
    "v-rising",
    "conan-exiles",
    "space-engineers",
}
NEEDS_STEAM_ACCOUNT = {"arma-3", "dayz", "starbound"}

# The program each start command ends up running (for Wine and interpreters: and what).
SERVER_PROGRAMS = {
    "minecraft-java": ("java", "-Xms128M"),
    "minecraft-bedrock": ("bedrock_server", None),
    "rust": ("RustDedicated", None),
    "valheim": ("valheim_server.x86_64", None),
    "counter-strike-2": ("cs2", None),
    "terraria": ("TerrariaServer.bin.x86_64", None),
    "ark-survival-evolved": ("ShooterGameServer", None),
    "ark-survival-ascended": ("wine", "ArkAscendedServer.exe"),
    "palworld": ("PalServer-Linux-Shipping", None),
    "garrys-mod": ("srcds_run", None),
    "factorio": ("factorio", None),
    "7-days-to-die": ("7DaysToDieServer.x86_64", None),
    "project-zomboid": ("start-server.sh", None),
    "satisfactory": ("FactoryServer-Linux-Shipping", None),
    "enshrouded": ("wine", "enshrouded_server.exe"),
    "team-fortress-2": ("srcds_run", None),
    "v-rising": ("wine", "VRisingServer.exe"),
    "conan-exiles": ("wine", "ConanSandboxServer-Win64-Shipping.exe"),
    "dont-starve-together": ("dontstarve_dedicated_server_nullrenderer_x64", None),
    "unturned": ("Unturned_Headless.x86_64", None),
    "space-engineers": ("wine", "SpaceEngineersDedicated.exe"),
    "arma-3": ("arma3server_x64", None),
    "dayz": ("DayZServer", None),
    "starbound": ("starbound_server", None),
    "test-workload": ("python3", "/opt/agent/workloads/gameserver.py"),
}

# Values a customer might type for the variables that have no default.
TYPED = {
    "STEAM_USER": "builder",
    "STEAM_PASS": "s3cret pass",
    "SERVER_PASSWORD": "hunter22",
    "ADMIN_PASSWORD": "admin-pass-1",
    "CLUSTER_TOKEN": "pds-g^KU_x1^DontStarveTogether^abc=",
}
# A name with a blank and an apostrophe, which the shell quoting must carry through whole.
NAME = "Bob's server 42"
PORT = 30123  # no game's default, so nothing can pass by having it written in


def variables_of(slug: str) -> dict:
    return {variable["key"]: variable for variable in TEMPLATES[slug]["variables"]}


def values_for(slug: str, **changes) -> dict:
    """Every variable's value: its default, else what a customer would type; then ``changes``."""
    values = {}
    for key, variable in variables_of(slug).items():
        if "must_be" in variable:
            values[key] = variable["must_be"]
        elif "default" in variable:
            values[key] = variable["default"]
        else:
            values[key] = TYPED[key]
    if "SERVER_NAME" in values:
        values["SERVER_NAME"] = NAME
    # The named ports as placement gives them on a node with the ports after PORT free.
    for position, port in enumerate(TEMPLATES[slug]["template"].get("ports", []), 1):
        values[f"PORT_{port['name'].upper()}"] = PORT + position
    values.update(changes)
    return values


def shell_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(text: str, values: dict, *, port: int = PORT) -> str:
    """Substitute as the agent does: every placeholder by its value, shell-quoted."""
    everything = {
        "SERVER_IP": "203.0.113.10",
        "SERVER_PORT": port,
        "SERVER_MEMORY": 2048,
        "SERVER_ID": "srv_0123456789abcdef",
        "AGENT_WORKLOADS": "/opt/agent/workloads",
        **values,
    }
    return PLACEHOLDER.sub(lambda match: shlex.quote(shell_value(everything[match[1]])), text)


def texts(slug: str) -> dict[str, str]:
    template = TEMPLATES[slug]["template"]
    return {
        "install_script": template["install_script"],
        "start_command": template["start_command"],
    }


def unquoted_placeholders_problems(text: str) -> list[str]:
    """Where a placeholder is not a whole shell word, or the text's quoting does not close.

    A small reader of sh quoting: quotes, backslashes, comments, $(…) and $((…)) (a
    shell-quoted value inside quotes or arithmetic would keep its quotes).
    """
    problems = []
    stack = ["plain"]
    i = 0
    while i < len(text):
        top = stack[-1]
        char = text[i]
        rest = text[i:]
        if rest.startswith("{{"):
            if top not in ("plain", "command"):
                line = text.count("\n", 0, i) + 1
                problems.append(f"line {line}: placeholder inside {top}")
            i += 2
            continue
        if top == "single":
            if char == "'":
                stack.pop()
            i += 1
            continue
        if char == "\\":
            i += 2
            continue
        if rest.startswith("$(("):
            stack.append("arithmetic")
            i += 3
            continue
        if rest.startswith("$("):
            stack.append("command")
            i += 2
            continue
        if top == "double":
            if char == '"':
                stack.pop()
            i += 1
            continue
        if top == "arithmetic" and rest.startswith("))"):
            stack.pop()
            i += 2
            continue
        if top == "command" and char == ")":
            stack.pop()
        elif char == "'":
            stack.append("single")
        elif char == '"':
            stack.append("double")
        elif rest.startswith("<<"):
            problems.append("a here-document: placeholders in it would keep their quotes")
        elif char == "#" and (i == 0 or text[i - 1] in " \t\n;"):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        i += 1
    if stack != ["plain"]:
        problems.append(f"unclosed {stack[1:]}")
    return problems


# --- The catalogue ---------------------------------------------------------------------------


def test_every_catalogue_game_has_a_template_with_its_name_and_port():
    assert set(CATALOGUE) <= set(TEMPLATES)
    for slug, (name, port) in CATALOGUE.items():
        assert TEMPLATES[slug]["name"] == name, slug
        assert TEMPLATES[slug]["default_port"] == port, slug


def test_the_only_extra_template_is_the_test_workload():
    assert set(TEMPLATES) - set(CATALOGUE) == {"test-workload"}
    workload = TEMPLATES["test-workload"]
    assert (workload["name"], workload["default_port"]) == ("Test workload (TCP)", 27960)
    template = workload["template"]
    assert template["start_command"] == (
        "python3 {{AGENT_WORKLOADS}}/gameserver.py --host {{SERVER_IP}} --port {{SERVER_PORT}}"
        " --ready-delay {{READY_DELAY}}"
    )
    assert (template["ready_pattern"], template["stop_command"]) == ("Server ready on", "stop")
    delay = variables_of("test-workload")["READY_DELAY"]
    assert (delay["type"], delay["default"], delay["min"], delay["max"]) == ("integer", 0, 0, 60)
    assert variables_of("test-workload")["MOTD"]["type"] == "string"


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_an_entry_has_its_fields_and_the_template_every_key(slug):
    entry = TEMPLATES[slug]
    assert set(entry) == {"name", "default_port", "template", "variables"}
    template = entry["template"]
    required = {key for key, (_, needed) in TEMPLATE_FIELDS.items() if needed}
    assert required <= set(template) <= set(TEMPLATE_FIELDS)
    for key in ("install_script", "start_command", "ready_pattern", "stop_command", "stop_signal"):
        assert isinstance(template[key], str), key
    for key in ("stop_timeout_seconds", "ready_timeout_seconds"):
        assert type(template[key]) is int, key
    assert template["start_command"].strip()
    assert template["install_script"].startswith("#!/bin/sh\n")
    assert "set -eu" in template["install_script"]


def test_template_keys_are_the_protocols():
    assert {
        "install_script",
        "start_command",
        "ready_pattern",
        "stop_command",
        "stop_signal",
        "stop_timeout_seconds",
        "ready_timeout_seconds",
        "backup_commands",  # the control plane's: sent in the backup call, not in the spec
    } == TEMPLATE_KEYS


def test_template_for_reads_a_game_afresh_and_none_for_an_unknown_game():
    entry = template_for("minecraft-java")
    assert entry == TEMPLATES["minecraft-java"]
    entry["template"]["stop_command"] = "changed"
    entry["variables"].clear()
    assert template_for("minecraft-java")["template"]["stop_command"] == "stop"
    assert template_for("minecraft-java")["variables"]
    assert template_for("no-such-game") is None
    assert template_for("../catalogue") is None
    assert template_for("") is None


def test_every_game_folder_is_a_game_with_a_manifest_and_its_scripts():
    folders = sorted(path.name for path in CATALOGUE_DIR.iterdir() if path.is_dir())
    assert folders == sorted([*ALL_SLUGS, SHARED_DIR])  # _shared/: the pieces scripts include
    folders.remove(SHARED_DIR)
    for slug in folders:
        files = sorted(path.name for path in (CATALOGUE_DIR / slug).iterdir())
        assert files == ["game.toml", "install.sh", "start.sh"], slug


@pytest.mark.parametrize(
    "module", ["servers.game_templates", "servers.catalogue", "servers.game_checks"]
)
def test_the_catalogue_modules_import_only_the_standard_library(module):
    importlib.import_module(module)
    source = Path(sys.modules[module].__file__).read_text()
    imported = set(re.findall(r"^(?:import|from) (\w+)", source, re.MULTILINE))
    assert imported - {"servers"} <= set(sys.stdlib_module_names)


# --- Shell ------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_install_scripts_and_start_commands_pass_sh_n(slug):
    for kind, text in texts(slug).items():
        for source in (text, render(text, values_for(slug))):
            result = subprocess.run(  # noqa: S603 - /bin/sh checking our own scripts
                [SH, "-n"], input=source, capture_output=True, text=True, check=False
            )
            assert result.returncode == 0, f"{slug} {kind}: {result.stderr}"


def test_sh_n_catches_a_broken_script():
    """The check above can fail: sh -n refuses an unclosed if."""
    result = subprocess.run(  # noqa: S603
        [SH, "-n"], input="if true; then\n  echo\n", capture_output=True, text=True, check=False
    )
    assert result.returncode != 0


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_placeholders_are_built_ins_or_the_games_variables(slug):
    template = TEMPLATES[slug]["template"]
    known = BUILT_INS | set(variables_of(slug)) | port_built_ins(template.get("ports", []))
    for key, text in template.items():
        if not isinstance(text, str):
            continue
        used = PLACEHOLDER.findall(text)
        assert set(used) <= known, f"{slug} {key}: unknown {set(used) - known}"
        assert text.count("{{") == len(used), f"{slug} {key}: a malformed placeholder"


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_every_variable_is_used_by_the_template(slug):
    used = set()
    for text in texts(slug).values():
        used |= set(PLACEHOLDER.findall(text))
    unused = set(variables_of(slug)) - used
    if slug == "satisfactory":  # the catalogue's SERVER_NAME: the name is set when claimed
        unused -= {"SERVER_NAME"}
    assert not unused, f"{slug}: {unused} never reach the server"


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_placeholders_stand_as_whole_shell_words(slug):
    for kind, text in texts(slug).items():
        assert unquoted_placeholders_problems(text) == [], f"{slug} {kind}"


@pytest.mark.parametrize(
    "text",
    [
        'echo "name={{SERVER_NAME}}"',
        "echo 'name={{SERVER_NAME}}'",
        "echo $(({{SERVER_PORT}} + 1))",
        "cat <<EOF\nname={{SERVER_NAME}}\nEOF",
        "echo 'unclosed",
    ],
)
def test_the_quoting_reader_finds_placeholders_in_quotes(text):
    assert unquoted_placeholders_problems(text)


def test_the_quoting_reader_accepts_words_assignments_and_comments():
    text = (
        '# the server\'s name\nname={{SERVER_NAME}}\necho "$(printf \'%s\' "$name")" '
        '-port={{SERVER_PORT}} "$((port + 1))"\ncase {{MODE}} in a) x=1 ;; esac\n'
    )
    assert unquoted_placeholders_problems(text) == []


# --- Ready patterns, stopping -------------------------------------------------------------------


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_the_ready_pattern_matches_the_servers_ready_line(slug):
    pattern = re.compile(TEMPLATES[slug]["template"]["ready_pattern"])
    assert READY_LINES[slug], slug
    for line in READY_LINES[slug]:
        assert pattern.search(line), f"{slug}: {line!r}"
    for line in NOT_READY_LINES:
        assert not pattern.search(line), f"{slug} would be ready at {line!r}"


def test_every_template_has_sample_ready_lines():
    assert set(READY_LINES) == set(TEMPLATES)


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_stopping_and_readiness_limits(slug):
    template = TEMPLATES[slug]["template"]
    assert 5 <= template["stop_timeout_seconds"] <= 600
    assert 10 <= template["ready_timeout_seconds"] <= 1800
    # The signals the agent accepts (agent/PROTOCOL.md, its spec's STOP_SIGNALS), but SIGKILL.
    assert template["stop_signal"] in {"SIGINT", "SIGTERM", "SIGQUIT", "SIGHUP", "SIGUSR1"}
    assert "\n" not in template["stop_command"]
    assert template["stop_command"] == template["stop_command"].strip()


def test_console_games_stop_with_their_command():
    commands = {slug: entry["template"]["stop_command"] for slug, entry in TEMPLATES.items()}
    assert commands["minecraft-java"] == "stop"
    assert commands["minecraft-bedrock"] == "stop"
    assert commands["counter-strike-2"] == "quit"
    assert commands["terraria"] == "exit"
    assert commands["factorio"] == "/quit"
    assert commands["dont-starve-together"].startswith("c_shutdown(")
    # Servers without a console on standard input are stopped by a signal they save on.
    assert commands["rust"] == "" and TEMPLATES["rust"]["template"]["stop_signal"] == "SIGINT"


# --- Variables ------------------------------------------------------------------------------

FIELDS = {
    "key",
    "name",
    "type",
    "default",
    "required",
    "min",
    "max",
    "choices",
    "must_be",
    "min_length",
    "max_length",
}


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_variables_are_well_formed(slug):
    keys = [variable["key"] for variable in TEMPLATES[slug]["variables"]]
    assert len(keys) == len(set(keys)), f"{slug}: a key twice"
    for variable in TEMPLATES[slug]["variables"]:
        where = f"{slug} {variable.get('key')}"
        assert set(variable) <= FIELDS, where
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", variable["key"]), where
        assert variable["key"] not in BUILT_INS, where
        assert isinstance(variable["name"], str) and variable["name"].strip(), where
        kind = variable["type"]
        assert kind in {"string", "integer", "boolean", "enum"}, where
        # Every placeholder needs a value: a default, or one the customer must give.
        assert "default" in variable or variable.get("required"), where
        default = variable.get("default")
        if kind == "integer":
            low, high = variable["min"], variable["max"]
            assert all(type(v) is int for v in (low, high, default)), where
            assert low <= default <= high, where
        elif kind == "string":
            low = variable.get("min_length", 0)
            high = variable.get("max_length", 255)
            assert 0 <= low <= high <= 255, where
            if "default" in variable:
                assert isinstance(default, str) and low <= len(default) <= high, where
        elif kind == "enum":
            choices = variable["choices"]
            assert choices and len(choices) == len(set(choices)), where
            assert all(isinstance(choice, str) for choice in choices), where
            assert default in choices, where
        elif kind == "boolean" and "default" in variable:
            assert type(default) is bool, where
        if "must_be" in variable:
            assert variable.get("default", variable["must_be"]) == variable["must_be"], where
        if kind != "integer":
            assert "min" not in variable and "max" not in variable, where


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_the_catalogues_validation_accepts_the_defaults(slug):
    from servers.models import Game
    from servers.services.validation import validate_variables

    game = Game(slug=slug, name=TEMPLATES[slug]["name"], variables=TEMPLATES[slug]["variables"])
    typed = {
        key: value
        for key, value in values_for(slug).items()
        if key in variables_of(slug) and "default" not in variables_of(slug)[key]
    }
    cleaned = validate_variables(game, typed)
    assert set(cleaned) == set(variables_of(slug)), "every variable gets a value"


@pytest.mark.parametrize(
    ("slug", "key", "value"),
    [
        ("minecraft-java", "EULA", False),
        ("rust", "WORLD_SIZE", 999),
        ("valheim", "SERVER_PASSWORD", "abcd"),
        ("counter-strike-2", "GAME_MODE", "hide_and_seek"),
        ("test-workload", "READY_DELAY", 61),
    ],
)
def test_the_catalogues_validation_refuses_out_of_bounds_values(slug, key, value):
    from hosting.errors import ValidationFailed
    from servers.models import Game
    from servers.services.validation import validate_variables

    game = Game(slug=slug, name=TEMPLATES[slug]["name"], variables=TEMPLATES[slug]["variables"])
    with pytest.raises(ValidationFailed):
        validate_variables(game, values_for(slug, **{key: value}))


def test_the_catalogues_existing_variables_keep_their_keys_and_types():
    for slug in CATALOGUE:
        existing = LIFECYCLE.VARIABLES.get(slug, [LIFECYCLE.MAX_PLAYERS, LIFECYCLE.SERVER_NAME])
        ours = variables_of(slug)
        for variable in existing:
            assert variable["key"] in ours, f"{slug} lost {variable['key']}"
            assert ours[variable["key"]]["type"] == variable["type"], f"{slug} {variable['key']}"
            if "must_be" in variable:
                assert ours[variable["key"]]["must_be"] == variable["must_be"]


def test_minecraft_java_asks_for_the_eula_and_a_version():
    variables = variables_of("minecraft-java")
    assert variables["EULA"]["must_be"] is True and variables["EULA"]["required"]
    assert variables["VERSION"]["default"] == "latest"
    template = TEMPLATES["minecraft-java"]["template"]
    assert "piston-meta.mojang.com" in template["install_script"]
    assert template["start_command"].endswith(
        "exec java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar server.jar nogui"
    )


@pytest.mark.parametrize("slug", sorted(NEEDS_STEAM_ACCOUNT))
def test_games_that_need_a_steam_account_ask_for_it(slug):
    variables = variables_of(slug)
    assert variables["STEAM_USER"].get("required") and variables["STEAM_PASS"].get("required")


# --- Running the scripts against stand-ins ----------------------------------------------------

FAKE_CURL = """#!{python}
import json, os, sys
args, out, url, i = sys.argv[1:], None, None, 0
while i < len(args):
    if args[i] in ("-o", "-A", "-H"):
        if args[i] == "-o":
            out = args[i + 1]
        i += 2
        continue
    if args[i].startswith("http"):
        url = args[i]
    i += 1
with open(os.environ["FAKE_CURL_LOG"], "a") as log:
    log.write(url + "\\n")
with open(os.environ["FAKE_CURL_MAP"]) as mapping_file:
    mapping = json.load(mapping_file)
if url not in mapping:
    sys.stderr.write("curl: (22) The requested URL returned error: 404\\n")
    sys.exit(22)
with open(mapping[url], "rb") as fixture:
    data = fixture.read()
if out:
    with open(out, "wb") as target:
        target.write(data)
else:
    sys.stdout.buffer.write(data)
"""

# SteamCMD: records its arguments, installs the app's manifest (unless told not to).
FAKE_STEAMCMD = """#!/bin/sh
printf '%s\\0' "$@" >> "$STEAM_LOG"
printf 'END\\0' >> "$STEAM_LOG"
dir= app=
while [ $# -gt 0 ]; do
    case "$1" in
        +force_install_dir) dir=$2; shift ;;
        +app_update) app=$2; shift ;;
    esac
    shift
done
if [ -n "${FAKE_STEAM_EXIT:-}" ]; then exit "$FAKE_STEAM_EXIT"; fi
if [ -z "${FAKE_STEAM_NO_MANIFEST:-}" ]; then
    mkdir -p "$dir/steamapps"
    : > "$dir/steamapps/appmanifest_$app.acf"
fi
"""

# A game server (or wine, java, python3): records how it was started, then exits.
STAND_IN = """#!/bin/sh
{
    printf 'CALL\\0%s\\0' "$0"
    for arg in "$@"; do printf '%s\\0' "$arg"; done
    printf 'ENV:HOME=%s\\0ENV:WINEPREFIX=%s\\0END\\0' "${HOME:-}" "${WINEPREFIX:-}"
} >> "$STAND_IN_LOG"
"""

LOGGING_TOOL = """#!/bin/sh
printf '%s %s\\n' "$(basename "$0")" "$*" >> "$TOOLS_LOG"
"""


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def zip_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            archive.writestr(info, text)
    return buffer.getvalue()


def tar_bytes(files: dict[str, str], mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


MOJANG = "https://piston-meta.mojang.com/v1/packages"
JARS = {"1.21.4": b"release jar", "25w02a": b"snapshot jar", "1.21.41": b"decoy jar"}
BEDROCK_URL = (
    "https://www.minecraft.net/bedrockdedicatedserver/bin-linux/bedrock-server-1.21.51.02.zip"
)
TERRARIA = "https://terraria.org/api"


def jar_url(version: str) -> str:
    return f"https://piston-data.mojang.com/v1/objects/{version}/server.jar"


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> dict[str, Path]:
    """The downloads, by URL, as local files."""
    root = tmp_path_factory.mktemp("downloads")
    files: dict[str, bytes] = {}
    manifest = {
        "latest": {"release": "1.21.4", "snapshot": "25w02a"},
        "versions": [
            {
                "id": version,
                "type": "release" if "w" not in version else "snapshot",
                "url": f"{MOJANG}/{version}/{version}.json",
                "time": "2025-01-01T00:00:00+00:00",
                "sha1": "0" * 40,
                "complianceLevel": 1,
            }
            for version in ("25w02a", "1.21.41", "1.21.4")
        ],
    }
    files["https://piston-meta.mojang.com/mc/game/version_manifest_v2.json"] = json.dumps(
        manifest, indent=2
    ).encode()
    for version, jar in JARS.items():
        details = {
            "downloads": {
                "client": {"sha1": "c" * 40, "size": 1, "url": f"{MOJANG}/client.jar"},
                "server": {
                    "sha1": hashlib.sha1(jar).hexdigest(),  # noqa: S324 - Mojang's checksum
                    "size": len(jar),
                    "url": jar_url(version),
                },
                "server_mappings": {"sha1": "d" * 40, "size": 1, "url": f"{MOJANG}/m.txt"},
            },
            "id": version,
        }
        files[f"{MOJANG}/{version}/{version}.json"] = json.dumps(details, indent=4).encode()
        files[jar_url(version)] = jar
    links = {
        "result": {
            "links": [
                {"downloadType": "serverBedrockWindows", "downloadUrl": "https://x/win.zip"},
                {"downloadType": "serverBedrockLinux", "downloadUrl": BEDROCK_URL},
            ]
        }
    }
    files["https://net-secondary.web.minecraft-services.net/api/v1.0/download/links"] = json.dumps(
        links, indent=2
    ).encode()
    files[BEDROCK_URL] = zip_bytes(
        {
            "bedrock_server": STAND_IN,
            "server.properties": "server-name=Dedicated Server\nserver-port=19132\n",
            "permissions.json": "[]\n",
        }
    )
    files[f"{TERRARIA}/get/dedicated-servers-names"] = (
        b'["terraria-server-1449.zip","terraria-server-1448.zip"]'
    )
    for number in ("1449", "1448"):
        files[f"{TERRARIA}/download/pc-dedicated-server/terraria-server-{number}.zip"] = zip_bytes(
            {
                f"{number}/Linux/TerrariaServer.bin.x86_64": STAND_IN,
                f"{number}/Linux/TerrariaServer": "#!/bin/sh\n",
                f"{number}/Windows/TerrariaServer.exe": "MZ",
            }
        )
    files["https://factorio.com/get-download/stable/headless/linux64"] = tar_bytes(
        {"factorio/bin/x64/factorio": STAND_IN, "factorio/data/base/info.json": "{}"}, "w:xz"
    )
    files["https://steamcdn-a.akamaihd.net/client/installer/steamcmd_linux.tar.gz"] = tar_bytes(
        {
            "steamcmd.sh": FAKE_STEAMCMD,
            "linux32/steamclient.so": "32-bit",
            "linux64/steamclient.so": "64-bit",
        },
        "w:gz",
    )
    mapping = {}
    for index, (url, data) in enumerate(files.items()):
        path = root / f"download-{index}"
        path.write_bytes(data)
        mapping[url] = str(path)
    mapping_file = root / "mapping.json"
    mapping_file.write_text(json.dumps(mapping))
    return {"mapping": mapping_file}


class Node:
    """A server's directory and the stand-ins its scripts run with."""

    def __init__(self, root: Path, mapping: Path):
        self.dir = root / "server"
        self.dir.mkdir()
        self.bin = root / "bin"
        self.logs = root / "logs"
        self.logs.mkdir()
        executable(self.bin / "curl", FAKE_CURL.format(python=sys.executable))
        for tool in ("wineboot", "wineserver", "winetricks"):
            executable(self.bin / tool, LOGGING_TOOL)
        for program in ("wine", "java", "python3"):
            executable(self.bin / program, STAND_IN)
        self.env = {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "HOME": str(root / "agent-home"),
            "LANG": "C.UTF-8",
            "FAKE_CURL_MAP": str(mapping),
            "FAKE_CURL_LOG": str(self.logs / "curl"),
            "STEAM_LOG": str(self.logs / "steam"),
            "STAND_IN_LOG": str(self.logs / "stand-in"),
            "TOOLS_LOG": str(self.logs / "tools"),
        }

    def run(self, script: str, **env) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603 - /bin/sh running the templates' own scripts
            [SH, "-c", script],
            cwd=self.dir,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def install(self, slug: str, values: dict, **env) -> subprocess.CompletedProcess:
        return self.run(render(TEMPLATES[slug]["template"]["install_script"], values), **env)

    def start(self, slug: str, values: dict) -> subprocess.CompletedProcess:
        return self.run(render(TEMPLATES[slug]["template"]["start_command"], values))

    def log(self, name: str) -> str:
        path = self.logs / name
        return path.read_text() if path.exists() else ""

    def steamcmd_runs(self) -> list[list[str]]:
        raw = (self.logs / "steam").read_bytes().decode() if (self.logs / "steam").exists() else ""
        runs, current = [], []
        for item in raw.split("\0")[:-1]:
            if item == "END":
                runs.append(current)
                current = []
            else:
                current.append(item)
        return runs

    def calls(self) -> list[dict]:
        path = self.logs / "stand-in"
        raw = path.read_bytes().decode() if path.exists() else ""
        calls = []
        for record in raw.split("CALL\0")[1:]:
            items = record.split("\0")
            end = next(i for i, item in enumerate(items) if item.startswith("ENV:"))
            env = dict(item[4:].split("=", 1) for item in items if item.startswith("ENV:"))
            calls.append({"program": items[0], "args": items[1:end], "env": env})
        return calls

    def files_text(self) -> str:
        """Every small file the scripts wrote in the server's directory, together."""
        parts = []
        for path in self.dir.rglob("*"):
            if path.is_file() and path.stat().st_size < 100_000:
                parts.append(path.read_bytes().decode(errors="replace"))
        return "\n".join(parts)


@pytest.fixture
def node(tmp_path, fixtures) -> Node:
    return Node(tmp_path, fixtures["mapping"])


def test_the_test_workload_installs_its_settings(node):
    motd = 'It\'s a "test" $(touch pwned)\nsecond line'
    result = node.install("test-workload", values_for("test-workload", MOTD=motd, READY_DELAY=5))
    assert result.returncode == 0, result.stderr
    properties = (node.dir / "server.properties").read_text().splitlines()
    assert 'motd=It\'s a "test" $(touch pwned) second line' in properties
    assert "ready-delay=5" in properties
    assert not (node.dir / "pwned").exists()


@pytest.mark.parametrize(
    ("version", "jar"),
    [("latest", b"release jar"), ("snapshot", b"snapshot jar"), ("1.21.4", b"release jar")],
)
def test_minecraft_java_downloads_the_versions_jar_from_the_manifest(node, version, jar):
    result = node.install("minecraft-java", values_for("minecraft-java", VERSION=version))
    assert result.returncode == 0, result.stderr
    assert (node.dir / "server.jar").read_bytes() == jar
    assert "eula=true" in (node.dir / "eula.txt").read_text().splitlines()
    assert not (node.dir / ".manifest").exists()


def test_minecraft_java_writes_no_eula_file_unless_accepted(node):
    result = node.install("minecraft-java", values_for("minecraft-java", EULA=False))
    assert result.returncode == 0, result.stderr
    assert (node.dir / "server.jar").exists()
    assert not (node.dir / "eula.txt").exists()


def test_minecraft_java_refuses_an_unknown_version_and_a_bad_checksum(node, fixtures):
    result = node.install("minecraft-java", values_for("minecraft-java", VERSION="0.0.1"))
    assert result.returncode != 0
    assert "not in Mojang's version manifest" in result.stderr
    mapping = json.loads(fixtures["mapping"].read_text())
    tampered = node.logs / "tampered.jar"
    tampered.write_bytes(b"something else")
    mapping[jar_url("1.21.4")] = str(tampered)
    other = node.logs / "mapping.json"
    other.write_text(json.dumps(mapping))
    result = node.install("minecraft-java", values_for("minecraft-java"), FAKE_CURL_MAP=str(other))
    assert result.returncode != 0
    assert not (node.dir / "server.jar").exists()


def test_minecraft_java_starts_with_its_settings_written(node):
    (node.dir / "server.properties").write_text("motd=Kept\nserver-port=25565\nmax-players=20\n")
    result = node.start("minecraft-java", values_for("minecraft-java", MAX_PLAYERS=7))
    assert result.returncode == 0, result.stderr
    lines = (node.dir / "server.properties").read_text().splitlines()
    assert sorted(lines) == sorted(
        [
            "motd=Kept",
            "server-ip=203.0.113.10",
            f"server-port={PORT}",
            f"query.port={PORT}",
            "max-players=7",
            "difficulty=normal",
        ]
    )
    (call,) = node.calls()
    assert call["args"] == ["-Xms128M", "-Xmx2048M", "-jar", "server.jar", "nogui"]


def test_minecraft_bedrock_keeps_the_owners_settings_on_update(node):
    (node.dir / "server.properties").write_text("server-name=Mine\n")
    result = node.install("minecraft-bedrock", values_for("minecraft-bedrock"))
    assert result.returncode == 0, result.stderr
    assert (node.dir / "server.properties").read_text() == "server-name=Mine\n"
    assert (node.dir / "permissions.json").exists()
    assert os.access(node.dir / "bedrock_server", os.X_OK)
    assert BEDROCK_URL in node.log("curl")


def test_minecraft_bedrock_downloads_nothing_without_the_eula(node):
    result = node.install("minecraft-bedrock", values_for("minecraft-bedrock", EULA=False))
    assert result.returncode != 0
    assert node.log("curl") == ""


@pytest.mark.parametrize(("version", "number"), [("latest", "1449"), ("1.4.4.8", "1448")])
def test_terraria_installs_the_linux_server_of_the_zip(node, version, number):
    result = node.install("terraria", values_for("terraria", VERSION=version))
    assert result.returncode == 0, result.stderr
    assert os.access(node.dir / "TerrariaServer.bin.x86_64", os.X_OK)
    assert not (node.dir / "TerrariaServer.exe").exists()
    assert f"terraria-server-{number}.zip" in node.log("curl")
    assert not (node.dir / ".terraria").exists()


def test_factorio_installs_the_headless_tarball(node):
    result = node.install("factorio", values_for("factorio"))
    assert result.returncode == 0, result.stderr
    assert os.access(node.dir / "bin/x64/factorio", os.X_OK)
    assert (node.dir / "saves").is_dir()


@pytest.mark.parametrize("slug", sorted(STEAM_APP_IDS))
def test_steam_games_install_their_app_through_steamcmd(node, slug):
    result = node.install(slug, values_for(slug))
    assert result.returncode == 0, result.stderr
    (run,) = node.steamcmd_runs()
    assert run[:2] == ["+force_install_dir", str(node.dir)]
    app = run.index("+app_update")
    assert run[app + 1] == str(STEAM_APP_IDS[slug])
    login = run.index("+login")
    if slug in NEEDS_STEAM_ACCOUNT:
        assert run[login + 1 : login + 3] == ["builder", "s3cret pass"]
    else:
        assert run[login + 1] == "anonymous"
    assert login < app
    windows = "+@sSteamCmdForcePlatformType" in run
    assert windows == (slug in WINDOWS_ONLY)
    if windows:
        assert run[run.index("+@sSteamCmdForcePlatformType") + 1] == "windows"
        assert "wineboot --init" in node.log("tools")
    assert (node.dir / ".steam/sdk64/steamclient.so").read_text() == "64-bit"
    assert (node.dir / ".steam/sdk32/steamclient.so").read_text() == "32-bit"


def test_steamcmd_is_tried_three_times_then_the_install_fails(node):
    result = node.install("rust", values_for("rust"), FAKE_STEAM_EXIT="8")
    assert result.returncode != 0
    assert len(node.steamcmd_runs()) == 3


def test_an_install_without_the_apps_manifest_fails(node):
    result = node.install("valheim", values_for("valheim"), FAKE_STEAM_NO_MANIFEST="1")
    assert result.returncode != 0
    assert "did not install app 896660" in result.stderr


def program_of(start_command: str) -> Path | None:
    """The server's program a start command runs from the server's directory, if any."""
    match = re.search(r"cd (\S+) && exec (\./\S+)", start_command)
    if match:
        return Path(match[1]) / match[2]
    match = re.search(r"^\s*(?:exec )?(\./\S+)", start_command, re.MULTILINE)
    return Path(match[1]) if match else None


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_installed_servers_start_with_their_port_and_name(node, slug):
    values = values_for(slug)
    if slug != "test-workload":
        installed = node.install(slug, values)
        assert installed.returncode == 0, installed.stderr
    start_command = TEMPLATES[slug]["template"]["start_command"]
    program = program_of(start_command)
    if program is not None and not (node.dir / program).exists():
        executable(node.dir / program, STAND_IN)
    result = node.start(slug, values)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    calls = [call for call in node.calls() if "--create" not in call["args"]]
    assert calls, f"{slug}: the server was not started"
    call = calls[-1]
    name, first = SERVER_PROGRAMS[slug]
    assert Path(call["program"]).name == name
    if first is not None:
        assert call["args"][0].endswith(first.lstrip("/")) or call["args"][0] == first
    everything = "\0".join(call["args"]) + "\0" + node.files_text()
    assert str(PORT) in everything, f"{slug}: the port reaches neither the server nor a file"
    if "SERVER_NAME" in values and slug != "satisfactory":
        assert NAME in everything, f"{slug}: the server name does not reach the server"
    if slug in WINDOWS_ONLY:
        assert call["env"]["WINEPREFIX"] == f"{node.dir}/.wine"
    if slug in STEAM_APP_IDS:
        assert call["env"]["HOME"] == str(node.dir)


@pytest.mark.parametrize(
    ("spelling", "public"),
    [("true", "1"), ("True", "1"), ("1", "1"), ("false", "0"), ("False", "0"), ("0", "0")],
)
def test_booleans_work_however_the_agent_spells_them(node, spelling, public):
    executable(node.dir / "valheim_server.x86_64", STAND_IN)
    script = TEMPLATES["valheim"]["template"]["start_command"].replace("{{PUBLIC}}", spelling)
    result = node.run(render(script, values_for("valheim", CROSSPLAY=True)))
    assert result.returncode == 0, result.stderr
    (call,) = node.calls()
    assert call["args"][call["args"].index("-public") + 1] == public
    assert call["args"][-1] == "-crossplay"
    assert call["args"][call["args"].index("-password") + 1] == "hunter22"


def test_a_name_with_quotes_and_a_command_reaches_the_server_as_text(node):
    executable(node.dir / "RustDedicated", STAND_IN)
    name = 'It\'s "ours" $(touch pwned) `touch pwned2`'
    result = node.start("rust", values_for("rust", SERVER_NAME=name))
    assert result.returncode == 0, result.stderr
    (call,) = node.calls()
    assert call["args"][call["args"].index("+server.hostname") + 1] == name
    assert call["args"][call["args"].index("+server.queryport") + 1] == str(PORT + 1)
    assert not (node.dir / "pwned").exists() and not (node.dir / "pwned2").exists()


def test_ark_puts_names_in_its_settings_file_not_its_option_string(node):
    executable(node.dir / "ShooterGame/Binaries/Linux/ShooterGameServer", STAND_IN)
    settings = node.dir / "ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini"
    settings.parent.mkdir(parents=True)
    settings.write_text("[ServerSettings]\nServerPassword=old\nDifficultyOffset=0.5\n")
    values = values_for("ark-survival-evolved", SERVER_NAME="Dino? Land", MAX_PLAYERS=20)
    result = node.start("ark-survival-evolved", values)
    assert result.returncode == 0, result.stderr
    (call,) = node.calls()
    assert call["args"][0] == f"TheIsland?listen?Port={PORT}?QueryPort={PORT + 2}?MaxPlayers=20"
    assert settings.read_text() == (
        "[ServerSettings]\nServerPassword=\nDifficultyOffset=0.5\nServerAdminPassword=admin-pass-1\n"
        "\n[SessionSettings]\nSessionName=Dino? Land\n"
    )
    # Once more, as at the next start: nothing is added twice.
    assert node.start("ark-survival-evolved", values).returncode == 0
    assert settings.read_text().count("SessionName=") == 1


def test_seven_days_to_die_is_told_its_settings_on_the_command_line(node):
    executable(node.dir / "7DaysToDieServer.x86_64", STAND_IN)
    result = node.start("7-days-to-die", values_for("7-days-to-die", DIFFICULTY=4))
    assert result.returncode == 0, result.stderr
    (call,) = node.calls()
    assert f"-ServerPort={PORT}" in call["args"]
    assert f"-ServerName={NAME}" in call["args"]
    assert f"-TelnetPort={PORT + 1}" in call["args"]
    assert "-GameDifficulty=4" in call["args"]


def test_palworld_edits_only_its_fields_of_the_settings_line(node):
    executable(node.dir / "Pal/Binaries/Linux/PalServer-Linux-Shipping", STAND_IN)
    (node.dir / "DefaultPalWorldSettings.ini").write_text(
        "[/Script/Pal.PalGameWorldSettings]\n"
        'OptionSettings=(Difficulty=None,ServerPlayerMaxNum=32,ServerName="Default Palworld '
        'Server",ServerDescription="",AdminPassword="",ServerPassword="",PublicPort=8211)\n'
    )
    values = values_for("palworld", SERVER_NAME='A|b & "c"', ADMIN_PASSWORD="pw", COMMUNITY=True)
    result = node.start("palworld", values)
    assert result.returncode == 0, result.stderr
    settings = node.dir / "Pal/Saved/Config/LinuxServer/PalWorldSettings.ini"
    assert settings.read_text().splitlines()[1] == (
        'OptionSettings=(Difficulty=None,ServerPlayerMaxNum=32,ServerName="A|b & c",'
        'ServerDescription="",AdminPassword="pw",ServerPassword="",PublicPort=8211)'
    )
    (call,) = node.calls()
    assert call["args"][-1] == "-publiclobby"
    assert f"-queryport={PORT + 1}" in call["args"]


def test_rust_listens_on_its_named_ports(node):
    executable(node.dir / "RustDedicated", STAND_IN)
    values = values_for("rust", PORT_QUERY=40001, PORT_RCON=40002, PORT_APP=40003)
    result = node.start("rust", values)
    assert result.returncode == 0, result.stderr
    (call,) = node.calls()
    args = call["args"]
    for option, port in [
        ("+server.port", PORT),
        ("+server.queryport", 40001),
        ("+rcon.port", 40002),
        ("+app.port", 40003),
    ]:
        assert args[args.index(option) + 1] == str(port), option


@pytest.mark.parametrize(
    ("slug", "program", "argument"),
    [
        ("project-zomboid", "start-server.sh", "-udpport 40001"),
        (
            "satisfactory",
            "Engine/Binaries/Linux/FactoryServer-Linux-Shipping",
            "-ReliablePort=40001",
        ),
        ("palworld", "Pal/Binaries/Linux/PalServer-Linux-Shipping", "-queryport=40001"),
        ("v-rising", "VRisingServer.exe", "-queryPort 40001"),
    ],
)
def test_a_named_port_reaches_the_game_as_told(node, slug, program, argument):
    executable(node.dir / program, STAND_IN)
    (name,) = [port["name"] for port in TEMPLATES[slug]["template"]["ports"]]
    result = node.start(slug, values_for(slug, **{f"PORT_{name.upper()}": 40001}))
    assert result.returncode == 0, result.stderr
    call = node.calls()[-1]
    assert argument in " ".join(call["args"])


@pytest.mark.parametrize(
    ("slug", "program", "name", "offset"),
    [
        ("valheim", "valheim_server.x86_64", "query", 1),
        ("ark-survival-evolved", "ShooterGame/Binaries/Linux/ShooterGameServer", "raw", 1),
        ("dayz", "DayZServer", "battleye", 2),
        ("arma-3", "arma3server_x64", "battleye", 4),
        ("unturned", "Unturned_Headless.x86_64", "query", 1),
    ],
)
def test_a_port_the_game_derives_that_is_not_its_allocation_is_said(
    node, slug, program, name, offset
):
    """Placement gives the ports right after the primary when they are free; when one was
    taken, the game still opens port + offset itself: the console says so, the server starts."""
    executable(node.dir / program, STAND_IN)
    assert node.start(slug, values_for(slug)).stderr == ""  # adjacent: nothing said
    elsewhere = values_for(slug, **{f"PORT_{name.upper()}": PORT + 40})
    result = node.start(slug, elsewhere)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"The game opens its {name} port on {PORT + offset} itself, but this server's {name} "
        f"allocation is {PORT + 40}: that port is not forwarded and may be another server's.\n"
    )


# A server that runs until SIGTERM (or its console's "shutdown"), then exits 0.
LONG_RUNNING = """#!/bin/sh
echo $$ > "$STAND_IN_LOG.pid"
trap 'echo "terminated" >> "$STAND_IN_LOG.events"; exit 0' TERM
echo "2025-01-12T10:45:12 61.204 INF StartGame done"
while :; do sleep 0.1; done
"""

# nc: what it is sent goes to the log; "shutdown" ends the server, as 7 Days to Die's does.
FAKE_NC = """#!/bin/sh
input=$(cat)
echo "nc $* <$input>" >> "$STAND_IN_LOG.events"
if [ "$input" = shutdown ]; then kill -TERM "$(cat "$STAND_IN_LOG.pid")"; fi
"""


@pytest.mark.parametrize("with_nc", [True, False])
def test_seven_days_to_die_stops_through_its_telnet_console(node, with_nc):
    executable(node.dir / "7DaysToDieServer.x86_64", LONG_RUNNING)
    if with_nc:
        executable(node.bin / "nc", FAKE_NC)
    else:  # without nc the server is sent SIGTERM; keep the system's nc out of reach
        node.env["PATH"] = f"{node.bin}:/usr/bin/does-not-exist"
        for tool in ("sed", "cat", "sleep", "kill"):
            found = shutil.which(tool)
            if found:
                os.symlink(found, node.bin / tool)
    script = render(
        TEMPLATES["7-days-to-die"]["template"]["start_command"], values_for("7-days-to-die")
    )
    process = subprocess.Popen(  # noqa: S603 - /bin/sh running the template's start command
        [SH, "-c", script],
        cwd=node.dir,
        env=node.env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        ready = process.stdout.readline()
        assert re.search(TEMPLATES["7-days-to-die"]["template"]["ready_pattern"], ready)
        # As the agent stops a server: the stop signal to its whole process group.
        stop_signal = signal.Signals[TEMPLATES["7-days-to-die"]["template"]["stop_signal"]]
        os.killpg(process.pid, stop_signal)
        assert process.wait(timeout=20) == 0
    finally:  # whatever happened, leave no server behind
        if process.poll() is None:
            process.kill()
            process.wait()
        pid_file = node.logs / "stand-in.pid"
        if pid_file.exists():  # the stand-in, if it still runs (and its pid is still its own)
            pid = int(pid_file.read_text())
            with contextlib.suppress(OSError):
                if str(node.dir) in Path(f"/proc/{pid}/cwd").resolve().as_posix():
                    os.kill(pid, signal.SIGKILL)
        process.stdout.close()
    events = (node.logs / "stand-in.events").read_text()
    if with_nc:
        assert f"nc -w 5 127.0.0.1 {PORT + 1} <shutdown>" in events
    assert "terminated" in events

"""The catalogue as data (servers.catalogue): every game folder loads into exactly its entry of a
frozen copy (catalogue_golden.json, byte for byte as a node receives it: first the games as they
were when their scripts were Python strings, since then changed only on purpose), the loader
names the file, the key path and the problem of each mistake, and ``catalogue_sync`` brings the
folder into the database idempotently."""

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from servers.catalogue import (
    CATALOGUE_DIR,
    GAME_FIELDS,
    MAX_SCRIPT_BYTES,
    SHARED_DIR,
    TEMPLATE_FIELDS,
    ManifestError,
    expand_includes,
    game_folders,
    load_catalogue,
    load_game,
    template_for,
)
from servers.game_checks import OPTIONAL_TEMPLATE_KEYS
from servers.game_templates import TEMPLATE_KEYS
from servers.models import Game
from servers.services.catalogue import catalogue_sync

# A change meant to alter what nodes receive regenerates the frozen copy (its games in its order,
# a new one last), and its diff is read for exactly that change:
#   .venv/bin/python -c '
#   import json, pathlib
#   from servers.catalogue import load_catalogue
#   path, games = pathlib.Path("tests/servers/catalogue_golden.json"), load_catalogue()
#   frozen = json.loads(path.read_text())
#   games = {**{slug: games[slug] for slug in frozen if slug in games}, **games}
#   path.write_text(json.dumps(games, indent=1, ensure_ascii=False) + "\n")
#   '
GOLDEN = Path(__file__).with_name("catalogue_golden.json")


def test_every_game_loads_byte_for_byte_as_the_frozen_copy():
    golden = json.loads(GOLDEN.read_text())
    catalogue = load_catalogue()
    assert sorted(catalogue) == sorted(golden)
    for slug, entry in catalogue.items():
        # The JSON a node receives, key order included.
        assert json.dumps(entry) == json.dumps(golden[slug]), slug


def test_the_schema_carries_every_template_key():
    """A template key added to TEMPLATE_KEYS or OPTIONAL_TEMPLATE_KEYS is one line in
    TEMPLATE_FIELDS (and the other way); every key it requires is a key every game has."""
    assert set(TEMPLATE_FIELDS) == TEMPLATE_KEYS | OPTIONAL_TEMPLATE_KEYS
    required = {key for key, (_, needed) in TEMPLATE_FIELDS.items() if needed}
    assert required <= TEMPLATE_KEYS
    assert {"install_script", "start_command", "backup_commands"} <= required
    assert set(GAME_FIELDS) == {"name", "default_port"}


# --- The loader's errors ----------------------------------------------------------------------

MANIFEST = """\
name = "A game"
slug = "a-game"
default_port = 27015

[template]
install_script = { file = "install.sh" }
start_command = { file = "start.sh" }
ready_pattern = 'Ready\\.'
stop_command = "quit"
stop_signal = "SIGTERM"
stop_timeout_seconds = 30
ready_timeout_seconds = 60

[template.backup_commands]
before = ["save"]
after = []

[[variables]]
key = "MAX_PLAYERS"
name = "Max players"
type = "integer"
default = 10
min = 1
max = 64
"""


def game(tmp_path: Path, manifest: str = MANIFEST, slug: str = "a-game") -> Path:
    folder = tmp_path / slug
    folder.mkdir()
    (folder / "game.toml").write_text(manifest)
    (folder / "install.sh").write_text("#!/bin/sh\nset -eu\necho installed\n")
    (folder / "start.sh").write_text("exec ./server --players {{MAX_PLAYERS}}\n")
    return folder


def problems(folder: Path) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        load_game(folder)
    prefix = f"{folder / 'game.toml'}: "
    assert all(line.startswith(prefix) for line in caught.value.problems)
    return [line.removeprefix(prefix) for line in caught.value.problems]


def test_a_sound_manifest_loads_with_its_scripts(tmp_path):
    entry = load_game(game(tmp_path))
    assert list(entry) == ["name", "default_port", "template", "variables"]
    assert list(entry["template"]) == [
        key for key, (_, needed) in TEMPLATE_FIELDS.items() if needed
    ]
    assert entry["template"]["install_script"] == "#!/bin/sh\nset -eu\necho installed\n"
    # A command's final newline (an editor's) is not part of it; a script's is.
    assert entry["template"]["start_command"] == "exec ./server --players {{MAX_PLAYERS}}"
    assert entry["variables"][0]["max"] == 64


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('name = "A game"\n', ""), "name: is required."),
        (("default_port = 27015", 'default_port = "27015"'), "default_port: is an integer, not"),
        (("default_port = 27015", "default_port = 70000"), "default_port: is a port, 1 to 65535"),
        (('slug = "a-game"', 'slug = "other"'), "slug: is the folder's name, 'a-game', not"),
        (("name = ", "colour = 1\nname = "), "colour: is not a manifest key."),
        (
            ("stop_command = ", "restart = 1\nstop_command = "),
            "template.restart: is not a template",
        ),
        (('stop_command = "quit"\n', ""), "template.stop_command: is required."),
        (("stop_timeout_seconds = 30", "stop_timeout_seconds = 'a'"), "template.stop_timeout"),
        (('"install.sh"', '"missing.sh"'), "template.install_script.file: 'missing.sh' is no"),
        (('"install.sh"', '"../a-game/../x.sh"'), "template.install_script.file:"),
        (('{ file = "start.sh" }', '{ path = "start.sh" }'), "template.start_command: is text or"),
        (('"SIGTERM"', '"SIGFOO"'), "template: stop_signal is one of"),
        (("'Ready\\.'", "'Ready('"), "template: ready_pattern is not a regular expression"),
        (('before = ["save"]', 'before = "save"'), "template: backup_commands.before is a list"),
        (('type = "integer"', 'type = "float"'), "variables: Variable MAX_PLAYERS: type is one of"),
        (("default = 10", 'default = "ten"'), "variables: Variable MAX_PLAYERS: the default is"),
    ],
)
def test_each_mistake_is_named_by_its_key_path(tmp_path, change, expected):
    old, new = change
    assert old in MANIFEST
    found = problems(game(tmp_path, MANIFEST.replace(old, new, 1)))
    assert any(line.startswith(expected) for line in found), found


def test_variables_that_are_no_list_of_tables_are_refused(tmp_path):
    manifest = "variables = 3\n" + MANIFEST.split("[[variables]]")[0].replace("{{MAX_PLAYERS}}", "")
    folder = game(tmp_path, manifest)
    (folder / "start.sh").write_text("exec ./server\n")
    assert problems(folder) == ["variables: is a list of tables ([[variables]])."]


def test_a_placeholder_of_no_variable_is_refused(tmp_path):
    folder = game(tmp_path)
    (folder / "start.sh").write_text("exec ./server --port {{GAME_PORT}}\n")
    assert problems(folder) == [
        "template: start_command uses {{GAME_PORT}}, which is no variable of the game."
    ]


def test_a_manifest_that_is_not_toml_or_missing_says_so(tmp_path):
    assert problems(game(tmp_path, 'name = "unclosed'))[0].startswith("is not TOML (")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert problems(empty) == ["there is no manifest."]


def test_a_script_that_is_not_utf8_is_refused(tmp_path):
    folder = game(tmp_path)
    (folder / "install.sh").write_bytes(b"#!/bin/sh\n\xff\n")
    assert problems(folder) == ["template.install_script.file: 'install.sh' is not UTF-8 text."]


# --- Includes: the shell the games share (_shared/) -------------------------------------------


def shared(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / SHARED_DIR
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def test_an_include_line_is_the_shared_files_text_byte_for_byte(tmp_path):
    folder = game(tmp_path)
    shared(tmp_path, "hello.sh", "hello() {\n    echo hello\n}\n")
    shared(tmp_path, "bare.sh", "echo no final newline")
    install = "#!/bin/sh\n# include: ../_shared/hello.sh\n# include: ../_shared/bare.sh\nhello\n"
    (folder / "install.sh").write_text(install)
    (folder / "start.sh").write_text("# include: ../_shared/hello.sh\nexec ./server\n")
    template = load_game(folder)["template"]
    assert template["install_script"] == (
        "#!/bin/sh\nhello() {\n    echo hello\n}\necho no final newline\nhello\n"
    )
    assert template["start_command"] == "hello() {\n    echo hello\n}\nexec ./server"


def test_expanded_lines_say_the_file_and_line_they_come_from(tmp_path):
    folder = game(tmp_path)
    piece = shared(tmp_path, "two.sh", "a=1\nb=2\n")
    script = folder / "install.sh"
    lines, found = expand_includes(script, "set -eu\n# include: ../_shared/two.sh\necho\n")
    assert found == []
    assert [(line.file, line.number) for line in lines] == [
        (script, 1),
        (piece.resolve(), 1),
        (piece.resolve(), 2),
        (script, 3),
    ]


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("../_shared/missing.sh", "is no file of the catalogue's _shared/ folder."),
        ("../a-game/start.sh", "is outside the catalogue's _shared/ folder."),
        ("start.sh", "is outside the catalogue's _shared/ folder."),
        ("../_shared/../../escape.sh", "is outside the catalogue's _shared/ folder."),
        ("/etc/hostname", "is outside the catalogue's _shared/ folder."),
        ("../_shared/deeper/x.sh", "is outside the catalogue's _shared/ folder."),
    ],
)
def test_an_include_of_no_shared_file_is_refused_by_line(tmp_path, reference, expected):
    folder = game(tmp_path)
    shared(tmp_path, "fine.sh", "true\n")
    (tmp_path / "escape.sh").write_text("true\n")
    (tmp_path / SHARED_DIR / "deeper").mkdir()
    (tmp_path / SHARED_DIR / "deeper" / "x.sh").write_text("true\n")
    (folder / "install.sh").write_text(f"#!/bin/sh\n# include: {reference}\n")
    assert problems(folder) == [
        f"template.install_script.file: 'install.sh' line 2 includes {reference!r}, which "
        + expected
    ]


def test_a_shared_file_includes_nothing_and_is_utf8(tmp_path):
    folder = game(tmp_path)
    shared(tmp_path, "inner.sh", "true\n")
    shared(tmp_path, "outer.sh", "# include: ../_shared/inner.sh\n")
    (tmp_path / SHARED_DIR / "binary.sh").write_bytes(b"\xff\n")
    (folder / "install.sh").write_text("# include: ../_shared/outer.sh\n")
    (folder / "start.sh").write_text("exec ./s\n# include: ../_shared/binary.sh\n")
    manifest = MANIFEST.replace("{{MAX_PLAYERS}}", "")
    (folder / "game.toml").write_text(manifest)
    assert problems(folder) == [
        "template.install_script.file: 'install.sh' line 1 includes '../_shared/outer.sh', "
        "which includes another file: shared files include nothing.",
        "template.start_command.file: 'start.sh' line 2 includes '../_shared/binary.sh', "
        "which is not UTF-8 text.",
    ]


def test_a_script_too_large_with_its_includes_is_refused(tmp_path):
    folder = game(tmp_path)
    shared(tmp_path, "big.sh", "#" * (MAX_SCRIPT_BYTES - 10) + "\n")
    (folder / "install.sh").write_text("# include: ../_shared/big.sh\necho more than fits\n")
    assert problems(folder) == [
        f"template.install_script.file: 'install.sh' is larger than {MAX_SCRIPT_BYTES} bytes."
    ]


def test_the_shared_folder_is_no_game():
    assert (CATALOGUE_DIR / SHARED_DIR).is_dir()
    assert SHARED_DIR not in [folder.name for folder in game_folders()]
    assert SHARED_DIR not in load_catalogue()
    assert template_for(SHARED_DIR) is None


def test_the_whole_catalogue_reports_every_bad_game_at_once(tmp_path):
    game(tmp_path, MANIFEST.replace('"SIGTERM"', '"SIGFOO"'))
    game(tmp_path, MANIFEST.replace('slug = "a-game"', 'slug = "b-game"'), slug="b-game")
    shutil.copytree(CATALOGUE_DIR / "factorio", tmp_path / "factorio")
    shutil.copytree(CATALOGUE_DIR / SHARED_DIR, tmp_path / SHARED_DIR)  # factorio includes
    with pytest.raises(ManifestError) as caught:
        load_catalogue(tmp_path)
    assert len(caught.value.problems) == 1
    assert "a-game/game.toml: template: stop_signal" in caught.value.problems[0]


# --- The sync ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sync_updates_a_changed_game_creates_a_missing_one_and_is_idempotent():
    game = Game.objects.get(slug="minecraft-java")
    game.template = {**game.template, "stop_command": "an old fix"}
    game.save()
    Game.objects.filter(slug="factorio").delete()
    staffs = Game.objects.create(slug="staff-game", name="Staff's", default_port=1)

    with pytest.raises(SystemExit):  # a dry run: exits 1 on changes, changes nothing
        call_command("catalogue_sync", "--check", stdout=StringIO())
    assert Game.objects.get(slug="minecraft-java").template["stop_command"] == "an old fix"

    report = catalogue_sync()
    assert report.created == ["factorio"]
    assert report.updated == {"minecraft-java": ["template"]}
    assert Game.objects.get(slug="minecraft-java").template["stop_command"] == "stop"
    assert Game.objects.get(slug="factorio").template == load_catalogue()["factorio"]["template"]
    assert Game.objects.filter(slug=staffs.slug).exists()  # not the folder's: left alone
    assert not Game.objects.filter(slug="test-workload").exists()  # only when named

    again = catalogue_sync()
    assert (again.created, again.updated) == ([], {})
    out = StringIO()
    call_command("catalogue_sync", "--check", stdout=out)
    assert out.getvalue().splitlines() == [f"{len(again.unchanged)} unchanged"]


@pytest.mark.django_db
def test_the_sync_command_prints_what_changed_and_check_exits_1():
    Game.objects.filter(slug="valheim").update(name="Old name", variables=[])
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("catalogue_sync", "--check", stdout=out)
    assert exited.value.code == 1
    assert "would be updated valheim: name, variables" in out.getvalue()
    out = StringIO()
    call_command("catalogue_sync", "test-workload", "valheim", stdout=out)
    assert out.getvalue().splitlines() == [
        "created test-workload",
        "updated valheim: name, variables",
        "0 unchanged",
    ]
    assert Game.objects.get(slug="valheim").name == "Valheim"
    with pytest.raises(CommandError, match="No such game in the catalogue: nope"):
        call_command("catalogue_sync", "nope")


@pytest.mark.django_db
def test_the_local_node_seed_syncs_the_test_workload():
    assert not Game.objects.filter(slug="test-workload").exists()
    call_command("seed_local_node", stdout=StringIO())
    game = Game.objects.get(slug="test-workload")
    assert game.template == load_catalogue()["test-workload"]["template"]


def test_named_ports_and_a_query_load_as_tables_and_are_checked(tmp_path):
    extra = (
        '\n[template.query]\nprotocol = "source"\nport = "query"\n'
        '\n[[template.ports]]\nname = "query"\nprotocol = "udp"\n'
    )
    manifest = MANIFEST.replace("\n[[variables]]", extra + "\n[[variables]]")
    entry = load_game(game(tmp_path, manifest))
    assert entry["template"]["ports"] == [{"name": "query", "protocol": "udp"}]
    assert entry["template"]["query"] == {"protocol": "source", "port": "query"}
    assert list(entry["template"])[-2:] == ["ports", "query"]

    wrong = manifest.replace('port = "query"', 'port = "rcon"')
    assert problems(_other(tmp_path, wrong)) == [
        "template: query.port is game or the name of one of the template's ports."
    ]


def _other(tmp_path: Path, manifest: str) -> Path:
    return game(tmp_path, manifest.replace('slug = "a-game"', 'slug = "b-game"'), slug="b-game")

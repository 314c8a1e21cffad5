"""A template's ``config_files`` (agent/config_files.py): each parser's edits on text (set, add,
``if_value``, wildcards), placeholders substituted raw, and the files themselves edited as the
server's user inside its folder: a link out of it is refused, a file that does not parse is left
as it was and said, owner and mode are kept."""

import json
import os
import shlex
import stat
import sys
from pathlib import Path

import pytest

from agent import sandbox
from agent.config_files import (
    ConfigFile,
    ConfigProblem,
    Replacement,
    apply,
    edit,
    edit_file,
    edit_ini,
    edit_json,
    edit_properties,
    edit_xml,
    edit_yaml,
)
from agent.files import ServerFiles
from agent.spec import parse_spec, spec_from_state
from tests.agent.conftest import PYTHON, gameserver_spec, needs_python_for_nobody
from tests.agent.harness import IS_ROOT, free_port

R = Replacement
NOBODY = 65534

# -- properties -------------------------------------------------------------------------------

PROPERTIES = """\
#Minecraft server properties
#Mon Jan 13 10:00:00 UTC 2025
enable-rcon=false
server-port=25565
motd=A Minecraft Server
# a comment further down stays too
level-name = world
long=first \\
    second
"""


def test_properties_set_a_key_and_keep_every_other_line():
    edited = edit_properties(PROPERTIES, [R("server-port", "27000")])
    assert edited == PROPERTIES.replace("server-port=25565", "server-port=27000")


def test_properties_add_a_missing_key_at_the_end():
    edited = edit_properties("a=1", [R("max-players", 20), R("online-mode", False)])
    assert edited == "a=1\nmax-players=20\nonline-mode=false\n"


def test_properties_read_separators_and_continuations_as_java_does():
    edited = edit_properties(PROPERTIES, [R("level-name", "x"), R("long", "y")])
    assert "level-name=x\n" in edited
    assert edited.endswith("long=y\n")
    assert "second" not in edited


def test_properties_escape_values_and_keys_as_java_reads_them():
    edited = edit_properties("", [R("motd", " §6Héllo = 😀\\"), R("a key", "v")])
    assert edited == "motd=\\ \\u00a76H\\u00e9llo = \\ud83d\\ude00\\\\\na\\ key=v\n"
    # and read back: an if_value compares with the unescaped value
    again = edit_properties(edited, [R("motd", "plain", " §6Héllo = 😀\\")])
    assert again.startswith("motd=plain\n")


def test_properties_if_value_replaces_only_that_value():
    unchanged = edit_properties(PROPERTIES, [R("motd", "Mine", "Other")])
    assert unchanged == PROPERTIES
    changed = edit_properties(PROPERTIES, [R("motd", "Mine", "A Minecraft Server")])
    assert "motd=Mine\n" in changed
    # A condition on a missing key adds nothing; an empty one is none (as Wings reads it).
    assert edit_properties("a=1\n", [R("b", "2", "x")]) == "a=1\n"
    assert edit_properties("a=1\n", [R("b", "2", "")]) == "a=1\nb=2\n"


def test_a_regex_if_value_matches_as_wings_reads_it_in_every_parser():
    regex = "regex:^(false|no)$"
    assert "enable-rcon=true\n" in edit_properties(PROPERTIES, [R("enable-rcon", "true", regex)])
    assert edit_properties("enable-rcon=off\n", [R("enable-rcon", "true", regex)]) == (
        "enable-rcon=off\n"
    )
    assert edit_file("query no\n", [R("query ", "query yes", "regex:^no")]) == "query yes\n"
    assert json.loads(edit_json('{"a": false}', [R("a", True, regex)])) == {"a": True}
    assert json.loads(edit_json('{"a": "maybe"}', [R("a", True, regex)])) == {"a": "maybe"}
    assert "on = yes" in edit_ini("[s]\non = no\n", [R("s.on", "yes", regex)])
    assert ">yes<" in edit_xml("<r><on>no</on></r>", [R("r.on", "yes", regex)])
    # A pattern that does not compile matches nothing (the file is left as it is).
    assert edit_file("query no\n", [R("query ", "x", "regex:(")]) == "query no\n"


def test_properties_with_a_malformed_unicode_escape_do_not_parse():
    with pytest.raises(ConfigProblem, match="malformed"):
        edit_properties("motd=\\u12\n", [R("motd", "x")])


# -- file -------------------------------------------------------------------------------------


def test_file_replaces_every_line_that_starts_with_match_keeping_line_ends():
    text = "port=1\r\nportal=2\r\nport=3"
    assert edit_file(text, [R("port=", "port=9")]) == "port=9\r\nportal=2\r\nport=9"


def test_file_if_value_is_the_rest_of_the_line():
    text = "port=1\nport=2\n"
    assert edit_file(text, [R("port=", "port=9", "2")]) == "port=1\nport=9\n"


# -- yaml and json ------------------------------------------------------------------------------

BUNGEE = """\
listeners:
- host: 0.0.0.0:25577
  query_port: 25577
servers:
  lobby:
    address: localhost:25565
    restricted: false
  games:
    address: localhost:25566
    restricted: false
"""


def test_yaml_sets_paths_wildcards_and_array_elements():
    edited = edit_yaml(
        BUNGEE,
        [
            R("listeners[0].host", "0.0.0.0:{{SERVER_PORT}}"),
            R("listeners[0].query_port", "27000"),
            R("servers.*.address", "127.0.0.1:1"),
        ],
    )
    import yaml

    data = yaml.safe_load(edited)
    assert data["listeners"] == [{"host": "0.0.0.0:{{SERVER_PORT}}", "query_port": 27000}]
    assert {server["address"] for server in data["servers"].values()} == {"127.0.0.1:1"}
    assert data["servers"]["lobby"]["restricted"] is False


def test_yaml_creates_missing_objects_and_types_values_as_wings_does():
    import yaml

    data = yaml.safe_load(
        edit_yaml(
            "",
            [
                R("a.b.port", "25565"),
                R("a.b.text", "true"),
                R("a.b.flag", True),
                R("a.b.ratio", 1.5),
                R("a.b.name", "007 world"),
                R("a.b.big", "99999999999999999999"),
            ],
        )
    )
    assert data == {
        "a": {
            "b": {
                "port": 25565,
                "text": "true",
                "flag": True,
                "ratio": 1.5,
                "name": "007 world",
                "big": "99999999999999999999",
            }
        }
    }


def test_json_if_value_compares_the_current_value_as_text():
    text = '{"port": 25565, "name": "old", "on": true}'
    edited = json.loads(
        edit_json(
            text,
            [
                R("port", "1", "25565"),
                R("name", "new", "old"),
                R("on", False, "false"),
                R("missing.deep", "x", "y"),
            ],
        )
    )
    assert edited == {"port": 1, "name": "new", "on": True}


def test_json_wildcards_over_lists_and_a_path_through_a_value_does_not_parse():
    text = '{"worlds": [{"port": 1}, {"port": 2}, 3]}'
    edited = json.loads(edit_json(text, [R("worlds.*.port", "{{X}}")]))
    assert edited == {"worlds": [{"port": "{{X}}"}, {"port": "{{X}}"}, 3]}
    with pytest.raises(ConfigProblem, match=r"worlds\.0\.port is neither"):
        edit_json('{"worlds": [{"port": 1}]}', [R("worlds.0.port.x", "1")])


# -- ini ----------------------------------------------------------------------------------------

INI = """\
; Valheim-like settings
top=1
[ServerSettings]
Port = 2456
Name=old

[Engine.Plugins]
Enabled=false
"""


def test_ini_sets_keys_in_sections_keeping_their_spelling():
    edited = edit_ini(INI, [R("ServerSettings.Port", 27015), R("top", "2")])
    assert edited == INI.replace("Port = 2456", "Port = 27015").replace("top=1", "top=2")


def test_ini_adds_keys_and_sections_and_reads_dotted_section_names_in_brackets():
    edited = edit_ini(
        INI,
        [
            R("ServerSettings.Password", "s3cret"),
            R("[Engine.Plugins].Enabled", True),
            R("New.Key", "v"),
            R("Name", "line one\nline two"),
        ],
    )
    assert edited == (
        "; Valheim-like settings\ntop=1\nName=line one line two\n"
        "[ServerSettings]\nPort = 2456\nName=old\nPassword=s3cret\n\n"
        "[Engine.Plugins]\nEnabled=true\n\n[New]\nKey=v\n"
    )


def test_ini_if_value():
    edited = edit_ini(INI, [R("ServerSettings.Name", "new", "other"), R("X.y", "1", "1")])
    assert edited == INI


# -- xml ----------------------------------------------------------------------------------------

XML = """\
<?xml version="1.0"?>
<ServerSettings>
  <property name="ServerPort" value="26900"/>
  <Port>1</Port>
  <Worlds><World>a</World><World>b</World></Worlds>
  <!-- kept -->
</ServerSettings>
"""


def test_xml_sets_text_attributes_wildcards_and_creates_elements():
    edited = edit_xml(
        XML,
        [
            R("ServerSettings.Port", "{{SERVER_PORT}}"),
            R("ServerSettings.property", "[value='27000']"),
            R("ServerSettings.Worlds.*", "w"),
            R("ServerSettings.New.Deep", "1"),
            R("ServerSettings.Port", "2", "other"),
        ],
    )
    assert edited == (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        "<ServerSettings>\n"
        '  <property name="ServerPort" value="27000" />\n'
        "  <Port>{{SERVER_PORT}}</Port>\n"
        "  <Worlds>\n    <World>w</World>\n    <World>w</World>\n  </Worlds>\n"
        "  <!-- kept -->\n"
        "  <New>\n    <Deep>1</Deep>\n  </New>\n"
        "</ServerSettings>\n"
    )


def test_xml_makes_the_root_of_an_empty_file_and_refuses_a_doctype():
    assert edit_xml("", [R("Config.Port", 1)]) == (
        '<?xml version="1.0" encoding="utf-8"?>\n<Config>\n  <Port>1</Port>\n</Config>\n'
    )
    with pytest.raises(ConfigProblem, match="DOCTYPE"):
        edit_xml('<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', [R("a", "1")])


@pytest.mark.parametrize(
    ("parser", "text", "reason"),
    [
        ("yaml", "a: [1,\n", "it is not YAML"),
        ("yaml", "just text\n", "it is not a YAML mapping"),
        ("json", "{", "it is not JSON"),
        ("xml", "<a><b></a>", "it is not XML"),
        ("json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_a_file_that_does_not_parse_is_a_problem(parser, text, reason):
    with pytest.raises(ConfigProblem, match=reason):
        edit(parser, text, [R("a", "1")])


# -- the server's files -----------------------------------------------------------------------

SUBSTITUTIONS = {"SERVER_PORT": "25565", "MOTD": 'It\'s "mine" $(id) {{x}}'}


def folder(root: Path, owner: int | None) -> ServerFiles:
    directory = root / "server"
    directory.mkdir(mode=0o700)
    if owner is not None:
        os.chown(directory, owner, owner)
    return ServerFiles(directory, owner, owner)


def config(file: str, parser: str, *replace: Replacement) -> ConfigFile:
    return ConfigFile(file=file, parser=parser, replace=replace)


def test_placeholders_are_substituted_raw_and_unknown_ones_stay(tmp_path):
    files = folder(tmp_path, None)
    (files.directory / "server.properties").write_text("server-port=1\n")
    problems = apply(
        files,
        [
            config(
                "server.properties",
                "properties",
                R("server-port", "{{SERVER_PORT}}"),
                R("motd", "{{ MOTD }} {{UNKNOWN}}"),
            ),
            config("cfg/settings.json", "json", R("port", "{{SERVER_PORT}}")),
            config("absent.txt", "file", R("a", "b")),
            config("absent.yml", "yaml", R("a", "b", "c")),
        ],
        SUBSTITUTIONS,
    )
    assert problems == []
    assert (files.directory / "server.properties").read_text() == (
        'server-port=25565\nmotd=It\'s "mine" $(id) {{x}} {{UNKNOWN}}\n'
    )
    # Missing: made, with its folders (as Wings does), but for the line editor's.
    assert json.loads((files.directory / "cfg/settings.json").read_text()) == {"port": 25565}
    assert not (files.directory / "absent.txt").exists()
    assert not (files.directory / "absent.yml").exists()  # nothing put in it


def test_a_link_out_of_the_folder_is_refused_and_the_file_outside_untouched(tmp_path):
    files = folder(tmp_path, None)
    outside = tmp_path / "outside.properties"
    outside.write_text("secret=1\n")
    (files.directory / "server.properties").symlink_to(outside)
    (files.directory / "conf").symlink_to(tmp_path)
    problems = apply(
        files,
        [
            config("server.properties", "properties", R("secret", "2")),
            config("conf/outside.properties", "properties", R("secret", "3")),
            config("conf/new.yml", "yaml", R("a", "1")),
        ],
        SUBSTITUTIONS,
    )
    assert problems == [
        f"The configuration file {path} was left unchanged: /{path} leads outside the "
        "server's folder."
        for path in ("server.properties", "conf/outside.properties", "conf/new.yml")
    ]
    assert outside.read_text() == "secret=1\n"
    assert not (tmp_path / "new.yml").exists()


def test_a_file_that_does_not_parse_is_left_as_it_was_and_said(tmp_path):
    files = folder(tmp_path, None)
    broken = files.directory / "config.yml"
    broken.write_text("a: [1,\n")
    (files.directory / "big.json").write_text(" " * (4 * 1024 * 1024 + 1))
    before = broken.stat()
    problems = apply(
        files,
        [
            config("config.yml", "yaml", R("a", "1")),
            config("big.json", "json", R("a", "1")),
            config("ok.properties", "properties", R("a", "1")),
        ],
        {},
    )
    # (PyYAML's words differ with and without libyaml.)
    assert problems[0].startswith(
        "The configuration file config.yml was left unchanged: it is not YAML ("
    )
    assert problems[0].endswith(", line 2, column 1).")
    assert problems[1:] == [
        "The configuration file big.json was left unchanged: it is larger than 4,194,304 bytes."
    ]
    assert broken.read_text() == "a: [1,\n"
    assert broken.stat().st_mtime_ns == before.st_mtime_ns
    assert (files.directory / "ok.properties").read_text() == "a=1\n"


@pytest.mark.skipif(not IS_ROOT, reason="files of another user need a root agent")
def test_files_are_edited_as_the_servers_user_keeping_owner_and_mode(test_root):
    files = folder(test_root, NOBODY)
    kept = files.directory / "server.properties"
    kept.write_text("a=1\n")
    os.chown(kept, NOBODY, NOBODY)
    kept.chmod(0o640)
    root_owned = files.directory / "root.properties"
    root_owned.write_text("a=1\n")
    root_owned.chmod(0o644)
    problems = apply(
        files,
        [
            config("server.properties", "properties", R("a", "2")),
            config("made/new.json", "json", R("a", "2")),
            config("root.properties", "properties", R("a", "2")),
        ],
        {},
    )
    info = kept.stat()
    assert (kept.read_text(), info.st_uid, stat.S_IMODE(info.st_mode)) == ("a=2\n", NOBODY, 0o640)
    made = files.directory / "made" / "new.json"
    assert (made.stat().st_uid, made.parent.stat().st_uid) == (NOBODY, NOBODY)
    # The folder is the server's: it may replace a file of root's there, as its processes may.
    assert root_owned.read_text() == "a=2\n" and root_owned.stat().st_uid == NOBODY
    assert problems == []


# -- through a real agent -------------------------------------------------------------------------

INSTALL = """\
[[ -n "$BASH_VERSION" ]] && echo "install shell: bash"
cd /mnt/server
echo "install folder: $(pwd)"
printf 'server-port=1\\nmotd=old\\n' > server.properties
echo '{' > broken.json
"""


@pytest.mark.skipif(not IS_ROOT, reason="/mnt/server is the sandbox's, which needs a root agent")
def test_the_files_are_edited_before_each_start_after_a_bash_install_in_mnt_server(make_server):
    needs_python_for_nobody()
    python = shlex.quote(PYTHON or sys.executable)
    port = free_port()
    spec = gameserver_spec(
        "srv_placeholder",
        port,
        install_shell="bash",
        install_script=INSTALL,
        start_command=(
            "test -e /mnt/server || echo 'the server: no /mnt/server';"
            f"cat server.properties; {python} {{{{AGENT_WORKLOADS}}}}/gameserver.py"
            " --host {{SERVER_IP}} --port {{SERVER_PORT}}"
        ),
        config_files=[
            {
                "file": "server.properties",
                "parser": "properties",
                "replace": [
                    {"match": "server-port", "value": "{{SERVER_PORT}}"},
                    {"match": "motd", "value": "{{MOTD}}"},
                ],
            },
            {"file": "broken.json", "parser": "json", "replace": [{"match": "a", "value": 1}]},
        ],
    )
    spec["variables"] = {"MOTD": "It's $(id)"}
    server = make_server(spec=spec)
    installed = server.post("install")
    assert installed.status_code == 200, installed.text
    assert {"install shell: bash", "install folder: /mnt/server"} <= set(server.logs())

    assert server.post("start").status_code == 200
    logs = server.logs()
    # What the process printed first, before the game: the file as the agent left it.
    assert f"server-port={port}" in logs
    assert "motd=It's $(id)" in logs
    assert "the server: no /mnt/server" in logs  # an install's only, as under Wings
    assert (
        "[agent] The configuration file broken.json was left unchanged: it is not JSON "
        "(Expecting property name enclosed in double quotes: line 2 column 1 (char 2))."
    ) in logs

    assert server.post("stop").status_code == 200
    spec["variables"] = {"MOTD": "changed"}
    server.put(spec)
    assert server.post("start").status_code == 200
    assert "motd=changed" in server.logs()


def test_only_install_steps_see_the_folder_at_mnt_server():
    common = {
        "directory": Path("/srv/h"),
        "argv": ["/bin/sh", "-c", "true"],
        "environment": {},
        "allocations": [],
        "read_only": {},
        "host_ports": "none",
        "tmp_bytes": None,
    }
    tools = {"pasta": "pasta", "unshare": "unshare", "bwrap": "bwrap"}
    install = sandbox.plan(tools, installing=True, **common).bwrap_args.split(b"\0")
    start = sandbox.plan(tools, **common).bwrap_args.split(b"\0")
    assert b"/mnt/server" not in start
    at = install.index(b"/mnt/server")
    assert install[at - 2 : at + 1] == [b"--bind", b"/srv/h", b"/mnt/server"]


def test_the_stored_spec_keeps_the_edits_and_the_shell():
    spec = gameserver_spec(
        "srv_x",
        25565,
        install_shell="bash",
        config_files=[
            {
                "file": "a/b.ini",
                "parser": "ini",
                "replace": [
                    {"match": "s.k", "value": 1, "if_value": "0"},
                    {"match": "k", "value": True},
                ],
            }
        ],
    )
    parsed = parse_spec(spec, server_id="srv_x")
    stored = json.loads(json.dumps(parsed.public()))
    assert stored["template"]["config_files"] == spec["template"]["config_files"]
    again, _ = spec_from_state(stored)
    assert again.template == parsed.template

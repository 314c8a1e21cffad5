"""What a game of the catalogue must be before it is saved: its template as the node agent will
read it (agent/spec.py refuses the same things, but only at a customer's first start) and its
variables as ``validate_variables`` reads them. Plain rules on plain data (standard library
only), used by ``Game.clean`` and so by Django admin."""

import math
import re
from typing import Any

from servers.game_templates import BUILT_INS, TEMPLATE_KEYS

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
VARIABLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", re.ASCII)
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGKILL")
MAX_SCRIPT_CHARS = 64 * 1024
SCRIPTS = ("install_script", "start_command", "stop_command")
VARIABLE_TYPES = {"string": str, "integer": int, "boolean": bool, "enum": str}
VARIABLE_KEYS = frozenset(
    {
        "key",
        "name",
        "type",
        "default",
        "required",
        "min",
        "max",
        "min_length",
        "max_length",
        "choices",
        "must_be",
        "description",
        # A regular expression a non-empty string value must match (re.search, as PHP's
        # preg_match reads an egg's regex: rule).
        "pattern",
        # false: customers do not see (visible) or may not change (editable) it; its value holds.
        "visible",
        "editable",
    }
)


MAX_BACKUP_COMMANDS = 20
MAX_BACKUP_COMMAND_CHARS = 200
PORT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$", re.ASCII)
PORT_PROTOCOLS = ("tcp", "udp", "both")
PORT_KEYS = frozenset({"name", "protocol", "description", "offset"})
MAX_PORTS = 10
# A named port's ``offset``: the game opens it itself on its game port + offset (Valheim's query
# on + 1) and cannot be told another, so placement gives exactly that port (services.allocations).
MAX_PORT_OFFSET = 100
# Keys a template may have beyond TEMPLATE_KEYS (which every game of the catalogue has): the
# extra ports by name (issue 32), [{"name": "query", "protocol": "udp", "description": …}], each
# an allocation of its own and {{PORT_QUERY}} in the scripts; none: the game's one port. The
# game query; the install script's shell; the configuration files edited before each start.
OPTIONAL_TEMPLATE_KEYS = frozenset({"ports", "query", "install_shell", "config_files"})
INSTALL_SHELLS = ("sh", "bash")
# agent/config_files.py: what the node agent edits, and its bounds (agent/spec.py holds the same).
CONFIG_PARSERS = ("properties", "yaml", "json", "ini", "xml", "file")
MAX_CONFIG_FILES = 32
MAX_REPLACEMENTS = 100
MAX_CONFIG_PATH_CHARS = 1024
MAX_MATCH_CHARS = 1024
MAX_CONFIG_VALUE_CHARS = 64 * 1024


def ports_problems(ports: Any) -> list[str]:
    """Why ``ports`` (the game's extra ports by name, each given an allocation of its own and
    ``{{PORT_<NAME>}}`` in the scripts; with ``offset``, the one on the game port + offset) is
    refused (none: it is fine)."""
    if not isinstance(ports, list) or len(ports) > MAX_PORTS:
        return [f"ports is a list of at most {MAX_PORTS} named ports."]
    problems = []
    names = []
    offsets: list[int] = []
    for index, port in enumerate(ports):
        if not isinstance(port, dict) or set(port) - PORT_KEYS:
            problems.append(f"ports[{index}] is an object of {', '.join(sorted(PORT_KEYS))}.")
            continue
        name = port.get("name")
        if not isinstance(name, str) or not PORT_NAME.match(name) or name == "game":
            problems.append(
                f"ports[{index}].name is lowercase letters, digits and _ (not game), "
                "starting with a letter."
            )
        names.append(name)
        if port.get("protocol", "both") not in PORT_PROTOCOLS:
            problems.append(f"ports[{index}].protocol is one of {', '.join(PORT_PROTOCOLS)}.")
        if not isinstance(port.get("description", ""), str):
            problems.append(f"ports[{index}].description is text.")
        if "offset" in port:
            offset = port["offset"]
            if isinstance(offset, bool) or not isinstance(offset, int):
                offset = None
            if offset is None or not 1 <= offset <= MAX_PORT_OFFSET:
                problems.append(
                    f"ports[{index}].offset is a whole number of 1 to {MAX_PORT_OFFSET} (the game "
                    "port + offset)."
                )
            else:
                offsets.append(offset)
    if len(set(map(str, names))) != len(names):
        problems.append("ports names each port once.")
    if len(set(offsets)) != len(offsets):
        problems.append("ports gives each offset to one port.")
    return problems


def port_built_ins(ports: Any) -> set[str]:
    """The placeholders a template's named ports give its scripts: ``PORT_QUERY``…"""
    if not isinstance(ports, list):
        return set()
    return {
        f"PORT_{port['name'].upper()}"
        for port in ports
        if isinstance(port, dict) and isinstance(port.get("name"), str)
    }


def backup_commands_problems(commands: Any) -> list[str]:
    """Why ``backup_commands`` (``{"before": [...], "after": [...]}``, console lines sent
    around a backup) is refused (none: it is fine)."""
    if not isinstance(commands, dict) or set(commands) - {"before", "after"}:
        return ['backup_commands is an object with "before" and "after" lists.']
    problems = []
    for when, lines in commands.items():
        if not isinstance(lines, list) or len(lines) > MAX_BACKUP_COMMANDS:
            problems.append(f"backup_commands.{when} is a list of at most {MAX_BACKUP_COMMANDS}.")
            continue
        for line in lines:
            if (
                not isinstance(line, str)
                or not line.strip()
                or len(line) > MAX_BACKUP_COMMAND_CHARS
                or any(char in line for char in "\r\n\0")
            ):
                problems.append(
                    f"backup_commands.{when} holds one-line commands of at most "
                    f"{MAX_BACKUP_COMMAND_CHARS} characters."
                )
                break
    return problems


QUERY_PROTOCOLS = ("minecraft", "source", "bedrock")


def query_problems(query: Any, ports: Any) -> list[str]:
    """A template's ``query`` (agent/query.py): ``{"protocol": "minecraft" | "source" |
    "bedrock", "port": "game" (the default) or the name of one of its ``ports``}``, or absent."""
    if query is None:
        return []
    if not isinstance(query, dict) or set(query) - {"protocol", "port"}:
        return ["query is an object of protocol and port."]
    problems = []
    if query.get("protocol") not in QUERY_PROTOCOLS:
        problems.append(f"query.protocol is one of {', '.join(QUERY_PROTOCOLS)}.")
    names = {"game"} | {
        port.get("name")
        for port in (ports if isinstance(ports, list) else [])
        if isinstance(port, dict)
    }
    if query.get("port", "game") not in names:
        problems.append("query.port is game or the name of one of the template's ports.")
    return problems


def _unsafe_config_path(path: Any) -> bool:
    """Whether ``path`` is no file's path inside the server's folder (absolute, ``..``, an empty
    or ``.`` part, a control character)."""
    if not isinstance(path, str) or not 0 < len(path) <= MAX_CONFIG_PATH_CHARS:
        return True
    if path.startswith("/") or any(ord(char) < 0x20 for char in path):
        return True
    return any(part in ("", ".", "..") for part in path.split("/"))


def config_files_problems(config_files: Any) -> list[str]:
    """Why ``config_files`` (the edits the node agent makes to configuration files before each
    start: ``[{"file", "parser", "replace": [{"match", "value", "if_value"?}]}]``) is refused."""
    if not isinstance(config_files, list) or len(config_files) > MAX_CONFIG_FILES:
        return [f"config_files is a list of at most {MAX_CONFIG_FILES} files."]
    problems = []
    for index, item in enumerate(config_files):
        where = f"config_files[{index}]"
        if not isinstance(item, dict) or set(item) - {"file", "parser", "replace"}:
            problems.append(f"{where} is an object of file, parser and replace.")
            continue
        if _unsafe_config_path(item.get("file")):
            problems.append(
                f"{where}.file is a relative path inside the server's folder (no leading /, "
                f"no .., at most {MAX_CONFIG_PATH_CHARS} characters)."
            )
        if item.get("parser") not in CONFIG_PARSERS:
            problems.append(f"{where}.parser is one of {', '.join(CONFIG_PARSERS)}.")
        replace = item.get("replace")
        if not isinstance(replace, list) or len(replace) > MAX_REPLACEMENTS:
            problems.append(f"{where}.replace is a list of at most {MAX_REPLACEMENTS}.")
            continue
        for number, replacement in enumerate(replace):
            problems += _replacement_problems(f"{where}.replace[{number}]", replacement)
    return problems


def _replacement_problems(where: str, replacement: Any) -> list[str]:
    if not isinstance(replacement, dict) or set(replacement) - {"match", "value", "if_value"}:
        return [f"{where} is an object of match, value and if_value."]
    problems = []
    match = replacement.get("match")
    if not isinstance(match, str) or not 0 < len(match) <= MAX_MATCH_CHARS:
        problems.append(f"{where}.match is text of 1 to {MAX_MATCH_CHARS} characters.")
    value = replacement.get("value")
    if isinstance(value, str):
        if len(value) > MAX_CONFIG_VALUE_CHARS:
            problems.append(f"{where}.value has at most {MAX_CONFIG_VALUE_CHARS} characters.")
    elif not isinstance(value, bool | int | float) or not math.isfinite(value):
        problems.append(f"{where}.value is text, a number or true/false.")
    if_value = replacement.get("if_value")
    if if_value is not None and (
        not isinstance(if_value, str) or len(if_value) > MAX_CONFIG_VALUE_CHARS
    ):
        problems.append(f"{where}.if_value is text.")
    return problems


def template_problems(template: Any, variable_keys: set[str]) -> list[str]:
    """Why the agent would refuse ``template`` (none: it is fine)."""
    if not isinstance(template, dict):
        return ["The template is a JSON object."]
    unknown = set(template) - TEMPLATE_KEYS - OPTIONAL_TEMPLATE_KEYS
    problems = [f"{key!r} is not a template key." for key in sorted(unknown)]
    for key in (*SCRIPTS, "ready_pattern"):
        value = template.get(key, "")
        if not isinstance(value, str):
            problems.append(f"{key} is text.")
        elif len(value) > MAX_SCRIPT_CHARS:
            problems.append(f"{key} has at most {MAX_SCRIPT_CHARS} characters.")
    start = template.get("start_command")
    if (isinstance(start, str) and not start.strip()) or start is None:
        problems.append("start_command is required.")
    pattern = template.get("ready_pattern", "")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as error:
            problems.append(f"ready_pattern is not a regular expression ({error}).")
    signal = template.get("stop_signal", "SIGTERM")
    if not isinstance(signal, str) or _signal(signal) not in STOP_SIGNALS:
        problems.append(f"stop_signal is one of {', '.join(STOP_SIGNALS)}.")
    for key in ("stop_timeout_seconds", "ready_timeout_seconds"):
        value = template.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
            problems.append(f"{key} is a number of seconds above 0, at most 86400.")
    problems += backup_commands_problems(template.get("backup_commands", {}))
    problems += query_problems(template.get("query"), template.get("ports", []))
    problems += ports_problems(template.get("ports", []))
    if template.get("install_shell", "sh") not in INSTALL_SHELLS:
        problems.append(f"install_shell is one of {', '.join(INSTALL_SHELLS)}.")
    problems += config_files_problems(template.get("config_files", []))
    known = variable_keys | BUILT_INS | port_built_ins(template.get("ports", []))
    for key in SCRIPTS:
        value = template.get(key, "")
        for name in PLACEHOLDER.findall(value) if isinstance(value, str) else ():
            if name not in known:
                problems.append(f"{key} uses {{{{{name}}}}}, which is no variable of the game.")
    return problems


def _signal(name: str) -> str:
    name = name.upper()
    return name if name.startswith("SIG") else f"SIG{name}"


def variables_problems(variables: Any) -> list[str]:
    """Why ``variables`` are not a list of variable definitions (none: they are fine)."""
    if not isinstance(variables, list):
        return ["The variables are a JSON list of objects."]
    problems: list[str] = []
    seen: set[str] = set()
    for index, definition in enumerate(variables):
        where = f"Variable {index + 1}"
        if not isinstance(definition, dict):
            problems.append(f"{where} is an object.")
            continue
        key = definition.get("key")
        if not isinstance(key, str) or not VARIABLE_KEY.match(key):
            problems.append(f"{where}: key is a name such as MAX_PLAYERS.")
            continue
        where = f"Variable {key}"
        if key in seen:
            problems.append(f"{where} is defined twice.")
        seen.add(key)
        problems += [
            f"{where}: {name!r} is not a variable setting."
            for name in sorted(set(definition) - VARIABLE_KEYS)
        ]
        if not isinstance(definition.get("name"), str) or not definition["name"].strip():
            problems.append(f"{where}: name is required.")
        kind = definition.get("type")
        if kind not in VARIABLE_TYPES:
            problems.append(f"{where}: type is one of {', '.join(VARIABLE_TYPES)}.")
            continue
        choices = definition.get("choices")
        if kind == "enum" and (
            not isinstance(choices, list)
            or not choices
            or not all(isinstance(choice, str) for choice in choices)
        ):
            problems.append(f"{where}: an enum lists its choices as text.")
        if "default" in definition and not _fits(kind, definition["default"], choices):
            problems.append(f"{where}: the default is not a {kind} it allows.")
        for bound in ("min", "max", "min_length", "max_length"):
            value = definition.get(bound, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append(f"{where}: {bound} is an integer.")
        problems += _pattern_problems(where, kind, definition)
        for flag in ("visible", "editable"):
            if not isinstance(definition.get(flag, True), bool):
                problems.append(f"{where}: {flag} is true or false.")
    return problems


def _pattern_problems(where: str, kind: str, definition: dict) -> list[str]:
    if "pattern" not in definition:
        return []
    pattern = definition["pattern"]
    if kind != "string":
        return [f"{where}: a pattern is for string variables."]
    if not isinstance(pattern, str) or not pattern or len(pattern) > 1000:
        return [f"{where}: pattern is a regular expression of at most 1000 characters."]
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        return [f"{where}: pattern is not a regular expression ({error})."]
    default = definition.get("default")
    if isinstance(default, str) and default and not compiled.search(default):
        return [f"{where}: the default does not match the pattern."]
    return []


def _fits(kind: str, value: Any, choices: Any) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "enum":
        return isinstance(choices, list) and value in choices
    return isinstance(value, str)

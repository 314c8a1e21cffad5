"""Pterodactyl and Pelican eggs: read into a game of ours, and a game of ours written as one.

An egg is a JSON (or, from Pelican, YAML) file describing a game the way those panels run it: a
startup command with ``{{VARIABLE}}`` placeholders, variables with Laravel validation rules, an
install script run in an "installer" container, a stop command (``^C``: a signal), the console
lines that say the server is up ("done"), and configuration-file edits applied before each
start. ``egg_to_game`` maps one onto our model (the template the node agent reads, and the
variables in the catalogue's format) and lists everything it changed on the way or could not
map; ``game_to_egg`` writes a game of ours as a ``PTDL_v2`` egg, the version both panels import.

The formats read (``meta.version``):

- ``PTDL_v1``: ``images`` (a list), ``config.*`` as JSON text, ``startup`` one command;
- ``PTDL_v2``: ``docker_images`` (name: image), variables with ``field_type``;
- ``PLCN_v1``, ``PLCN_v2``: ``PTDL_v2`` with rules as a list, placeholders such as
  ``{{server.allocations.default.port}}``, ``tags``;
- ``PLCN_v3``: ``startup_commands`` (name: command; the first is used), ``config.*`` as
  objects, YAML or JSON.

How each part maps (README, "Eggs"):

- **Startup**: ``{{VAR}}`` becomes ``${VAR}``, read from the environment (which holds every
  variable, ``SERVER_PORT``, ``SERVER_IP`` and ``SERVER_MEMORY``, as a Pterodactyl container's
  does), and the command runs under ``bash -c``, as the panels' images run it: a value is
  expanded, never evaluated.
- **Variables**: the env name is the key; rules become the type (``integer``, ``boolean`` as
  an enum of the egg's own spelling, ``in:`` an enum, else ``string``) and the bounds,
  ``regex:`` and the rules that are patterns (``alpha_dash``, ``url``, ``digits``…) a
  ``pattern``; ``user_viewable`` / ``user_editable`` become ``visible`` / ``editable``. A rule
  with no counterpart is listed in the notes. A variable named like a port (``QUERY_PORT``,
  integer) becomes a named port of the game (``query``): each server gets an allocation for it,
  and the scripts see its number under the egg's name.
- **Install script**: run by the node in the server's sandbox with the node's tools
  (``bash`` or ``sh`` as the egg's entrypoint says), the server's directory at ``/mnt/server``.
  Package-manager lines (``apt install``, ``apk add``) are dropped when every package they name
  is one the nodes provide (``NODE_PACKAGES``, or the host's list); an egg that needs others is
  refused, naming them.
- **Stop**: ``^C`` is SIGINT, ``^SIGNAME`` that signal, anything else a console command.
- **Done**: each string is matched literally, ``regex:…`` as a regular expression.
- **Configuration files**: ``config.files``' parsers and ``find`` edits become the template's
  ``config_files``, their placeholders ours.

Standard library and PyYAML (Pelican's YAML eggs), no Django: the service
(``servers.services.games``) stores the result.
"""

import csv
import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

from servers.game_checks import (
    PORT_NAME,
    VARIABLE_KEY,
    template_problems,
    variables_problems,
)
from servers.game_templates import BUILT_INS

FORMATS = ("PTDL_v1", "PTDL_v2", "PLCN_v1", "PLCN_v2", "PLCN_v3")
EXPORT_FORMAT = "PTDL_v2"
MAX_EGG_BYTES = 1024 * 1024
MAX_NAME = 100
PARSERS = {"properties", "yaml", "yml", "json", "ini", "xml", "file"}
# What a node provides to an install script, by the package names Debian and Alpine give it:
# what the panels' installer images have or install first. A host whose nodes carry more sets
# EGG_NODE_PACKAGES (settings) to its own list.
NODE_PACKAGES = frozenset(
    {
        "bash",
        "bzip2",
        "ca-certificates",
        "coreutils",
        "curl",
        "file",
        "findutils",
        "gawk",
        "git",
        "grep",
        "gzip",
        "iproute2",
        "jq",
        "openssl",
        "procps",
        "python3",
        "rsync",
        "sed",
        "tar",
        "tzdata",
        "unzip",
        "wget",
        "xz",
        "xz-utils",
        "zip",
    }
)
# The environment the agent gives every process, and ours: an egg's variable of that name
# would be overwritten (or overwrite it), so it is renamed EGG_<NAME>, as Pelican renames its.
RESERVED_NAMES = frozenset(
    {
        *BUILT_INS,
        "HOME",
        "USER",
        "LOGNAME",
        "PATH",
        "LANG",
        "PWD",
        "TZ",
        "TERM",
        "HOSTNAME",
        "STARTUP",
        "MODIFIED_STARTUP",
        "ENV",
        "UUID",
    }
)
# Egg placeholders of configuration files (Pterodactyl's and Pelican's spellings) and ours.
CONFIG_PLACEHOLDERS = {
    "server.build.default.port": "SERVER_PORT",
    "server.allocations.default.port": "SERVER_PORT",
    "server.build.default.ip": "SERVER_IP",
    "server.allocations.default.ip": "SERVER_IP",
    "server.build.memory": "SERVER_MEMORY",
    "server.build.memory_limit": "SERVER_MEMORY",
    "server.uuid": "SERVER_ID",
}
CONFIG_ENV_PREFIXES = (
    "server.build.env.",
    "server.build.environment.",
    "server.environment.",
    "env.",
)
EGG_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
SIGNALS = {"C": "SIGINT", "SIGINT": "SIGINT", "SIGTERM": "SIGTERM", "SIGKILL": "SIGKILL"}
SIGNALS |= {name: name for name in ("SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2")}
STOP_TIMEOUT_SECONDS = 60
READY_TIMEOUT_SECONDS = 600
# Laravel rules that are a pattern on the value (applied to a non-empty value, as Laravel
# applies its rules).
PATTERN_RULES = {
    "alpha": r"^[^\W\d_]+$",
    "alpha_num": r"^[^\W_]+$",
    "alpha_dash": r"^[\w-]+$",
    "url": r"^(?i:[a-z][a-z0-9+.-]*)://\S+$",
    "active_url": r"^(?i:[a-z][a-z0-9+.-]*)://\S+$",
    "ipv4": r"^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)$",
    "lowercase": r"^[^A-Z]*$",
    "uppercase": r"^[^a-z]*$",
    "ascii": r"^[\x00-\x7f]*$",
}
# Rules that say nothing our variables need told: the value is text anyway, or may be empty.
QUIET_RULES = {"string", "nullable", "sometimes", "present", "filled", "bail"}
# Installer images whose package managers the install scripts call.
PACKAGE_COMMAND = re.compile(
    r"^\s*(?:sudo\s+)?(?:(?:DEBIAN_FRONTEND=\S+\s+)?(apt-get|apt|apk|dpkg)\b(.*))$"
)
EXPORT_INSTALLER = "ghcr.io/pterodactyl/installers:debian"
EXPORT_IMAGES = {
    "java": {"Java 21": "ghcr.io/pterodactyl/yolks:java_21"},
    "default": {"Debian": "ghcr.io/pterodactyl/yolks:debian"},
}


class EggError(ValueError):
    """An egg that cannot be imported; ``problems`` are its reasons, one a line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class EggImport:
    """A game read from an egg: ``entry`` as a ``Game`` holds it (name, template, variables),
    ``notes`` what changed on the way or was not mapped, ``origin`` where it came from."""

    entry: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    origin: dict[str, Any] = field(default_factory=dict)


def egg_load(content: bytes | str) -> dict[str, Any]:
    """The egg in ``content`` (JSON, or YAML), or ``EggError``."""
    if isinstance(content, str):
        content = content.encode()
    if len(content) > MAX_EGG_BYTES:
        raise EggError([f"The egg is larger than {MAX_EGG_BYTES // 1024} KiB."])
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise EggError(["The egg is not UTF-8 text."]) from None
    try:
        data = json.loads(text)
    except ValueError as json_error:
        if text.lstrip().startswith(("{", "[")):
            raise EggError([f"The egg is not valid JSON ({json_error})."]) from None
        data = _yaml(text)
    if not isinstance(data, dict):
        raise EggError(["The egg is a JSON or YAML object."])
    return data


def _yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise EggError([f"The egg is neither JSON nor YAML ({error})."]) from None


def _json_part(value: Any, where: str, problems: list[str]) -> Any:
    """A ``config.*`` part: JSON text in Pterodactyl's files, an object in Pelican's."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as error:
            problems.append(f"{where}: is not JSON ({error}).")
            return {}
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class _Reader:
    """One egg's import: the problems that refuse it and the notes that go with it."""

    egg: dict[str, Any]
    packages: frozenset[str]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # An egg variable's env name: our key (renamed when reserved).
    renamed: dict[str, str] = field(default_factory=dict)
    # An egg variable that became a named port: its env name -> the port's name.
    ports: dict[str, str] = field(default_factory=dict)
    # The installer image the egg names (kept in the origin; not pulled).
    installer: str = ""

    # -- variables -----------------------------------------------------------------------

    def variables(self) -> list[dict[str, Any]]:
        raw = self.egg.get("variables") or []
        if not isinstance(raw, list):
            self.problems.append("variables: is a list.")
            return []
        result = []
        for index, variable in enumerate(raw):
            if not isinstance(variable, dict):
                self.problems.append(f"variables[{index}]: is an object.")
                continue
            mapped = self.variable(index, variable)
            if mapped is not None:
                result.append(mapped)
        return result

    def variable(self, index: int, variable: dict[str, Any]) -> dict[str, Any] | None:
        env = _text(variable.get("env_variable")).strip().upper()
        where = f"variables[{index}] ({env or '?'})"
        if not VARIABLE_KEY.match(env):
            self.problems.append(f"{where}: env_variable is a name such as MAX_PLAYERS.")
            return None
        key = env
        if env in RESERVED_NAMES or env.startswith("PORT_"):
            key = f"EGG_{env}"
            self.notes.append(
                f"Variable {env}: renamed {key}, since {env} is set by the node for every "
                "server (the scripts are changed to match)."
            )
        self.renamed[env] = key
        name = _text(variable.get("name")).strip() or env
        description = _text(variable.get("description")).strip()
        rules = self.rules(variable.get("rules"), where)
        default = _text(variable.get("default_value"))
        definition: dict[str, Any] = {"key": key, "name": name[:MAX_NAME]}
        if description:
            definition["description"] = description
        self.apply_rules(definition, rules, default, where)
        if not _flag(variable.get("user_viewable", True)):
            definition["visible"] = False
        if not _flag(variable.get("user_editable", True)):
            definition["editable"] = False
        if self.port_variable(env, definition):
            return None
        return definition

    def rules(self, raw: Any, where: str) -> list[str]:
        if raw is None or raw == "":
            return []
        if isinstance(raw, list):
            return [_text(rule).strip() for rule in raw if _text(rule).strip()]
        if isinstance(raw, str):
            return split_rules(raw)
        self.problems.append(f"{where}: rules are text (a|b) or a list.")
        return []

    def apply_rules(
        self, definition: dict[str, Any], rules: list[str], default: str, where: str
    ) -> None:
        """The type, bounds and pattern ``rules`` say, on ``definition``."""
        names = {rule.split(":", 1)[0].lower() for rule in rules}
        parsed = [(rule.split(":", 1)[0].lower(), rule.partition(":")[2]) for rule in rules]
        required = "required" in names
        choices: list[str] | None = None
        for name, argument in parsed:
            if name == "in":
                choices = next(csv.reader([argument], skipinitialspace=True), [])
        kind = "string"
        if choices is not None:
            kind = "enum"
        elif names & {"boolean", "bool"}:
            kind = "enum"
            if default in ("true", "false"):
                choices = ["true", "false"]
            elif default in ("1", "0"):
                choices = ["1", "0"]
            else:
                choices = ["1", "0", "true", "false"]
        elif names & {"integer", "int"} or ("numeric" in names and _integer(default) is not None):
            kind = "integer"
        definition["type"] = kind
        unmapped: list[str] = []
        bounds = {}
        patterns: list[str] = []
        for rule, (name, argument) in zip(rules, parsed, strict=True):
            if name in QUIET_RULES | {"required", "in", "boolean", "bool", "integer", "int"}:
                continue
            if name == "numeric":
                if kind != "integer":
                    patterns.append(r"^-?\d+(\.\d+)?$")
            elif name in ("max", "min", "between", "size"):
                numbers = [_integer(part) for part in argument.split(",")]
                if not numbers or any(number is None for number in numbers):
                    unmapped.append(rule)
                    continue
                low, high = {
                    "max": (None, numbers[0]),
                    "min": (numbers[0], None),
                    "between": (numbers[0], numbers[-1]),
                    "size": (numbers[0], numbers[0]),
                }[name]
                if kind == "integer":
                    bounds |= {k: v for k, v in (("min", low), ("max", high)) if v is not None}
                elif kind == "string":
                    bounds |= {
                        k: v
                        for k, v in (("min_length", low), ("max_length", high))
                        if v is not None
                    }
                # An enum's choices bound it already.
            elif name == "regex":
                pattern = php_pattern(argument)
                if pattern is None:
                    unmapped.append(rule)
                else:
                    patterns.append(pattern)
            elif name in PATTERN_RULES:
                patterns.append(PATTERN_RULES[name])
            elif name == "digits" and argument.isdigit():
                patterns.append(rf"^\d{{{int(argument)}}}$")
            elif name == "digits_between" and re.fullmatch(r"\d+,\d+", argument):
                low_text, high_text = argument.split(",")
                patterns.append(rf"^\d{{{low_text},{high_text}}}$")
            elif name in ("starts_with", "ends_with"):
                options = "|".join(re.escape(option) for option in argument.split(","))
                patterns.append(f"^(?:{options})" if name == "starts_with" else f"(?:{options})$")
            else:
                unmapped.append(rule)
        if kind == "string" and patterns:
            definition["pattern"] = patterns[0] if len(patterns) == 1 else _all_of(patterns)
        elif kind != "string" and patterns:
            unmapped += [f"pattern {pattern}" for pattern in patterns if kind != "integer"]
        if kind == "string" and not required and bounds.get("min_length"):
            # Laravel checks an optional value's rules only when one is given: an empty value
            # stays allowed, a given one needs the length (the pattern skips empty values).
            patterns.append(rf"^[\s\S]{{{bounds.pop('min_length')},}}$")
            if len(patterns) > 1:
                definition["pattern"] = _all_of(patterns)
            else:
                definition["pattern"] = patterns[0]
        definition.update(bounds)
        if kind == "string":
            definition.setdefault("max_length", 4096)
            if required:
                definition.setdefault("min_length", 1)
        if choices is not None:
            if not required and "" not in choices and default == "":
                choices = [*choices, ""]
            definition["choices"] = choices
        if required:
            definition["required"] = True
        self.default(definition, default, where)
        if unmapped:
            self.notes.append(
                f"Variable {definition['key']}: rules not mapped (not checked by us): "
                f"{', '.join(unmapped)}."
            )

    def default(self, definition: dict[str, Any], default: str, where: str) -> None:
        kind = definition["type"]
        if kind == "integer":
            number = _integer(default)
            if number is not None:
                definition["default"] = number
            elif default:
                self.notes.append(
                    f"Variable {definition['key']}: the default {default!r} is no integer; "
                    "it has none."
                )
            return
        if kind == "enum":
            if default in definition["choices"]:
                definition["default"] = default
            elif default:
                self.notes.append(
                    f"Variable {definition['key']}: the default {default!r} is none of its "
                    "choices; it has none."
                )
            return
        if default == "" and definition.get("required"):
            return  # customers are asked for it, as the egg's "required" asks
        definition["default"] = default

    def port_variable(self, env: str, definition: dict[str, Any]) -> bool:
        """An integer variable named like a port (``QUERY_PORT``) becomes a named port: each
        server gets an allocation for it, as ours do."""
        match = re.fullmatch(r"([A-Z][A-Z0-9_]*?)_PORT", env)
        if not match or definition["type"] != "integer" or env in RESERVED_NAMES:
            return False
        name = match.group(1).lower()
        if not PORT_NAME.match(name) or name == "game" or len(self.ports) >= 10:
            return False
        self.ports[env] = name
        self.notes.append(
            f"Variable {env}: became the named port {name} — each server gets an allocation "
            f"for it, given to the scripts as {env} (its default, {definition.get('default')}, "
            "is not used)."
        )
        return True

    def port_list(self) -> list[dict[str, str]]:
        return [
            {"name": name, "protocol": "both", "description": f"{env} of the egg"}
            for env, name in self.ports.items()
        ]

    # -- scripts -------------------------------------------------------------------------

    def exports(self) -> str:
        """Shell lines giving the port variables the egg's names (``QUERY_PORT``)."""
        return "\n".join(
            f'{env}="${{PORT_{name.upper()}}}"; export {env}' for env, name in self.ports.items()
        )

    def placeholders(self, text: str, where: str) -> str:
        """``text`` with the egg's ``{{VAR}}`` turned into ``${VAR}`` environment reads."""

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            target = self.env_name(name)
            if target is None:
                # As the panels' images do: an environment read, empty when nothing sets it.
                self.notes.append(f"{where}: {{{{{name}}}}} is no variable of the egg (empty).")
                return f"${{{name.upper()}}}" if VARIABLE_KEY.match(name) else ""
            return f"${{{target}}}"

        return EGG_PLACEHOLDER.sub(replace, text)

    def env_name(self, name: str) -> str | None:
        """Which environment variable an egg placeholder (``SERVER_JARFILE``,
        ``server.build.env.X``, ``server.build.default.port``…) reads."""
        if name in CONFIG_PLACEHOLDERS:
            return CONFIG_PLACEHOLDERS[name]
        for prefix in CONFIG_ENV_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        upper = name.upper()
        if upper in ("SERVER_PORT", "SERVER_IP", "SERVER_MEMORY"):
            return upper
        if upper in self.ports:
            return f"PORT_{self.ports[upper].upper()}"
        if upper in self.renamed:
            return self.renamed[upper]
        return None

    def startup(self) -> str:
        startup = self.egg.get("startup")
        commands = self.egg.get("startup_commands")
        if isinstance(commands, dict) and commands:
            names = list(commands)
            startup = commands[names[0]]
            if len(names) > 1:
                self.notes.append(
                    f"startup_commands: {names[0]!r} is used; the others "
                    f"({', '.join(map(repr, names[1:]))}) are not offered."
                )
        if not isinstance(startup, str) or not startup.strip():
            self.problems.append("startup: is required, the command that starts the server.")
            return ""
        command = self.placeholders(_lines(startup).strip(), "startup")
        prelude = self.exports()
        # As the panels' images run it: under bash, the variables read from the environment.
        script = f"{prelude}\n{command}" if prelude else command
        return f"exec bash -c {shlex.quote(script)}"

    def install(self) -> tuple[str, str]:
        scripts = self.egg.get("scripts") or {}
        if not isinstance(scripts, dict):
            self.problems.append("scripts: is an object holding installation.")
            scripts = {}
        installation = scripts.get("installation")
        if isinstance(installation, str):  # Pelican's files may hold it as JSON text
            installation = _json_part(installation, "scripts.installation", self.problems)
        if not isinstance(installation, dict):
            installation = {}
        script = _lines(_text(installation.get("script")))
        entrypoint = _text(installation.get("entrypoint")).strip() or "bash"
        container = _text(installation.get("container")).strip()
        self.installer = container
        shell = "bash" if entrypoint.rsplit("/", 1)[-1] == "bash" else "sh"
        if entrypoint.rsplit("/", 1)[-1] not in ("bash", "sh", "ash", "dash"):
            self.problems.append(
                f"scripts.installation.entrypoint: {entrypoint!r} is no shell we run "
                "(bash, sh, ash)."
            )
        if not script.strip():
            return "", shell
        script = self.packages_needed(script)
        if container:
            self.notes.append(
                f"scripts.installation.container: {container} is not pulled — the script runs "
                f"in the server's sandbox with the node's tools, under {shell}."
            )
        prelude = self.exports()
        if prelude:
            first, _, rest = script.partition("\n")
            script = (
                f"{first}\n{prelude}\n{rest}" if first.startswith("#!") else f"{prelude}\n{script}"
            )
        return script, shell

    def packages_needed(self, script: str) -> str:
        """``script`` with its package-manager commands taken out (the node provides those
        packages), or a problem naming the packages it does not."""
        missing: set[str] = set()
        taken: list[str] = []
        lines = []
        for line in script.split("\n"):
            kept = []
            for part in re.split(r"(\s*(?:&&|;|\|\|)\s*)", line):
                match = PACKAGE_COMMAND.match(part)
                if match and not part.strip().startswith("#"):
                    packages = _packages(match.group(1), match.group(2))
                    if packages is not None:
                        missing |= packages - self.packages
                        taken.append(part.strip())
                        kept.append("true")
                        continue
                kept.append(part)
            lines.append("".join(kept))
        if missing:
            self.problems.append(
                "scripts.installation.script: installs packages the nodes do not provide: "
                f"{', '.join(sorted(missing))} (they provide {', '.join(sorted(self.packages))};"
                " a host whose nodes have more names them in EGG_NODE_PACKAGES)."
            )
        elif taken:
            self.notes.append(
                "scripts.installation.script: package-manager commands replaced by `true` "
                f"(the node provides their packages): {'; '.join(taken)}."
            )
        return "\n".join(lines)

    # -- config ----------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        config = self.egg.get("config") or {}
        if not isinstance(config, dict):
            self.problems.append("config: is an object.")
            return {}
        return config

    def stop(self) -> tuple[str, str]:
        """``(stop_command, stop_signal)``."""
        stop = _text(self.config().get("stop")).strip()
        if not stop:
            return "", "SIGTERM"
        if stop.startswith("^"):
            name = stop.lstrip("^").upper()
            signal = SIGNALS.get(name) or SIGNALS.get(f"SIG{name}")
            if signal is None:
                self.notes.append(f"config.stop: {stop!r} is no signal we send; SIGTERM is sent.")
                return "", "SIGTERM"
            return "", signal
        return stop, "SIGTERM"

    def ready_pattern(self) -> str:
        startup = _json_part(self.config().get("startup"), "config.startup", self.problems)
        if not isinstance(startup, dict):
            self.problems.append("config.startup: is an object.")
            return ""
        done = startup.get("done", [])
        if isinstance(done, str):
            done = [done]
        if not isinstance(done, list):
            self.problems.append("config.startup.done: is text or a list of text.")
            return ""
        parts = []
        for item in done:
            text = _text(item)
            if not text:
                continue
            if text.startswith("regex:"):
                pattern = text[len("regex:") :]
                try:
                    re.compile(pattern)
                except re.error as error:
                    self.problems.append(f"config.startup.done: {text!r} ({error}).")
                    continue
                parts.append(pattern)
            else:
                parts.append(re.escape(text))
        if startup.get("userInteraction"):
            self.notes.append("config.startup.userInteraction: not used (ours has no prompts).")
        return "|".join(parts)

    def config_files(self) -> list[dict[str, Any]]:
        files = _json_part(self.config().get("files"), "config.files", self.problems)
        if not isinstance(files, dict):
            self.problems.append("config.files: is an object of file name: edits.")
            return []
        result = []
        for name, spec in files.items():
            where = f"config.files[{name!r}]"
            if not isinstance(spec, dict):
                self.problems.append(f"{where}: is an object of parser and find.")
                continue
            parser = _text(spec.get("parser")).lower()
            if parser not in PARSERS:
                self.problems.append(
                    f"{where}.parser: {parser!r} is none of {', '.join(sorted(PARSERS))}."
                )
                continue
            find = spec.get("find") or {}
            if not isinstance(find, dict):
                self.problems.append(f"{where}.find: is an object of match: value.")
                continue
            replace = []
            for match, value in find.items():
                if isinstance(value, dict):  # {if_value: replacement, …}
                    for if_value, replacement in value.items():
                        replace.append(
                            {
                                "match": match,
                                "if_value": if_value,
                                "value": self.config_value(replacement, where),
                            }
                        )
                    continue
                replace.append({"match": match, "value": self.config_value(value, where)})
            path = posixpath.normpath(str(name).lstrip("/"))
            if path in (".", "") or path.startswith("../"):
                self.problems.append(f"{where}: is no file inside the server's folder.")
                continue
            result.append(
                {
                    "file": path,
                    "parser": "yaml" if parser == "yml" else parser,
                    "replace": replace,
                }
            )
        return result

    def config_value(self, value: Any, where: str) -> Any:
        if isinstance(value, bool | int | float) or value is None:
            return "" if value is None else value
        text = _text(value)

        def replace(match: re.Match[str]) -> str:
            target = self.env_name(match.group(1))
            if target is None:
                self.notes.append(
                    f"{where}: {{{{{match.group(1)}}}}} has no counterpart here; kept as text."
                )
                return match.group(0)
            return f"{{{{{target}}}}}"

        return EGG_PLACEHOLDER.sub(replace, text)

    def leftovers(self, config: dict[str, Any]) -> None:
        logs = _json_part(config.get("logs"), "config.logs", [])
        if logs:
            self.notes.append("config.logs: not used (the console keeps the server's output).")
        if config.get("extends"):
            self.problems.append(
                "config.extends: the egg takes its configuration from another egg; import "
                "an export of it that holds its own."
            )
        for key in ("features", "file_denylist"):
            if self.egg.get(key):
                self.notes.append(f"{key}: {self.egg[key]!r} not used (no counterpart).")


def _lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "")
    return bool(value)


def _integer(text: str) -> int | None:
    text = text.strip()
    return int(text) if re.fullmatch(r"-?\d{1,18}", text) else None


def _all_of(patterns: list[str]) -> str:
    return "".join(f"(?=.*?(?:{pattern}))" for pattern in patterns)


def _packages(manager: str, rest: str) -> set[str] | None:
    """The packages a package-manager command installs (an empty set for ``apt update``),
    or None when it is not one."""
    words = [word for word in shlex.split(rest, posix=True) if word] if rest.strip() else []
    if manager == "dpkg":
        return set() if words[:1] == ["--add-architecture"] else None
    verbs = [word for word in words if not word.startswith("-")]
    if not verbs:
        return None
    verb, names = verbs[0], verbs[1:]
    if manager in ("apt", "apt-get") and verb in ("update", "upgrade", "clean", "autoremove"):
        return set()
    if manager == "apk" and verb in ("update", "upgrade", "cache"):
        return set()
    if (manager in ("apt", "apt-get") and verb == "install") or (
        manager == "apk" and verb == "add"
    ):
        return {name.split("=")[0].split(":")[0] for name in names}
    return None


def split_rules(rules: str) -> list[str]:
    """Laravel's ``a|b:c|regex:/x|y/`` into its rules (a ``regex:`` keeps its own ``|``)."""
    result, position = [], 0
    while position <= len(rules):
        if rules.startswith(("regex:", "not_regex:"), position):
            start = rules.index(":", position) + 1
            delimiter = rules[start : start + 1]
            end = start + 1
            found = -1
            while end < len(rules):
                if rules[end] == "\\":
                    end += 2
                    continue
                if rules[end] == delimiter:
                    tail = re.match(r"[A-Za-z]*(?=\||$)", rules[end + 1 :])
                    if tail is not None:
                        found = end + 1 + tail.end()
                        break
                end += 1
            if delimiter and found != -1:
                result.append(rules[position:found])
                position = found + 1
                continue
        bar = rules.find("|", position)
        bar = len(rules) if bar == -1 else bar
        result.append(rules[position:bar])
        position = bar + 1
    return [rule.strip() for rule in result if rule.strip()]


def php_pattern(argument: str) -> str | None:
    """A PHP ``/pattern/flags`` as a Python regular expression (None: it is not one)."""
    if len(argument) < 2:
        return None
    delimiter = argument[0]
    closing = {"(": ")", "{": "}", "[": "]", "<": ">"}.get(delimiter, delimiter)
    end = argument.rfind(closing)
    if end <= 0 or delimiter.isalnum() or delimiter == "\\":
        return None
    body, flags = argument[1:end], argument[end + 1 :]
    if set(flags) - set("imsxuD"):
        return None
    inline = "".join(flag for flag in flags if flag in "imsx")
    pattern = f"(?{inline}){body}" if inline else body
    try:
        re.compile(pattern)
    except re.error:
        return None
    return pattern


def egg_to_game(egg: dict[str, Any], *, packages: frozenset[str] = NODE_PACKAGES) -> EggImport:
    """``egg`` as a game of ours, or ``EggError`` listing why it cannot be imported."""
    meta = egg.get("meta") if isinstance(egg.get("meta"), dict) else {}
    version = _text(meta.get("version"))
    if version not in FORMATS:
        raise EggError(
            [
                f"meta.version: {version or 'missing'} is none of the formats read: "
                f"{', '.join(FORMATS)}."
            ]
        )
    reader = _Reader(egg, packages)
    name = _text(egg.get("name")).strip()
    if not name:
        reader.problems.append("name: is required.")
    elif len(name) > MAX_NAME:
        reader.problems.append(f"name: has at most {MAX_NAME} characters.")
    variables = reader.variables()
    config = reader.config()
    stop_command, stop_signal = reader.stop()
    install_script, install_shell = reader.install()
    template: dict[str, Any] = {
        "install_script": install_script,
        "start_command": reader.startup(),
        "ready_pattern": reader.ready_pattern(),
        "stop_command": stop_command,
        "stop_signal": stop_signal,
        "stop_timeout_seconds": STOP_TIMEOUT_SECONDS,
        "ready_timeout_seconds": READY_TIMEOUT_SECONDS,
        "backup_commands": {"before": [], "after": []},
        "install_shell": install_shell,
    }
    if reader.ports:
        template["ports"] = reader.port_list()
    files = reader.config_files()
    if files:
        template["config_files"] = files
    reader.leftovers(config)
    if not reader.problems:
        keys = {variable["key"] for variable in variables}
        reader.problems += [f"variables: {p}" for p in variables_problems(variables)]
        reader.problems += [f"template: {p}" for p in template_problems(template, keys)]
    if reader.problems:
        raise EggError(reader.problems)
    images = egg.get("docker_images") or egg.get("images") or egg.get("image") or {}
    if isinstance(images, dict):
        images = list(images.values())
    elif isinstance(images, str):
        images = [images]
    elif not isinstance(images, list):
        raise EggError(["docker_images: is an object of name: image (images: a list)."])
    if images:
        reader.notes.append(
            f"docker_images: {', '.join(map(str, images))} not pulled — the server runs with "
            "the node's tools, which must hold what the image brings (a Java, SteamCMD…)."
        )
    origin = {
        "format": version,
        "uuid": _text(egg.get("uuid")) or None,
        "author": _text(egg.get("author")) or None,
        "description": _text(egg.get("description")),
        "update_url": _text(meta.get("update_url")) or None,
        "images": [str(image) for image in images],
        "installer": reader.installer,
        "notes": reader.notes,
    }
    return EggImport(
        {"name": name, "template": template, "variables": variables}, reader.notes, origin
    )


# -- export ---------------------------------------------------------------------------------

OUR_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _egg_rules(definition: dict[str, Any]) -> str:
    rules = ["required" if definition.get("required") else "nullable"]
    kind = definition["type"]
    if kind == "integer":
        rules.append("integer")
        if "min" in definition and "max" in definition:
            rules.append(f"between:{definition['min']},{definition['max']}")
        elif "min" in definition:
            rules.append(f"min:{definition['min']}")
        elif "max" in definition:
            rules.append(f"max:{definition['max']}")
    elif kind == "boolean":
        rules.append("in:true,false" if "must_be" not in definition else "in:true")
    elif kind == "enum":
        rules.append("in:" + ",".join(choice for choice in definition["choices"]))
    else:
        rules.append("string")
        if "min_length" in definition:
            rules.append(f"min:{definition['min_length']}")
        rules.append(f"max:{definition.get('max_length', 255)}")
        if "pattern" in definition:
            rules.append(f"regex:/{definition['pattern'].replace('/', chr(92) + '/')}/")
    if "must_be" in definition and kind != "boolean":
        rules.append(f"in:{_text(definition['must_be'])}")
    return "|".join(rules)


def _egg_script(text: str, names: dict[str, str]) -> str:
    """Our script (``{{KEY}}``, a whole shell word each, shell-quoted by our agent) with each
    placeholder an environment read, ``"${KEY}"``: the same word."""

    def replace(match: re.Match[str]) -> str:
        return f'"${{{names.get(match.group(1), match.group(1))}}}"'

    return OUR_PLACEHOLDER.sub(replace, text)


def game_to_egg(
    *,
    name: str,
    slug: str,
    template: dict[str, Any],
    variables: list[dict[str, Any]],
    author: str,
    origin: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A game of ours as a ``PTDL_v2`` egg. Our start command is a shell script (a panel's
    startup is one line): the install writes it as ``.hms-start.sh`` and the startup runs it;
    named ports become variables (``QUERY_PORT``) the customer points at an allocation."""
    origin = origin or {}
    names = {"SERVER_ID": "P_SERVER_UUID"}
    port_variables = []
    for port in template.get("ports", []):
        env = f"{port['name'].upper()}_PORT"
        names[f"PORT_{port['name'].upper()}"] = env
        port_variables.append(
            {
                "name": f"{port['name'].capitalize()} port",
                "description": port.get("description")
                or f"An allocation of the server's for its {port['name']} port.",
                "env_variable": env,
                "default_value": "",
                "user_viewable": True,
                "user_editable": True,
                "rules": "required|integer|between:1024,65535",
                "field_type": "text",
            }
        )
    start = _egg_script(template.get("start_command", ""), names)
    install = _egg_script(template.get("install_script", ""), names)
    body = "\n".join(
        [
            "#!/bin/bash",
            f"# Installs {name} ({slug}), then writes the start script the startup runs.",
            "cd /mnt/server || exit 1",
            "(",
            install.rstrip("\n") or "true",
            ") || exit 1",
            "cat > .hms-start.sh <<'HMS_START_EOF'",
            start.rstrip("\n"),
            "HMS_START_EOF",
            "chmod +x .hms-start.sh",
            "",
        ]
    )
    egg_variables = []
    for definition in variables:
        default = definition.get("default", "")
        egg_variables.append(
            {
                "name": definition["name"],
                "description": definition.get("description", ""),
                "env_variable": definition["key"],
                "default_value": _text(default),
                "user_viewable": definition.get("visible", True),
                "user_editable": definition.get("editable", True),
                "rules": _egg_rules(definition),
                "field_type": "text",
            }
        )
    images = EXPORT_IMAGES["java" if re.search(r"\bjava\b", start) else "default"]
    done = template.get("ready_pattern", "")
    stop_signal = template.get("stop_signal", "SIGTERM")
    stop = template.get("stop_command") or ("^C" if stop_signal == "SIGINT" else f"^{stop_signal}")
    files = {
        item["file"]: {
            "parser": item["parser"],
            "find": {
                replacement["match"]: (
                    {replacement["if_value"]: _export_value(replacement["value"], names)}
                    if "if_value" in replacement
                    else _export_value(replacement["value"], names)
                )
                for replacement in item["replace"]
            },
        }
        for item in template.get("config_files", [])
    }
    return {
        "_comment": f"Exported from the hosting control plane's game {slug}.",
        "meta": {"version": EXPORT_FORMAT, "update_url": origin.get("update_url")},
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "name": name,
        "author": origin.get("author") or author,
        "description": origin.get("description") or f"{name}, from the hosting catalogue.",
        "features": [],
        "docker_images": images,
        "file_denylist": [],
        "startup": "bash ./.hms-start.sh",
        "config": {
            "files": json.dumps(files),
            "startup": json.dumps({"done": f"regex:{done}" if done else ""}),
            "logs": "{}",
            "stop": stop,
        },
        "scripts": {
            "installation": {
                "script": body,
                "container": EXPORT_INSTALLER,
                "entrypoint": "bash",
            }
        },
        "variables": egg_variables + port_variables,
    }


def _export_value(value: Any, names: dict[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    ours = {"SERVER_PORT": "server.build.default.port", "SERVER_IP": "server.build.default.ip"}
    ours |= {"SERVER_MEMORY": "server.build.memory"}

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in ours:
            return f"{{{{{ours[key]}}}}}"
        return f"{{{{server.build.env.{names.get(key, key)}}}}}"

    return OUR_PLACEHOLDER.sub(replace, value)

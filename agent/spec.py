"""A server's spec as the control plane sends it (PROTOCOL.md "A server's spec"), validated.

The spec's ``environment`` holds secrets (a bot's DISCORD_TOKEN): ``public()`` is the form that
is stored on disk and shown, with the variable names only; the values live in memory and in the
process's environment, nowhere else.
"""

import ipaddress
import math
import re
import shlex
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.config_files import (
    MAX_CONFIG_FILES,
    MAX_MATCH_CHARS,
    MAX_PATH_CHARS,
    MAX_REPLACEMENTS,
    MAX_VALUE_CHARS,
    PARSERS,
    ConfigFile,
    Replacement,
    safe_relative_path,
)
from agent.errors import ValidationFailed

SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
GIT_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$")
SOURCE_SCHEMES = {"git": ("https://", "http://", "git://", "ssh://", "file://")}
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGKILL")
KINDS = ("server", "bot")
# A named port's name: {{PORT_<NAME>}} in the scripts.
PORT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
MAX_ALLOCATIONS = 64
PORT_PROTOCOLS = ("tcp", "udp", "both")
MISSING = object()
MAX_SCRIPT_CHARS = 64 * 1024
INSTALL_SHELLS = {"sh": "/bin/sh", "bash": "/bin/bash"}


@dataclass(frozen=True)
class Template:
    install_script: str
    start_command: str
    ready_pattern: str
    stop_command: str
    stop_signal: str
    stop_timeout_seconds: float
    ready_timeout_seconds: float
    # How the game is asked for its players (agent/query.py): {"protocol", "port"}, or None.
    query: dict[str, str] | None = None
    # What the install script runs with: "sh" (/bin/sh) or "bash" (/bin/bash), as eggs say.
    install_shell: str = "sh"
    # Edits of configuration files made before each start (agent/config_files.py).
    config_files: tuple[ConfigFile, ...] = ()

    def public(self) -> dict[str, Any]:
        data = vars(self).copy()
        data["config_files"] = [item.to_json() for item in self.config_files]
        return data

    @property
    def ready(self) -> re.Pattern[str] | None:
        return re.compile(self.ready_pattern) if self.ready_pattern else None

    @property
    def stop_signal_number(self) -> signal.Signals:
        return signal.Signals[self.stop_signal]


@dataclass(frozen=True)
class Limits:
    """``None`` (or 0 in the spec) means no limit of that kind."""

    memory_mb: int | None
    cpu_percent: int | None
    disk_mb: int | None
    pids: int | None


@dataclass(frozen=True)
class Allocation:
    ip: str
    port: int
    # "game" for the primary; a port the game's template names ("query"); "" for the others.
    name: str = ""
    # What the sandbox forwards to it: "tcp", "udp" or "both" (the template's port says).
    protocol: str = "both"


@dataclass(frozen=True)
class Source:
    type: str
    url: str
    ref: str | None


@dataclass(frozen=True)
class ServerSpec:
    id: str
    kind: str
    template: Template
    variables: dict[str, str]
    environment: dict[str, str]
    limits: Limits
    allocation: Allocation | None
    runtime: str | None
    source: Source | None
    # Every ip:port the server holds, the primary first: the sandbox forwards exactly these.
    allocations: tuple[Allocation, ...] = ()

    def public(self) -> dict[str, Any]:
        """The spec without secrets: environment variable names, never their values."""
        return {
            "id": self.id,
            "kind": self.kind,
            "template": self.template.public(),
            "variables": dict(self.variables),
            "environment_keys": sorted(self.environment),
            "limits": vars(self.limits).copy(),
            "allocation": (
                {"ip": self.allocation.ip, "port": self.allocation.port}
                if self.allocation
                else None
            ),
            "allocations": [vars(item).copy() for item in self.allocations],
            "runtime": self.runtime,
            "source": vars(self.source).copy() if self.source else None,
        }

    def substitutions(self, workloads: str) -> dict[str, str]:
        """Every ``{{KEY}}`` the commands may use: the variables, then the built-ins."""
        values = dict(self.variables)
        values.update(
            SERVER_ID=self.id,
            SERVER_IP=self.allocation.ip if self.allocation else "",
            SERVER_PORT=str(self.allocation.port) if self.allocation else "",
            SERVER_MEMORY=str(self.limits.memory_mb or 0),
            **{
                f"PORT_{item.name.upper()}": str(item.port)
                for item in self.allocations
                if item.name and item.name != "game"
            },
            AGENT_WORKLOADS=workloads,
        )
        return values

    def render(self, command: str, workloads: str) -> str:
        """``command`` with each known ``{{KEY}}`` replaced by its shell-quoted value."""
        values = self.substitutions(workloads)

        def replace(match: re.Match[str]) -> str:
            key = match.group(1)
            return shlex.quote(values[key]) if key in values else match.group(0)

        return PLACEHOLDER.sub(replace, command)


def _fail(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}")


def _text(data: Mapping[str, Any], key: str, field: str, *, default: str | None = None) -> str:
    value = data.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str):
        raise _fail(f"{field}.{key}" if field else key, "must be a string.")
    if len(value) > MAX_SCRIPT_CHARS:
        raise _fail(f"{field}.{key}" if field else key, "is too long.")
    return value


def _seconds(data: Mapping[str, Any], key: str, default: float) -> float:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
        raise _fail(f"template.{key}", "must be a number of seconds between 0 and 86400.")
    return float(value)


def _template(data: Any) -> Template:
    if not isinstance(data, dict):
        raise _fail("template", "must be an object.")
    start_command = _text(data, "start_command", "template", default="")
    if not start_command.strip():
        raise _fail("template.start_command", "is required.")
    ready_pattern = _text(data, "ready_pattern", "template", default="")
    try:
        re.compile(ready_pattern)
    except re.error as error:
        raise _fail(
            "template.ready_pattern",
            f"is not a valid regular expression ({error}).",
        ) from None
    stop_signal = _text(data, "stop_signal", "template", default="SIGTERM").upper() or "SIGTERM"
    if not stop_signal.startswith("SIG"):
        stop_signal = f"SIG{stop_signal}"
    if stop_signal not in STOP_SIGNALS:
        raise _fail("template.stop_signal", f"must be one of {', '.join(STOP_SIGNALS)}.")
    return Template(
        install_script=_text(data, "install_script", "template", default=""),
        start_command=start_command,
        ready_pattern=ready_pattern,
        stop_command=_text(data, "stop_command", "template", default=""),
        stop_signal=stop_signal,
        stop_timeout_seconds=_seconds(data, "stop_timeout_seconds", 30),
        ready_timeout_seconds=_seconds(data, "ready_timeout_seconds", 120),
        query=_query(data.get("query")),
        install_shell=_install_shell(data.get("install_shell")),
        config_files=_config_files(data.get("config_files")),
    )


def _install_shell(data: Any) -> str:
    if data is None:
        return "sh"
    if not isinstance(data, str) or data not in INSTALL_SHELLS:
        raise _fail("template.install_shell", f"must be one of {', '.join(INSTALL_SHELLS)}.")
    return data


def _config_files(data: Any) -> tuple[ConfigFile, ...]:
    """The template's configuration-file edits (PROTOCOL.md "Configuration files")."""
    if data is None:
        return ()
    if not isinstance(data, list) or len(data) > MAX_CONFIG_FILES:
        raise _fail("template.config_files", f"must be a list of at most {MAX_CONFIG_FILES}.")
    return tuple(
        _config_file(item, f"template.config_files[{index}]") for index, item in enumerate(data)
    )


def _config_file(data: Any, field: str) -> ConfigFile:
    if not isinstance(data, dict) or set(data) - {"file", "parser", "replace"}:
        raise _fail(field, "must be an object of file, parser and replace.")
    path = data.get("file")
    if not isinstance(path, str) or not safe_relative_path(path):
        raise _fail(
            f"{field}.file",
            f"must be a relative path inside the server's folder (no .., at most "
            f"{MAX_PATH_CHARS} characters).",
        )
    if data.get("parser") not in PARSERS:
        raise _fail(f"{field}.parser", f"must be one of {', '.join(PARSERS)}.")
    replace = data.get("replace")
    if not isinstance(replace, list) or len(replace) > MAX_REPLACEMENTS:
        raise _fail(f"{field}.replace", f"must be a list of at most {MAX_REPLACEMENTS}.")
    return ConfigFile(
        file=path,
        parser=data["parser"],
        replace=tuple(
            _replacement(item, f"{field}.replace[{index}]") for index, item in enumerate(replace)
        ),
    )


def _replacement(data: Any, field: str) -> Replacement:
    if not isinstance(data, dict) or set(data) - {"match", "value", "if_value"}:
        raise _fail(field, "must be an object of match, value and if_value.")
    match = data.get("match")
    if not isinstance(match, str) or not 0 < len(match) <= MAX_MATCH_CHARS:
        raise _fail(f"{field}.match", f"must be text of 1 to {MAX_MATCH_CHARS} characters.")
    value = data.get("value", MISSING)
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise _fail(f"{field}.value", "is too long.")
    elif not isinstance(value, bool | int | float) or (
        isinstance(value, float) and not math.isfinite(value)
    ):
        raise _fail(f"{field}.value", "must be text, a number or true/false.")
    if_value = data.get("if_value")
    if if_value is not None and (not isinstance(if_value, str) or len(if_value) > MAX_VALUE_CHARS):
        raise _fail(f"{field}.if_value", "must be text.")
    return Replacement(match=match, value=value, if_value=if_value)


QUERY_PROTOCOLS = ("minecraft", "source", "bedrock")


def _query(data: Any) -> dict[str, str] | None:
    """The template's game query: its protocol and which allocation answers it (``game``, the
    default, or a named port)."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) - {"protocol", "port"}:
        raise _fail("template.query", "must be an object of protocol and port.")
    if data.get("protocol") not in QUERY_PROTOCOLS:
        raise _fail("template.query.protocol", f"must be one of {', '.join(QUERY_PROTOCOLS)}.")
    port = data.get("port", "game")
    if not isinstance(port, str) or not re.match(r"^[a-z][a-z0-9_]{0,31}$", port):
        raise _fail("template.query.port", "must be a port's name (game, query...).")
    return {"protocol": data["protocol"], "port": port}


def _string_map(data: Any, field: str) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _fail(field, "must be an object of names to values.")
    values = {}
    for key, value in data.items():
        if not isinstance(key, str) or not VARIABLE_NAME.match(key):
            raise _fail(field, f"{key!r} is not a valid variable name.")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise _fail(f"{field}.{key}", "must be a string or a number.")
        if "\0" in str(value):
            raise _fail(f"{field}.{key}", "must not contain a NUL character.")
        values[key] = str(value)
    return values


def _limits(data: Any) -> Limits:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _fail("limits", "must be an object.")
    values: dict[str, int | None] = {}
    for key in ("memory_mb", "cpu_percent", "disk_mb", "pids"):
        value = data.get(key)
        if value is None or value == 0:
            values[key] = None
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _fail(f"limits.{key}", "must be a positive whole number, 0 or null.")
        else:
            values[key] = value
    return Limits(**values)


def _allocation(data: Any, field: str = "allocation") -> Allocation | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise _fail(field, "must be an object or null.")
    ip, port = data.get("ip"), data.get("port")
    try:
        # Text only: ipaddress would also read an integer (2130706433 is 127.0.0.1), which
        # pasta and the game's SERVER_IP would then be given as digits.
        if not isinstance(ip, str):
            raise ValueError(ip)
        ipaddress.ip_address(ip)
    except ValueError:
        raise _fail(f"{field}.ip", "must be an IP address.") from None
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise _fail(f"{field}.port", "must be a port number.")
    name = data.get("name", "")
    if field == "allocation":
        name = ""  # the primary's name is implied
    elif not isinstance(name, str) or (name and not PORT_NAME.match(name)):
        raise _fail(f"{field}.name", "must be lowercase letters, digits and _, or empty.")
    protocol = data.get("protocol", "both")
    if protocol not in PORT_PROTOCOLS:
        raise _fail(f"{field}.protocol", f"must be one of {', '.join(PORT_PROTOCOLS)}.")
    return Allocation(ip=ip, port=port, name=name, protocol=protocol)


def _allocations(data: Any, primary: Allocation | None) -> tuple[Allocation, ...]:
    """Every allocation of the server; a control plane that sends only ``allocation`` (before
    issue 32) means that one alone."""
    if data is None:
        return (Allocation(primary.ip, primary.port, "game"),) if primary else ()
    if not isinstance(data, list) or len(data) > MAX_ALLOCATIONS:
        raise _fail("allocations", f"must be a list of at most {MAX_ALLOCATIONS} objects.")
    items = tuple(
        _allocation_required(item, f"allocations[{index}]") for index, item in enumerate(data)
    )
    if len({(item.ip, item.port) for item in items}) != len(items):
        raise _fail("allocations", "must not hold an ip:port twice.")
    return items


def _allocation_required(data: Any, field: str) -> Allocation:
    if not isinstance(data, dict):
        raise _fail(field, "must be an object.")
    allocation = _allocation(data, field)
    assert allocation is not None
    return allocation


def _source(data: Any) -> Source | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise _fail("source", "must be an object or null.")
    kind = data.get("type")
    url = data.get("url")
    if kind not in ("git", "archive"):
        raise _fail("source.type", "must be git or archive.")
    if not isinstance(url, str) or not url:
        raise _fail("source.url", "is required.")
    schemes = SOURCE_SCHEMES.get(kind, ("https://", "http://"))
    if kind == "archive" and url.startswith("/v1/agent/"):
        schemes = ("/v1/agent/",)  # an archive uploaded to the control plane, fetched from it
    if not url.startswith(schemes):
        raise _fail("source.url", f"must start with {' or '.join(schemes)}.")
    ref = data.get("ref") or None
    if ref is not None and (not isinstance(ref, str) or not GIT_REF.match(ref)):
        raise _fail("source.ref", "must be a branch or tag name.")
    return Source(type=kind, url=url, ref=ref)


def parse_spec(data: Any, *, server_id: str) -> ServerSpec:
    """Validate a spec from the control plane; ``ValidationFailed`` names the bad field."""
    if not isinstance(data, dict):
        raise ValidationFailed("The spec must be a JSON object.")
    if data.get("id", server_id) != server_id:
        raise _fail("id", "does not match the address.")
    if not SERVER_ID.match(server_id):
        raise _fail("id", "must be letters, digits, _ and -, at most 64.")
    kind = data.get("kind", "server")
    if kind not in KINDS:
        raise _fail("kind", "must be server or bot.")
    runtime = data.get("runtime")
    if runtime is not None and (not isinstance(runtime, str) or not runtime):
        raise _fail("runtime", "must be a runtime name or null.")
    primary = _allocation(data.get("allocation"))
    return ServerSpec(
        id=server_id,
        kind=kind,
        template=_template(data.get("template")),
        variables=_string_map(data.get("variables"), "variables"),
        environment=_string_map(data.get("environment"), "environment"),
        limits=_limits(data.get("limits")),
        allocation=primary,
        runtime=runtime,
        source=_source(data.get("source")),
        allocations=_allocations(data.get("allocations"), primary),
    )


def spec_from_state(data: Mapping[str, Any]) -> tuple[ServerSpec, list[str]]:
    """A stored (public) spec back, with the names of the secrets that were not stored."""
    spec = parse_spec({**data, "environment": None}, server_id=data["id"])
    return spec, list(data.get("environment_keys", []))

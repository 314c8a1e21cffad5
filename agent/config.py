"""The agent's configuration: environment variables, each overridable by a command-line flag.

Every value goes through a parser that fails loudly (``ConfigError``) on a bad value, so a typo
stops the agent at start rather than surfacing as odd behaviour hours later.
"""

import argparse
import json
import os
import pwd
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

LIMIT_MODES = ("auto", "cgroup", "rlimit")
# A bot's runtime → the commands that may provide it, and how to read the version they are
# (argument, pattern whose group must equal the runtime's version): a `node` on PATH that is
# Node 20 provides node-20, never node-22.
DEFAULT_RUNTIMES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "python-3.13": (("python3.13",), "--version", r"Python (\d+\.\d+)"),
    "python-3.12": (("python3.12",), "--version", r"Python (\d+\.\d+)"),
    "node-22": (("node22", "node"), "--version", r"v(\d+)\."),
    "node-20": (("node20", "node"), "--version", r"v(\d+)\."),
    "bun-1": (("bun",), "--version", r"(\d+)\."),
    "deno-2": (("deno",), "--version", r"deno (\d+)\."),
    "java-21": (("java",), "-version", r'version "(\d+)'),
    "go-1.23": (("go",), "version", r"go(\d+\.\d+)"),
}


def _version_of(path: str, argument: str, pattern: str) -> str | None:
    try:
        # An interpreter found on PATH, asked for its version.
        shown = subprocess.run(  # noqa: S603
            [path, argument], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(pattern, shown.stdout + shown.stderr)
    return found.group(1) if found else None


def detect_runtimes(which: Callable[[str], str | None]) -> dict[str, str]:
    """The runtimes this machine has, each checked by the version its interpreter reports."""
    runtimes = {}
    for name, (commands, argument, pattern) in DEFAULT_RUNTIMES.items():
        wanted = name.split("-", 1)[1]
        for command in commands:
            path = which(command)
            if path and _version_of(path, argument, pattern) == wanted:
                runtimes[name] = path
                break
    return runtimes


class ConfigError(Exception):
    """A configuration value the agent cannot run with; the message names the variable."""


@dataclass(frozen=True)
class RunAs:
    """The unprivileged account the servers' processes run as (only when the agent is root)."""

    name: str
    uid: int
    gid: int


@dataclass(frozen=True)
class Config:
    token: str
    node_id: str
    control_plane_url: str
    listen_host: str
    listen_port: int
    data_root: Path
    run_as: RunAs | None
    tls_cert: Path | None
    tls_key: Path | None
    sample_seconds: float
    batch_seconds: float
    disk_scan_seconds: float
    query_interval_seconds: float
    query_timeout_seconds: float
    query_concurrency: int
    console_lines: int
    console_max_lines_per_second: int
    cgroup_root: Path
    limits: str
    runtimes: dict[str, str]
    log_level: str
    uid_range: range = range(0)
    allow_unisolated: bool = False
    sandbox_host_ports: str = "none"
    max_files: int = 250_000
    archive_max_members: int = 100_000
    archive_max_bytes: int = 10 * 1024**3
    files_max_text_bytes: int = 2 * 1024 * 1024
    files_max_upload_bytes: int = 20 * 1024**3
    allowed_origins: tuple[str, ...] = ()
    pull_timeout_seconds: float = 600
    pull_allowed_hosts: tuple[str, ...] | None = None  # None: any host
    pull_allow_private: bool = False
    sftp_listen: tuple[str, int] | None = None  # None: no SFTP server
    sftp_recheck_seconds: float = 60
    backup_part_mb: int = 16
    backup_gzip_level: int = 6


@dataclass(frozen=True)
class _Option:
    variable: str
    flag: str
    default: str
    help: str


OPTIONS = (
    _Option("AGENT_TOKEN", "", "", "the node token (hmn_…); environment only, never a flag"),
    _Option("AGENT_TOKEN_FILE", "--token-file", "", "read the node token from this file instead"),
    _Option("AGENT_NODE_ID", "--node-id", "", "this node's id (the console tokens' audience)"),
    _Option("AGENT_CONTROL_PLANE_URL", "--control-plane-url", "", "empty: send no reports"),
    _Option("AGENT_LISTEN", "--listen", "127.0.0.1:8443", "host:port of the agent's API"),
    _Option("AGENT_DATA_ROOT", "--data-root", "/var/lib/hms-agent", "servers' files and state"),
    _Option("AGENT_RUN_AS", "--run-as", "", "user name or uid:gid (root only; default nobody)"),
    _Option("AGENT_TLS_CERT", "--tls-cert", "", "PEM certificate: serve HTTPS"),
    _Option("AGENT_TLS_KEY", "--tls-key", "", "PEM private key of the certificate"),
    _Option("AGENT_SAMPLE_SECONDS", "--sample-seconds", "5", "usage sampling period"),
    _Option("AGENT_BATCH_SECONDS", "--batch-seconds", "15", "period of usage reports"),
    _Option("AGENT_DISK_SCAN_SECONDS", "--disk-scan-seconds", "30", "period of disk walks"),
    _Option("AGENT_QUERY_INTERVAL_SECONDS", "--query-interval-seconds", "15", "game query period"),
    _Option("AGENT_QUERY_TIMEOUT_SECONDS", "--query-timeout-seconds", "2", "one game query's wait"),
    _Option("AGENT_QUERY_CONCURRENCY", "--query-concurrency", "50", "game queries in flight"),
    _Option("AGENT_CONSOLE_LINES", "--console-lines", "1000", "console lines kept per server"),
    _Option(
        "AGENT_CONSOLE_MAX_LINES_PER_SECOND",
        "--console-max-lines-per-second",
        "20000",
        "console lines sent per second to one WebSocket",
    ),
    _Option("AGENT_CGROUP_ROOT", "--cgroup-root", "/sys/fs/cgroup", "where cgroups are mounted"),
    _Option("AGENT_LIMITS", "--limits", "auto", "auto | cgroup | rlimit"),
    _Option("AGENT_RUNTIMES", "--runtimes", "", "JSON map of runtime to interpreter"),
    _Option("AGENT_LOG_LEVEL", "--log-level", "info", "debug | info | warning | error"),
    _Option(
        "AGENT_UID_RANGE",
        "--uid-range",
        "400000-465535",
        "first-last uid (and gid) given to the servers, one each; the last is the agent's probe",
    ),
    _Option(
        "AGENT_ALLOW_UNISOLATED",
        "--allow-unisolated",
        "",
        "development only: run servers without a sandbox when the node cannot sandbox (1/true)",
    ),
    _Option(
        "AGENT_SANDBOX_HOST_PORTS",
        "--sandbox-host-ports",
        "none",
        "node loopback TCP ports the sandboxes may reach (pasta -T), e.g. a package cache",
    ),
    _Option("AGENT_MAX_FILES", "--max-files", "250000", "files (inodes) per server folder"),
    _Option(
        "AGENT_ARCHIVE_MAX_MEMBERS",
        "--archive-max-members",
        "100000",
        "members of an archive a bot's code comes in, or the file manager makes or unpacks",
    ),
    _Option(
        "AGENT_ARCHIVE_MAX_BYTES",
        "--archive-max-bytes",
        str(10 * 1024**3),
        "bytes one archive may unpack to in the file manager",
    ),
    _Option(
        "AGENT_FILES_MAX_TEXT_BYTES",
        "--files-max-text-bytes",
        "2097152",
        "largest file the file manager opens as text (larger ones are downloaded)",
    ),
    _Option(
        "AGENT_FILES_MAX_UPLOAD_BYTES",
        "--files-max-upload-bytes",
        str(20 * 1024**3),
        "largest file one upload may bring",
    ),
    _Option(
        "AGENT_ALLOWED_ORIGINS",
        "--allowed-origins",
        "",
        "origins (comma list) whose pages may download and upload files; default: the control "
        "plane's",
    ),
    _Option(
        "AGENT_PULL_TIMEOUT_SECONDS",
        "--pull-timeout-seconds",
        "600",
        "longest a file pulled from a URL may take to arrive",
    ),
    _Option(
        "AGENT_PULL_ALLOWED_HOSTS",
        "--pull-allowed-hosts",
        "*",
        "host names (comma list; *.example.com for its subdomains) files may be pulled from; * any",
    ),
    _Option(
        "AGENT_PULL_ALLOW_PRIVATE",
        "--pull-allow-private",
        "",
        "let files be pulled from loopback, private and link-local addresses (tests only; 1/true)",
    ),
    _Option("AGENT_SFTP_LISTEN", "--sftp-listen", "", "host:port of the SFTP server; empty: off"),
    _Option(
        "AGENT_SFTP_RECHECK_SECONDS",
        "--sftp-recheck-seconds",
        "60",
        "how often an SFTP session's access is asked of the control plane again",
    ),
    _Option(
        "AGENT_BACKUP_PART_MB",
        "--backup-part-mb",
        "16",
        "size of the parts of a backup uploaded to S3 (5 to 5120 MB)",
    ),
    _Option(
        "AGENT_BACKUP_GZIP_LEVEL",
        "--backup-gzip-level",
        "6",
        "gzip level of backups (1 fastest to 9 smallest; 6 is gzip's own default)",
    ),
)

UID_RANGE = re.compile(r"^(\d+)-(\d+)$")
HOST_PORTS = re.compile(r"^(none|\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?)*)$")
MIN_UID_RANGE = 16
SWITCHES = {"--allow-unisolated", "--pull-allow-private"}  # flags without a value
HOST_NAME = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


def _positive_number(variable: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{variable} must be a number of seconds, not {value!r}.") from None
    if not number > 0:
        raise ConfigError(f"{variable} must be greater than zero, not {value!r}.")
    return number


def _positive_integer(variable: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{variable} must be a whole number, not {value!r}.") from None
    if number < 1:
        raise ConfigError(f"{variable} must be at least 1, not {value!r}.")
    return number


def _integer_in(variable: str, value: str, low: int, high: int) -> int:
    number = _positive_integer(variable, value)
    if not low <= number <= high:
        raise ConfigError(f"{variable} must be from {low} to {high}, not {value!r}.")
    return number


def _listen(value: str, variable: str = "AGENT_LISTEN") -> tuple[str, int]:
    host, separator, port = value.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{variable} must be host:port, not {value!r}.")
    return host.strip("[]"), int(port)


def _control_plane_url(value: str) -> str:
    value = value.strip().rstrip("/")
    if value and not value.startswith(("http://", "https://")):
        raise ConfigError(
            f"AGENT_CONTROL_PLANE_URL must start with http:// or https://: {value!r}."
        )
    return value


def _origin(url: str) -> str | None:
    """A URL's origin as a browser sends it (``Origin``): lower case, no default port; None when
    ``url`` is not a bare http(s) origin."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def _allowed_origins(value: str, control_plane_url: str) -> tuple[str, ...]:
    """Browser origins allowed to call the transfer endpoints across origins; by default the
    control plane's own, whose dashboard hands out the links."""
    if not value.strip():
        default = _origin(control_plane_url)
        return (default,) if default else ()
    origins = []
    for given in (part.strip().rstrip("/") for part in value.split(",")):
        parts = urlsplit(given)
        origin = _origin(given)
        if origin is None or parts.path or parts.query or parts.fragment:
            raise ConfigError(
                f"AGENT_ALLOWED_ORIGINS must list origins like https://panel.example.com: "
                f"{given!r}."
            )
        origins.append(origin)
    return tuple(origins)


def _pull_allowed_hosts(value: str) -> tuple[str, ...] | None:
    """Host names files may be pulled from (lower case; ``*.example.com``: its subdomains);
    None for ``*``, any host."""
    names = [part.strip().lower().rstrip(".") for part in value.split(",") if part.strip()]
    if names == ["*"]:
        return None
    bad = [name for name in names if not HOST_NAME.match(name)]
    if not names or bad:
        raise ConfigError(
            f"AGENT_PULL_ALLOWED_HOSTS must be * or host names like downloads.example.com, "
            f"*.example.com: {value!r}."
        )
    return tuple(names)


def _run_as(value: str, *, is_root: bool) -> RunAs | None:
    if not is_root:
        return None
    value = value or "nobody"
    if ":" in value:
        uid, _, gid = value.partition(":")
        if not (uid.isdigit() and gid.isdigit()):
            raise ConfigError(f"AGENT_RUN_AS must be a user name or uid:gid, not {value!r}.")
        if int(uid) == 0:
            raise ConfigError("AGENT_RUN_AS must not be root.")
        return RunAs(name=uid, uid=int(uid), gid=int(gid))
    try:
        entry = pwd.getpwnam(value)
    except KeyError:
        raise ConfigError(f"AGENT_RUN_AS names no user of this machine: {value!r}.") from None
    if entry.pw_uid == 0:
        raise ConfigError("AGENT_RUN_AS must not be root.")
    return RunAs(name=value, uid=entry.pw_uid, gid=entry.pw_gid)


def _runtimes(value: str, which: Callable[[str], str | None]) -> dict[str, str]:
    """Runtime name → absolute interpreter path. Configured ones must exist; defaults may not."""
    if not value:
        return detect_runtimes(which)
    try:
        configured = json.loads(value)
    except json.JSONDecodeError:
        raise ConfigError("AGENT_RUNTIMES must be a JSON object of runtime to path.") from None
    if not isinstance(configured, dict) or not all(
        isinstance(key, str) and isinstance(path, str) for key, path in configured.items()
    ):
        raise ConfigError("AGENT_RUNTIMES must be a JSON object of runtime to path.")
    runtimes = {}
    for name, command in configured.items():
        path = which(command)
        if path is None:
            raise ConfigError(f"AGENT_RUNTIMES: {name} → {command!r} is not an executable.")
        runtimes[name] = path
    return runtimes


def _uid_range(value: str) -> range:
    """Servers' uids: above every account of a normal system (and so never root, the agent's
    user nor a login), at least a few of them."""
    found = UID_RANGE.match(value.strip())
    if not found:
        raise ConfigError(f"AGENT_UID_RANGE must be first-last, e.g. 400000-465535: {value!r}.")
    first, last = int(found.group(1)), int(found.group(2))
    if first < 10_000 or last > 4_294_967_294 or last - first + 1 < MIN_UID_RANGE:
        raise ConfigError(
            f"AGENT_UID_RANGE must lie within 10000-4294967294 and hold at least "
            f"{MIN_UID_RANGE} uids: {value!r}."
        )
    taken = [entry.pw_name for entry in pwd.getpwall() if first <= entry.pw_uid <= last]
    if taken:
        raise ConfigError(f"AGENT_UID_RANGE holds uids of accounts of this machine: {taken[:5]}.")
    return range(first, last + 1)


def _flag(variable: str, value: str) -> bool:
    value = value.strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ConfigError(f"{variable} must be 1 or 0 (true or false), not {value!r}.")


def _host_ports(value: str) -> str:
    value = value.strip().replace(" ", "") or "none"
    if not HOST_PORTS.match(value) or any(
        not 0 < int(port) < 65536 for port in re.findall(r"\d+", value)
    ):
        raise ConfigError(
            f"AGENT_SANDBOX_HOST_PORTS must be none or ports like 3128,9000-9010: {value!r}."
        )
    return value


def _token(values: Mapping[str, str]) -> str:
    token = values["AGENT_TOKEN"]
    if values["AGENT_TOKEN_FILE"]:
        try:
            token = Path(values["AGENT_TOKEN_FILE"]).read_text().strip()
        except OSError as error:
            raise ConfigError(f"AGENT_TOKEN_FILE cannot be read: {error.strerror}.") from None
    if not token.startswith("hmn_"):
        raise ConfigError("AGENT_TOKEN (or AGENT_TOKEN_FILE) must hold the node token, hmn_….")
    return token


def _optional_path(variable: str, value: str) -> Path | None:
    if not value:
        return None
    path = Path(value)
    if not path.is_file():
        raise ConfigError(f"{variable} is not a readable file: {value!r}.")
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent",
        description="The hosting node agent. Every flag overrides its environment variable.",
    )
    for option in OPTIONS:
        if option.flag in SWITCHES:
            parser.add_argument(
                option.flag,
                dest=option.variable,
                action="store_const",
                const="1",
                help=f"{option.help} [{option.variable}]",
            )
        elif option.flag:
            parser.add_argument(
                option.flag, dest=option.variable, help=f"{option.help} [{option.variable}]"
            )
    return parser


def load_config(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    is_root: bool | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Config:
    """Read the configuration from ``environ`` (default ``os.environ``) and ``argv`` flags."""
    environ = os.environ if environ is None else environ
    flags = vars(_parser().parse_args(argv))
    values = {
        option.variable: (
            flags.get(option.variable) or environ.get(option.variable) or option.default
        )
        for option in OPTIONS
    }
    is_root = os.geteuid() == 0 if is_root is None else is_root
    node_id = values["AGENT_NODE_ID"].strip()
    if not node_id:
        raise ConfigError("AGENT_NODE_ID is required (the node's id, node_…).")
    host, port = _listen(values["AGENT_LISTEN"])
    tls_cert = _optional_path("AGENT_TLS_CERT", values["AGENT_TLS_CERT"])
    tls_key = _optional_path("AGENT_TLS_KEY", values["AGENT_TLS_KEY"])
    if (tls_cert is None) != (tls_key is None):
        raise ConfigError("AGENT_TLS_CERT and AGENT_TLS_KEY go together: give both or neither.")
    limits = values["AGENT_LIMITS"].lower()
    if limits not in LIMIT_MODES:
        raise ConfigError(f"AGENT_LIMITS must be one of {', '.join(LIMIT_MODES)}, not {limits!r}.")
    log_level = values["AGENT_LOG_LEVEL"].upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"AGENT_LOG_LEVEL must be debug, info, warning or error: {log_level!r}.")
    control_plane_url = _control_plane_url(values["AGENT_CONTROL_PLANE_URL"])
    return Config(
        token=_token(values),
        node_id=node_id,
        control_plane_url=control_plane_url,
        listen_host=host,
        listen_port=port,
        data_root=Path(values["AGENT_DATA_ROOT"]).absolute(),
        run_as=_run_as(values["AGENT_RUN_AS"], is_root=is_root),
        tls_cert=tls_cert,
        tls_key=tls_key,
        sample_seconds=_positive_number("AGENT_SAMPLE_SECONDS", values["AGENT_SAMPLE_SECONDS"]),
        batch_seconds=_positive_number("AGENT_BATCH_SECONDS", values["AGENT_BATCH_SECONDS"]),
        disk_scan_seconds=_positive_number(
            "AGENT_DISK_SCAN_SECONDS", values["AGENT_DISK_SCAN_SECONDS"]
        ),
        query_interval_seconds=_positive_number(
            "AGENT_QUERY_INTERVAL_SECONDS", values["AGENT_QUERY_INTERVAL_SECONDS"]
        ),
        query_timeout_seconds=_positive_number(
            "AGENT_QUERY_TIMEOUT_SECONDS", values["AGENT_QUERY_TIMEOUT_SECONDS"]
        ),
        query_concurrency=_positive_integer(
            "AGENT_QUERY_CONCURRENCY", values["AGENT_QUERY_CONCURRENCY"]
        ),
        console_lines=_positive_integer("AGENT_CONSOLE_LINES", values["AGENT_CONSOLE_LINES"]),
        console_max_lines_per_second=_positive_integer(
            "AGENT_CONSOLE_MAX_LINES_PER_SECOND", values["AGENT_CONSOLE_MAX_LINES_PER_SECOND"]
        ),
        cgroup_root=Path(values["AGENT_CGROUP_ROOT"]),
        limits=limits,
        runtimes=_runtimes(values["AGENT_RUNTIMES"], which),
        log_level=log_level,
        uid_range=_uid_range(values["AGENT_UID_RANGE"]),
        allow_unisolated=_flag("AGENT_ALLOW_UNISOLATED", values["AGENT_ALLOW_UNISOLATED"]),
        sandbox_host_ports=_host_ports(values["AGENT_SANDBOX_HOST_PORTS"]),
        max_files=_positive_integer("AGENT_MAX_FILES", values["AGENT_MAX_FILES"]),
        archive_max_members=_positive_integer(
            "AGENT_ARCHIVE_MAX_MEMBERS", values["AGENT_ARCHIVE_MAX_MEMBERS"]
        ),
        files_max_text_bytes=_positive_integer(
            "AGENT_FILES_MAX_TEXT_BYTES", values["AGENT_FILES_MAX_TEXT_BYTES"]
        ),
        files_max_upload_bytes=_positive_integer(
            "AGENT_FILES_MAX_UPLOAD_BYTES", values["AGENT_FILES_MAX_UPLOAD_BYTES"]
        ),
        allowed_origins=_allowed_origins(values["AGENT_ALLOWED_ORIGINS"], control_plane_url),
        archive_max_bytes=_positive_integer(
            "AGENT_ARCHIVE_MAX_BYTES", values["AGENT_ARCHIVE_MAX_BYTES"]
        ),
        pull_timeout_seconds=_positive_number(
            "AGENT_PULL_TIMEOUT_SECONDS", values["AGENT_PULL_TIMEOUT_SECONDS"]
        ),
        pull_allowed_hosts=_pull_allowed_hosts(values["AGENT_PULL_ALLOWED_HOSTS"]),
        pull_allow_private=_flag("AGENT_PULL_ALLOW_PRIVATE", values["AGENT_PULL_ALLOW_PRIVATE"]),
        sftp_listen=(
            _listen(values["AGENT_SFTP_LISTEN"].strip(), "AGENT_SFTP_LISTEN")
            if values["AGENT_SFTP_LISTEN"].strip()
            else None
        ),
        sftp_recheck_seconds=_positive_number(
            "AGENT_SFTP_RECHECK_SECONDS", values["AGENT_SFTP_RECHECK_SECONDS"]
        ),
        # S3's parts are 5 MiB at least (but the last) and 5 GiB at most.
        backup_part_mb=_integer_in("AGENT_BACKUP_PART_MB", values["AGENT_BACKUP_PART_MB"], 5, 5120),
        backup_gzip_level=_integer_in(
            "AGENT_BACKUP_GZIP_LEVEL", values["AGENT_BACKUP_GZIP_LEVEL"], 1, 9
        ),
    )

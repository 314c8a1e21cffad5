"""The sandbox every server and bot runs in: its own user, files, processes and network.

Built from parts Debian ships, run by the launcher after it has joined the server's cgroups and
dropped to the server's own uid (never root, never the agent's user, never another server's):

    pasta --config-net -t IP/PORT -u IP/PORT [-t IP/PORT2 -u IP/PORT2 …] -T none -U none \\
      --no-map-gw -- \\
      unshare --user --map-user=1000 --map-group=1000 -- \\
        bwrap --args 3 -- /bin/sh -c <command>

- ``pasta`` (package passt) makes a user and network namespace with a tap interface: the server
  reaches the internet and listens on its allocations (each forwarded from the node in the
  protocols its port is for, TCP, UDP or both, and no other port), but the node's
  loopback is another machine's (``-T none -U none --no-map-gw``: nothing of the node's
  127.0.0.1 is forwarded in, the gateway is not mapped to it). It exits with its command's
  status, so exit codes reach the agent unchanged. Its tap counters are the server's traffic.
- ``unshare`` maps the server's uid to 1000 inside, so the processes see an ordinary user
  rather than "root" (bubblewrap refuses to map a single-uid namespace's root otherwise).
- ``bwrap`` (bubblewrap, the sandbox of Flatpak) makes the mount, PID, IPC and UTS namespaces:
  the system read-only, the server's folder at ``/home/container`` (and, for install steps, at
  ``/mnt/server``, where eggs' install scripts find it) the only writable place, a private
  ``/tmp``, its own ``/proc`` and ``/dev``, no capabilities, ``no_new_privs``, no further user
  namespaces. Its arguments (with the environment: secrets) come through a memory file,
  never argv, which every user of the node can read.
"""

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import launch

log = logging.getLogger(__name__)

HOME = "/home/container"
EGG_MOUNT = "/mnt/server"
WORKLOADS = "/opt/hms/workloads"
RUNTIMES = "/opt/hms/runtimes"
INSIDE_ID = 1000  # the uid and gid the processes see
HOSTNAME = "container"
# The sandbox's own plumbing: the stop signal is not sent to them (pasta would take the
# network away while the server saves; bwrap would take the server with it).
PLUMBING = frozenset({"pasta", "passt", "passt.avx2", "bwrap", "unshare"})
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# What of /etc a program needs: names, users, time zone, certificates, the loader, alternatives.
# Nothing else of the node's configuration (where its secrets would be) is visible.
ETC = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "java-17-openjdk",
    "java-21-openjdk",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "protocols",
    "resolv.conf",
    "services",
    "ssl",
    "timezone",
)
TOOLS = ("bwrap", "pasta", "unshare")


class IsolationUnavailable(Exception):
    """The node cannot sandbox; the message says why (for the log and /api/system)."""


@dataclass(frozen=True)
class Isolation:
    """What the agent applies to every server: ``sandbox``, or ``none`` (development flag)."""

    mode: str
    reason: str = ""
    tools: dict[str, str] | None = None

    @property
    def sandboxed(self) -> bool:
        return self.mode == "sandbox"

    def describe(self) -> dict[str, Any]:
        if self.sandboxed:
            return {
                "mode": "sandbox",
                "users": "own uid per server",
                "filesystem": "mount namespace, system read-only",
                "processes": "pid namespace",
                "network": "network namespace (pasta)",
            }
        return {"mode": self.mode, "reason": self.reason}


@dataclass(frozen=True)
class SandboxPlan:
    """What the launcher runs: ``argv`` with the NUL-separated ``bwrap_args`` as its fd 3."""

    argv: list[str]
    bwrap_args: bytes


def find_tools() -> dict[str, str]:
    tools = {}
    for name in TOOLS:
        path = shutil.which(name)  # on the agent's PATH
        if path is None:
            package = {"bwrap": "bubblewrap", "pasta": "passt", "unshare": "util-linux"}[name]
            raise IsolationUnavailable(f"{name} is not installed (Debian package {package}).")
        tools[name] = path
    return tools


def ensure_tun() -> None:
    """pasta, run as the server's user, opens /dev/net/tun inside its own namespace: the device
    must be usable by every user (mode 0666, as udev sets it), which is safe since creating an
    interface needs CAP_NET_ADMIN over a network namespace anyway."""
    path = "/dev/net/tun"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise IsolationUnavailable("/dev/net/tun is missing (the tun module).") from None
    if info.st_mode & 0o666 != 0o666:
        try:
            os.chmod(path, 0o666)  # noqa: S103 - the device's usual mode
        except OSError as error:
            raise IsolationUnavailable(f"/dev/net/tun is not usable: {error.strerror}.") from None
        log.info("made /dev/net/tun usable by the servers' users (mode 0666, as udev does)")


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for name in ETC:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def _port_spec(ip: str, port: int) -> str:
    # A wildcard allocation address binds every address of the node.
    return str(port) if ip in ("", "0.0.0.0", "::") else f"{ip}/{port}"  # noqa: S104


def _forwards(allocations: list[tuple[str, int, str]]) -> list[str]:
    """pasta's ``-t`` and ``-u`` for exactly the server's allocations, each in the protocol it
    is for (``tcp``, ``udp`` or ``both``), and ``none`` for a protocol nothing is forwarded in:
    one option per ``ip:port``, as pasta takes one address per option."""
    tcp = [_port_spec(ip, port) for ip, port, protocol in allocations if protocol != "udp"]
    udp = [_port_spec(ip, port) for ip, port, protocol in allocations if protocol != "tcp"]
    forwards = []
    for spec in tcp or ["none"]:
        forwards += ["-t", spec]
    for spec in udp or ["none"]:
        forwards += ["-u", spec]
    return forwards


def plan(
    tools: dict[str, str],
    *,
    directory: Path,
    argv: list[str],
    environment: dict[str, str],
    allocations: list[tuple[str, int, str]],
    read_only: dict[str, str],
    host_ports: str,
    tmp_bytes: int | None,
    installing: bool = False,
) -> SandboxPlan:
    """The launcher's command for ``argv`` in the server's sandbox. ``read_only`` maps paths of
    the node to where the sandbox sees them; ``host_ports`` are the node's loopback ports the
    sandbox may reach (``-T``: a package cache, say), ``none`` by default. ``allocations`` are
    the ``(ip, port, protocol)``s forwarded from the node, and nothing else is. ``installing``:
    an install step, which sees the folder at ``/mnt/server`` too."""
    outer = [
        tools["pasta"],
        "--config-net",
        "--quiet",
        "--no-map-gw",
        *_forwards(allocations),
        "-T",
        host_ports or "none",
        "-U",
        "none",
        "--",
        tools["unshare"],
        "--user",
        f"--map-user={INSIDE_ID}",
        f"--map-group={INSIDE_ID}",
        "--",
        tools["bwrap"],
        "--args",
        "3",
        "--",
        *argv,
    ]
    args = [
        "--unshare-user",
        "--uid",
        str(INSIDE_ID),
        "--gid",
        str(INSIDE_ID),
        "--disable-userns",
        "--unshare-pid",
        # The command is the namespace's pid 1, as a container's entrypoint is: a stop signal
        # it has no handler for (``sh -c``) leaves it waiting for the server, which gets the
        # signal too, saves and exits; a reaper of bubblewrap's would die with the shell and
        # take the namespace, the server with it, down at once.
        "--as-pid-1",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        HOSTNAME,
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    if tmp_bytes:
        args += ["--size", str(tmp_bytes)]
    args += ["--tmpfs", "/tmp", "--symlink", "../tmp", "/var/tmp"]  # noqa: S108 - private
    args += ["--bind", str(directory), HOME]
    if installing:
        # Where Pterodactyl's installer containers mount the folder: eggs' install scripts
        # work there. Only there, as under Wings: the server itself sees /home/container.
        args += ["--bind", str(directory), EGG_MOUNT]
    for source, target in read_only.items():
        args += ["--ro-bind", source, target]
    args += ["--remount-ro", "/", "--chdir", HOME, "--clearenv"]
    for key, value in environment.items():
        args += ["--setenv", key, value]
    return SandboxPlan(argv=outer, bwrap_args=b"".join(arg.encode() + b"\0" for arg in args))


def probe(tools: dict[str, str], uid: int, workdir: Path) -> None:
    """Run a check in a sandbox as ``uid``, through the launcher as every server is: the node's
    kernel and tools must allow each namespace. ``IsolationUnavailable`` says what went wrong."""
    with tempfile.TemporaryDirectory(prefix=".probe-", dir=workdir) as folder:
        home = Path(folder) / "home"
        os.chmod(folder, 0o711)  # noqa: S103 - to be walked through to home, as servers' are
        home.mkdir(mode=0o700)
        os.chown(home, uid, uid)
        sandbox = plan(
            tools,
            directory=home,
            argv=["/bin/sh", "-c", "test -w /home/container && ! test -w /usr && ! test -e /root"],
            environment={"PATH": "/usr/bin:/bin"},
            allocations=[],
            read_only={},
            host_ports="none",
            tmp_bytes=None,
        )
        instructions = launch.Instructions(
            argv=sandbox.argv,
            env={},
            cwd=str(home),
            uid=uid,
            gid=uid,
            sandbox_args=sandbox.bwrap_args,
        )
        try:
            result = launch.run(instructions, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise IsolationUnavailable(f"the sandbox could not be started: {error}") from None
    if result.returncode != 0:
        output = " ".join(result.stdout.split())[:300] or f"exit code {result.returncode}"
        raise IsolationUnavailable(f"a test sandbox failed: {output}")


def detect(*, is_root: bool, probe_uid: int, workdir: Path) -> Isolation:
    """Whether this node can sandbox; ``IsolationUnavailable`` says why not."""
    if not is_root:
        raise IsolationUnavailable("the agent is not root: it cannot give each server a uid.")
    tools = find_tools()
    with contextlib.suppress(OSError):
        if int(Path("/proc/sys/user/max_user_namespaces").read_text()) == 0:
            raise IsolationUnavailable("user namespaces are disabled (user.max_user_namespaces).")
    ensure_tun()
    probe(tools, probe_uid, workdir)
    return Isolation(mode="sandbox", tools=tools)


def network_bytes(pid: int) -> tuple[int, int] | None:
    """(received, sent) bytes of the network namespace of ``pid``, loopback left out: what
    crossed the sandbox's tap interface, i.e. the server's traffic with the world."""
    try:
        lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    except OSError:
        return None
    received = sent = 0
    for line in lines:
        name, _, figures = line.partition(":")
        if name.strip() == "lo":
            continue
        fields = figures.split()
        if len(fields) >= 9:
            received += int(fields[0])
            sent += int(fields[8])
    return received, sent

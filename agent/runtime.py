"""The supervisor of one server: install, start until ready, graceful stop, kill, exit detection.

States: ``installing`` → ``stopped`` (or ``install_failed``) → ``starting`` → ``running`` →
``stopping`` → ``stopped``. A process that exits without being asked is reported to the control
plane (``crashed``, or ``stopped`` for a clean exit such as ``stop`` typed in the console).

Every process is started through ``agent.launch`` (cgroups, rlimits, new session, unprivileged
user) and runs ``/bin/sh -c <command>``; its main process is that shell, so the server's process
tree is its session (and its cgroup): signals go to the whole process group, and whatever is
left of the tree when the main process has gone is killed.
"""

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent import launch, procfs, sandbox
from agent.clock import iso
from agent.config import Config
from agent.console import Console, Inotify
from agent.errors import (
    AgentError,
    ConsoleInputFull,
    InstallFailed,
    InvalidState,
    NotIsolated,
    SecretsMissing,
    StartFailed,
    ValidationFailed,
)
from agent.limits import MIB, LimitsBackend
from agent.sandbox import Isolation
from agent.sources import GIT_SCRIPT, SourceError, chown_tree, download, move_into, unpack
from agent.spec import ServerSpec

log = logging.getLogger(__name__)

WORKLOADS = Path(__file__).resolve().parent / "workloads"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
INSTALL_TIMEOUT_SECONDS = 3600
# After SIGKILL, how long processes may take to disappear before the agent gives up waiting.
KILL_GRACE_SECONDS = 5.0
MAX_COMMAND_BYTES = 4096
DEFAULT_ARCHIVE_LIMIT_MB = 1024
RUNTIME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# ensurepip apart from venv, so that its output (and why it failed) reaches the console.
REQUIREMENTS_SCRIPT = (
    '"$AGENT_PYTHON" -m venv --without-pip .venv && '
    ".venv/bin/python -m ensurepip --upgrade --default-pip && "
    ".venv/bin/pip install --disable-pip-version-check --no-input -r requirements.txt"
)

Event = tuple[str, str]  # (type, reason) as POST /v1/agent/events carries them


class Watcher(Protocol):
    """A console WebSocket following the server."""

    def on_status(self, status: str) -> None: ...

    def on_stats(self, sample: dict[str, Any]) -> None: ...


@dataclass
class Services:
    """What every server's supervisor shares with the others; given by the node."""

    config: Config
    backend: LimitsBackend
    inotify: Inotify
    report: Callable[[str, str, str], None]  # (server id, event type, reason)
    changed: Callable[[], None]  # persist the state file
    runtimes_dir: Path
    staging_dir: Path
    isolation: Isolation


class ProcessHandle:
    """A process watched through a pidfd on the event loop: our children (exit status known) and
    processes adopted after a restart, which are not our children (exit status unknown)."""

    def __init__(self, pid: int, popen: subprocess.Popen | None = None):
        self.pid = pid
        self.popen = popen
        self.pidfd = os.pidfd_open(pid)
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[int | None] = loop.create_future()
        loop.add_reader(self.pidfd, self._on_exit)

    def _on_exit(self) -> None:
        asyncio.get_running_loop().remove_reader(self.pidfd)
        os.close(self.pidfd)
        self.pidfd = -1
        # Popen.poll reaps our child and keeps its status; a non-child cannot be waited for.
        code = self.popen.poll() if self.popen is not None else None
        if not self.exited.done():
            self.exited.set_result(code)

    def signal(self, number: int) -> None:
        """Signal the main process and its whole process group (the server's session)."""
        if self.pidfd >= 0:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, number)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, number)


def exit_reason(
    code: int | None,
    *,
    out_of_memory: bool,
    memory_mb: int | None,
    unknown: str = "exited (exit status unknown: the process was adopted after an agent restart)",
) -> str:
    if out_of_memory:
        return f"killed: out of memory (limit {memory_mb} MB)" if memory_mb else "killed: OOM"
    if code is None:
        return unknown
    if code < 0:
        return f"killed by signal {-code}"
    # The main process is /bin/sh; it reports a child killed by signal N as 128 + N.
    if code > 128 and (code - 128) in signal.valid_signals():
        return f"killed by signal {code - 128}"
    return f"exited with code {code}"


class ServerRuntime:
    """The supervisor of one server (or bot)."""

    def __init__(
        self,
        spec: ServerSpec,
        services: Services,
        directory: Path,
        dir_fd: int,
        *,
        uid: int | None = None,
    ):
        self.spec = spec
        self.uid = uid  # the server's own user, in a sandbox
        self.services = services
        self.config = services.config
        self.backend = services.backend
        self.directory = directory
        self._dir_fd = dir_fd
        self.console = Console(
            dir_fd, keep_lines=self.config.console_lines, inotify=services.inotify
        )
        self.secrets_missing: list[str] = []
        self.status = "stopped"
        self.installed = False
        self.process: ProcessHandle | None = None
        self.start_ticks: int | None = None
        self.started_at: str | None = None
        self.started_epoch: float | None = None
        self.oom_baseline: int | None = None
        self.applied_limits: dict[str, Any] = {}
        self.last_usage: dict[str, Any] | None = None
        self.watchers: set[Watcher] = set()
        self._lock = asyncio.Lock()
        self._gone = asyncio.Event()
        self._gone.set()
        self._ready: asyncio.Future[None] | None = None
        self._ready_timer: asyncio.TimerHandle | None = None
        self._stop_timer: asyncio.TimerHandle | None = None
        self._stop_deadline: float | None = None
        self._stop_how = "graceful"
        self._exit_expected = False
        self._exit_event: Event | None = None
        self._background_start = False
        self._install_handle: ProcessHandle | None = None
        self._install_cancelled = False
        self._tasks: set[asyncio.Task] = set()

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    # -- what the API and the state file show -------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.spec.kind,
            "status": self.status,
            "installed": self.installed,
            "pid": self.pid,
            "started_at": self.started_at,
            "limits": self.applied_limits,
            "usage": self.last_usage,
        }

    def to_state(self) -> dict[str, Any]:
        return {
            "spec": self.spec.public(),
            "status": self.status,
            "installed": self.installed,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "started_at": self.started_at,
            "oom_baseline": self.oom_baseline,
        }

    def _set_status(self, status: str) -> None:
        self.status = status
        self.services.changed()
        for watcher in list(self.watchers):
            watcher.on_status(status)

    def publish_usage(self, sample: dict[str, Any]) -> None:
        self.last_usage = sample
        for watcher in list(self.watchers):
            watcher.on_stats(sample)

    def _background(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- spec and limits ---------------------------------------------------------------------

    def replace_spec(self, spec: ServerSpec) -> None:
        """A new spec from PUT or sync; commands and environment apply at the next start,
        limits at once where the mechanism allows it (cgroups)."""
        self.spec = spec
        self.secrets_missing = []
        self.refresh_limits()
        self.services.changed()

    def refresh_limits(self) -> None:
        try:
            self.applied_limits = self.backend.apply(self.id, self.spec.limits)
        except OSError as error:
            log.error("limits of %s not applied: %s", self.id, error)
            self.applied_limits = {"mechanism": self.backend.name, "error": str(error)}
            return
        self.applied_limits["disk_mb"] = self.spec.limits.disk_mb

    def _require_secrets(self) -> None:
        if self.secrets_missing:
            names = ", ".join(self.secrets_missing)
            raise SecretsMissing(
                f"The values of {names} were not kept across an agent restart: "
                "send the spec again (PUT or sync) before starting."
            )

    # -- processes ------------------------------------------------------------------------------

    def _interpreter(self) -> str | None:
        return self.config.runtimes.get(self.spec.runtime) if self.spec.runtime else None

    def _runtime_bin(self, runtime: str, interpreter: str) -> Path:
        """A folder of root-owned links naming the interpreter as commands expect it."""
        folder = self.services.runtimes_dir / runtime / "bin"
        folder.mkdir(parents=True, exist_ok=True)
        names = ["python", "python3"] if runtime.startswith("python") else []
        names.append(Path(interpreter).name)
        for name in names:
            link = folder / name
            if not link.is_symlink() or os.readlink(link) != interpreter:
                link.unlink(missing_ok=True)
                link.symlink_to(interpreter)
        return folder

    def _environment(self) -> dict[str, str]:
        """Minimal: never the agent's own environment, which holds the node token."""
        spec = self.spec
        environment = {"LANG": "C.UTF-8"}
        environment.update(spec.variables)
        environment.update(spec.environment)
        builtins = spec.substitutions(self._workloads())
        for key in ("SERVER_ID", "SERVER_IP", "SERVER_PORT", "SERVER_MEMORY"):
            environment[key] = builtins[key]
        path = []
        interpreter = self._interpreter()
        if interpreter and spec.runtime and RUNTIME_NAME.match(spec.runtime):
            if spec.runtime.startswith("python"):
                if (self.directory / ".venv" / "bin").is_dir():
                    path.append(f"{self._home()}/.venv/bin")
                environment["PYTHONUNBUFFERED"] = "1"
            links = self._runtime_bin(spec.runtime, interpreter)
            if self._sandboxed:
                path.append(f"{sandbox.RUNTIMES}/{spec.runtime}/bin")
            else:
                path.append(str(links))
            path.append(str(Path(interpreter).parent))
        path.append(DEFAULT_PATH)
        environment["PATH"] = ":".join(path)
        environment["HOME"] = self._home()
        if self._sandboxed:
            environment["USER"] = environment["LOGNAME"] = "container"
        elif self.config.run_as:
            environment["USER"] = environment["LOGNAME"] = self.config.run_as.name
        return environment

    @property
    def _sandboxed(self) -> bool:
        return self.services.isolation.sandboxed

    def _home(self) -> str:
        return sandbox.HOME if self._sandboxed else str(self.directory)

    def _workloads(self) -> str:
        return sandbox.WORKLOADS if self._sandboxed else str(WORKLOADS)

    def _read_only_paths(self) -> dict[str, str]:
        """What of the node a sandbox sees beside the system: the test workloads, the runtime
        links and the interpreter's own prefix when it lives outside /usr."""
        paths = {str(WORKLOADS): sandbox.WORKLOADS}
        interpreter = self._interpreter()
        if interpreter and self.spec.runtime and RUNTIME_NAME.match(self.spec.runtime):
            paths[str(self.services.runtimes_dir)] = sandbox.RUNTIMES
            prefix = Path(os.path.realpath(interpreter)).parent
            if prefix.name == "bin":
                prefix = prefix.parent
            system = ("/usr", "/bin", "/sbin", "/lib", "/lib64")
            if not any(prefix == Path(top) or prefix.is_relative_to(top) for top in system):
                paths[str(prefix)] = str(prefix)
                if Path(interpreter).parent != prefix / "bin":
                    paths[str(Path(interpreter).parent)] = str(Path(interpreter).parent)
        return paths

    def _require_isolation(self) -> None:
        isolation = self.services.isolation
        if isolation.mode == "unavailable":
            raise NotIsolated(
                f"This node cannot isolate its servers ({isolation.reason}), so it runs none."
            )

    def _spawn(
        self,
        argv: list[str],
        environment: dict[str, str],
        *,
        failure: type[AgentError],
        stdin_null: bool = False,
    ) -> ProcessHandle:
        self._require_isolation()
        isolation = self.services.isolation
        limits = self.backend.launch_limits(self.id, self.spec.limits)
        instructions = launch.Instructions(
            argv=argv,
            env=environment,
            cwd=str(self.directory),
            cgroup_procs=limits.cgroup_procs,
            rlimits=limits.rlimits,
        )
        if isolation.sandboxed:
            assert isolation.tools is not None and self.uid is not None
            allocation = self.spec.allocation
            plan = sandbox.plan(
                isolation.tools,
                directory=self.directory,
                argv=argv,
                environment=environment,
                allocation=(allocation.ip, allocation.port) if allocation else None,
                read_only=self._read_only_paths(),
                host_ports=self.config.sandbox_host_ports,
                tmp_bytes=self.spec.limits.memory_mb * MIB if self.spec.limits.memory_mb else None,
            )
            instructions.argv, instructions.env = plan.argv, {}
            instructions.sandbox_args = plan.bwrap_args
            instructions.uid = instructions.gid = self.uid
        elif self.config.run_as:
            instructions.uid, instructions.gid = self.config.run_as.uid, self.config.run_as.gid
        if stdin_null:
            stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        else:
            stdin = self.console.input_fd()
        stdout = self.console.output_fd()
        try:
            popen = launch.spawn(instructions, stdin=stdin, stdout=stdout, stderr=stdout)
        except OSError as error:
            raise failure(f"The agent could not start a process: {error.strerror}.") from None
        finally:
            for fd in (stdin, stdout):
                os.close(fd)
        return ProcessHandle(popen.pid, popen)

    def _signal_tree(self, handle: ProcessHandle, number: int) -> None:
        """The stop signal to the server's processes; in a sandbox, not to its plumbing
        (pasta would cut the network while the server saves, bwrap would kill it)."""
        if not self._sandboxed:
            handle.signal(number)
            return
        for pid in self._members(handle):
            if procfs.command_name(pid) not in sandbox.PLUMBING:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, number)

    def _members(self, handle: ProcessHandle) -> list[int]:
        members = self.backend.processes(self.id)
        return procfs.session_members(handle.pid) if members is None else members

    def _kill_tree(self, handle: ProcessHandle | None) -> None:
        if handle is not None:
            handle.signal(signal.SIGKILL)
            for pid in self._members(handle):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.backend.kill_all(self.id)

    async def _clear_leftovers(self, handle: ProcessHandle, *, graceful_until: float | None):
        """Wait for the rest of the tree to go (until ``graceful_until``), then kill it."""
        loop = asyncio.get_running_loop()
        give_up = max(graceful_until or 0, loop.time()) + KILL_GRACE_SECONDS
        while members := self._members(handle):
            now = loop.time()
            if graceful_until is None or now >= graceful_until:
                if graceful_until is not None:
                    self._stop_how = "killed"
                self._kill_tree(handle)
            if now > give_up:
                log.warning("processes of %s survive SIGKILL: %s", self.id, members)
                return
            await asyncio.sleep(0.05)

    # -- start ----------------------------------------------------------------------------------

    async def start(self, *, background: bool = False) -> dict[str, Any]:
        """Start and return once the ready pattern was seen; ``StartFailed`` otherwise."""
        async with self._lock:
            if self.status == "running":
                return {"status": "running"}
            if self.status == "starting" and self._ready is not None:
                ready = self._ready
            elif self.status in ("installing", "stopping"):
                raise InvalidState(f"The server is {self.status}.")
            elif self.status == "install_failed":
                raise InvalidState("The install failed: install again before starting.")
            else:
                self._require_isolation()
                self._require_secrets()
                if not self.installed:
                    await self._install_locked()
                ready = self._launch(background=background)
            gone = self._gone
        try:
            await asyncio.shield(ready)
        except StartFailed:
            await gone.wait()  # answer once the process is really gone
            raise
        return {"status": "running"}

    def _launch(self, *, background: bool) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        self.console.poll()  # what the previous process wrote is not this one's ready line
        self.console.drain_input()
        self.refresh_limits()
        if "error" in self.applied_limits:
            raise StartFailed(f"The limits could not be applied: {self.applied_limits['error']}")
        self.oom_baseline = self.backend.oom_kills(self.id)
        command = self.spec.render(self.spec.template.start_command, self._workloads())
        handle = self._spawn(["/bin/sh", "-c", command], self._environment(), failure=StartFailed)
        stat = procfs.process_stat(handle.pid)
        self.process = handle
        self.start_ticks = stat.start_ticks if stat else None
        self.started_epoch = time.time()
        self.started_at = iso(self.started_epoch)
        self.last_usage = None
        self._exit_expected = False
        self._exit_event = None
        self._stop_how = "graceful"
        self._background_start = background
        self._gone = asyncio.Event()
        ready: asyncio.Future[None] = loop.create_future()
        # Nobody may be waiting (a start from sync): do not warn about an unread failure.
        ready.add_done_callback(lambda future: future.cancelled() or future.exception())
        self._ready = ready
        self._set_status("starting")
        log.info("%s started (pid %s)", self.id, handle.pid)
        pattern = self.spec.template.ready
        if pattern is None:
            self._became_ready()
        else:
            self.console.add_listener(self._watch_ready)
            self._ready_timer = loop.call_later(
                self.spec.template.ready_timeout_seconds, self._ready_timed_out
            )
        self._background(self._watch_exit(handle))
        return ready

    def _watch_ready(self, lines: list[str]) -> None:
        pattern = self.spec.template.ready
        if self.status == "starting" and pattern and any(pattern.search(line) for line in lines):
            self._became_ready()

    def _became_ready(self) -> None:
        self.console.remove_listener(self._watch_ready)
        if self._ready_timer is not None:
            self._ready_timer.cancel()
            self._ready_timer = None
        self._set_status("running")
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
        if self._background_start:
            self.services.report(self.id, "running", "started by the agent")

    def _ready_timed_out(self) -> None:
        self._ready_timer = None
        if self.status != "starting" or self._ready is None:
            return
        seconds = self.spec.template.ready_timeout_seconds
        message = f"not ready within {seconds:g} seconds"
        self.console.write_agent_line(f"The server was {message}; killing it.")
        self._ready.set_exception(
            StartFailed(f"The server was {message} (it was killed). {self._last_output()}")
        )
        self._exit_expected = True
        if self._background_start:
            self._exit_event = ("crashed", message)
        self._stop_how = "killed"
        self._kill_tree(self.process)

    def _last_output(self, lines: int = 15) -> str:
        recent = [line for line in self.console.tail(lines) if not line.startswith("[agent] ")]
        return "Last output:\n" + "\n".join(recent) if recent else "It printed nothing."

    # -- exit -----------------------------------------------------------------------------------

    async def _watch_exit(self, handle: ProcessHandle) -> None:
        code = await handle.exited
        try:
            await self._after_exit(handle, code)
        finally:
            self._gone.set()

    async def _after_exit(self, handle: ProcessHandle, code: int | None) -> None:
        graceful = self._exit_expected and self._stop_how == "graceful"
        await self._clear_leftovers(
            handle, graceful_until=self._stop_deadline if graceful else None
        )
        if self._stop_timer is not None:
            self._stop_timer.cancel()
            self._stop_timer = None
        if self._ready_timer is not None:
            self._ready_timer.cancel()
            self._ready_timer = None
        self.console.remove_listener(self._watch_ready)
        self.console.poll()
        reason = exit_reason(
            code, out_of_memory=self._out_of_memory(), memory_mb=self.spec.limits.memory_mb
        )
        was_starting = self.status == "starting"
        self.process = None
        self.start_ticks = None
        self.started_at = None
        self.started_epoch = None
        self._stop_deadline = None
        self.console.write_agent_line(f"The process {reason}.")
        log.info("%s: process %s %s", self.id, handle.pid, reason)
        self._set_status("stopped")
        if self._ready is not None and not self._ready.done():
            what = "stopped" if self._exit_expected else reason
            self._ready.set_exception(
                StartFailed(f"The server {what} before it was ready. {self._last_output()}")
            )
        if self._exit_event is not None:
            self.services.report(self.id, *self._exit_event)
        elif not self._exit_expected and (not was_starting or self._background_start):
            clean = code == 0
            self.services.report(self.id, "stopped" if clean else "crashed", reason)

    def _out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the server for memory since it started."""
        kills = self.backend.oom_kills(self.id)
        return kills is not None and self.oom_baseline is not None and kills > self.oom_baseline

    # -- stop and kill --------------------------------------------------------------------------

    async def stop(self, *, event: Event | None = None) -> dict[str, Any]:
        """The stop command (or signal), then SIGKILL after the template's stop timeout."""
        if self.status == "installing":
            raise InvalidState("The server is installing.")
        async with self._lock:
            if self.process is None:
                return {"status": "stopped", "how": "not_running"}
            if self.status != "stopping":
                self._begin_stop(event)
            gone = self._gone
        await gone.wait()
        return {"status": "stopped", "how": self._stop_how}

    def _begin_stop(self, event: Event | None) -> None:
        loop = asyncio.get_running_loop()
        template = self.spec.template
        self._exit_expected = True
        self._exit_event = event
        self._stop_how = "graceful"
        self._stop_deadline = loop.time() + template.stop_timeout_seconds
        self._set_status("stopping")
        sent = bool(template.stop_command) and self.console.send(template.stop_command)
        if not sent and self.process is not None:
            self._signal_tree(self.process, template.stop_signal_number)
        self._stop_timer = loop.call_later(template.stop_timeout_seconds, self._stop_timed_out)

    def _stop_timed_out(self) -> None:
        self._stop_timer = None
        if self.process is not None:
            self.console.write_agent_line("The server did not stop in time; killing it.")
            self._stop_how = "killed"
            self._kill_tree(self.process)

    async def kill(self) -> dict[str, Any]:
        """SIGKILL to the whole tree at once; no lock, so it cuts through a start or install."""
        if self.status == "installing":
            self._install_cancelled = True
            if self._install_handle is not None:
                self._kill_tree(self._install_handle)
            async with self._lock:  # the install ends (failed) once its process is gone
                pass
        if self.process is not None:
            self._exit_expected = True
            self._stop_how = "killed"
            self._kill_tree(self.process)
            await self._gone.wait()
        return {"status": self.status}

    async def enforce_disk_quota(self, used_bytes: int, files: int = 0) -> None:
        """Stop a server over its disk space or over the node's file count per folder."""
        if self.status not in ("starting", "running"):
            return
        limit_mb, max_files = self.spec.limits.disk_mb, self.config.max_files
        if files > max_files:
            reason = f"over file quota: {files:,} files of {max_files:,}"
        elif limit_mb is not None and used_bytes > limit_mb * MIB:
            reason = f"over disk quota: {used_bytes // MIB} MB used of {limit_mb} MB"
        else:
            return
        self.console.write_agent_line(f"The server is {reason}; stopping it.")
        log.info("%s: %s", self.id, reason)
        await self.stop(event=("crashed", reason))

    # -- console --------------------------------------------------------------------------------

    def send_command(self, command: str) -> None:
        if not isinstance(command, str) or not command.strip():
            raise ValidationFailed("command: must be a non-empty string.")
        if "\n" in command.rstrip("\n") or "\0" in command:
            raise ValidationFailed("command: must be one line.")
        if len(command.encode()) > MAX_COMMAND_BYTES:
            raise ValidationFailed(f"command: at most {MAX_COMMAND_BYTES} bytes.")
        if self.status not in ("starting", "running"):
            raise InvalidState("The server is not running.")
        if not self.console.send(command):
            raise ConsoleInputFull("The server is not reading its console input; try later.")

    # -- install --------------------------------------------------------------------------------

    async def install(self) -> dict[str, Any]:
        if self.status == "installing":
            raise InvalidState("The server is already installing.")
        async with self._lock:
            if self.process is not None:
                raise InvalidState(f"The server is {self.status}: stop it before installing.")
            self._require_isolation()
            self._require_secrets()
            await self._install_locked()
        return {"status": "stopped"}

    async def _install_locked(self) -> None:
        self.installed = False
        self._install_cancelled = False
        self._set_status("installing")
        self.console.write_agent_line("Installing.")
        try:
            await self._install_steps()
        except InstallFailed as error:
            self.console.write_agent_line("The install failed.")
            self._set_status("install_failed")
            log.info("%s: install failed: %s", self.id, error.message.partition("\n")[0])
            raise
        self.installed = True
        self.console.write_agent_line("Installed.")
        self._set_status("stopped")

    async def _install_steps(self) -> None:
        spec = self.spec
        environment = self._environment()
        interpreter = None
        if spec.runtime:
            interpreter = self._interpreter()
            if interpreter is None or not RUNTIME_NAME.match(spec.runtime):
                available = ", ".join(sorted(self.config.runtimes)) or "none"
                raise InstallFailed(
                    f"The runtime {spec.runtime} is not available on this node "
                    f"(available: {available})."
                )
            await self._run_step(f"checking the runtime {spec.runtime}", [interpreter, "--version"])
        if spec.source and spec.source.type == "git":
            git_environment = {
                **environment,
                "AGENT_GIT_URL": spec.source.url,
                "AGENT_GIT_REF": spec.source.ref or "HEAD",
                "GIT_TERMINAL_PROMPT": "0",
            }
            await self._run_step(
                "fetching the code from git", ["/bin/sh", "-c", GIT_SCRIPT], git_environment
            )
        elif spec.source and spec.source.type == "archive":
            await self._fetch_archive()
        if (
            interpreter
            and spec.runtime
            and spec.runtime.startswith("python")
            and (self.directory / "requirements.txt").is_file()
        ):
            await self._run_step(
                "installing requirements.txt",
                ["/bin/sh", "-c", REQUIREMENTS_SCRIPT],
                {**environment, "AGENT_PYTHON": interpreter},
            )
        if spec.template.install_script.strip():
            script = spec.render(spec.template.install_script, self._workloads())
            await self._run_step("the install script", ["/bin/sh", "-c", script])

    async def _run_step(
        self, label: str, argv: list[str], environment: dict[str, str] | None = None
    ) -> None:
        if self._install_cancelled:
            raise InstallFailed("The install was cancelled: the server was killed.")
        self.refresh_limits()
        if "error" in self.applied_limits:
            raise InstallFailed(f"The limits could not be applied: {self.applied_limits['error']}")
        self.console.write_agent_line(f"Step: {label}.")
        self.console.poll()
        recent: deque[str] = deque(maxlen=20)

        def collect(lines: list[str]) -> None:
            recent.extend(line for line in lines if not line.startswith("[agent] "))

        self.oom_baseline = self.backend.oom_kills(self.id)
        self.console.add_listener(collect)
        try:
            handle = self._spawn(
                argv, environment or self._environment(), failure=InstallFailed, stdin_null=True
            )
            self._install_handle = handle
            try:
                code = await asyncio.wait_for(
                    asyncio.shield(handle.exited), INSTALL_TIMEOUT_SECONDS
                )
            except TimeoutError:
                self._kill_tree(handle)
                code = await handle.exited
            await self._clear_leftovers(handle, graceful_until=None)
        finally:
            self._install_handle = None
            self.console.poll()
            self.console.remove_listener(collect)
        if code != 0:
            reason = exit_reason(
                code, out_of_memory=self._out_of_memory(), memory_mb=self.spec.limits.memory_mb
            )
            output = "\n".join(recent) or "(no output)"
            raise InstallFailed(f"The install failed at {label} ({reason}). Last output:\n{output}")

    async def _fetch_archive(self) -> None:
        assert self.spec.source is not None
        url = self.spec.source.url
        base = self.config.control_plane_url
        if url.startswith("/"):  # uploaded to the control plane: fetched from there
            if not base:
                raise InstallFailed(
                    "The code was uploaded to the control plane, but this node has none "
                    "configured (AGENT_CONTROL_PLANE_URL)."
                )
            url = base + url
        token = self.config.token if base and url.startswith(base + "/") else None
        max_bytes = (self.spec.limits.disk_mb or DEFAULT_ARCHIVE_LIMIT_MB) * MIB
        staging = self.services.staging_dir / f"{self.id}-{os.urandom(4).hex()}"
        staging.mkdir(mode=0o700)
        archive = staging.with_name(staging.name + ".download")
        self.console.write_agent_line("Step: downloading the code.")
        try:
            await download(url, archive, token=token, max_bytes=max_bytes)
            code = await asyncio.to_thread(
                unpack,
                archive,
                staging,
                max_bytes=max_bytes,
                max_members=self.config.archive_max_members,
            )
            owner = self.owner()
            if owner:
                await asyncio.to_thread(chown_tree, code, *owner)
            await asyncio.to_thread(move_into, code, self.directory)
        except SourceError as error:
            raise InstallFailed(str(error)) from None
        finally:
            archive.unlink(missing_ok=True)
            await asyncio.to_thread(shutil.rmtree, staging, ignore_errors=True)

    def owner(self) -> tuple[int, int] | None:
        """(uid, gid) the server's files belong to; ``None`` when the agent is not root."""
        if self.uid is not None:
            return self.uid, self.uid
        run_as = self.config.run_as
        return (run_as.uid, run_as.gid) if run_as else None

    # -- restart and removal --------------------------------------------------------------------

    def restore(self, record: dict[str, Any]) -> Event | None:
        """Take over from the previous agent: adopt the process if it is still the same one
        (same pid, same start time), otherwise say what became of it."""
        self.installed = bool(record.get("installed"))
        status = record.get("status", "stopped")
        pid, ticks = record.get("pid"), record.get("start_ticks")
        self.oom_baseline = record.get("oom_baseline")
        self.refresh_limits()
        if status in ("starting", "running", "stopping") and pid:
            stat = procfs.process_stat(pid)
            alive = stat is not None and stat.state not in ("Z", "X")
            if alive and ticks is not None and stat.start_ticks == ticks:
                try:
                    handle = ProcessHandle(pid)
                except ProcessLookupError:
                    handle = None
                if handle is not None:
                    self.process = handle
                    self.start_ticks = ticks
                    self.started_epoch = procfs.start_time(ticks)
                    self.started_at = record.get("started_at") or iso(self.started_epoch)
                    self._gone = asyncio.Event()
                    self.status = "running"
                    self._background(self._watch_exit(handle))
                    log.info("%s: adopted process %s", self.id, pid)
                    return ("running", "adopted after an agent restart")
            self.backend.kill_all(self.id)
            reason = exit_reason(
                None,
                out_of_memory=self._out_of_memory(),
                memory_mb=self.spec.limits.memory_mb,
                unknown="exited while the agent was not running (exit status unknown)",
            )
            self.status = "stopped"
            if status == "stopping":
                return ("stopped", "stopped while the agent was restarting")
            return ("crashed", reason)
        if status == "installing":
            self.console.write_agent_line("The install was interrupted by an agent restart.")
            self.status = "install_failed"
            return None
        self.status = status if status in ("stopped", "install_failed") else "stopped"
        return None

    async def delete(self) -> None:
        await self.kill()
        async with self._lock:  # an install being killed finishes first
            for watcher in list(self.watchers):
                watcher.on_status("deleted")
            self.console.close()
            os.close(self._dir_fd)
            self.backend.remove(self.id)
            await asyncio.to_thread(shutil.rmtree, self.directory, ignore_errors=True)

    def close(self) -> None:
        """The agent is shutting down: stop watching, leave the process running."""
        for task in self._tasks:
            task.cancel()
        if self.process is not None and self.process.pidfd >= 0:
            asyncio.get_running_loop().remove_reader(self.process.pidfd)

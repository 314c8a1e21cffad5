"""The supervisor of one server: its lifecycle from install to start until ready, graceful
stop, kill and exit detection, made of three parts it composes: ``agent.install`` (the install
steps), ``agent.process_tree`` (how its processes start, are signalled and killed) and
``agent.readiness`` (the ready line).

States: ``installing`` → ``stopped`` (or ``install_failed``) → ``starting`` → ``running`` →
``stopping`` → ``stopped``. A process that exits without being asked is reported to the control
plane (``crashed``, or ``stopped`` for a clean exit such as ``stop`` typed in the console).
"""

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent import config_files, procfs
from agent.clock import iso
from agent.config import Config
from agent.console import Console, Inotify
from agent.errors import (
    AgentError,
    ConsoleInputFull,
    InstallFailed,
    InvalidState,
    SecretsMissing,
    StartFailed,
    ValidationFailed,
)
from agent.files import DiskQuota, ServerFiles
from agent.install import Install
from agent.limits import MIB, LimitsBackend
from agent.process_tree import ProcessHandle, ProcessTree, exit_reason
from agent.readiness import Readiness, last_output
from agent.sandbox import Isolation
from agent.spec import ServerSpec, Template

log = logging.getLogger(__name__)

MAX_COMMAND_BYTES = 4096

Event = tuple[str, str]  # (type, reason) as POST /v1/agent/events carries them


class Watcher(Protocol):
    """A console WebSocket following the server."""

    def on_status(self, status: str) -> None: ...

    def on_stats(self, sample: dict[str, Any]) -> None: ...


def _disk_bytes(spec: ServerSpec) -> int | None:
    return None if spec.limits.disk_mb is None else spec.limits.disk_mb * MIB


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
        self.disk_quota = DiskQuota(_disk_bytes(spec))
        self.services = services
        self.config = services.config
        self.backend = services.backend
        self.directory = directory
        self._dir_fd = dir_fd
        self.console = Console(
            dir_fd, keep_lines=self.config.console_lines, inotify=services.inotify
        )
        self.tree = ProcessTree(
            spec.id,
            config=self.config,
            backend=self.backend,
            isolation=services.isolation,
            runtimes_dir=services.runtimes_dir,
            directory=directory,
            console=self.console,
            uid=uid,
        )
        self.installation = Install(self)
        self.readiness = Readiness(
            self.console,
            template=self._template,
            starting=lambda: self.status == "starting",
            became_ready=self._became_ready,
            timed_out=self._ready_timed_out,
        )
        self.secrets_missing: list[str] = []
        # What keeps it from starting or installing meanwhile ("restoring a backup").
        self.busy: str | None = None
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
        self._stop_timer: asyncio.TimerHandle | None = None
        self._stop_deadline: float | None = None
        self._stop_how = "graceful"
        self._exit_expected = False
        self._exit_event: Event | None = None
        self._background_start = False
        self._tasks: set[asyncio.Task] = set()

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def staging_dir(self) -> Path:
        return self.services.staging_dir

    def _template(self) -> Template:
        return self.spec.template

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
        self.disk_quota.limit_bytes = _disk_bytes(spec)
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

    def prepare_process(self, failure: type[AgentError]) -> None:
        """Before each process (an install step, the server): its limits applied, or ``failure``,
        and the OOM-kill counter it will be judged by."""
        self.refresh_limits()
        if "error" in self.applied_limits:
            raise failure(f"The limits could not be applied: {self.applied_limits['error']}")
        self.oom_baseline = self.backend.oom_kills(self.id)

    # -- start ----------------------------------------------------------------------------------

    async def start(self, *, background: bool = False) -> dict[str, Any]:
        """Start and return once the ready pattern was seen; ``StartFailed`` otherwise."""
        async with self._lock:
            if self.busy is not None:
                raise InvalidState(f"The server is {self.busy}.")
            if self.status == "running":
                return {"status": "running"}
            if self.status == "starting" and self.readiness.future is not None:
                ready = self.readiness.future
            elif self.status in ("installing", "stopping"):
                raise InvalidState(f"The server is {self.status}.")
            elif self.status == "install_failed":
                raise InvalidState("The install failed: install again before starting.")
            else:
                self.tree.require_isolation()
                self._require_secrets()
                if not self.installed:
                    await self._install_locked()
                await self._edit_config_files()
                ready = self._launch(background=background)
            gone = self._gone
        try:
            await asyncio.shield(ready)
        except StartFailed:
            await gone.wait()  # answer once the process is really gone
            raise
        return {"status": "running"}

    async def _edit_config_files(self) -> None:
        """The template's configuration-file edits, as the server's user, before each start; a
        file that cannot be edited is said in the console and the start goes on."""
        configs = self.spec.template.config_files
        if not configs:
            return
        substitutions = self.spec.substitutions(self.tree.workloads())
        problems = await asyncio.to_thread(config_files.apply, self.files(), configs, substitutions)
        for problem in problems:
            self.console.write_agent_line(problem)

    def _launch(self, *, background: bool) -> asyncio.Future[None]:
        self.console.poll()  # what the previous process wrote is not this one's ready line
        self.console.drain_input()
        self.prepare_process(StartFailed)
        command = self.spec.render(self.spec.template.start_command, self.tree.workloads())
        handle = self.tree.spawn(
            self.spec,
            ["/bin/sh", "-c", command],
            self.tree.environment(self.spec),
            failure=StartFailed,
        )
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
        ready = self.readiness.expect()
        self._set_status("starting")
        log.info("%s started (pid %s)", self.id, handle.pid)
        self.readiness.watch()
        self._background(self._watch_exit(handle))
        return ready

    def _became_ready(self) -> None:
        self._set_status("running")
        if self._background_start:
            self.services.report(self.id, "running", "started by the agent")

    def _ready_timed_out(self, message: str) -> None:
        """Silent past its ready timeout: the start has failed, and the server is killed."""
        self._exit_expected = True
        if self._background_start:
            self._exit_event = ("crashed", message)
        self._stop_how = "killed"
        self.tree.kill(self.process)

    # -- exit -----------------------------------------------------------------------------------

    async def _watch_exit(self, handle: ProcessHandle) -> None:
        code = await handle.exited
        try:
            await self._after_exit(handle, code)
        finally:
            self._gone.set()

    async def _after_exit(self, handle: ProcessHandle, code: int | None) -> None:
        graceful = self._exit_expected and self._stop_how == "graceful"
        graceful_until = self._stop_deadline if graceful else None
        if await self.tree.clear_leftovers(handle, graceful_until=graceful_until):
            self._stop_how = "killed"
        if self._stop_timer is not None:
            self._stop_timer.cancel()
            self._stop_timer = None
        self.readiness.stop_watching()
        self.console.poll()
        reason = exit_reason(
            code, out_of_memory=self.out_of_memory(), memory_mb=self.spec.limits.memory_mb
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
        if self.readiness.pending:
            what = "stopped" if self._exit_expected else reason
            self.readiness.fail(
                StartFailed(f"The server {what} before it was ready. {last_output(self.console)}")
            )
        if self._exit_event is not None:
            self.services.report(self.id, *self._exit_event)
        elif not self._exit_expected and (not was_starting or self._background_start):
            clean = code == 0
            self.services.report(self.id, "stopped" if clean else "crashed", reason)

    def out_of_memory(self) -> bool:
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
            self.tree.signal(self.process, template.stop_signal_number)
        self._stop_timer = loop.call_later(template.stop_timeout_seconds, self._stop_timed_out)

    def _stop_timed_out(self) -> None:
        self._stop_timer = None
        if self.process is not None:
            self.console.write_agent_line("The server did not stop in time; killing it.")
            self._stop_how = "killed"
            self.tree.kill(self.process)

    async def kill(self) -> dict[str, Any]:
        """SIGKILL to the whole tree at once; no lock, so it cuts through a start or install."""
        if self.status == "installing":
            self.installation.cancel()
            async with self._lock:  # the install ends (failed) once its process is gone
                pass
        if self.process is not None:
            self._exit_expected = True
            self._stop_how = "killed"
            self.tree.kill(self.process)
            await self._gone.wait()
        return {"status": self.status}

    async def enforce_disk_quota(self, used_bytes: int, files: int = 0) -> None:
        """Stop a server over its disk space or over the node's file count per folder (and
        tell the file manager's quota what the folder holds)."""
        self.disk_quota.measured(used_bytes)
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
            if self.busy is not None:
                raise InvalidState(f"The server is {self.busy}.")
            if self.process is not None:
                raise InvalidState(f"The server is {self.status}: stop it before installing.")
            self.tree.require_isolation()
            self._require_secrets()
            await self._install_locked()
        return {"status": "stopped"}

    async def _install_locked(self) -> None:
        self.installed = False
        self._set_status("installing")
        self.console.write_agent_line("Installing.")
        try:
            await self.installation.run()
        except InstallFailed as error:
            self.console.write_agent_line("The install failed.")
            self._set_status("install_failed")
            log.info("%s: install failed: %s", self.id, error.message.partition("\n")[0])
            raise
        self.installed = True
        self.console.write_agent_line("Installed.")
        self._set_status("stopped")

    def files(self) -> ServerFiles:
        """The server's folder as its user sees it (agent/files.py)."""
        owner = self.owner()
        return ServerFiles(self.directory, *(owner or (None, None)), quota=self.disk_quota)

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
                out_of_memory=self.out_of_memory(),
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

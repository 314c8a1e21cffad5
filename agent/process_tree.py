"""One server's processes: how each starts (its environment, its sandbox, its limits), how the
tree is signalled and killed, and why it ended.

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
import signal
import subprocess
from pathlib import Path

from agent import launch, procfs, sandbox
from agent.config import Config
from agent.console import Console
from agent.errors import AgentError, NotIsolated
from agent.limits import MIB, LimitsBackend
from agent.sandbox import Isolation
from agent.spec import ServerSpec

log = logging.getLogger(__name__)

WORKLOADS = Path(__file__).resolve().parent / "workloads"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# After SIGKILL, how long processes may take to disappear before the agent gives up waiting.
KILL_GRACE_SECONDS = 5.0
RUNTIME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


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


class ProcessTree:
    """Starts, signals and kills the processes of one server (or bot): its install steps and its
    main process alike. It knows where and as whom they run, not what they are for."""

    def __init__(
        self,
        server_id: str,
        *,
        config: Config,
        backend: LimitsBackend,
        isolation: Isolation,
        runtimes_dir: Path,
        directory: Path,
        console: Console,
        uid: int | None,
    ):
        self.server_id = server_id
        self.config = config
        self.backend = backend
        self.isolation = isolation
        self.runtimes_dir = runtimes_dir
        self.directory = directory
        self.console = console
        self.uid = uid  # the server's own user, in a sandbox

    # -- where and how a process runs ---------------------------------------------------------

    @property
    def sandboxed(self) -> bool:
        return self.isolation.sandboxed

    def home(self) -> str:
        return sandbox.HOME if self.sandboxed else str(self.directory)

    def workloads(self) -> str:
        return sandbox.WORKLOADS if self.sandboxed else str(WORKLOADS)

    def interpreter(self, spec: ServerSpec) -> str | None:
        return self.config.runtimes.get(spec.runtime) if spec.runtime else None

    def _runtime_bin(self, runtime: str, interpreter: str) -> Path:
        """A folder of root-owned links naming the interpreter as commands expect it."""
        folder = self.runtimes_dir / runtime / "bin"
        folder.mkdir(parents=True, exist_ok=True)
        names = ["python", "python3"] if runtime.startswith("python") else []
        names.append(Path(interpreter).name)
        for name in names:
            link = folder / name
            if not link.is_symlink() or os.readlink(link) != interpreter:
                link.unlink(missing_ok=True)
                link.symlink_to(interpreter)
        return folder

    def environment(self, spec: ServerSpec) -> dict[str, str]:
        """Minimal: never the agent's own environment, which holds the node token."""
        environment = {"LANG": "C.UTF-8"}
        environment.update(spec.variables)
        environment.update(spec.environment)
        builtins = spec.substitutions(self.workloads())
        for key in ("SERVER_ID", "SERVER_IP", "SERVER_PORT", "SERVER_MEMORY"):
            environment[key] = builtins[key]
        path = []
        interpreter = self.interpreter(spec)
        if interpreter and spec.runtime and RUNTIME_NAME.match(spec.runtime):
            if spec.runtime.startswith("python"):
                if (self.directory / ".venv" / "bin").is_dir():
                    path.append(f"{self.home()}/.venv/bin")
                environment["PYTHONUNBUFFERED"] = "1"
            links = self._runtime_bin(spec.runtime, interpreter)
            if self.sandboxed:
                path.append(f"{sandbox.RUNTIMES}/{spec.runtime}/bin")
            else:
                path.append(str(links))
            path.append(str(Path(interpreter).parent))
        path.append(DEFAULT_PATH)
        environment["PATH"] = ":".join(path)
        environment["HOME"] = self.home()
        if self.sandboxed:
            environment["USER"] = environment["LOGNAME"] = "container"
        elif self.config.run_as:
            environment["USER"] = environment["LOGNAME"] = self.config.run_as.name
        return environment

    def _read_only_paths(self, spec: ServerSpec) -> dict[str, str]:
        """What of the node a sandbox sees beside the system: the test workloads, the runtime
        links and the interpreter's own prefix when it lives outside /usr."""
        paths = {str(WORKLOADS): sandbox.WORKLOADS}
        interpreter = self.interpreter(spec)
        if interpreter and spec.runtime and RUNTIME_NAME.match(spec.runtime):
            paths[str(self.runtimes_dir)] = sandbox.RUNTIMES
            prefix = Path(os.path.realpath(interpreter)).parent
            if prefix.name == "bin":
                prefix = prefix.parent
            system = ("/usr", "/bin", "/sbin", "/lib", "/lib64")
            if not any(prefix == Path(top) or prefix.is_relative_to(top) for top in system):
                paths[str(prefix)] = str(prefix)
                if Path(interpreter).parent != prefix / "bin":
                    paths[str(Path(interpreter).parent)] = str(Path(interpreter).parent)
        return paths

    def require_isolation(self) -> None:
        isolation = self.isolation
        if isolation.mode == "unavailable":
            raise NotIsolated(
                f"This node cannot isolate its servers ({isolation.reason}), so it runs none."
            )

    # -- starting -------------------------------------------------------------------------------

    def spawn(
        self,
        spec: ServerSpec,
        argv: list[str],
        environment: dict[str, str],
        *,
        failure: type[AgentError],
        stdin_null: bool = False,
        installing: bool = False,
    ) -> ProcessHandle:
        self.require_isolation()
        limits = self.backend.launch_limits(self.server_id, spec.limits)
        instructions = launch.Instructions(
            argv=argv,
            env=environment,
            cwd=str(self.directory),
            cgroup_procs=limits.cgroup_procs,
            rlimits=limits.rlimits,
        )
        if self.sandboxed:
            self._sandbox(instructions, spec, argv, environment, installing=installing)
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

    def _sandbox(
        self,
        instructions: launch.Instructions,
        spec: ServerSpec,
        argv: list[str],
        environment: dict[str, str],
        *,
        installing: bool,
    ) -> None:
        """The launch as pasta, unshare and bubblewrap around ``argv``, as the server's uid."""
        assert self.isolation.tools is not None and self.uid is not None
        plan = sandbox.plan(
            self.isolation.tools,
            directory=self.directory,
            argv=argv,
            environment=environment,
            allocations=[(item.ip, item.port, item.protocol) for item in spec.allocations],
            read_only=self._read_only_paths(spec),
            host_ports=self.config.sandbox_host_ports,
            tmp_bytes=spec.limits.memory_mb * MIB if spec.limits.memory_mb else None,
            installing=installing,
        )
        instructions.argv, instructions.env = plan.argv, {}
        instructions.sandbox_args = plan.bwrap_args
        instructions.uid = instructions.gid = self.uid

    # -- signals --------------------------------------------------------------------------------

    def signal(self, handle: ProcessHandle, number: int) -> None:
        """The stop signal to the server's processes; in a sandbox, not to its plumbing
        (pasta would cut the network while the server saves, bwrap would kill it)."""
        if not self.sandboxed:
            handle.signal(number)
            return
        for pid in self.members(handle):
            if procfs.command_name(pid) not in sandbox.PLUMBING:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, number)

    def members(self, handle: ProcessHandle) -> list[int]:
        members = self.backend.processes(self.server_id)
        return procfs.session_members(handle.pid) if members is None else members

    def kill(self, handle: ProcessHandle | None) -> None:
        if handle is not None:
            handle.signal(signal.SIGKILL)
            for pid in self.members(handle):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.backend.kill_all(self.server_id)

    async def clear_leftovers(self, handle: ProcessHandle, *, graceful_until: float | None) -> bool:
        """Wait for the rest of the tree to go (until ``graceful_until``), then kill it; whether
        it had to kill what outlived a graceful wait."""
        loop = asyncio.get_running_loop()
        give_up = max(graceful_until or 0, loop.time()) + KILL_GRACE_SECONDS
        killed_after_grace = False
        while members := self.members(handle):
            now = loop.time()
            if graceful_until is None or now >= graceful_until:
                killed_after_grace = graceful_until is not None
                self.kill(handle)
            if now > give_up:
                log.warning("processes of %s survive SIGKILL: %s", self.server_id, members)
                return killed_after_grace
            await asyncio.sleep(0.05)
        return killed_after_grace

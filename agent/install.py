"""A server's install, step by step, each as the server's user inside its limits and sandbox: a
check that the bot's runtime runs, the code (git, or an archive the agent downloads and unpacks),
a Python bot's requirements, then the template's install script (with ``/bin/sh``, or
``/bin/bash`` when the template's ``install_shell`` says so, as eggs' entrypoints do). Each step's
output is in the console; the first that fails ends the install with its last lines."""

import asyncio
import os
import shutil
from collections import deque
from pathlib import Path
from typing import Protocol

from agent.config import Config
from agent.console import Console
from agent.errors import AgentError, InstallFailed
from agent.limits import MIB
from agent.process_tree import RUNTIME_NAME, ProcessHandle, ProcessTree, exit_reason
from agent.sources import GIT_SCRIPT, SourceError, chown_tree, download, move_into, unpack
from agent.spec import INSTALL_SHELLS, ServerSpec

INSTALL_TIMEOUT_SECONDS = 3600
DEFAULT_ARCHIVE_LIMIT_MB = 1024
# ensurepip apart from venv, so that its output (and why it failed) reaches the console.
REQUIREMENTS_SCRIPT = (
    '"$AGENT_PYTHON" -m venv --without-pip .venv && '
    ".venv/bin/python -m ensurepip --upgrade --default-pip && "
    ".venv/bin/pip install --disable-pip-version-check --no-input -r requirements.txt"
)


class Installable(Protocol):
    """What an install needs of the server it installs (``agent.runtime.ServerRuntime``)."""

    spec: ServerSpec
    config: Config
    directory: Path
    console: Console
    tree: ProcessTree

    @property
    def id(self) -> str: ...

    @property
    def staging_dir(self) -> Path: ...

    def prepare_process(self, failure: type[AgentError]) -> None: ...

    def out_of_memory(self) -> bool: ...

    def owner(self) -> tuple[int, int] | None: ...


class Install:
    """The steps of one install at a time; ``cancel`` (a kill) cuts it at the running step."""

    def __init__(self, server: Installable):
        self.server = server
        self.handle: ProcessHandle | None = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.handle is not None:
            self.server.tree.kill(self.handle)

    async def run(self) -> None:
        self.cancelled = False
        server, spec = self.server, self.server.spec
        environment = server.tree.environment(spec)
        interpreter = None
        if spec.runtime:
            interpreter = server.tree.interpreter(spec)
            if interpreter is None or not RUNTIME_NAME.match(spec.runtime):
                available = ", ".join(sorted(server.config.runtimes)) or "none"
                raise InstallFailed(
                    f"The runtime {spec.runtime} is not available on this node "
                    f"(available: {available})."
                )
            await self._step(f"checking the runtime {spec.runtime}", [interpreter, "--version"])
        if spec.source and spec.source.type == "git":
            git_environment = {
                **environment,
                "AGENT_GIT_URL": spec.source.url,
                "AGENT_GIT_REF": spec.source.ref or "HEAD",
                "GIT_TERMINAL_PROMPT": "0",
            }
            await self._step(
                "fetching the code from git", ["/bin/sh", "-c", GIT_SCRIPT], git_environment
            )
        elif spec.source and spec.source.type == "archive":
            await self._fetch_archive()
        if (
            interpreter
            and spec.runtime
            and spec.runtime.startswith("python")
            and (server.directory / "requirements.txt").is_file()
        ):
            await self._step(
                "installing requirements.txt",
                ["/bin/sh", "-c", REQUIREMENTS_SCRIPT],
                {**environment, "AGENT_PYTHON": interpreter},
            )
        if spec.template.install_script.strip():
            script = spec.render(spec.template.install_script, server.tree.workloads())
            shell = INSTALL_SHELLS[spec.template.install_shell]
            await self._step("the install script", [shell, "-c", script])

    async def _step(
        self, label: str, argv: list[str], environment: dict[str, str] | None = None
    ) -> None:
        if self.cancelled:
            raise InstallFailed("The install was cancelled: the server was killed.")
        server = self.server
        server.prepare_process(InstallFailed)
        server.console.write_agent_line(f"Step: {label}.")
        server.console.poll()
        recent: deque[str] = deque(maxlen=20)

        def collect(lines: list[str]) -> None:
            recent.extend(line for line in lines if not line.startswith("[agent] "))

        server.console.add_listener(collect)
        try:
            code = await self._run(argv, environment)
        finally:
            server.console.poll()
            server.console.remove_listener(collect)
        if code != 0:
            reason = exit_reason(
                code,
                out_of_memory=server.out_of_memory(),
                memory_mb=server.spec.limits.memory_mb,
            )
            output = "\n".join(recent) or "(no output)"
            raise InstallFailed(f"The install failed at {label} ({reason}). Last output:\n{output}")

    async def _run(self, argv: list[str], environment: dict[str, str] | None) -> int | None:
        """One step's process, until it and what it left are gone (or its time is up)."""
        tree, spec = self.server.tree, self.server.spec
        try:
            handle = tree.spawn(
                spec,
                argv,
                environment or tree.environment(spec),
                failure=InstallFailed,
                stdin_null=True,
                installing=True,
            )
            self.handle = handle
            try:
                code = await asyncio.wait_for(
                    asyncio.shield(handle.exited), INSTALL_TIMEOUT_SECONDS
                )
            except TimeoutError:
                tree.kill(handle)
                code = await handle.exited
            await tree.clear_leftovers(handle, graceful_until=None)
        finally:
            self.handle = None
        return code

    async def _fetch_archive(self) -> None:
        server = self.server
        assert server.spec.source is not None
        url = server.spec.source.url
        base = server.config.control_plane_url
        if url.startswith("/"):  # uploaded to the control plane: fetched from there
            if not base:
                raise InstallFailed(
                    "The code was uploaded to the control plane, but this node has none "
                    "configured (AGENT_CONTROL_PLANE_URL)."
                )
            url = base + url
        token = server.config.token if base and url.startswith(base + "/") else None
        max_bytes = (server.spec.limits.disk_mb or DEFAULT_ARCHIVE_LIMIT_MB) * MIB
        staging = server.staging_dir / f"{server.id}-{os.urandom(4).hex()}"
        staging.mkdir(mode=0o700)
        archive = staging.with_name(staging.name + ".download")
        server.console.write_agent_line("Step: downloading the code.")
        try:
            await download(url, archive, token=token, max_bytes=max_bytes)
            code = await asyncio.to_thread(
                unpack,
                archive,
                staging,
                max_bytes=max_bytes,
                max_members=server.config.archive_max_members,
            )
            owner = server.owner()
            if owner:
                await asyncio.to_thread(chown_tree, code, *owner)
            await asyncio.to_thread(move_into, code, server.directory)
        except SourceError as error:
            raise InstallFailed(str(error)) from None
        finally:
            archive.unlink(missing_ok=True)
            await asyncio.to_thread(shutil.rmtree, staging, ignore_errors=True)

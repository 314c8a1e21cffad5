"""The node: every server's supervisor, the state file, the control plane client, the sampler.

On start it adopts the processes a previous agent left running, reports what became of the
others, says hello to the control plane and reconciles with its answer.
"""

import asyncio
import contextlib
import logging
import os
import pwd
import stat
from pathlib import Path
from typing import Any

import aiohttp
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from agent import __version__, procfs
from agent.backups import Backups
from agent.client import ControlPlaneClient, ControlPlaneError
from agent.config import Config, ConfigError, RunAs
from agent.console import Inotify
from agent.errors import AgentError, InstallFailed, NotFound, UidsExhausted, ValidationFailed
from agent.limits import choose_backend
from agent.query import NOT_RESPONDING_AFTER, QueryLoop
from agent.runtime import ServerRuntime, Services
from agent.sandbox import Isolation, IsolationUnavailable, detect
from agent.sources import RESERVED_NAMES, chown_tree
from agent.spec import ServerSpec, parse_spec, spec_from_state
from agent.state import STATE_VERSION, StateFile
from agent.usage import UsageSampler

log = logging.getLogger(__name__)

DESIRED = ("running", "stopped")


def check_reachable(path: Path, run_as: RunAs) -> None:
    """The run-as user (in a sandbox: every server's own user, whose bubblewrap binds its
    folder) must be able to walk down to the servers' folders."""
    for folder in [*reversed(path.parents), path]:
        info = os.stat(folder)
        if info.st_uid == run_as.uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == run_as.gid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            raise ConfigError(
                f"The user {run_as.name} cannot reach {path}: {folder} has mode "
                f"{stat.filemode(info.st_mode)}. Choose another AGENT_DATA_ROOT or chmod o+x it."
            )


def _memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class Node:
    def __init__(self, config: Config):
        self.config = config
        self.servers: dict[str, ServerRuntime] = {}
        self.console_key: Ed25519PublicKey | None = None
        self._console_key_pem: str | None = None
        self._tasks: set[asyncio.Task] = set()
        self._opened = False
        # Set by the SFTP server (agent/sftp.py) once it listens.
        self.sftp_host_key_fingerprint: str | None = None

    # -- start and shutdown -------------------------------------------------------------------

    async def open(self) -> None:
        config = self.config
        root = config.data_root
        self.servers_root = root / "servers"
        for folder, mode in (
            (root, 0o711),
            (self.servers_root, 0o711),
            (root / "runtimes", 0o755),
            (root / "staging", 0o700),
        ):
            folder.mkdir(mode=mode, parents=True, exist_ok=True)
            folder.chmod(mode)
        self.isolation = await asyncio.to_thread(self._isolation)
        if self.isolation.sandboxed:
            probe = config.uid_range[-1]
            check_reachable(self.servers_root, RunAs(name=str(probe), uid=probe, gid=probe))
        elif config.run_as:
            check_reachable(self.servers_root, config.run_as)
        self.backend = choose_backend(config.limits, config.cgroup_root)
        log.info("limits: %s; processes run as %s", self.backend.name, self._run_as_name())
        self.state_file = StateFile(root / "state.json")
        state = self.state_file.load()
        self.uids: dict[str, int] = {
            key: value
            for key, value in state["uids"].items()
            if isinstance(value, int) and value in config.uid_range
        }
        self.client = ControlPlaneClient(
            config.control_plane_url,
            config.token,
            batch_seconds=config.batch_seconds,
            events=state["events"],
            on_events_changed=self.save,
            on_reconnect=lambda: self._background(self._hello()),
        )
        self.inotify = Inotify(asyncio.get_running_loop())
        self.services = Services(
            config=config,
            backend=self.backend,
            inotify=self.inotify,
            report=self.client.add_event,
            changed=self.save,
            runtimes_dir=root / "runtimes",
            staging_dir=root / "staging",
            isolation=self.isolation,
        )
        if state["console_public_key"]:
            try:
                self._set_console_key(state["console_public_key"])
            except ValidationFailed:
                log.error("the stored console public key is unusable; waiting for a new one")
        for server_id, record in state["servers"].items():
            self._restore(server_id, record)
        self.backups = Backups(config, report=self.client.add_event, changed=self.save)
        self.backups.interrupted(state["backups"], self.servers_root)
        self._opened = True
        self.save()
        await self.client.start()
        self.query = QueryLoop(
            lambda: list(self.servers.values()),
            interval_seconds=config.query_interval_seconds,
            timeout_seconds=config.query_timeout_seconds,
            concurrency=config.query_concurrency,
            changed=self._responding_changed,
        )
        self.sampler = UsageSampler(
            lambda: list(self.servers.values()),
            self.client.add_sample,
            sample_seconds=config.sample_seconds,
            disk_scan_seconds=config.disk_scan_seconds,
            query_fields=self.query.sample_fields,
        )
        self._background(self.sampler.run())
        self._background(self.query.run())
        if self.client.enabled:
            self._background(self._hello())

    def _responding_changed(self, runtime: ServerRuntime, responding: bool) -> None:
        """A running server stopped (or went back to) answering its game query: its console and
        the control plane hear it; the control plane applies the server's crash policy."""
        if responding:
            message = "The server answers its game query again."
        else:
            message = (
                f"The server has not answered its game query {NOT_RESPONDING_AFTER} times in a "
                "row while its process runs: not responding."
            )
        runtime.console.write_agent_line(message)
        log.warning("%s: %s", runtime.id, message)
        self.client.add_event(runtime.id, "responding" if responding else "not_responding", message)

    def _isolation(self) -> Isolation:
        """The sandbox when the node can give one; otherwise ``none`` with the development
        flag, or ``unavailable``: no customer workload runs."""
        config = self.config
        try:
            return detect(
                is_root=os.geteuid() == 0,
                probe_uid=config.uid_range[-1],
                workdir=self.servers_root,
            )
        except IsolationUnavailable as error:
            if config.allow_unisolated:
                log.warning(
                    "TENANTS ARE NOT ISOLATED (AGENT_ALLOW_UNISOLATED, for development only): "
                    "every server runs as %s in the node's files, processes and network. "
                    "Why no sandbox: %s",
                    self._run_as_name(),
                    error,
                )
                return Isolation(mode="none", reason=str(error))
            log.error(
                "This node cannot sandbox its servers (%s): it will run none of them. "
                "Fix that, or start with AGENT_ALLOW_UNISOLATED=1 for development.",
                error,
            )
            return Isolation(mode="unavailable", reason=str(error))

    def _uid_for(self, server_id: str) -> int | None:
        """The server's own uid: kept in the state, never another server's, never reused while
        a folder of its exists (given back only once the folder is gone)."""
        if not self.isolation.sandboxed:
            return None
        if server_id in self.uids:
            return self.uids[server_id]
        taken = set(self.uids.values())
        # The last uid of the range is the probe's: never a server's.
        for uid in self.config.uid_range[:-1]:
            if uid not in taken:
                self.uids[server_id] = uid
                return uid
        raise UidsExhausted(
            f"Every uid of AGENT_UID_RANGE ({len(self.config.uid_range) - 1}) is in use."
        )

    def _restore(self, server_id: str, record: dict[str, Any]) -> None:
        try:
            spec, secret_names = spec_from_state(record["spec"])
        except (AgentError, KeyError) as error:
            log.error("server %s in the state file is unusable (%s); left alone", server_id, error)
            return
        runtime = self._make_runtime(spec)
        runtime.secrets_missing = secret_names
        event = runtime.restore(record)
        self.servers[server_id] = runtime
        if event is not None:
            self.client.add_event(server_id, *event)

    async def close(self) -> None:
        """Stop watching; the servers' processes go on running for the next agent."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for runtime in self.servers.values():
            runtime.close()
        await self.backups.close()
        self.save()
        await self.client.close()
        self.inotify.close()

    def _background(self, coroutine) -> asyncio.Task:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- state ----------------------------------------------------------------------------------

    def save(self) -> None:
        if not self._opened:
            return
        self.state_file.save(
            {
                "version": STATE_VERSION,
                "console_public_key": self._console_key_pem,
                "servers": {server_id: rt.to_state() for server_id, rt in self.servers.items()},
                "events": list(self.client.events),
                "uids": self.uids,
                "backups": self.backups.to_state(),
            }
        )

    def _set_console_key(self, pem: Any) -> None:
        if not isinstance(pem, str):
            raise ValidationFailed("console_public_key: must be a PEM string.")
        try:
            key = load_pem_public_key(pem.encode())
        except ValueError:
            raise ValidationFailed("console_public_key: not a PEM public key.") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ValidationFailed("console_public_key: must be an Ed25519 key.")
        self.console_key, self._console_key_pem = key, pem

    # -- servers --------------------------------------------------------------------------------

    def get(self, server_id: str) -> ServerRuntime:
        try:
            return self.servers[server_id]
        except KeyError:
            raise NotFound("No such server on this node.") from None

    def _make_runtime(self, spec: ServerSpec) -> ServerRuntime:
        directory = self.servers_root / spec.id
        uid = self._uid_for(spec.id)
        directory.mkdir(mode=0o700, exist_ok=True)
        directory.chmod(0o700)
        owner = (uid, uid) if uid is not None else None
        if owner is None and self.config.run_as:
            owner = (self.config.run_as.uid, self.config.run_as.gid)
        if owner is not None:
            info = os.lstat(directory)
            if (info.st_uid, info.st_gid) != owner:
                # A folder of another user (a server made before the sandbox, as nobody):
                # everything in it becomes the server's own; the console files stay root's.
                chown_tree(directory, *owner)
                for name in RESERVED_NAMES:
                    with contextlib.suppress(FileNotFoundError):
                        os.lchown(directory / name, 0, 0)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return ServerRuntime(spec, self.services, directory, dir_fd, uid=uid)

    def put(self, spec: ServerSpec) -> tuple[ServerRuntime, bool]:
        runtime = self.servers.get(spec.id)
        if runtime is not None:
            runtime.replace_spec(spec)
            return runtime, False
        runtime = self._make_runtime(spec)
        runtime.refresh_limits()
        self.servers[spec.id] = runtime
        self.save()
        log.info("server %s created", spec.id)
        return runtime, True

    async def delete(self, server_id: str) -> None:
        runtime = self.get(server_id)
        await self.backups.forget(server_id)  # first: a restore writes into the folder
        await runtime.delete()
        self.servers.pop(server_id, None)
        if not runtime.directory.exists():  # a folder left behind keeps its uid
            self.uids.pop(server_id, None)
        self.sampler.forget(server_id)
        self.query.forget(server_id)
        self.save()
        log.info("server %s deleted", server_id)

    async def sync(self, body: Any) -> dict[str, Any]:
        """Store the specs (all or none), then bring each server to its desired state."""
        if not isinstance(body, dict):
            raise ValidationFailed("The body must be a JSON object.")
        items = body.get("servers") or []
        if not isinstance(items, list):
            raise ValidationFailed("servers: must be a list.")
        wanted = []
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise ValidationFailed(f"servers[{index}]: must be a spec with an id.")
            desired = item.get("desired")
            if desired is not None and desired not in DESIRED:
                raise ValidationFailed(f"servers[{index}].desired: must be running or stopped.")
            wanted.append((parse_spec(item, server_id=item["id"]), desired))
        if body.get("console_public_key"):
            self._set_console_key(body["console_public_key"])
            self.save()
        for spec, desired in wanted:
            runtime, _ = self.put(spec)
            self._background(self._reconcile(runtime, desired))
        return {
            "servers": [
                {"id": server_id, "status": runtime.status}
                for server_id, runtime in self.servers.items()
            ]
        }

    async def _reconcile(self, runtime: ServerRuntime, desired: str | None) -> None:
        """Bring the server to ``desired``; without one, the spec is only stored."""
        try:
            if desired == "running" and runtime.status == "stopped":
                await runtime.start(background=True)
            elif desired == "stopped" and runtime.status in ("starting", "running"):
                await runtime.stop()
        except InstallFailed as error:
            # No event type for a failed install: the server did not come up, so it crashed.
            self.client.add_event(runtime.id, "crashed", error.message.partition("\n")[0])
        except AgentError as error:
            log.warning("%s not brought to %s: %s", runtime.id, desired, error.message)

    # -- the control plane ----------------------------------------------------------------------

    async def _hello(self) -> None:
        backoff = 1.0
        while True:
            body = {
                "boot_id": procfs.boot_id(),
                "version": __version__,
                "limits": self.backend.name,
                "isolation": "sandbox" if self.isolation.sandboxed else "none",
                "servers": [
                    {"id": server_id, "status": runtime.status, "pid": runtime.pid}
                    for server_id, runtime in self.servers.items()
                ],
            }
            try:
                answer = await self.client.hello(body)
                break
            except (ControlPlaneError, aiohttp.ClientError, TimeoutError) as error:
                log.warning("hello failed (%s); again in %.0f s", error, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 60.0)
        if answer.get("node_id") not in (None, self.config.node_id):
            log.error(
                "the control plane calls this node %s, not %s",
                answer["node_id"],
                self.config.node_id,
            )
        try:
            await self.sync(answer)
        except AgentError as error:
            log.error("the answer to hello was refused: %s", error.message)
        log.info("hello: %d servers from the control plane", len(answer.get("servers") or []))

    # -- what GET /api/system shows -------------------------------------------------------------

    def _run_as_name(self) -> str:
        if getattr(self, "isolation", None) is not None and self.isolation.sandboxed:
            first, last = self.config.uid_range[0], self.config.uid_range[-1] - 1
            return f"own uid per server ({first}-{last})"
        if self.config.run_as:
            return self.config.run_as.name
        try:
            return pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            return str(os.geteuid())

    def system(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "node_id": self.config.node_id,
            "limits": self.backend.name,
            "isolation": self.isolation.describe(),
            "run_as": self._run_as_name(),
            "data_root": str(self.config.data_root),
            "cpu_count": os.cpu_count(),
            "memory_bytes": _memory_bytes(),
            "servers": len(self.servers),
            "runtimes": sorted(self.config.runtimes),
            "sftp": self._sftp(),
        }

    def _sftp(self) -> dict[str, Any] | None:
        if self.config.sftp_listen is None or self.sftp_host_key_fingerprint is None:
            return None
        host, port = self.config.sftp_listen
        return {"listen": f"{host}:{port}", "host_key_fingerprint": self.sftp_host_key_fingerprint}

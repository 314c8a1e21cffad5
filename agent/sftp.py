"""The agent's SFTP server (PROTOCOL.md "SFTP"): a server's files over SSH, as the file manager
reaches them.

A user signs in as ``<login>.<server short id>`` (the first 8 characters of the server's id
after ``srv_``/``bot_``) with a key or a password; every attempt is asked of the control plane
(``POST /v1/agent/sftp/auth`` with the node token), whose yes is never kept for another login,
and asked again every AGENT_SFTP_RECHECK_SECONDS during the session, which is closed when the
answer turns to no (or cannot be had).

Every operation goes through agent/files.py's ``ServerFiles`` in the files' thread pool, as the
server's user: the client's ``/`` is the server's folder, every path is resolved by the kernel
beneath it (``openat2`` with ``RESOLVE_BENEATH``), and the last component of a path to change
is never followed. asyncssh's own path mapping is never used (``map_path`` refuses), so an
operation this module does not implement cannot reach the agent's files.

An upload that truncates or creates a file (what ``put`` does) is written to a hidden partial
file beside its target (``.<name>.<16 hex>.part``, the shape agent/transfers.py sweeps when
abandoned) and renamed over the target when the client closes it, so a failed or abandoned
upload leaves the target as it was; writes into an existing file without truncating it are
made in place. Bytes are charged to the server's disk quota as they are written.
"""

import asyncio
import contextlib
import logging
import os
import posixpath
import secrets
import stat
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncssh
from aiohttp import web

from agent.client import ControlPlaneError
from agent.errors import AgentError, NotFound, ValidationFailed
from agent.file_routes import FILES_POOL
from agent.files import (
    DiskQuotaExceeded,
    FileConflict,
    NotPermitted,
    OutsideServer,
    ServerFiles,
    TooLarge,
    customer_path,
)
from agent.node import Node

log = logging.getLogger(__name__)

AUTH_PATH = "/v1/agent/sftp/auth"
AUTH_TIMEOUT_SECONDS = 10
HOST_KEY_NAME = "sftp_host_ed25519_key"
SHORT_ID_LENGTH = 8
ID_PREFIXES = ("srv_", "bot_")
READ = "files.read"
WRITE = "files.write"
MAX_READ_BYTES = 256 * 1024
LOGIN_TIMEOUT_SECONDS = 60


# -- who may sign in ------------------------------------------------------------------------------


@dataclass
class Session:
    """What a signed-in user may do with one server's files; ``permissions`` follow the
    control plane's answers during the session."""

    server_id: str
    user_id: str
    permissions: frozenset[str]
    files: ServerFiles


@dataclass(frozen=True)
class Grant:
    user_id: str
    permissions: frozenset[str]


def split_username(username: str) -> tuple[str, str] | None:
    """(login, short id) of ``<login>.<short id>``; None when it is not of that form."""
    login, dot, short = username.rpartition(".")
    if not dot or not login or len(short) != SHORT_ID_LENGTH:
        return None
    return login, short


def resolve_server(server_ids: list[str], short: str) -> str | None:
    """The one server whose id's first 8 characters after its prefix are ``short``; None when
    there is none, or more than one."""
    found = [
        server_id
        for server_id in server_ids
        if server_id.startswith(ID_PREFIXES) and server_id[4 : 4 + SHORT_ID_LENGTH] == short
    ]
    return found[0] if len(found) == 1 else None


async def ask_control_plane(node: Node, body: dict[str, str]) -> Grant | None:
    """The control plane's answer for one sign-in (or a session's re-check): a grant, or None
    for a no, for anything but a well-formed yes, or when it cannot be asked."""
    if not node.client.enabled:
        return None
    try:
        answer = await asyncio.wait_for(node.client.post(AUTH_PATH, body), AUTH_TIMEOUT_SECONDS)
    except (ControlPlaneError, aiohttp.ClientError, TimeoutError) as error:
        log.warning("sftp: the control plane could not be asked (%s): refused", error)
        return None
    permissions = answer.get("permissions")
    user_id = answer.get("user_id")
    if (
        answer.get("allowed") is not True
        or not isinstance(user_id, str)
        or not isinstance(permissions, list)
        or READ not in permissions
    ):
        return None
    return Grant(user_id, frozenset(item for item in permissions if isinstance(item, str)))


class SftpLogin(asyncssh.SSHServer):
    """One SSH connection: its sign-in, then the session's periodic re-check."""

    def __init__(self, service: "SftpService"):
        self.service = service
        self.session: Session | None = None
        self._conn: asyncssh.SSHServerConnection | None = None
        self._target: tuple[str, str] | None = None  # (login, server id)
        self._credential: dict[str, str] = {}
        self._recheck: asyncio.Task | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        if self._recheck is not None:
            self._recheck.cancel()

    def begin_auth(self, username: str) -> bool:
        # Always required: an unknown server fails like a wrong key, so nobody learns which
        # servers this node has.
        return True

    def password_auth_supported(self) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def kbdint_auth_supported(self) -> bool:
        return False

    async def validate_password(self, username: str, password: str) -> bool:
        return await self._ask(username, {"password": password})

    async def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        line = key.export_public_key("openssh").decode().strip()
        return await self._ask(username, {"public_key": line})

    async def _ask(self, username: str, credential: dict[str, str]) -> bool:
        """Ask the control plane about this attempt; the user name is resolved each time (a
        client may change it between attempts)."""
        parts = split_username(username)
        if parts is None:
            return False
        login, short = parts
        server_id = resolve_server(list(self.service.node.servers), short)
        if server_id is None:
            return False
        body = {"username": login, "server_id": server_id, **credential}
        grant = await ask_control_plane(self.service.node, body)
        if grant is None:
            return False
        runtime = self.service.node.servers.get(server_id)
        if runtime is None:
            return False
        self._target, self._credential = (login, server_id), credential
        self.session = Session(server_id, grant.user_id, grant.permissions, runtime.files())
        return True

    def auth_completed(self) -> None:
        assert self.session is not None
        log.info(
            "sftp: %s signed in to %s (%s)",
            self.session.user_id,
            self.session.server_id,
            ", ".join(sorted(self.session.permissions)),
        )
        self._recheck = asyncio.create_task(self._check_again())

    async def _check_again(self) -> None:
        """Ask again every interval; a no (or no answer) closes the connection at once."""
        assert self.session is not None and self._target is not None and self._conn is not None
        login, server_id = self._target
        body = {"username": login, "server_id": server_id, **self._credential}
        while True:
            await asyncio.sleep(self.service.node.config.sftp_recheck_seconds)
            grant = await ask_control_plane(self.service.node, body)
            if grant is None or server_id not in self.service.node.servers:
                log.info("sftp: %s may no longer use %s: closed", self.session.user_id, server_id)
                self._conn.close()
                return
            self.session.permissions = grant.permissions

    # No shell, no forwarding: SFTP is all this server does.
    def connection_requested(self, *args: Any) -> bool:
        return False

    def server_requested(self, *args: Any) -> bool:
        return False

    def unix_connection_requested(self, *args: Any) -> bool:
        return False

    def unix_server_requested(self, *args: Any) -> bool:
        return False


# -- on the files' threads, as the server's user --------------------------------------------------


def _relative(path: bytes) -> str:
    """The client's path as the server's folder sees it: the client's ``/`` is the folder,
    ``..`` above it stays there (as in a chroot); relative paths start at ``/``."""
    return customer_path(posixpath.normpath("/" + os.fsdecode(path)))


def _lstat(files: ServerFiles, relative: str) -> os.stat_result:
    if not relative:
        with files.open("", os.O_PATH | os.O_DIRECTORY) as fd:
            return os.fstat(fd)
    with files.parent(relative) as (parent, name):
        return os.stat(name, dir_fd=parent, follow_symlinks=False)


def _stat(files: ServerFiles, relative: str) -> os.stat_result:
    with files.open(relative, os.O_PATH) as fd:
        return os.fstat(fd)


def _listing(files: ServerFiles, relative: str) -> list[tuple[str, os.stat_result]]:
    entries = []
    with files.open(relative, os.O_RDONLY | os.O_DIRECTORY) as fd:
        entries.append((".", os.fstat(fd)))
        with os.scandir(fd) as listing:
            for item in listing:
                with contextlib.suppress(FileNotFoundError):  # removed while listed
                    entries.append((item.name, item.stat(follow_symlinks=False)))
    return entries


def _mkdir(files: ServerFiles, relative: str, mode: int) -> None:
    with files.parent(relative) as (parent, name):
        os.mkdir(name, mode, dir_fd=parent)


def _rmdir(files: ServerFiles, relative: str) -> None:
    with files.parent(relative) as (parent, name):
        os.rmdir(name, dir_fd=parent)


def _remove(files: ServerFiles, relative: str) -> None:
    with files.parent(relative) as (parent, name):
        if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise asyncssh.SFTPFileIsADirectory(f"/{relative} is a folder: use rmdir.")
        os.unlink(name, dir_fd=parent)


def _replace(files: ServerFiles, old: str, new: str) -> None:
    """POSIX rename: over an existing entry of the same kind."""
    with files.parent(old) as (old_parent, old_name), files.parent(new) as (new_parent, new_name):
        os.rename(old_name, new_name, src_dir_fd=old_parent, dst_dir_fd=new_parent)


def _readlink(files: ServerFiles, relative: str) -> str:
    with files.parent(relative) as (parent, name):
        return os.readlink(name, dir_fd=parent)


def _set_times(files: ServerFiles, relative: str, times: tuple[int, int]) -> None:
    with files.parent(relative) as (parent, name):
        os.utime(name, times, dir_fd=parent, follow_symlinks=False)


def _truncate(files: ServerFiles, relative: str, size: int) -> None:
    with files.open(relative, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK) as fd:
        files.quota.take(size - os.fstat(fd).st_size)
        os.ftruncate(fd, size)


class OpenFile:
    """An open SFTP file handle: a descriptor opened beneath the server's folder as its user
    and, for an upload that replaces its target, the hidden partial file it writes into and
    the folder it is renamed in on close."""

    def __init__(self, relative: str, fd: int, *, writable: bool, append: bool = False):
        self.relative = relative
        self.fd = fd
        self.writable = writable
        self.append = append
        self.mode: int | None = None  # applied to a partial file on close
        self.parent: int | None = None
        self.name = self.partial = ""
        self.failed = False
        self._lock = threading.Lock()

    @classmethod
    def open(cls, files: ServerFiles, relative: str, pflags: int, mode: int) -> "OpenFile":
        write = bool(pflags & (asyncssh.FXF_WRITE | asyncssh.FXF_APPEND))
        create = bool(pflags & asyncssh.FXF_CREAT)
        exclusive = bool(pflags & asyncssh.FXF_EXCL)
        if not (write or create):
            with files.open(relative, os.O_RDONLY | os.O_NONBLOCK) as fd:
                _regular(fd, relative)
                return cls(relative, os.dup(fd), writable=False)
        if pflags & asyncssh.FXF_TRUNC and not exclusive:
            return cls._partial(files, relative, create=create, mode=mode)
        flags = os.O_RDWR if pflags & asyncssh.FXF_READ else os.O_WRONLY
        flags |= os.O_NOFOLLOW | os.O_NONBLOCK
        flags |= (os.O_CREAT if create else 0) | (os.O_EXCL if exclusive else 0)
        flags |= os.O_APPEND if pflags & asyncssh.FXF_APPEND else 0
        flags |= os.O_TRUNC if pflags & asyncssh.FXF_TRUNC else 0
        with files.open(relative, flags, mode) as fd:
            _regular(fd, relative)
            return cls(relative, os.dup(fd), writable=True, append=bool(flags & os.O_APPEND))

    @classmethod
    def _partial(cls, files: ServerFiles, relative: str, *, create: bool, mode: int) -> "OpenFile":
        with files.parent(relative) as (parent, name):
            try:
                current = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                current = None
            if current is not None and stat.S_ISDIR(current.st_mode):
                raise asyncssh.SFTPFileIsADirectory(f"/{relative} is a folder.")
            partial = f".{os.fsdecode(os.fsencode(name)[:200])}.{secrets.token_hex(8)}.part"
            fd = os.open(
                partial,
                os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=parent,
            )
            handle = cls(relative, fd, writable=True)
            handle.parent, handle.name, handle.partial = os.dup(parent), name, partial
        if current is not None and stat.S_ISREG(current.st_mode):
            handle.mode = stat.S_IMODE(current.st_mode)
        else:
            handle.mode = mode
        return handle

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self.fd, min(size, MAX_READ_BYTES), offset)

    def write(self, quota, offset: int, data: bytes) -> None:
        with self._lock:
            if self.failed:
                raise asyncssh.SFTPFailure("This upload failed already: nothing was kept.")
            size = os.fstat(self.fd).st_size
            end = size + len(data) if self.append else offset + len(data)
            try:
                quota.take(end - size)
            except DiskQuotaExceeded:
                if self.partial:
                    self.failed = True
                    self._discard()
                raise
            view = memoryview(data)
            while view:
                written = os.pwrite(self.fd, view, offset)
                offset += written
                view = view[written:]

    def finish(self) -> int:
        """Put a partial file in place of its target; the file's size."""
        with self._lock:
            if self.failed:
                raise asyncssh.SFTPFailure(f"The upload of /{self.relative} failed: not kept.")
            size = os.fstat(self.fd).st_size
            if self.partial:
                assert self.parent is not None
                try:
                    if self.mode is not None:
                        os.fchmod(self.fd, self.mode)
                    os.rename(
                        self.partial, self.name, src_dir_fd=self.parent, dst_dir_fd=self.parent
                    )
                except OSError:
                    self._discard()
                    raise
                self.partial = ""
            self._close()
            return size

    def abandon(self) -> None:
        with self._lock:
            self._discard()
            self._close()

    def _discard(self) -> None:
        if self.partial and self.parent is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.partial, dir_fd=self.parent)
            self.partial = ""

    def _close(self) -> None:
        for fd in (self.fd, self.parent):
            if fd is not None and fd >= 0:
                os.close(fd)
        self.fd, self.parent = -1, None


def _regular(fd: int, relative: str) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise asyncssh.SFTPFailure(f"/{relative} is not a file.")


# -- the SFTP subsystem ---------------------------------------------------------------------------


def _sftp_error(error: AgentError) -> asyncssh.SFTPError:
    """The SFTP status for one of agent/files.py's errors."""
    if isinstance(error, (OutsideServer, NotPermitted)):
        return asyncssh.SFTPPermissionDenied(error.message)
    if isinstance(error, NotFound):
        return asyncssh.SFTPNoSuchFile(error.message)
    if isinstance(error, FileConflict):
        return asyncssh.SFTPFileAlreadyExists(error.message)
    if isinstance(error, DiskQuotaExceeded):
        # SFTP v3 has no quota status: clients see a failure whose message says so.
        return asyncssh.SFTPQuotaExceeded(f"quota exceeded: {error.message}")
    if isinstance(error, TooLarge):
        return asyncssh.SFTPNoSpaceOnFilesystem(error.message)
    if isinstance(error, ValidationFailed):
        return asyncssh.SFTPInvalidParameter(error.message)
    return asyncssh.SFTPFailure(error.message)


class ServerSftp(asyncssh.SFTPServer):
    """One SFTP session on one server's files (the connection's ``Session``)."""

    def __init__(self, chan: asyncssh.SSHServerChannel, service: "SftpService"):
        super().__init__(chan)
        login = chan.get_connection().get_owner()
        assert isinstance(login, SftpLogin) and login.session is not None
        self.session = login.session
        self.service = service

    async def _run(self, operation: Callable[..., Any], *args: Any) -> Any:
        files = self.session.files
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self.service.pool, lambda: files.run(operation, *args)
            )
        except AgentError as error:
            raise _sftp_error(error) from None

    async def _in(self, operation: Callable[..., Any], path: bytes, *args: Any) -> Any:
        try:
            relative = _relative(path)
        except AgentError as error:
            raise _sftp_error(error) from None
        return await self._run(operation, self.session.files, relative, *args)

    def _may_write(self) -> None:
        if WRITE not in self.session.permissions:
            raise asyncssh.SFTPPermissionDenied("This session may only read the server's files.")

    # asyncssh's own mapping onto the agent's files is never used.
    def map_path(self, path: bytes) -> bytes:
        raise asyncssh.SFTPOpUnsupported("Not supported by this server.")

    def reverse_map_path(self, path: bytes) -> bytes:
        raise asyncssh.SFTPOpUnsupported("Not supported by this server.")

    def format_user(self, uid: int | None) -> str:
        return "server"

    def format_group(self, gid: int | None) -> str:
        return "server"

    def realpath(self, path: bytes) -> bytes:
        try:
            return os.fsencode("/" + _relative(path))
        except AgentError as error:
            raise _sftp_error(error) from None

    # -- reading --------------------------------------------------------------------------------

    async def stat(self, path: bytes) -> os.stat_result:
        return await self._in(_stat, path)

    async def lstat(self, path: bytes) -> os.stat_result:
        return await self._in(_lstat, path)

    async def fstat(self, file_obj: OpenFile) -> os.stat_result:
        return await asyncio.get_running_loop().run_in_executor(
            self.service.pool, os.fstat, file_obj.fd
        )

    async def scandir(self, path: bytes) -> AsyncIterator[asyncssh.SFTPName]:
        entries = await self._in(_listing, path)
        for name, info in entries:
            yield asyncssh.SFTPName(os.fsencode(name), attrs=asyncssh.SFTPAttrs.from_local(info))

    async def readlink(self, path: bytes) -> bytes:
        return os.fsencode(await self._in(_readlink, path))

    async def read(self, file_obj: OpenFile, offset: int, size: int) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(
            self.service.pool, file_obj.read, offset, size
        )

    # -- files ----------------------------------------------------------------------------------

    async def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> OpenFile:
        if pflags & (
            asyncssh.FXF_WRITE | asyncssh.FXF_APPEND | asyncssh.FXF_CREAT | asyncssh.FXF_TRUNC
        ):
            self._may_write()
        mode = 0o644 if attrs.permissions is None else attrs.permissions & 0o777
        return await self._in(OpenFile.open, path, pflags, mode)

    async def write(self, file_obj: OpenFile, offset: int, data: bytes) -> int:
        if not file_obj.writable:
            raise asyncssh.SFTPPermissionDenied("This file was opened for reading.")
        self._may_write()
        await self._run(file_obj.write, self.session.files.quota, offset, data)
        return len(data)

    async def close(self, file_obj: OpenFile) -> None:
        if not file_obj.writable:
            await self._run(file_obj.abandon)
            return
        if self.channel.is_closing():
            # The session ended before the client closed it: not a finished upload.
            await self._run(file_obj.abandon)
            return
        size = await self._run(file_obj.finish)
        session = self.session
        path = "/" + file_obj.relative
        self.service.node.client.add_event(
            session.server_id, "files_uploaded", "", path=path, size=size, user=session.user_id
        )
        log.info(
            "%s: %s uploaded over SFTP by %s (%d bytes)",
            session.server_id,
            path,
            session.user_id,
            size,
        )

    async def fsync(self, file_obj: OpenFile) -> None:
        await asyncio.get_running_loop().run_in_executor(self.service.pool, os.fsync, file_obj.fd)

    def fstatvfs(self, file_obj: OpenFile) -> None:
        raise asyncssh.SFTPOpUnsupported("Not supported by this server.")

    # -- changing -------------------------------------------------------------------------------

    async def mkdir(self, path: bytes, attrs: asyncssh.SFTPAttrs) -> None:
        self._may_write()
        mode = 0o755 if attrs.permissions is None else attrs.permissions & 0o777
        await self._in(_mkdir, path, mode)

    async def rmdir(self, path: bytes) -> None:
        self._may_write()
        await self._in(_rmdir, path)

    async def remove(self, path: bytes) -> None:
        self._may_write()
        await self._in(_remove, path)

    async def rename(self, oldpath: bytes, newpath: bytes) -> None:
        """SFTP's rename: never over an existing entry."""
        self._may_write()
        try:
            old, new = _relative(oldpath), _relative(newpath)
        except AgentError as error:
            raise _sftp_error(error) from None
        files = self.session.files
        await self._run(files.rename, old, new)

    async def posix_rename(self, oldpath: bytes, newpath: bytes) -> None:
        self._may_write()
        try:
            old, new = _relative(oldpath), _relative(newpath)
        except AgentError as error:
            raise _sftp_error(error) from None
        await self._run(_replace, self.session.files, old, new)

    async def setstat(self, path: bytes, attrs: asyncssh.SFTPAttrs) -> None:
        """Permission bits (no set-id or sticky bits), times and size; never the owner."""
        self._may_write()
        if attrs.uid is not None or attrs.gid is not None:
            raise asyncssh.SFTPPermissionDenied("A server's files stay its user's.")
        try:
            relative = _relative(path)
        except AgentError as error:
            raise _sftp_error(error) from None
        files = self.session.files
        if attrs.size is not None:
            await self._run(_truncate, files, relative, attrs.size)
        if attrs.permissions is not None:
            await self._run(files.change_mode, relative, f"{attrs.permissions & 0o777:03o}")
        if attrs.atime is not None and attrs.mtime is not None:
            await self._run(_set_times, files, relative, (attrs.atime, attrs.mtime))

    async def lsetstat(self, path: bytes, attrs: asyncssh.SFTPAttrs) -> None:
        await self.setstat(path, attrs)

    async def fsetstat(self, file_obj: OpenFile, attrs: asyncssh.SFTPAttrs) -> None:
        self._may_write()
        if not file_obj.writable:
            raise asyncssh.SFTPPermissionDenied("This file was opened for reading.")
        if attrs.uid is not None or attrs.gid is not None:
            raise asyncssh.SFTPPermissionDenied("A server's files stay its user's.")
        if attrs.permissions is not None:
            file_obj.mode = attrs.permissions & 0o777
            await self._run(os.fchmod, file_obj.fd, file_obj.mode)
        if attrs.atime is not None and attrs.mtime is not None:
            await self._run(os.utime, file_obj.fd, (attrs.atime, attrs.mtime))

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        # A link made here could name anything, and the file manager makes none either.
        raise asyncssh.SFTPOpUnsupported("Links are not made over SFTP.")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("Links are not made over SFTP.")


# -- the listener ---------------------------------------------------------------------------------


def load_host_key(path: Path) -> asyncssh.SSHKey:
    """The node's SSH host key (ed25519): made once, kept at mode 0600 and reused, so clients
    that trusted it go on trusting it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        pass
    else:
        with os.fdopen(fd, "rb") as file:
            os.fchmod(file.fileno(), 0o600)
            return asyncssh.import_private_key(file.read())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    key = asyncssh.generate_private_key("ssh-ed25519")
    with os.fdopen(fd, "wb") as file:
        file.write(key.export_private_key())
    log.info("sftp: a new host key %s", key.get_fingerprint())
    return key


@dataclass
class SftpService:
    node: Node
    pool: ThreadPoolExecutor
    server: asyncssh.SSHAcceptor | None = field(default=None)

    async def start(self) -> None:
        listen = self.node.config.sftp_listen
        assert listen is not None
        key = load_host_key(self.node.config.data_root / HOST_KEY_NAME)
        self.server = await asyncssh.create_server(
            lambda: SftpLogin(self),
            listen[0],
            listen[1],
            server_host_keys=[key],
            sftp_factory=lambda chan: ServerSftp(chan, self),
            allow_scp=False,
            agent_forwarding=False,
            x11_forwarding=False,
            kbdint_auth=False,
            login_timeout=LOGIN_TIMEOUT_SECONDS,
        )
        self.node.sftp_host_key_fingerprint = key.get_fingerprint()
        log.info("sftp: listening on %s:%s", *listen)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def add_server(app: web.Application, node: Node) -> None:
    """Start the SFTP server with the app when AGENT_SFTP_LISTEN is set (after the file
    routes: it uses their pool), and stop it before the pool goes."""
    if node.config.sftp_listen is None:
        return
    service = SftpService(node, app[FILES_POOL])

    async def start(app: web.Application) -> None:
        await service.start()

    async def stop(app: web.Application) -> None:
        await service.close()

    app.on_startup.append(start)
    app.on_shutdown.append(stop)

"""A server's files, as its own user sees them, and nothing outside its folder.

Confinement is the kernel's, not string checks: every path a customer names is resolved by
``openat2(2)`` beneath the server's folder (``RESOLVE_BENEATH``: no absolute path, no ``..``
above the folder, no symlink whose target leaves it; ``RESOLVE_NO_MAGICLINKS``: no
``/proc/self/fd``-style links), and the last component is then worked on through the parent's
descriptor with the ``*at`` calls, never following a link there (a link is listed, renamed and
deleted as a link). Paths are the customer's view: ``/`` is the server's folder.

Permissions are the server user's: each operation runs in a thread of the files' own pool whose
filesystem uid and gid are the server's (``setfsuid``/``setfsgid`` are per thread, and a
non-zero fsuid drops root's file capabilities for that thread), so the kernel checks modes as it
would for the server's processes. When the agent is not root (a developer's machine) the
operations run as the agent's user.

Writes replace a file atomically (a temporary file beside it, then ``rename``) and carry a
version (``version_of``: inode, size and modification time) for ``If-Match``: a write against a
version that is no longer the file's is refused, so two editors never silently overwrite each
other.
"""

import contextlib
import ctypes
import errno
import os
import re
import secrets
import shutil
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.errors import AgentError, NotFound, ValidationFailed

_libc = ctypes.CDLL(None, use_errno=True)
SYS_OPENAT2 = 437  # the same number on every architecture (the unified syscall table)
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
RENAME_NOREPLACE = 1
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


class OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


class OutsideServer(AgentError):
    code = "outside_server"
    status = 400


class FileConflict(AgentError):
    code = "conflict"
    status = 409


class VersionMismatch(AgentError):
    code = "version_mismatch"
    status = 412


class NotPermitted(AgentError):
    code = "not_permitted"
    status = 403


class TooLarge(AgentError):
    code = "too_large"
    status = 413


class DiskQuotaExceeded(AgentError):
    code = "disk_quota_exceeded"
    status = 507


class DiskQuota:
    """What the file manager may still add to a server's folder: its disk limit less what the
    last usage sample measured (agent/usage.py) and what the file manager wrote since. Writes
    that would pass the limit are refused before a byte is written; the server's own processes
    are held to it by the usage sampler, which stops a server over it."""

    def __init__(self, limit_bytes: int | None):
        self.limit_bytes = limit_bytes
        self._measured = 0
        self._since = 0
        self._lock = threading.Lock()

    def measured(self, used_bytes: int) -> None:
        with self._lock:
            self._measured, self._since = used_bytes, 0

    def take(self, growth: int) -> None:
        """Count ``growth`` more bytes, or refuse them (``DiskQuotaExceeded``)."""
        if growth <= 0 or self.limit_bytes is None:
            return
        with self._lock:
            room = self.limit_bytes - self._measured - self._since
            if growth > room:
                raise DiskQuotaExceeded(
                    f"That would take the server past its disk limit of "
                    f"{self.limit_bytes // 2**20:,} MB ({max(room, 0) // 2**20:,} MB left)."
                )
            self._since += growth


def _openat2(dirfd: int, path: str, flags: int, mode: int = 0) -> int:
    how = OpenHow(flags | os.O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(
        SYS_OPENAT2,
        ctypes.c_int(dirfd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), path)
    return fd


def _renameat2(old_dirfd: int, old: str, new_dirfd: int, new: str, flags: int) -> None:
    result = _libc.renameat2(
        ctypes.c_int(old_dirfd),
        ctypes.c_char_p(os.fsencode(old)),
        ctypes.c_int(new_dirfd),
        ctypes.c_char_p(os.fsencode(new)),
        ctypes.c_uint(flags),
    )
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), new)


@contextlib.contextmanager
def _filesystem_identity(uid: int | None, gid: int | None) -> Iterator[None]:
    """This thread's file accesses as ``uid``/``gid`` (nothing changes when either is None)."""
    if uid is None or gid is None:
        yield
        return
    _libc.setfsgid(gid)
    _libc.setfsuid(uid)
    try:
        if _libc.setfsuid(-1) != uid or _libc.setfsgid(-1) != gid:
            raise AgentError("The agent could not take the server's user for its files.")
        yield
    finally:
        _libc.setfsuid(0)
        _libc.setfsgid(0)


def customer_path(path: str) -> str:
    """The customer's path relative to the server's folder ("" for the folder itself); refused
    when it is not a path at all. Confinement is not decided here but by the kernel."""
    if not isinstance(path, str) or "\x00" in path:
        raise ValidationFailed("A path is text without NUL characters.")
    if len(path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise ValidationFailed(f"A path is at most {MAX_PATH_BYTES} bytes.")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise ValidationFailed(f"A name is at most {MAX_NAME_BYTES} bytes.")
    return "/".join(parts)


def _split(relative: str) -> tuple[str, str]:
    """(parent, name) of a path that names an entry (not the folder itself, not ``..``)."""
    if not relative:
        raise ValidationFailed("The server's folder itself cannot be changed this way.")
    parent, _, name = relative.rpartition("/")
    if name == "..":
        raise ValidationFailed("A path to change ends with a name, not '..'.")
    return parent, name


def path_error(error: OSError, path: str) -> AgentError:
    """The API's error for ``error``, raised working on the customer's ``path`` (relative)."""
    shown = "/" + path
    if error.errno in (errno.EXDEV, errno.ELOOP):
        return OutsideServer(f"{shown} leads outside the server's folder.")
    if error.errno == errno.ENOENT:
        return NotFound(f"{shown} does not exist.")
    if error.errno in (errno.EACCES, errno.EPERM):
        return NotPermitted(f"The server's user may not do that to {shown}.")
    if error.errno == errno.EEXIST:
        return FileConflict(f"{shown} already exists.")
    if error.errno == errno.ENOTDIR:
        return ValidationFailed(f"A part of {shown} is not a folder.")
    if error.errno == errno.EISDIR:
        return ValidationFailed(f"{shown} is a folder.")
    if error.errno == errno.ENOTEMPTY:
        return FileConflict(f"{shown} is not empty.")
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return TooLarge("The server's disk is full.")
    if error.errno == errno.ENAMETOOLONG:
        return ValidationFailed(f"{shown} is too long.")
    if error.errno == errno.EOPNOTSUPP:
        return ValidationFailed(f"That cannot be done to {shown} (a link?).")
    return AgentError(f"{shown}: {error.strerror}.")


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def version_of(info: os.stat_result) -> str:
    """What ``If-Match`` compares: changes whenever the file is replaced or written."""
    return f"{info.st_ino:x}-{info.st_size:x}-{info.st_mtime_ns:x}"


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    size: int
    mode: str  # "0644"
    modified_ns: int
    link_target: str | None = None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "type": self.kind,
            "size": self.size,
            "mode": self.mode,
            "modified_at_ns": self.modified_ns,
            "link_target": self.link_target,
        }


def _entry(name: str, info: os.stat_result, link_target: str | None = None) -> Entry:
    return Entry(
        name=name,
        kind=kind_of(info.st_mode),
        size=info.st_size,
        mode=f"{stat.S_IMODE(info.st_mode):04o}",
        modified_ns=info.st_mtime_ns,
        link_target=link_target,
    )


SORTS = {
    "name": lambda entry: (entry.kind != "folder", entry.name.casefold(), entry.name),
    "size": lambda entry: (entry.size, entry.name),
    "modified": lambda entry: (entry.modified_ns, entry.name),
    "type": lambda entry: (entry.kind, entry.name.casefold(), entry.name),
}


class ServerFiles:
    """The files of one server: its folder and its user (``uid``/``gid``; None when the agent
    is not root). ``run`` calls an operation as that user in the calling thread, which must be
    one of the agent's own pool threads (never the event loop's)."""

    def __init__(
        self,
        directory: Path,
        uid: int | None,
        gid: int | None,
        quota: DiskQuota | None = None,
    ):
        self.directory = directory
        self.uid, self.gid = uid, gid
        self.quota = quota or DiskQuota(None)

    # --- descriptors -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _root(self) -> Iterator[int]:
        fd = os.open(self.directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def open(self, relative: str, flags: int, mode: int = 0) -> Iterator[int]:
        """A descriptor of ``relative`` (resolved beneath the folder), closed on leaving."""
        with self._root() as root:
            try:
                fd = _openat2(root, relative or ".", flags, mode)
            except OSError as error:
                raise path_error(error, relative) from None
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def parent(self, relative: str) -> Iterator[tuple[int, str]]:
        """(descriptor of the parent folder, last name) of an entry to work on with ``*at``
        calls: the parent is resolved beneath the folder, the name is not followed here."""
        parent, name = _split(relative)
        with self.open(parent, os.O_PATH | os.O_DIRECTORY) as fd:
            yield fd, name

    def run(self, operation, *args, **kwargs):
        """Call ``operation`` (a method of this object) as the server's user, in this thread."""
        with _filesystem_identity(self.uid, self.gid):
            return operation(*args, **kwargs)

    # --- reading -----------------------------------------------------------------------------

    def stat(self, path: str) -> dict:
        relative = customer_path(path)
        if not relative:
            with self.open("", os.O_PATH | os.O_DIRECTORY) as fd:
                return {**_entry("", os.fstat(fd)).to_json(), "path": "/"}
        with self.parent(relative) as (parent, name):
            try:
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
                target = os.readlink(name, dir_fd=parent) if stat.S_ISLNK(info.st_mode) else None
            except OSError as error:
                raise path_error(error, relative) from None
        result = _entry(name, info, target).to_json() | {"path": "/" + relative}
        if stat.S_ISREG(info.st_mode):
            result["version"] = version_of(info)
        return result

    def listing(
        self,
        path: str,
        *,
        sort: str = "name",
        descending: bool = False,
        offset: int = 0,
        limit: int = 100,
    ) -> dict:
        """A folder's entries (hidden ones too), sorted, a page of them, and how many in all."""
        if sort not in SORTS:
            raise ValidationFailed(f"sort is one of {', '.join(SORTS)}.")
        relative = customer_path(path)
        entries = []
        with self.open(relative, os.O_RDONLY | os.O_DIRECTORY) as fd:
            try:
                with os.scandir(fd) as listing:
                    for item in listing:
                        try:
                            info = item.stat(follow_symlinks=False)
                            target = (
                                os.readlink(item.name, dir_fd=fd)
                                if stat.S_ISLNK(info.st_mode)
                                else None
                            )
                        except FileNotFoundError:
                            continue  # removed while listed
                        entries.append(_entry(item.name, info, target))
            except OSError as error:
                raise path_error(error, relative) from None
        entries.sort(key=SORTS[sort], reverse=descending)
        return {
            "path": "/" + relative,
            "total": len(entries),
            "entries": [entry.to_json() for entry in entries[offset : offset + limit]],
        }

    def read_text(self, path: str, *, max_bytes: int) -> dict:
        """A file's text (UTF-8, or UTF-16 with its byte-order mark) and version; a file larger
        than ``max_bytes`` or not text is refused (download it instead)."""
        relative = customer_path(path)
        with self.open(relative, os.O_RDONLY | os.O_NONBLOCK) as fd:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValidationFailed(f"/{relative} is not a file.")
            if info.st_size > max_bytes:
                raise TooLarge(
                    f"/{relative} is larger than {max_bytes:,} bytes: download it instead."
                )
            content = os.read(fd, max_bytes + 1)
            if len(content) > max_bytes:
                raise TooLarge(f"/{relative} is larger than {max_bytes:,} bytes.")
        encoding = "utf-16" if content[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"
        try:
            text = content.decode(encoding)
        except UnicodeDecodeError:
            raise ValidationFailed(f"/{relative} is not text: download it instead.") from None
        if "\x00" in text:
            raise ValidationFailed(f"/{relative} is not text: download it instead.")
        return {
            "path": "/" + relative,
            "content": text,
            "encoding": encoding,
            "version": version_of(info),
        }

    def search(self, path: str, *, query: str, limit: int = 200) -> dict:
        """Entries beneath ``path`` whose name contains ``query`` (case-insensitive); links are
        listed, never followed."""
        needle = query.casefold()
        if not needle:
            raise ValidationFailed("Search for at least one character.")
        relative = customer_path(path)
        found: list[dict] = []
        with self.open(relative, os.O_RDONLY | os.O_DIRECTORY) as top:
            for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                # A link to a folder is listed, never descended into (os.fwalk would open its
                # target, outside the folder perhaps, before finding it a link).
                linked = [name for name in dirs if _is_link(name, dir_fd)]
                dirs[:] = [name for name in dirs if name not in linked]
                for name in sorted(dirs + linked) + sorted(files):
                    if needle not in name.casefold():
                        continue
                    try:
                        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    inner = os.path.normpath(os.path.join(folder, name))
                    shown = "/" + "/".join(part for part in (relative, inner) if part)
                    found.append(_entry(name, info).to_json() | {"path": shown})
                    if len(found) >= limit:
                        return {"entries": found, "truncated": True}
        return {"entries": found, "truncated": False}

    # --- changing ----------------------------------------------------------------------------

    def write_text(self, path: str, content: str, *, if_match: str | None) -> dict:
        """Replace (or create) a file with ``content`` (UTF-8). ``if_match``: the version the
        editor read, or ``"*"`` only if the file exists, or None for no condition."""
        relative = customer_path(path)
        data = content.encode("utf-8")
        with self.parent(relative) as (parent, name):
            try:
                current = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            except OSError as error:
                raise path_error(error, relative) from None
            if current is not None and not stat.S_ISREG(current.st_mode):
                raise ValidationFailed(f"/{relative} is not a file.")
            if if_match is not None and (
                current is None or (if_match != "*" and if_match != version_of(current))
            ):
                raise VersionMismatch(
                    f"/{relative} changed since it was read: read it again and redo the edit."
                )
            mode = stat.S_IMODE(current.st_mode) if current else 0o644
            self.quota.take(len(data) - (current.st_size if current else 0))
            temporary = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(
                    temporary,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    mode,
                    dir_fd=parent,
                )
            except OSError as error:
                raise path_error(error, relative) from None
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                    os.fchmod(file.fileno(), mode)
                os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=parent)
                raise path_error(error, relative) from None
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        return {"path": "/" + relative, "size": info.st_size, "version": version_of(info)}

    def create_folder(self, path: str) -> dict:
        relative = customer_path(path)
        with self.parent(relative) as (parent, name):
            try:
                os.mkdir(name, 0o755, dir_fd=parent)
            except OSError as error:
                raise path_error(error, relative) from None
        return self.stat(relative)

    def rename(self, source: str, destination: str) -> dict:
        """Move or rename an entry; an entry already at the destination is kept (409)."""
        old, new = customer_path(source), customer_path(destination)
        with (
            self.parent(old) as (old_parent, old_name),
            self.parent(new) as (
                new_parent,
                new_name,
            ),
        ):
            try:
                _renameat2(old_parent, old_name, new_parent, new_name, RENAME_NOREPLACE)
            except OSError as error:
                raise path_error(error, new if error.errno == errno.EEXIST else old) from None
        return self.stat(new)

    def copy(self, source: str, destination: str) -> dict:
        """Copy a file (not a folder) beside or elsewhere; never over an existing entry."""
        old, new = customer_path(source), customer_path(destination)
        with (
            self.open(old, os.O_RDONLY | os.O_NONBLOCK) as reader,
            self.parent(new) as (parent, name),
        ):
            info = os.fstat(reader)
            if not stat.S_ISREG(info.st_mode):
                raise ValidationFailed(f"/{old} is not a file: only files are copied.")
            self.quota.take(info.st_size)
            try:
                writer = os.open(
                    name,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    stat.S_IMODE(info.st_mode),
                    dir_fd=parent,
                )
            except OSError as error:
                raise path_error(error, new) from None
            try:
                while os.copy_file_range(reader, writer, 1 << 24):
                    pass
            except OSError as error:
                os.close(writer)
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=parent)
                raise path_error(error, new) from None
            os.close(writer)
        return self.stat(new)

    def delete(self, paths: list[str]) -> dict:
        """Delete entries (folders with what they hold; a link, not what it points at). Every
        path is checked before anything is deleted; then each is deleted in turn."""
        relatives = [customer_path(path) for path in paths]
        for relative in relatives:
            self.stat(relative)  # exists, and beneath the folder
        deleted = []
        for relative in relatives:
            with self.parent(relative) as (parent, name):
                try:
                    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        shutil.rmtree(name, dir_fd=parent)
                    else:
                        os.unlink(name, dir_fd=parent)
                except FileNotFoundError:
                    continue  # gone meanwhile (or listed twice)
                except OSError as error:
                    raise path_error(error, relative) from None
            deleted.append("/" + relative)
        return {"deleted": deleted}

    def change_mode(self, path: str, mode: str) -> dict:
        """``mode``: octal permission bits, "0644" or "755" (no set-id or sticky bits)."""
        if not isinstance(mode, str) or not re.fullmatch(r"0?[0-7]{3}", mode):
            raise ValidationFailed("mode is three octal digits, such as 644 or 0755.")
        relative = customer_path(path)
        _split(relative)
        # The entry itself (O_NOFOLLOW: a link is not followed), then its inode through the
        # descriptor's /proc link, which needs no read permission (as fchmodat does it).
        with self.open(relative, os.O_PATH | os.O_NOFOLLOW) as fd:
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise ValidationFailed(f"/{relative} is a link: change what it points at.")
            try:
                os.chmod(f"/proc/self/fd/{fd}", int(mode, 8))
            except OSError as error:
                raise path_error(error, relative) from None
        return self.stat(relative)

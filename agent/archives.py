"""Archives in a server's folder (PROTOCOL.md "Files"): a selection compressed into a .tar.gz
or .zip, and an archive (tar, tar.gz, tar.bz2, tar.xz or zip, told by its content) unpacked.

Both run in the files' threads as the server's user (``ServerFiles.run``) and reach every
entry through descriptors, never by a path from the agent's view: the selection and the
destination are resolved beneath the server's folder (agent/files.py), what is beneath them is
walked with ``os.fwalk`` (links listed, never followed) or created one component at a time
with ``O_NOFOLLOW``, so neither a hostile archive nor the server's own processes changing the
folder meanwhile make the agent read or write outside it.

Compressing streams each file into the archive (memory stays flat whatever the files' sizes);
the archive is written to a hidden file beside its target, charged to the disk quota as it
grows, and renamed into place only whole and only if the name is still free.

Unpacking checks every member with the same two checks as a bot's code (agent/sources.py):
``member_name`` (no absolute name, no ``..``) and tarfile's ``data`` filter (no link leaving
the destination, no device or pipe, no set-id bits, no group or other write), zip members
being read as tar members for it (a file or a folder gets the filter's rule for its mode
without the filter's path check, which making it one component at a time without following
links does already). It refuses the whole archive at the first member that fails them (a
backup's restore leaves out a link out of the folder instead, agent/backups.py), writes into a
hidden folder inside the destination, counts the bytes it actually writes
(headers' sizes are not believed), and only then moves the members in.
"""

# tarfile imports its compressors, and zipfile the codec of its names, when first used; the
# files' threads, as a server's user, may not read the interpreter's folder: imported here.
import bz2  # noqa: F401
import contextlib
import encodings.cp437  # noqa: F401
import errno
import gzip  # noqa: F401
import lzma
import os
import secrets
import shutil
import stat
import tarfile
import time
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from typing import IO, Any

from agent.errors import AgentError, NotFound, ValidationFailed
from agent.files import (
    RENAME_NOREPLACE,
    FileConflict,
    ServerFiles,
    TooLarge,
    _renameat2,
    customer_path,
    path_error,
    version_of,
)
from agent.sources import UnsafeMember, member_name

CHUNK_BYTES = 1 << 20
MAX_SELECTION = 1000
FORMATS = ("tar.gz", "zip")
MAX_LINK_TARGET_BYTES = 4096
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
# What tells an archive's kind by its first bytes (a zip's may also be found at its end).
COMPRESSED_TAR_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
DAMAGED = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, OSError)


FILTER_REFUSALS = {
    tarfile.AbsolutePathError: "is outside the folder",
    tarfile.OutsideDestinationError: "is outside the folder",
    tarfile.AbsoluteLinkError: "links outside the folder",
    tarfile.LinkOutsideDestinationError: "links outside the folder",
    tarfile.SpecialFileError: "is a device or a pipe",
}


class TooManyMembers(TooLarge):
    """More entries than AGENT_ARCHIVE_MAX_MEMBERS."""


def _too_many(max_members: int) -> TooManyMembers:
    return TooManyMembers(f"The archive would hold more than {max_members:,} files and folders.")


# -- a new file, put in place whole -------------------------------------------------------------


class NewFile:
    """A file made beside its target under a hidden name (``.<name>.<hex>.tmp``), charged to
    the server's disk quota as it grows, and put in place (``finish``) only whole and only if
    nothing took the target's name meanwhile (``409 conflict``); closed unfinished, it is
    removed. How an archive and a pulled file are written. Use it as a context manager, in
    the files' threads, as the server's user."""

    def __init__(self, files: ServerFiles, relative: str):
        self.files = files
        self.relative = relative
        self.size = 0
        self._finished = False
        self._stack = contextlib.ExitStack()
        self.parent, self.name = self._stack.enter_context(files.parent(relative))
        self.temporary = f".{os.fsdecode(os.fsencode(self.name)[:200])}.{secrets.token_hex(8)}.tmp"
        try:
            self._refuse_taken()
            self.fd: int | None = os.open(
                self.temporary,
                os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=self.parent,
            )
        except OSError as error:
            self._stack.close()
            raise path_error(error, relative) from None
        except AgentError:
            self._stack.close()
            raise

    def __enter__(self) -> "NewFile":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _refuse_taken(self) -> None:
        try:
            os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        except OSError as error:
            raise path_error(error, self.relative) from None
        raise FileConflict(f"/{self.relative} already exists.")

    def pwrite(self, data: bytes, offset: int) -> None:
        """Write ``data`` at ``offset``; what it adds past the end is charged first."""
        assert self.fd is not None
        self.files.quota.take(offset + len(data) - self.size)
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self.fd, view, offset)
                offset += written
                view = view[written:]
        except OSError as error:
            raise path_error(error, self.relative) from None
        self.size = max(self.size, offset)

    def write(self, data: bytes) -> None:
        self.pwrite(data, self.size)

    def finish(self, mode: int = 0o644) -> dict[str, Any]:
        """Put the file in place: ``{"path", "size", "version"}``."""
        assert self.fd is not None
        try:
            os.fchmod(self.fd, mode)
            os.fsync(self.fd)
            _renameat2(self.parent, self.temporary, self.parent, self.name, RENAME_NOREPLACE)
        except OSError as error:
            raise path_error(error, self.relative) from None
        self._finished = True
        info = os.fstat(self.fd)
        return {"path": "/" + self.relative, "size": info.st_size, "version": version_of(info)}

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            if not self._finished:
                with contextlib.suppress(OSError):
                    os.unlink(self.temporary, dir_fd=self.parent)
        self._stack.close()


class _Sink:
    """The file object tarfile and zipfile write a ``NewFile`` through (zipfile seeks back to
    complete each member's header)."""

    def __init__(self, target: NewFile):
        self.target = target
        self.position = 0
        self.broken = False  # the archive failed: nothing more is written

    def write(self, data: bytes) -> int:
        if not self.broken:
            self.target.pwrite(bytes(data), self.position)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.position, os.SEEK_END: self.target.size}
        self.position = base[whence] + offset
        return self.position

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        pass


# -- compressing ---------------------------------------------------------------------------------


def _common_folder(relatives: list[str]) -> str:
    parents = [relative.split("/")[:-1] for relative in relatives]
    common: list[str] = []
    for parts in zip(*parents, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return "/".join(common)


def _raise(error: OSError) -> None:
    raise error


def entries(
    files: ServerFiles,
    relatives: list[str],
    common: str,
    *,
    skip: Callable[[str, bool], bool] | None = None,
) -> Generator[tuple[str, os.stat_result, int, str]]:
    """(member name, status, descriptor of its folder, its name there) of every entry of the
    selection, folders before what they hold; links are entries, never followed. ``skip(member
    name, is a folder)`` true leaves an entry out (a folder with all it holds)."""
    cut = len(common) + 1 if common else 0
    for relative in relatives:
        with files.parent(relative) as (parent, name):
            try:
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except OSError as error:
                raise path_error(error, relative) from None
            if skip is not None and skip(relative[cut:], stat.S_ISDIR(info.st_mode)):
                continue
            yield relative[cut:], info, parent, name
            if not stat.S_ISDIR(info.st_mode):
                continue
            try:
                top = os.open(
                    name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
                )
            except OSError as error:
                raise path_error(error, relative) from None
            try:
                walk = os.fwalk(".", dir_fd=top, follow_symlinks=False, onerror=_raise)
                for folder, dirs, others, folder_fd in walk:
                    dirs.sort()
                    inner = os.path.normpath(os.path.join(relative[cut:], folder))
                    pruned = set()
                    for entry in sorted(dirs + others):
                        try:
                            found = os.stat(entry, dir_fd=folder_fd, follow_symlinks=False)
                        except FileNotFoundError:
                            continue  # removed while walked
                        member = f"{inner}/{entry}"
                        if skip is not None and skip(member, stat.S_ISDIR(found.st_mode)):
                            pruned.add(entry)
                            continue
                        if stat.S_ISLNK(found.st_mode):
                            pruned.add(entry)
                        yield member, found, folder_fd, entry
                    # A link to a folder is kept as a link: never descended into. (os.fwalk
                    # would open its target before finding it a link, and a neighbour's folder
                    # is one the server's user may not open.) A skipped folder neither.
                    dirs[:] = [name for name in dirs if name not in pruned]
            except OSError as error:
                shown = os.fsdecode(error.filename or "") if error.filename else relative
                raise path_error(error, f"{relative}/{shown}".rstrip("/")) from None
            finally:
                os.close(top)


def _open_member(folder_fd: int, name: str, info: os.stat_result) -> int | None:
    """A descriptor of the regular file ``name``, or None when it is no longer that file
    (removed, or replaced by a link, since it was listed)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd
        )
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ELOOP):
            return None
        raise
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or now.st_ino != info.st_ino:
        os.close(fd)
        return None
    return fd


def archivable(info: os.stat_result) -> bool:
    """A folder, a file or a link (a pipe, a socket or a device is never archived)."""
    return stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode) or stat.S_ISREG(info.st_mode)


def add_tar(bundle: tarfile.TarFile, name: str, info: os.stat_result, folder_fd: int, entry: str):
    member = tarfile.TarInfo(name)
    member.mode = stat.S_IMODE(info.st_mode)
    member.mtime = info.st_mtime
    if stat.S_ISDIR(info.st_mode):
        member.type = tarfile.DIRTYPE
        bundle.addfile(member)
    elif stat.S_ISLNK(info.st_mode):
        member.type = tarfile.SYMTYPE
        member.linkname = os.readlink(entry, dir_fd=folder_fd)
        bundle.addfile(member)
    elif (fd := _open_member(folder_fd, entry, info)) is not None:
        with os.fdopen(fd, "rb") as content:
            member.size = os.fstat(fd).st_size
            bundle.addfile(member, content)


def _zip_time(seconds: float) -> tuple[int, int, int, int, int, int]:
    stamp = time.localtime(seconds)[:6]
    return max(stamp, ZIP_EPOCH)


def _add_zip(bundle: zipfile.ZipFile, name: str, info: os.stat_result, folder_fd: int, entry: str):
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        member = zipfile.ZipInfo(name + "/", _zip_time(info.st_mtime))
        member.external_attr = (stat.S_IFDIR | mode) << 16 | 0x10
        bundle.writestr(member, b"")
    elif stat.S_ISLNK(info.st_mode):
        member = zipfile.ZipInfo(name, _zip_time(info.st_mtime))
        member.external_attr = (stat.S_IFLNK | 0o777) << 16
        bundle.writestr(member, os.fsencode(os.readlink(entry, dir_fd=folder_fd)))
    elif (fd := _open_member(folder_fd, entry, info)) is not None:
        member = zipfile.ZipInfo(name, _zip_time(info.st_mtime))
        member.external_attr = (stat.S_IFREG | mode) << 16
        member.compress_type = zipfile.ZIP_DEFLATED
        with os.fdopen(fd, "rb") as content:
            size = os.fstat(fd).st_size
            with bundle.open(member, "w", force_zip64=size >= zipfile.ZIP64_LIMIT) as out:
                left = size
                while left and (data := content.read(min(CHUNK_BYTES, left))):
                    out.write(data)
                    left -= len(data)
            if left:
                raise OSError("unexpected end of data")  # as tarfile says it


def compress(
    files: ServerFiles,
    paths: list[str],
    *,
    kind: str,
    to: str | None,
    max_members: int,
) -> dict[str, Any]:
    """Archive ``paths`` (folders with all they hold; links as links) as ``kind`` ("tar.gz" or
    "zip") into ``to`` (default: ``archive-<UTC time>.<kind>`` in the selection's folder),
    members named from the selection's common folder. Never over an existing entry."""
    if kind not in FORMATS:
        raise ValidationFailed(f"format: one of {', '.join(FORMATS)}.")
    relatives = list(dict.fromkeys(customer_path(path) for path in paths))
    if "" in relatives:
        raise ValidationFailed("The server's folder itself is not archived: select what it holds.")
    # An entry inside another selected folder is in the archive already.
    relatives = [
        relative
        for relative in relatives
        if not any(relative.startswith(other + "/") for other in relatives)
    ]
    common = _common_folder(relatives)
    if to is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        to = f"{common}/archive-{stamp}.{kind}"
    target = customer_path(to)
    with NewFile(files, target) as new:
        assert new.fd is not None
        itself = os.fstat(new.fd)
        sink = _Sink(new)
        count = 0
        try:
            bundle: Any = (
                zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED, compresslevel=6)
                if kind == "zip"
                else tarfile.open(fileobj=sink, mode="w:gz", compresslevel=6)  # noqa: SIM115
            )
            add = _add_zip if kind == "zip" else add_tar
            try:
                with contextlib.closing(entries(files, relatives, common)) as walk:
                    for name, info, folder_fd, entry in walk:
                        if (info.st_dev, info.st_ino) == (itself.st_dev, itself.st_ino):
                            continue  # the archive being written, inside a selected folder
                        if not archivable(info):
                            continue  # a pipe, a socket or a device: not archived
                        count += 1
                        if count > max_members:
                            raise _too_many(max_members)
                        add(bundle, name, info, folder_fd, entry)
                        if kind != "zip":
                            bundle.members.clear()  # written: not kept in memory
            except BaseException:
                sink.broken = True  # what closing the archive still writes goes nowhere
                with contextlib.suppress(Exception):
                    bundle.close()
                raise
            bundle.close()
        except UnicodeEncodeError:
            raise ValidationFailed("A name in the selection is not UTF-8 text.") from None
        except OSError as error:
            if error.errno is None:
                raise AgentError("A file shrank while it was archived: try again.") from None
            raise path_error(error, target) from None
        return new.finish(0o644)


# -- decompressing --------------------------------------------------------------------------------


def _kind_of(archive: IO[bytes]) -> str:
    """ "zip" or "tar" (compressed or not), by the archive's content."""
    head = archive.read(512)
    archive.seek(0)
    if head.startswith(ZIP_MAGIC):
        return "zip"
    if head.startswith(COMPRESSED_TAR_MAGIC) or head[257:262] == b"ustar":
        return "tar"
    if zipfile.is_zipfile(archive):  # a zip behind something else (a self-extracting one)
        archive.seek(0)
        return "zip"
    raise ValidationFailed(
        "That is not an archive this can unpack (tar, tar.gz, tar.bz2, tar.xz or zip)."
    )


def _data_mode(member: tarfile.TarInfo) -> int:
    """A file's mode as tarfile's data filter leaves it: no set-id, sticky or write bits for
    others, no execute bits unless the owner's, read and write for the owner."""
    mode = (member.mode or 0) & 0o755
    if not mode & 0o100:
        mode &= ~0o111
    return mode | 0o600


class Unpacker:
    """Creates the archive's members inside ``staging`` (a descriptor), one path component at
    a time, never following a link, counting entries and the bytes actually written."""

    def __init__(
        self,
        files: ServerFiles,
        staging: int,
        *,
        label: str,
        max_members: int,
        max_bytes: int,
        skip_links_out: bool = False,
    ):
        self.files = files
        self.staging = staging
        self.label = label  # the destination as the customer names it, for errors
        # tarfile's data filter compares real paths: the staging folder's, as the kernel has it.
        self.real = os.readlink(f"/proc/self/fd/{staging}")
        self.max_members = max_members
        self.max_bytes = max_bytes
        self.count = 0
        self.size = 0
        # A backup's links out of the folder (stored as links) are left out, not refused.
        self.skip_links_out = skip_links_out
        self.links_skipped = 0
        self.folders: list[tuple[str, int]] = []  # (name, mode) of each folder member
        self._last_folder: tuple[tuple[str, ...], int] | None = None

    def _refused(self, why: str) -> ValidationFailed:
        return ValidationFailed(f"The archive was refused: {why}. Nothing was unpacked.")

    def close(self) -> None:
        if self._last_folder is not None:
            os.close(self._last_folder[1])
            self._last_folder = None

    def _folder(self, parts: list[str], *, create: bool) -> int:
        """A descriptor of the folder ``parts`` beneath the staging folder (made with
        ``create``), reached one component at a time, links never followed. The last one made
        is kept: an archive's members come folder by folder."""
        key = tuple(parts)
        if create and self._last_folder is not None and self._last_folder[0] == key:
            return os.dup(self._last_folder[1])
        fd = self._walk(parts, create=create)
        if create:
            self.close()
            self._last_folder = (key, os.dup(fd))
        return fd

    def _walk(self, parts: list[str], *, create: bool) -> int:
        fd = os.dup(self.staging)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                inner = os.open(
                    part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
                os.close(fd)
                fd = inner
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                raise self._refused(
                    f"{'/'.join(parts)!r} is a link or a file, not a folder"
                ) from None
            raise path_error(error, self.label) from None
        return fd

    def _fresh(self, folder: int, name: str, member: str) -> None:
        """Make room for ``name``: an earlier member of that name (not a folder) goes."""
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            raise self._refused(f"{member!r} is both a folder and a file")
        os.unlink(name, dir_fd=folder)

    def add(self, member: tarfile.TarInfo, content: IO[bytes] | None) -> None:
        """Check and create one member; ``content`` is a file's data."""
        self.count += 1
        if self.count > self.max_members:
            raise _too_many(self.max_members)
        try:
            name = member_name(member.name)
        except UnsafeMember:
            raise self._refused(f"{member.name!r} is outside the folder") from None
        if not name:
            return  # the folder itself ("./")
        # The data filter drops a folder's mode; kept without set-id, sticky or write bits
        # for others, as the filter keeps a file's.
        folder_mode = (member.mode or 0) & 0o755
        try:
            if member.isreg() or member.isdir():
                # Of a file or a folder, the filter checks the name (done: member_name) and
                # that its path stays inside, which it does: it is made one component at a
                # time, no link followed (_folder). Only the filter's rule for the mode is
                # left, applied here (the filter's two realpath calls cost a restore of
                # many small files more than all the rest).
                member = member.replace(name=name, mode=_data_mode(member), deep=False)
            else:
                member = tarfile.data_filter(member.replace(name=name, deep=False), self.real)
        except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
            if not (self.skip_links_out and member.issym()):
                raise self._refused(f"{name!r} links outside the folder") from None
            self.links_skipped += 1
            return
        except tarfile.FilterError as error:
            # Said again, without the node's own paths that tarfile's sentence shows.
            why = FILTER_REFUSALS.get(type(error), "is refused")
            raise self._refused(f"{name!r} {why}") from None
        *parents, last = name.split("/")
        if member.isdir():
            os.close(self._folder([*parents, last], create=True))
            self.folders.append((name, folder_mode))
            return
        if not (member.isreg() or member.issym() or member.islnk()):
            raise self._refused(f"{name!r} is not a file, a folder or a link")
        folder = self._folder(parents, create=True)
        try:
            if not member.isreg():
                self._fresh(folder, last, name)  # a file's name is made room for if taken
            if member.issym():
                os.symlink(member.linkname, last, dir_fd=folder)
            elif member.islnk():
                self._hard_link(member, folder, last)
            else:
                self._write(member, content, folder, last)
        except OSError as error:
            raise path_error(error, self.label) from None
        finally:
            os.close(folder)

    def _hard_link(self, member: tarfile.TarInfo, folder: int, last: str) -> None:
        try:
            source = member_name(member.linkname)
        except UnsafeMember:
            raise self._refused(f"{member.name!r} links outside the folder") from None
        *source_parents, source_last = source.split("/")
        source_folder = self._folder(source_parents, create=False)
        try:
            info = os.stat(source_last, dir_fd=source_folder, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                raise self._refused(f"{member.name!r} links to {source!r}, not a file")
            os.link(
                source_last,
                last,
                src_dir_fd=source_folder,
                dst_dir_fd=folder,
                follow_symlinks=False,
            )
        except FileNotFoundError:
            raise self._refused(f"{member.name!r} links to {source!r}, not in it") from None
        finally:
            os.close(source_folder)

    def _write(
        self, member: tarfile.TarInfo, content: IO[bytes] | None, folder: int, last: str
    ) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(last, flags, 0o600, dir_fd=folder)
        except FileExistsError:
            self._fresh(folder, last, member.name)
            fd = os.open(last, flags, 0o600, dir_fd=folder)
        try:
            while content is not None and (data := content.read(CHUNK_BYTES)):
                self.size += len(data)
                if self.size > self.max_bytes:
                    raise TooLarge(
                        f"The archive unpacks to more than {self.max_bytes:,} bytes: it was "
                        f"refused and nothing was unpacked."
                    )
                self.files.quota.take(len(data))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            os.fchmod(fd, member.mode if member.mode is not None else 0o644)
            with contextlib.suppress(OverflowError, ValueError):  # a time out of range: now
                os.utime(fd, ns=(int(member.mtime * 1e9),) * 2)
        finally:
            os.close(fd)


def unpack_tar(archive: IO[bytes], unpacker: Unpacker) -> None:
    # A stream: each member's data is read once, as it comes, whatever the compression.
    with tarfile.open(fileobj=archive, mode="r|*") as bundle:
        while (member := bundle.next()) is not None:
            content = bundle.extractfile(member) if member.isreg() else None
            unpacker.add(member, content)
            bundle.members.clear()  # unpacked: not kept in memory


def _tar_member(info: zipfile.ZipInfo, bundle: zipfile.ZipFile) -> tarfile.TarInfo:
    """A zip member as tarfile's filter sees members (its kind and mode from a Unix zip's
    attributes; a symbolic link's target is its content)."""
    unix = info.external_attr >> 16 if info.create_system == 3 else 0
    member = tarfile.TarInfo(info.filename)
    with contextlib.suppress(OverflowError, ValueError):
        member.mtime = time.mktime((*info.date_time, 0, 0, -1))
    member.size = info.file_size
    if info.is_dir():
        member.type, member.mode = tarfile.DIRTYPE, 0o755
    elif stat.S_ISLNK(unix):
        member.type = tarfile.SYMTYPE
        with bundle.open(info) as target:
            linkname = target.read(MAX_LINK_TARGET_BYTES + 1)
        if len(linkname) > MAX_LINK_TARGET_BYTES:
            raise ValidationFailed(f"The archive was refused: {info.filename!r} is not a link.")
        member.linkname = os.fsdecode(linkname)
    elif stat.S_IFMT(unix) in (0, stat.S_IFREG):
        member.type, member.mode = tarfile.REGTYPE, stat.S_IMODE(unix) or 0o644
    else:
        member.type = tarfile.FIFOTYPE  # a device or a pipe: the filter refuses it
    return member


def _unpack_zip(archive: IO[bytes], unpacker: Unpacker) -> None:
    with zipfile.ZipFile(archive) as bundle:
        members = bundle.infolist()
        if len(members) > unpacker.max_members:
            raise _too_many(unpacker.max_members)
        for info in members:
            member = _tar_member(info, bundle)
            if member.isreg():
                with bundle.open(info) as content:
                    unpacker.add(member, content)
            else:
                unpacker.add(member, None)


class Destination:
    """The folder an archive is unpacked into (made when missing, and removed again if the
    unpacking fails) and the hidden staging folder inside it, removed in any case."""

    def __init__(self, files: ServerFiles, relative: str):
        self.files = files
        self.relative = relative
        self.made = False
        self._stack = contextlib.ExitStack()
        flags = os.O_RDONLY | os.O_DIRECTORY
        try:
            self.fd = self._stack.enter_context(files.open(relative, flags))
        except NotFound:
            if not relative:
                raise
            with files.parent(relative) as (parent, name):
                try:
                    os.mkdir(name, 0o755, dir_fd=parent)
                except OSError as error:
                    raise path_error(error, relative) from None
            self.made = True
            self.fd = self._stack.enter_context(files.open(relative, flags))
        self.staging_name = f".unpack.{secrets.token_hex(8)}.tmp"
        try:
            os.mkdir(self.staging_name, 0o700, dir_fd=self.fd)
            self.staging = os.open(
                self.staging_name,
                os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                dir_fd=self.fd,
            )
        except OSError as error:
            self._close(failed=True)
            raise path_error(error, relative) from None
        self._stack.callback(os.close, self.staging)

    def __enter__(self) -> "Destination":
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self._close(failed=kind is not None)

    def _close(self, *, failed: bool) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self.staging_name, dir_fd=self.fd)
        self._stack.close()
        if failed and self.made:
            with (
                contextlib.suppress(OSError, AgentError),
                self.files.parent(self.relative) as (parent, name),
            ):
                os.rmdir(name, dir_fd=parent)

    def clash(self, *, overwrite: bool) -> str | None:
        """The first member (a path inside the destination) that cannot be moved in: an
        existing file or link (unless ``overwrite``), or any existing folder that a file or a
        link would replace; folders in both are merged."""
        pending = [""]
        while pending:
            inner = pending.pop()
            with _opened(self.staging, inner) as source, _opened(self.fd, inner) as target:
                if target is None:
                    continue
                for name in sorted(os.listdir(source)):
                    present = _lstat(target, name)
                    if present is None:
                        continue
                    path = f"{inner}/{name}".lstrip("/")
                    mine = os.stat(name, dir_fd=source, follow_symlinks=False)
                    if stat.S_ISDIR(present.st_mode) and stat.S_ISDIR(mine.st_mode):
                        pending.append(path)
                    elif stat.S_ISDIR(present.st_mode) or not overwrite:
                        return path
        return None

    def clear(self, keep: frozenset[str] = frozenset()) -> None:
        """Delete everything in the destination but the staging folder and ``keep``."""
        for name in os.listdir(self.fd):
            if name == self.staging_name or name in keep:
                continue
            if stat.S_ISDIR(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode):
                shutil.rmtree(name, dir_fd=self.fd)
            else:
                os.unlink(name, dir_fd=self.fd)

    def move_in(self, *, replace_folders: bool = False) -> None:
        """Move every member into the destination (after ``clash``): a new name by renaming,
        a file or link replaced by renaming over it, folders in both merged; with
        ``replace_folders``, a folder where a member is a file or link is deleted first."""
        pending = [""]
        while pending:
            inner = pending.pop()
            with _opened(self.staging, inner) as source, _opened(self.fd, inner) as target:
                assert source is not None and target is not None
                for name in sorted(os.listdir(source)):
                    present = _lstat(target, name)
                    mine = os.stat(name, dir_fd=source, follow_symlinks=False)
                    if present is None:
                        _renameat2(source, name, target, name, RENAME_NOREPLACE)
                    elif stat.S_ISDIR(present.st_mode) and stat.S_ISDIR(mine.st_mode):
                        pending.append(f"{inner}/{name}".lstrip("/"))
                    elif stat.S_ISDIR(mine.st_mode):
                        os.unlink(name, dir_fd=target)
                        _renameat2(source, name, target, name, RENAME_NOREPLACE)
                    elif stat.S_ISDIR(present.st_mode) and replace_folders:
                        shutil.rmtree(name, dir_fd=target)
                        _renameat2(source, name, target, name, RENAME_NOREPLACE)
                    else:
                        os.rename(name, name, src_dir_fd=source, dst_dir_fd=target)


def _lstat(folder: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _opened(top: int, inner: str) -> Iterator[int | None]:
    """A readable descriptor of ``inner`` beneath ``top``, links never followed; None when
    it is not there (or not a folder)."""
    fd = os.dup(top)
    try:
        for part in filter(None, inner.split("/")):
            try:
                inside = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
            except (FileNotFoundError, NotADirectoryError):
                yield None
                return
            except OSError as error:
                if error.errno != errno.ELOOP:
                    raise
                yield None
                return
            os.close(fd)
            fd = inside
        yield fd
    finally:
        os.close(fd)


def decompress(
    files: ServerFiles,
    path: str,
    *,
    to: str | None,
    overwrite: bool,
    max_members: int,
    max_bytes: int,
) -> dict[str, Any]:
    """Unpack the archive at ``path`` into the folder ``to`` (default: the archive's folder;
    made when missing). An existing file is replaced only with ``overwrite``; an existing
    folder is merged into, never replaced. All or nothing: on any refusal or failure the
    destination is as it was."""
    relative = customer_path(path)
    target = customer_path(to) if to is not None else relative.rpartition("/")[0]
    label = "/" + target
    with files.open(relative, os.O_RDONLY | os.O_NONBLOCK) as fd:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValidationFailed(f"/{relative} is not a file.")
        with os.fdopen(os.dup(fd), "rb") as archive:
            kind = _kind_of(archive)
            with Destination(files, target) as destination:
                unpacker = Unpacker(
                    files,
                    destination.staging,
                    label=label,
                    max_members=max_members,
                    max_bytes=max_bytes,
                )
                try:
                    (_unpack_zip if kind == "zip" else unpack_tar)(archive, unpacker)
                except AgentError:
                    raise
                except (*DAMAGED, NotImplementedError, RuntimeError) as error:
                    raise ValidationFailed(
                        f"/{relative} is damaged or not readable ({error}): nothing was unpacked."
                    ) from None
                finally:
                    unpacker.close()
                try:
                    clash = destination.clash(overwrite=overwrite)
                    if clash is not None:
                        shown = "/" + f"{target}/{clash}".lstrip("/")
                        hint = "" if overwrite else " (with overwrite, files are replaced)"
                        raise FileConflict(f"{shown} already exists{hint}: nothing was unpacked.")
                    destination.move_in()
                except OSError as error:
                    raise path_error(error, target) from None
    return {"path": label, "files": unpacker.count, "size": unpacker.size}

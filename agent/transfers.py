"""File transfers between a customer and this agent, never through the control plane
(PROTOCOL.md "Files"): a download, and an upload that a broken connection does not lose.

The control plane signs a short-lived token for one file of one server (agent/ws.py
``verify_file_token``) and hands out a URL on this agent carrying it (``?token=``): these routes
authenticate with it rather than the node token. The file is reached as the other file routes
reach it, beneath the server's folder and as its user (agent/files.py), and every disk access
runs in the files' thread pool, never on the event loop: a download reads 1 MiB at a time with
``pread``; an upload is written as it arrives into a hidden partial file beside the target
(``.<name>.<digest of the token's jti and path>.part``), which a later request with the same
token continues (``Content-Range``) and which replaces the target once whole.

Browsers call these from the dashboard's page, another origin: they answer CORS for
AGENT_ALLOWED_ORIGINS, and only these routes do.
"""

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import re
import stat
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from agent.errors import AgentError, ValidationFailed
from agent.file_routes import FILES_NODE, FILES_POOL
from agent.files import (
    DiskQuotaExceeded,
    FileConflict,
    ServerFiles,
    TooLarge,
    customer_path,
    path_error,
    version_of,
)
from agent.node import Node
from agent.ws import FileGrant, verify_file_token

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
PARTIAL_MAX_AGE_SECONDS = 24 * 3600
PARTIAL_NAME = re.compile(r"\..+\.[0-9a-f]{16}\.part", re.DOTALL)
DOWNLOAD_ROUTE = "files-download"
UPLOAD_ROUTE = "files-upload"
BACKUP_DOWNLOAD_ROUTE = "backups-download"  # mounted by agent/backup_routes.py
# Authenticated by the signed URL's token, not by the node token (agent/app.py).
ROUTES = frozenset({DOWNLOAD_ROUTE, UPLOAD_ROUTE, BACKUP_DOWNLOAD_ROUTE})
CORS_METHODS = "GET, HEAD, PUT"
CORS_REQUEST_HEADERS = "Content-Range, Content-Type, If-Range, Range"
CORS_EXPOSED_HEADERS = "Upload-Offset, ETag, Content-Range, Content-Length"
CORS_MAX_AGE_SECONDS = 600
RFC5987_SAFE = "!#$&+-.^_`|~"
CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)", re.ASCII)
BYTE_RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.ASCII | re.IGNORECASE)


class OriginNotAllowed(AgentError):
    code = "origin_not_allowed"
    status = 403


class RangeNotSatisfiable(Exception):
    """The one range asked for starts past the file's end (416)."""


class OffsetConflict(FileConflict):
    """The chunk does not start where the partial file ends; ``offset`` is where it does."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


# -- pure parts -----------------------------------------------------------------------------


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one range of a ``Range`` header as (first, last) byte, both included, within a file
    of ``size`` bytes; None for the whole file: no header, several ranges, or one that is not
    a valid range (RFC 9110 lets a server ignore those). ``RangeNotSatisfiable`` when it starts
    past the end, or is an empty suffix (``bytes=-0``, or any suffix of an empty file).

    Not aiohttp's ``Request.http_range``: it reads ``bytes=-0`` as the whole file."""
    if header is None:
        return None
    found = BYTE_RANGE.fullmatch(header.strip())
    if found is None or found.groups() == ("", ""):
        return None
    first, last = found.groups()
    if not first:
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise RangeNotSatisfiable
        return max(size - suffix, 0), size - 1
    start = int(first)
    end = int(last) if last else size - 1
    if last and end < start:
        return None
    if start >= size:
        raise RangeNotSatisfiable
    return start, min(end, size - 1)


def content_range(header: str | None, max_bytes: int) -> tuple[int, int, int] | None:
    """An upload chunk's ``Content-Range: bytes START-END/TOTAL`` as (start, end, total), END
    included; None without the header (the body is the whole file)."""
    if header is None:
        return None
    found = CONTENT_RANGE.fullmatch(header.strip())
    if found is None:
        raise ValidationFailed("Content-Range: bytes START-END/TOTAL, such as bytes 0-999/5000.")
    start, end, total = (int(number) for number in found.groups())
    if not start <= end < total:
        raise ValidationFailed("Content-Range: START ≤ END < TOTAL.")
    if total > max_bytes:
        raise TooLarge(f"A file uploaded is at most {max_bytes:,} bytes.")
    return start, end, total


def content_disposition(name: str) -> str:
    """``attachment`` with the file's name quoted as RFC 5987 says (any bytes, as UTF-8)."""
    encoded = name.encode("utf-8", "surrogateescape")
    return f"attachment; filename*=UTF-8''{quote(encoded, safe=RFC5987_SAFE)}"


def partial_name(name: str, relative: str, jti: str) -> str:
    """The hidden partial file of an upload: beside its target, named after it (cut short to
    leave room in a name's 255 bytes) and after the token that may continue it."""
    digest = hashlib.sha256(f"{jti}\0{relative}".encode("utf-8", "surrogateescape")).hexdigest()
    return f".{os.fsdecode(os.fsencode(name)[:200])}.{digest[:16]}.part"


# -- on the files' threads, as the server's user ------------------------------------------------


def _open_for_download(files: ServerFiles, relative: str) -> tuple[int, os.stat_result]:
    """A descriptor of the file to send, and its status; a folder or a link is refused."""
    kind = files.stat(relative)["type"]
    if kind != "file":
        raise ValidationFailed(f"/{relative} is a {kind}: only files can be downloaded.")
    # The last component not followed: a link put there since the check is refused too.
    with files.open(relative, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW) as fd:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValidationFailed(f"/{relative} is not a file: only files can be downloaded.")
        return os.dup(fd), info


class PartialUpload:
    """One request's hold on an upload's partial file. Its methods run in the files' threads
    as the server's user (``ServerFiles.run``); the partial file is locked while held, so two
    requests never append to it at once."""

    def __init__(self, files: ServerFiles, path: str, jti: str):
        self.files = files
        self.relative = customer_path(path)
        self._stack = contextlib.ExitStack()
        self.parent, self.name = self._stack.enter_context(files.parent(self.relative))
        self.partial = partial_name(self.name, self.relative, jti)
        self.fd: int | None = None
        self.offset = 0

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._stack.close()

    def received(self) -> int:
        """What the partial file holds (0 when there is none)."""
        try:
            info = os.stat(self.partial, dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return 0
        except OSError as error:
            raise path_error(error, self.relative) from None
        return info.st_size if stat.S_ISREG(info.st_mode) else 0

    def open(self, *, start: int | None) -> None:
        """Take the partial file to write from ``start`` (None: a new whole file), or raise
        ``OffsetConflict`` saying where it stands."""
        self._refuse_a_folder()
        self._sweep()
        flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            try:
                fd = os.open(
                    self.partial, flags | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=self.parent
                )
            except FileExistsError:
                fd = os.open(self.partial, flags, dir_fd=self.parent)
        except OSError as error:
            raise path_error(error, self.relative) from None
        self.fd = fd
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileConflict(f"/{self.relative} cannot be uploaded: its partial file is taken.")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OffsetConflict(
                f"/{self.relative} is being uploaded with this link by another request.",
                info.st_size,
            ) from None
        if start is None:
            os.ftruncate(fd, 0)  # a whole file again: what an earlier try left goes
        elif info.st_size != start:
            raise OffsetConflict(
                f"The upload of /{self.relative} stands at byte {info.st_size:,}, "
                f"not {start:,}: continue from there.",
                info.st_size,
            )
        self.offset = os.fstat(fd).st_size

    def write(self, data: bytes) -> None:
        """Append ``data``, counted against the server's disk quota first."""
        assert self.fd is not None
        self.files.quota.take(len(data))
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self.fd, view, self.offset)
                self.offset += written
                view = view[written:]
        except OSError as error:
            raise path_error(error, self.relative) from None

    def finish(self) -> tuple[dict[str, Any], bool]:
        """Put the whole file in place of the target (a file or a link there is replaced, a
        folder never): its entry, and whether it is new."""
        assert self.fd is not None
        current = self._refuse_a_folder()
        mode = stat.S_IMODE(current.st_mode) if current and stat.S_ISREG(current.st_mode) else 0o644
        try:
            os.fchmod(self.fd, mode)
            os.fsync(self.fd)
            os.rename(self.partial, self.name, src_dir_fd=self.parent, dst_dir_fd=self.parent)
        except OSError as error:
            raise path_error(error, self.relative) from None
        info = os.fstat(self.fd)
        entry = {"path": "/" + self.relative, "size": info.st_size, "version": version_of(info)}
        return entry, current is None

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.partial, dir_fd=self.parent)

    def _refuse_a_folder(self) -> os.stat_result | None:
        try:
            current = os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise path_error(error, self.relative) from None
        if stat.S_ISDIR(current.st_mode):
            raise FileConflict(f"/{self.relative} is a folder: a file cannot replace it.")
        return current

    def _sweep(self) -> None:
        """Remove the folder's partial files left untouched for a day (abandoned uploads)."""
        too_old = time.time() - PARTIAL_MAX_AGE_SECONDS
        try:
            folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self.parent)
        except OSError:
            return  # a folder the server's user may not list: nothing swept, nothing refused
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name == self.partial or not PARTIAL_NAME.fullmatch(entry.name):
                        continue
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        if stat.S_ISREG(info.st_mode) and info.st_mtime < too_old:
                            os.unlink(entry.name, dir_fd=folder)
        finally:
            os.close(folder)


# -- the routes ---------------------------------------------------------------------------------


def grant_of(request: web.Request, permission: str, claim: str = "path") -> FileGrant:
    """The signed URL's token for this server with ``permission`` (a backup's download: with
    its ``backup_id`` claim, ``claim``), or 401."""
    node = request.app[FILES_NODE]
    return verify_file_token(
        request.query.get("token"),
        public_key=node.console_key,
        node_id=node.config.node_id,
        server_id=request.match_info["id"],
        permission=permission,
        claim=claim,
    )


async def _in_pool[T](
    request: web.Request,
    files: ServerFiles,
    operation: Callable[..., T],
    *args: Any,
    **kwargs: Any,
) -> T:
    """``operation`` in the files' thread pool, as the server's user."""
    pool = request.app[FILES_POOL]
    return await asyncio.get_running_loop().run_in_executor(
        pool, lambda: files.run(operation, *args, **kwargs)
    )


def _refusal(
    status: int, code: str, message: str, headers: dict[str, str], **details: Any
) -> web.Response:
    """An error in the protocol's shape that carries more than its code and message (a header,
    the upload's offset), which agent/app.py's errors do not."""
    body = {"error": {"code": code, "message": message, **details}}
    return web.json_response(body, status=status, headers=headers)


async def download(request: web.Request) -> web.StreamResponse:
    grant = grant_of(request, "files.download")
    files = request.app[FILES_NODE].get(request.match_info["id"]).files()
    relative = customer_path(grant.path)
    fd, info = await _in_pool(request, files, _open_for_download, files, relative)
    try:
        return await send(request, fd, info, name=relative.rpartition("/")[2])
    finally:
        os.close(fd)


async def send(
    request: web.Request, fd: int, info: os.stat_result, *, name: str
) -> web.StreamResponse:
    size, version = info.st_size, version_of(info)
    # A client resuming with If-Range gets the whole file when it changed since its part.
    unchanged = request.headers.get("If-Range", f'"{version}"') == f'"{version}"'
    try:
        wanted = byte_range(request.headers.get("Range"), size) if unchanged else None
    except RangeNotSatisfiable:
        return _refusal(
            416,
            "range_not_satisfiable",
            f"The file has {size:,} bytes.",
            {"Content-Range": f"bytes */{size}", "Accept-Ranges": "bytes"},
        )
    start, end = wanted or (0, size - 1)
    response = web.StreamResponse(
        status=206 if wanted else 200,
        headers={
            "Accept-Ranges": "bytes",
            "Content-Disposition": content_disposition(name),
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )
    if wanted:
        response.headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    response.content_type = "application/octet-stream"
    response.content_length = end - start + 1
    response.etag = version
    response.last_modified = info.st_mtime
    await response.prepare(request)
    if request.method == "HEAD":
        return response
    pool = request.app[FILES_POOL]
    loop = asyncio.get_running_loop()
    offset = start
    try:
        while offset <= end:
            data = await loop.run_in_executor(
                pool, os.pread, fd, min(CHUNK_BYTES, end + 1 - offset), offset
            )
            if not data:
                # The file shrank while it was sent: the client sees a short body, and the
                # connection is not reused after it.
                response.force_close()
                break
            await response.write(data)
            offset += len(data)
        await response.write_eof()
    except ConnectionError:
        log.info("%s: download of a file cut short by the client", request.match_info["id"])
    return response


async def upload_offset(request: web.Request) -> web.Response:
    """``HEAD`` on an upload's URL: how many bytes of it the agent holds."""
    grant = grant_of(request, "files.upload")
    files = request.app[FILES_NODE].get(request.match_info["id"]).files()
    received = await _in_pool(request, files, _received, files, grant)
    return web.Response(headers={"Upload-Offset": str(received), "Cache-Control": "no-store"})


def _received(files: ServerFiles, grant: FileGrant) -> int:
    partial = PartialUpload(files, grant.path, grant.jti)
    try:
        return partial.received()
    finally:
        partial.close()


async def upload(request: web.Request) -> web.Response:
    grant = grant_of(request, "files.upload")
    node: Node = request.app[FILES_NODE]
    server_id = request.match_info["id"]
    files = node.get(server_id).files()
    max_bytes = node.config.files_max_upload_bytes
    chunk = content_range(request.headers.get("Content-Range"), max_bytes)
    declared = request.content_length
    if chunk is None:
        start, length, total = None, declared, declared
        if declared is not None and declared > max_bytes:
            raise TooLarge(f"A file uploaded is at most {max_bytes:,} bytes.")
    else:
        start, end, total = chunk
        length = end - start + 1
        if declared is not None and declared != length:
            raise ValidationFailed("Content-Length differs from the Content-Range's length.")
    partial = await _in_pool(request, files, PartialUpload, files, grant.path, grant.jti)
    try:
        try:
            await _in_pool(request, files, partial.open, start=start)
        except OffsetConflict as error:
            return _offset_refusal(409, error.code, error.message, error.offset)
        try:
            cut_short = await _receive(request, files, partial, length=length, max_bytes=max_bytes)
        except (TooLarge, DiskQuotaExceeded):
            await _in_pool(request, files, partial.discard)
            raise
        if cut_short:
            return _offset_refusal(
                400,
                "upload_incomplete",
                f"The body stopped at byte {partial.offset:,} of the file: continue from there.",
                partial.offset,
            )
        if total is not None and partial.offset < total:
            return web.json_response(
                {"path": "/" + partial.relative, "offset": partial.offset},
                status=202,
                headers={"Upload-Offset": str(partial.offset)},
            )
        try:
            entry, created = await _in_pool(request, files, partial.finish)
        except FileConflict:
            await _in_pool(request, files, partial.discard)
            raise
    finally:
        await _in_pool(request, files, partial.close)
    node.client.add_event(
        server_id, "files_uploaded", "", path=entry["path"], size=entry["size"], user=grant.user
    )
    log.info(
        "%s: %s uploaded by %s (%d bytes)", server_id, entry["path"], grant.user, entry["size"]
    )
    return web.json_response(
        entry,
        status=201 if created else 200,
        headers={"ETag": f'"{entry["version"]}"', "Upload-Offset": str(entry["size"])},
    )


def _offset_refusal(status: int, code: str, message: str, offset: int) -> web.Response:
    return _refusal(status, code, message, {"Upload-Offset": str(offset)}, offset=offset)


async def _receive(
    request: web.Request,
    files: ServerFiles,
    partial: PartialUpload,
    *,
    length: int | None,
    max_bytes: int,
) -> bool:
    """Write the body to the partial file as it arrives, 1 MiB at a time. True when it was
    cut short (the client went away, or sent less than its Content-Range): what arrived is
    kept for a retry."""
    first = partial.offset
    buffer = bytearray()
    cut_short = False
    try:
        while data := await request.content.readany():
            if partial.offset + len(buffer) + len(data) > max_bytes:
                raise TooLarge(f"A file uploaded is at most {max_bytes:,} bytes.")
            if length is not None and partial.offset - first + len(buffer) + len(data) > length:
                raise ValidationFailed("The body is longer than its Content-Range says.")
            buffer += data
            if len(buffer) >= CHUNK_BYTES:
                await _in_pool(request, files, partial.write, bytes(buffer))
                buffer.clear()
    except (ConnectionError, HttpProcessingError):
        cut_short = True
    if buffer:
        await _in_pool(request, files, partial.write, bytes(buffer))
    return cut_short or (length is not None and partial.offset - first < length)


async def preflight(request: web.Request) -> web.Response:
    """A browser's CORS preflight, answered for the allowed origins only."""
    allowed = request.app[FILES_NODE].config.allowed_origins
    if request.headers.get("Origin") not in allowed:
        raise OriginNotAllowed("This origin may not call the agent.")
    if request.headers.get("Access-Control-Request-Method") not in CORS_METHODS.split(", "):
        raise OriginNotAllowed("Only GET, HEAD and PUT are allowed across origins.")
    return web.Response(
        status=204,
        headers={
            "Access-Control-Allow-Methods": CORS_METHODS,
            "Access-Control-Allow-Headers": CORS_REQUEST_HEADERS,
            "Access-Control-Max-Age": str(CORS_MAX_AGE_SECONDS),
        },
    )


async def _cors(request: web.Request, response: web.StreamResponse) -> None:
    """Every answer of the transfer routes (their errors too) readable by an allowed page."""
    if request.match_info.route.name not in ROUTES:
        return
    response.headers.add("Vary", "Origin")
    origin = request.headers.get("Origin")
    if origin is not None and origin in request.app[FILES_NODE].config.allowed_origins:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Expose-Headers"] = CORS_EXPOSED_HEADERS


def add_routes(app: web.Application, node: Node, server: str) -> None:
    """Mount the transfer routes under ``server`` (the server's path). They use the file
    routes' pool and node: mount those first (agent/file_routes.py)."""
    assert app[FILES_NODE] is node
    files = f"{server}/files"
    app.router.add_get(f"{files}/download", download, name=DOWNLOAD_ROUTE)
    app.router.add_route("OPTIONS", f"{files}/download", preflight, name=DOWNLOAD_ROUTE)
    app.router.add_put(f"{files}/upload", upload, name=UPLOAD_ROUTE)
    app.router.add_route("HEAD", f"{files}/upload", upload_offset, name=UPLOAD_ROUTE)
    app.router.add_route("OPTIONS", f"{files}/upload", preflight, name=UPLOAD_ROUTE)
    app.on_response_prepare.append(_cors)

"""Backups of a server's folder (PROTOCOL.md "Backups"): a tar.gz made, restored and deleted
in the storage the control plane names in each call, on this node or in an S3 bucket.

Making one, two threads work at once so reading and compressing overlap: one, as the server's
user (``ServerFiles.run``), walks the folder through descriptors as agent/archives.py does
(links stored as links, never followed; pipes, sockets and devices left out; what the ignore
patterns name left out) and writes the tar stream into a bounded queue; the other, as the
agent, gzips it, hashes it (sha256) and writes it to a hidden file in the node's backup folder
(renamed in whole) or sends it to S3 in the parts of a multipart upload (aborted on failure).

Restoring one, a thread as the agent reads the archive from its storage, hashes every byte and
gunzips it into a bounded queue; another, as the server's user, unpacks it with the checks of
agent/archives.py into a hidden folder inside the server's folder. Only when the whole archive
was read and its checksum is the one the control plane kept are the members moved in (the
folder emptied first with ``truncate``); otherwise the hidden folder goes and nothing changed.

Nothing runs on the event loop but the bookkeeping; memory stays flat whatever the sizes (a few
queued MiB, and at most three S3 parts). One backup or restore per server at a time; the ones
running are recorded in the state file, so an agent that restarts reports them failed.
"""

import asyncio
import contextlib
import hashlib
import logging
import os
import queue
import re
import secrets
import shutil
import stat
import tarfile
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pathspec
from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError

from agent import archives
from agent.config import Config
from agent.errors import AgentError, InvalidState, NotFound, ValidationFailed
from agent.files import RENAME_NOREPLACE, DiskQuota, ServerFiles, _renameat2, path_error
from agent.runtime import ServerRuntime
from agent.sources import RESERVED_NAMES

log = logging.getLogger(__name__)

BACKUP_ID = re.compile(r"bkp_[A-Za-z0-9]{1,64}", re.ASCII)
CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", re.ASCII)
IGNORE_FILES = (".pteroignore", ".backupignore")
MAX_IGNORE_LINES = 200
MAX_IGNORE_LINE_CHARS = 1024
MAX_IGNORE_FILE_BYTES = 64 * 1024
MAX_COMMANDS = 20
MAX_COMMAND_BYTES = 4096
MAX_S3_TEXT = 1024
QUIET_SECONDS = 1.0
MAX_QUIET_WAIT_SECONDS = 15.0
CHUNK_BYTES = 1 << 20
QUEUE_CHUNKS = 8
S3_PARTS_IN_FLIGHT = 2
WAIT_SECONDS = 0.2  # how often a thread blocked on a queue looks whether to give up
POOL_THREADS = 16
RESTORING = "restoring a backup"
TEMPORARY = re.compile(r"\.bkp_[A-Za-z0-9]+\.[0-9a-f]{16}\.tmp", re.ASCII)
STAGING = re.compile(r"\.unpack\.[0-9a-f]{16}\.tmp", re.ASCII)
RESTARTED = "the agent restarted"


class BackupConflict(AgentError):
    code = "conflict"
    status = 409


class StorageUnavailable(AgentError):
    code = "storage_unavailable"
    status = 502


class BackupFailed(Exception):
    """A backup or restore that cannot go on; the message is the event's ``reason``."""


class Cancelled(BackupFailed):
    """The other thread of the operation failed, or the server was deleted."""


# -- what a call names: the storage, the ignore patterns, the commands ---------------------------


@dataclass(frozen=True)
class NodeStorage:
    kind = "node"


@dataclass(frozen=True)
class S3Storage:
    endpoint: str
    region: str
    bucket: str
    prefix: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    kind = "s3"

    def key(self, server_id: str, backup_id: str) -> str:
        return f"{self.prefix}{server_id}/{backup_id}.tar.gz"

    def client(self) -> Any:
        """A client of its own (boto3's default session is not safe across threads)."""
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            config=BotoConfig(
                s3={"addressing_style": "path"},
                retries={"max_attempts": 3, "mode": "standard"},
                connect_timeout=10,
                read_timeout=60,
            ),
        )


Storage = NodeStorage | S3Storage


def _s3_text(value: dict, name: str, *, empty: bool = False) -> str:
    text = value.get(name, "" if empty else None)
    if (
        not isinstance(text, str)
        or (not empty and not text.strip())
        or len(text) > MAX_S3_TEXT
        or not text.isprintable()
    ):
        raise ValidationFailed(f"storage.{name}: text is required (at most {MAX_S3_TEXT}).")
    return text


def parse_storage(value: Any) -> Storage:
    if not isinstance(value, dict):
        raise ValidationFailed('storage: an object, {"kind": "node"} or {"kind": "s3", …}.')
    kind = value.get("kind")
    if kind == "node":
        return NodeStorage()
    if kind != "s3":
        raise ValidationFailed("storage.kind: node or s3.")
    endpoint = _s3_text(value, "endpoint")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationFailed("storage.endpoint: an http or https URL.")
    bucket = _s3_text(value, "bucket")
    if not BUCKET.fullmatch(bucket):
        raise ValidationFailed("storage.bucket: an S3 bucket name (a-z, 0-9, dots, dashes).")
    return S3Storage(
        endpoint=endpoint,
        region=_s3_text(value, "region"),
        bucket=bucket,
        prefix=_s3_text(value, "prefix", empty=True),
        access_key_id=_s3_text(value, "access_key_id"),
        secret_access_key=_s3_text(value, "secret_access_key"),
    )


def parse_backup_id(value: Any) -> str:
    if not isinstance(value, str) or not BACKUP_ID.fullmatch(value):
        raise ValidationFailed("backup_id: bkp_ followed by letters and digits.")
    return value


def _ignore(value: Any) -> list[str]:
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > MAX_IGNORE_LINES
        or not all(isinstance(line, str) and len(line) <= MAX_IGNORE_LINE_CHARS for line in value)
        or any("\n" in line or "\0" in line for line in value)
    ):
        raise ValidationFailed(
            f"ignore: a list of at most {MAX_IGNORE_LINES} patterns, each one line of at most "
            f"{MAX_IGNORE_LINE_CHARS} characters."
        )
    return value


def _command_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > MAX_COMMANDS
        or not all(
            isinstance(command, str)
            and command.strip()
            and "\n" not in command
            and "\0" not in command
            and len(command.encode()) <= MAX_COMMAND_BYTES
            for command in value
        )
    ):
        raise ValidationFailed(
            f"commands.{name}: a list of at most {MAX_COMMANDS} commands, each one line of at "
            f"most {MAX_COMMAND_BYTES} bytes."
        )
    return value


def _commands(value: Any) -> tuple[list[str], list[str]]:
    if value is None:
        return [], []
    if not isinstance(value, dict):
        raise ValidationFailed('commands: {"before": [...], "after": [...]}.')
    return _command_list(value.get("before"), "before"), _command_list(value.get("after"), "after")


def _truncate(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationFailed("truncate: true or false.")
    return value


def _checksum(value: Any) -> str:
    if not isinstance(value, str) or not CHECKSUM.fullmatch(value):
        raise ValidationFailed("checksum: sha256: followed by 64 lowercase hex digits.")
    return value


def _storage_error(error: Exception) -> BackupFailed:
    """A sentence for an S3 failure (never the credentials)."""
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "?")
        if code in ("NoSuchKey", "404"):
            return BackupFailed("The backup is not in its storage (S3 answered NoSuchKey).")
        return BackupFailed(f"The S3 storage refused the backup ({code}).")
    return BackupFailed(f"The S3 storage could not be reached ({type(error).__name__}).")


# -- one operation, and the queues between its two threads ---------------------------------------


@dataclass
class Operation:
    server_id: str
    backup_id: str
    kind: str  # "backup" or "restore"
    archive_bytes: int = 0  # of the archive, written or read so far
    members: int = 0  # so far
    cancel: threading.Event = field(default_factory=threading.Event)
    why_cancelled: str = ""

    def describe(self) -> dict[str, Any]:
        return {
            "backup_id": self.backup_id,
            "operation": self.kind,
            "status": "running",
            "bytes": self.archive_bytes,
            "files": self.members,
        }

    def put(self, chunks: queue.Queue, item: bytes | None) -> None:
        """Hand ``item`` to the other thread; ``Cancelled`` once it gave up."""
        while True:
            if self.cancel.is_set():
                raise Cancelled(self.why_cancelled or "cancelled")
            try:
                chunks.put(item, timeout=WAIT_SECONDS)
                return
            except queue.Full:
                continue

    def get(self, chunks: queue.Queue) -> bytes | None:
        while True:
            if self.cancel.is_set():
                raise Cancelled(self.why_cancelled or "cancelled")
            try:
                return chunks.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                continue


class _QueueSink:
    """The file tarfile writes a backup's tar stream to: 1 MiB at a time into the queue."""

    def __init__(self, operation: Operation, chunks: queue.Queue):
        self.operation = operation
        self.chunks = chunks
        self.buffer = bytearray()
        self.position = 0

    def write(self, data: bytes) -> int:
        self.buffer += data
        self.position += len(data)
        if len(self.buffer) >= CHUNK_BYTES:
            self.operation.put(self.chunks, bytes(self.buffer))
            self.buffer.clear()
        return len(data)

    def tell(self) -> int:
        return self.position

    def end(self) -> None:
        if self.buffer:
            self.operation.put(self.chunks, bytes(self.buffer))
            self.buffer.clear()
        self.operation.put(self.chunks, None)


class _QueueSource:
    """The file tarfile reads a restore's tar stream from (in small reads: each is a slice
    of the chunk at hand, never a copy of what is left of it)."""

    def __init__(self, operation: Operation, chunks: queue.Queue):
        self.operation = operation
        self.chunks = chunks
        self.current = b""
        self.offset = 0
        self.ended = False

    def read(self, size: int = -1) -> bytes:
        parts = []
        wanted = size
        while size < 0 or wanted > 0:
            left = len(self.current) - self.offset
            if not left:
                if self.ended:
                    break
                chunk = self.operation.get(self.chunks)
                if chunk is None:
                    self.ended = True
                else:
                    self.current, self.offset = chunk, 0
                continue
            take = left if size < 0 else min(wanted, left)
            parts.append(self.current[self.offset : self.offset + take])
            self.offset += take
            wanted -= take
        return b"".join(parts)

    def drain(self) -> None:
        """Take what is left (the reader hashes every byte of the archive)."""
        self.current, self.offset = b"", 0
        while not self.ended:
            if self.operation.get(self.chunks) is None:
                self.ended = True


# -- where archives go ----------------------------------------------------------------------------


class _NodeWriter:
    """A backup on the node: a hidden file in its server's backup folder, renamed in whole."""

    def __init__(self, folder: Path, backup_id: str):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
        self.dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        self.name = f"{backup_id}.tar.gz"
        self.temporary = f".{backup_id}.{secrets.token_hex(8)}.tmp"
        self.size = 0
        try:
            self.fd = os.open(
                self.temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=self.dir_fd,
            )
        except OSError:
            os.close(self.dir_fd)
            raise

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(data)

    def finish(self) -> int:
        os.fsync(self.fd)
        try:
            _renameat2(self.dir_fd, self.temporary, self.dir_fd, self.name, RENAME_NOREPLACE)
        except FileExistsError:
            raise BackupFailed("A backup of that id is already stored on this node.") from None
        os.fsync(self.dir_fd)
        self._close()
        return self.size

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.temporary, dir_fd=self.dir_fd)
        self._close()

    def _close(self) -> None:
        for fd in (self.fd, self.dir_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class _S3Writer:
    """A backup in S3: a multipart upload, parts sent by two threads of its own while the next
    is filled (at most three parts in memory), completed at the end or aborted."""

    def __init__(self, storage: S3Storage, key: str, part_bytes: int):
        self.storage = storage
        self.key = key
        self.part_bytes = part_bytes
        self.size = 0
        self.client = storage.client()
        created = self.client.create_multipart_upload(
            Bucket=storage.bucket, Key=key, ContentType="application/gzip"
        )
        self.upload_id = created["UploadId"]
        self.buffer = bytearray()
        self.parts: list[Future] = []
        self.pool = ThreadPoolExecutor(S3_PARTS_IN_FLIGHT, thread_name_prefix="backup-s3")

    def _upload(self, number: int, body: bytes) -> dict[str, Any]:
        answer = self.client.upload_part(
            Bucket=self.storage.bucket,
            Key=self.key,
            UploadId=self.upload_id,
            PartNumber=number,
            Body=body,
        )
        return {"ETag": answer["ETag"], "PartNumber": number}

    def _send(self, body: bytes) -> None:
        pending = [part for part in self.parts if not part.done()]
        if len(pending) >= S3_PARTS_IN_FLIGHT:
            pending[0].result()  # raises a part's failure
        for part in self.parts:
            if part.done():
                part.result()
        self.parts.append(self.pool.submit(self._upload, len(self.parts) + 1, body))

    def write(self, data: bytes) -> None:
        self.buffer += data
        self.size += len(data)
        while len(self.buffer) >= self.part_bytes:
            self._send(bytes(self.buffer[: self.part_bytes]))
            del self.buffer[: self.part_bytes]

    def finish(self) -> int:
        if self.buffer or not self.parts:
            self._send(bytes(self.buffer))
            self.buffer.clear()
        parts = [part.result() for part in self.parts]
        self.pool.shutdown()
        self.client.complete_multipart_upload(
            Bucket=self.storage.bucket,
            Key=self.key,
            UploadId=self.upload_id,
            MultipartUpload={"Parts": parts},
        )
        return self.size

    def abort(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        try:
            self.client.abort_multipart_upload(
                Bucket=self.storage.bucket, Key=self.key, UploadId=self.upload_id
            )
        except (BotoCoreError, ClientError) as error:
            log.warning("multipart upload of %s not aborted: %s", self.key, error)


def _read_node(path: Path) -> Iterator[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BackupFailed("The backup is not stored on this node.") from None
    with os.fdopen(fd, "rb", buffering=0) as archive:
        while data := archive.read(CHUNK_BYTES):
            yield data


def _read_s3(storage: S3Storage, key: str) -> Iterator[bytes]:
    answer = storage.client().get_object(Bucket=storage.bucket, Key=key)
    with contextlib.closing(answer["Body"]) as body:
        yield from body.iter_chunks(CHUNK_BYTES)


# -- making an archive ----------------------------------------------------------------------------


def _ignore_spec(files: ServerFiles, patterns: list[str]) -> pathspec.PathSpec:
    """The call's patterns and those of the folder's own ignore files (as the server's user)."""
    lines = list(patterns)
    for name in IGNORE_FILES:
        try:
            with files.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW) as fd:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                content = os.read(fd, MAX_IGNORE_FILE_BYTES)
        except AgentError:
            continue  # missing, a link or unreadable: no patterns from it
        lines += content.decode("utf-8", "replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _tar_folder(
    files: ServerFiles,
    spec: pathspec.PathSpec,
    operation: Operation,
    chunks: queue.Queue,
    max_members: int,
) -> None:
    """The folder's tar stream into ``chunks`` (a thread as the server's user)."""
    try:
        with files.open("", os.O_RDONLY | os.O_DIRECTORY) as root:
            top = sorted(name for name in os.listdir(root) if name not in RESERVED_NAMES)

        def skip(name: str, folder: bool) -> bool:
            return spec.match_file(name + "/" if folder else name)

        sink = _QueueSink(operation, chunks)
        bundle = tarfile.open(  # noqa: SIM115 - closed below, or left unfinished on failure
            fileobj=sink, mode="w", format=tarfile.PAX_FORMAT
        )
        bundle.copybufsize = CHUNK_BYTES
        with contextlib.closing(archives.entries(files, top, "", skip=skip)) as walk:
            for name, info, folder_fd, entry in walk:
                if not archives.archivable(info):
                    continue
                operation.members += 1
                if operation.members > max_members:
                    raise BackupFailed(
                        f"The folder holds more than {max_members:,} files and folders."
                    )
                archives.add_tar(bundle, name, info, folder_fd, entry)
                bundle.members.clear()  # written: not kept in memory
        bundle.close()
        sink.end()
    except BackupFailed:
        operation.cancel.set()
        raise
    except AgentError as error:
        operation.cancel.set()
        raise BackupFailed(error.message) from None
    except OSError as error:
        operation.cancel.set()
        if error.errno is None:
            raise BackupFailed("A file shrank while it was archived: try again.") from None
        raise BackupFailed(path_error(error, "").message) from None
    except BaseException:
        operation.cancel.set()
        raise


def _compress(operation: Operation, chunks: queue.Queue, writer: Any, level: int) -> dict:
    """Gzip, hash and store the tar stream (a thread as the agent)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    digest = hashlib.sha256()

    def out(data: bytes) -> None:
        if data:
            digest.update(data)
            writer.write(data)
            operation.archive_bytes += len(data)

    try:
        while (chunk := operation.get(chunks)) is not None:
            out(compressor.compress(chunk))
        out(compressor.flush())
        size = writer.finish()
    except BaseException:
        operation.cancel.set()
        writer.abort()
        raise
    return {"size": size, "checksum": f"sha256:{digest.hexdigest()}"}


# -- restoring one --------------------------------------------------------------------------------


@dataclass
class _Read:
    """What the reading thread found: the checksum of every byte, or why it could not."""

    checksum: str = ""
    error: str = ""
    damaged: str = ""


def _feed(
    operation: Operation, source: Callable[[], Iterator[bytes]], chunks: queue.Queue
) -> _Read:
    """Read the archive from its storage, hash all of it and gunzip it into ``chunks`` (a
    thread as the agent). Decompressed output is at most 1 MiB a step (no bomb in memory)."""
    found = _Read()
    digest = hashlib.sha256()
    decompressor = zlib.decompressobj(31)
    unpacking = True
    try:
        for data in source():
            digest.update(data)
            operation.archive_bytes += len(data)
            if not unpacking:
                continue
            try:
                if decompressor.eof:
                    raise zlib.error("data after the archive's end")
                pending = data
                while pending:
                    operation.put(chunks, decompressor.decompress(pending, CHUNK_BYTES))
                    pending = decompressor.unconsumed_tail
            except zlib.error as error:
                found.damaged = f"The archive is damaged ({error})."
                unpacking = False
        if unpacking and not decompressor.eof:
            found.damaged = "The archive is damaged (cut short)."
        found.checksum = f"sha256:{digest.hexdigest()}"
    except BackupFailed as error:
        if isinstance(error, Cancelled):
            raise
        found.error = str(error)
    except (BotoCoreError, ClientError) as error:
        found.error = str(_storage_error(error))
    except OSError as error:
        found.error = f"The backup could not be read ({error.strerror})."
    operation.put(chunks, None)
    return found


def _apply_folder_modes(files: ServerFiles, folders: list[tuple[str, int]]) -> None:
    for name, mode in sorted(folders, key=lambda item: -item[0].count("/")):
        if mode == 0o755:
            continue
        with (
            contextlib.suppress(AgentError, OSError),
            files.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW) as fd,
        ):
            os.chmod(f"/proc/self/fd/{fd}", mode)


def _unpack(
    files: ServerFiles,
    operation: Operation,
    chunks: queue.Queue,
    read: Future,
    *,
    checksum: str,
    truncate: bool,
    max_members: int,
    max_bytes: int,
) -> dict[str, Any]:
    """Unpack into a hidden folder, then (the checksum right) move the members in (a thread
    as the server's user)."""
    source = _QueueSource(operation, chunks)
    try:
        with archives.Destination(files, "") as destination:
            unpacker = archives.Unpacker(
                files,
                destination.staging,
                label="/",
                max_members=max_members,
                max_bytes=max_bytes,
                skip_links_out=True,
            )
            refused = ""
            try:
                with tarfile.open(fileobj=source, mode="r|") as bundle:  # type: ignore[call-overload]
                    while (member := bundle.next()) is not None:
                        content = bundle.extractfile(member) if member.isreg() else None
                        unpacker.add(member, content)
                        operation.members = unpacker.count
                        bundle.members.clear()
            except Cancelled:
                raise
            except AgentError as error:
                refused = error.message
            except (*archives.DAMAGED, NotImplementedError, RuntimeError) as error:
                refused = f"The archive is damaged ({error})."
            finally:
                unpacker.close()
            source.drain()
            found: _Read = read.result()
            if found.error:
                raise BackupFailed(found.error)
            if found.checksum != checksum:
                raise BackupFailed(
                    f"The archive's checksum is {found.checksum}, not {checksum}: it changed "
                    "since it was made. Nothing was restored."
                )
            if found.damaged or refused:
                raise BackupFailed(f"{found.damaged or refused} Nothing was restored.")
            for name in RESERVED_NAMES:  # the console's files stay the agent's
                _remove_entry(destination.staging, name)
            if truncate:
                destination.clear(keep=frozenset(RESERVED_NAMES))
            destination.move_in(replace_folders=True)
        _apply_folder_modes(files, unpacker.folders)
    except BaseException:
        operation.cancel.set()
        raise
    return {"files": unpacker.count, "links_skipped": unpacker.links_skipped}


# -- the node's backups ---------------------------------------------------------------------------


class Backups:
    """The backups and restores running on this node, one per server at most."""

    def __init__(
        self,
        config: Config,
        *,
        report: Callable[..., None],
        changed: Callable[[], None],
    ):
        self.config = config
        self.root = config.data_root / "backups"
        self.root.mkdir(mode=0o700, exist_ok=True)
        self.root.chmod(0o700)
        self.report = report
        self.changed = changed
        self.running: dict[str, Operation] = {}
        self.pool = ThreadPoolExecutor(POOL_THREADS, thread_name_prefix="backups")
        self._tasks: set[asyncio.Task] = set()

    # -- the state file and restarts ----------------------------------------------------------

    def to_state(self) -> dict[str, dict[str, str]]:
        return {
            server_id: {"backup_id": operation.backup_id, "operation": operation.kind}
            for server_id, operation in self.running.items()
        }

    def interrupted(self, recorded: Any, folders: Path) -> None:
        """Report what a previous agent left running as failed, and remove what it left: a
        hidden archive in the node's storage, a restore's hidden folder."""
        for server_id, record in (recorded if isinstance(recorded, dict) else {}).items():
            if not isinstance(record, dict) or not isinstance(record.get("backup_id"), str):
                continue
            backup = record.get("operation") == "backup"
            kind = "backup_failed" if backup else "backup_restore_failed"
            self.report(server_id, kind, RESTARTED, backup_id=record["backup_id"])
            if record.get("operation") == "restore":
                _remove_matching(folders / server_id, STAGING)
        for folder in self.root.iterdir():
            _remove_matching(folder, TEMPORARY)

    async def close(self) -> None:
        """The agent is stopping: what runs is given up (and stays recorded as running, to be
        reported failed by the next agent)."""
        for operation in self.running.values():
            operation.why_cancelled = RESTARTED
            operation.cancel.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.to_thread(self.pool.shutdown, wait=True, cancel_futures=True)

    # -- the calls ------------------------------------------------------------------------------

    def status(self, server_id: str, backup_id: str) -> dict[str, Any]:
        operation = self.running.get(server_id)
        if operation is None or operation.backup_id != backup_id:
            raise NotFound("No backup or restore of that id is running for this server.")
        return operation.describe()

    def _claim(self, runtime: ServerRuntime, backup_id: str, kind: str) -> Operation:
        if runtime.status == "installing":
            raise InvalidState("The server is installing.")
        current = self.running.get(runtime.id)
        if current is not None:
            raise BackupConflict(
                f"A {current.kind} of this server ({current.backup_id}) is running: "
                "wait for it to end."
            )
        operation = Operation(runtime.id, backup_id, kind)
        self.running[runtime.id] = operation
        self.changed()
        return operation

    def _release(self, operation: Operation) -> None:
        if self.running.get(operation.server_id) is operation:
            del self.running[operation.server_id]
            self.changed()

    def _background(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def node_path(self, server_id: str, backup_id: str) -> Path:
        return self.root / server_id / f"{backup_id}.tar.gz"

    def start_backup(self, runtime: ServerRuntime, body: dict) -> dict[str, Any]:
        backup_id = parse_backup_id(body.get("backup_id"))
        storage = parse_storage(body.get("storage"))
        ignore = _ignore(body.get("ignore"))
        before, after = _commands(body.get("commands"))
        if isinstance(storage, NodeStorage) and self.node_path(runtime.id, backup_id).exists():
            raise BackupConflict("A backup of that id is already stored on this node.")
        operation = self._claim(runtime, backup_id, "backup")
        self._background(self._backup(runtime, operation, storage, ignore, before, after))
        return {"backup_id": backup_id, "status": "running"}

    def start_restore(self, runtime: ServerRuntime, backup_id: str, body: dict) -> dict[str, Any]:
        parse_backup_id(backup_id)
        storage = parse_storage(body.get("storage"))
        checksum = _checksum(body.get("checksum"))
        truncate = _truncate(body.get("truncate", False))
        if isinstance(storage, NodeStorage) and not self.node_path(runtime.id, backup_id).exists():
            raise NotFound("No such backup is stored on this node.")
        operation = self._claim(runtime, backup_id, "restore")
        runtime.busy = RESTORING
        self._background(self._restore(runtime, operation, storage, checksum, truncate))
        return {"backup_id": backup_id, "status": "running"}

    async def delete(self, server_id: str, backup_id: str, body: dict) -> None:
        parse_backup_id(backup_id)
        storage = parse_storage(body.get("storage"))
        current = self.running.get(server_id)
        if current is not None and current.backup_id == backup_id:
            doing = "made" if current.kind == "backup" else "restored"
            raise BackupConflict(f"The backup is being {doing}: wait for it to end.")
        await asyncio.get_running_loop().run_in_executor(
            self.pool, self._delete, server_id, backup_id, storage
        )

    def _delete(self, server_id: str, backup_id: str, storage: Storage) -> None:
        if isinstance(storage, NodeStorage):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.node_path(server_id, backup_id))
            return
        try:
            storage.client().delete_object(
                Bucket=storage.bucket, Key=storage.key(server_id, backup_id)
            )
        except (BotoCoreError, ClientError) as error:
            raise StorageUnavailable(str(_storage_error(error))) from None

    def open_stored(self, server_id: str, backup_id: str) -> tuple[int, os.stat_result]:
        """A descriptor of a node-stored backup and its status (for a download)."""
        try:
            fd = os.open(
                self.node_path(server_id, parse_backup_id(backup_id)),
                os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
            )
        except (FileNotFoundError, ValidationFailed):
            raise NotFound("No such backup is stored on this node.") from None
        return fd, os.fstat(fd)

    async def forget(self, server_id: str) -> None:
        """The server is deleted: what runs for it is given up, its node-stored backups go."""
        operation = self.running.get(server_id)
        if operation is not None:
            operation.why_cancelled = "the server was deleted"
            operation.cancel.set()
        await asyncio.to_thread(shutil.rmtree, self.root / server_id, ignore_errors=True)

    # -- the work -------------------------------------------------------------------------------

    async def _in_threads(self, operation: Operation, *work: Callable[[], Any]) -> list[Any]:
        """Run the operation's threads; their results, or the first failure that is not the
        other thread giving up because of it."""
        loop = asyncio.get_running_loop()
        futures = [loop.run_in_executor(self.pool, item) for item in work]
        try:
            results = await asyncio.gather(*futures, return_exceptions=True)
        except asyncio.CancelledError:
            operation.why_cancelled = RESTARTED
            operation.cancel.set()
            raise
        errors = [result for result in results if isinstance(result, BaseException)]
        for error in sorted(errors, key=lambda error: isinstance(error, Cancelled)):
            raise error
        return results

    async def _console(self, runtime: ServerRuntime, commands: list[str], *, quiet: bool) -> None:
        """Send ``commands`` to a running server; with ``quiet``, then wait until its console
        said nothing for a second (at most 15)."""
        if not commands or runtime.status != "running":
            return
        loop = asyncio.get_running_loop()
        heard = [loop.time()]

        def listener(lines: list[str]) -> None:
            heard[0] = loop.time()

        runtime.console.add_listener(listener)
        try:
            for command in commands:
                try:
                    runtime.send_command(command)
                except AgentError as error:
                    log.info("%s: backup command %r not sent: %s", runtime.id, command, error)
            deadline = loop.time() + MAX_QUIET_WAIT_SECONDS
            while quiet and (now := loop.time()) < deadline and now - heard[0] < QUIET_SECONDS:
                await asyncio.sleep(min(QUIET_SECONDS - (now - heard[0]), deadline - now) + 0.01)
        finally:
            runtime.console.remove_listener(listener)

    async def _backup(
        self,
        runtime: ServerRuntime,
        operation: Operation,
        storage: Storage,
        ignore: list[str],
        before: list[str],
        after: list[str],
    ) -> None:
        loop = asyncio.get_running_loop()
        config = self.config
        details: dict[str, Any] = {}
        try:
            await self._console(runtime, before, quiet=True)
            files = runtime.files()
            spec = await loop.run_in_executor(
                self.pool, lambda: files.run(_ignore_spec, files, ignore)
            )
            writer = await loop.run_in_executor(self.pool, self._writer, storage, operation)
            chunks: queue.Queue = queue.Queue(QUEUE_CHUNKS)
            _, made = await self._in_threads(
                operation,
                lambda: files.run(_tar_folder, files, spec, operation, chunks, config.max_files),
                lambda: _compress(operation, chunks, writer, config.backup_gzip_level),
            )
            details = {**made, "files": operation.members}
        except BackupFailed as error:
            details = {"reason": operation.why_cancelled or str(error)}
        except (BotoCoreError, ClientError) as error:
            details = {"reason": str(_storage_error(error))}
        except OSError as error:
            details = {"reason": f"The backup could not be stored ({error.strerror})."}
        except asyncio.CancelledError:
            raise  # the agent stops: reported as failed when it starts again
        except Exception:
            log.exception("%s: backup %s failed", runtime.id, operation.backup_id)
            details = {"reason": "The agent failed; see its log."}
        finally:
            await self._console(runtime, after, quiet=False)
        self._release(operation)
        if "reason" in details:
            log.info("%s: backup %s failed: %s", runtime.id, operation.backup_id, details["reason"])
            self.report(
                runtime.id, "backup_failed", details["reason"], backup_id=operation.backup_id
            )
        else:
            log.info("%s: backup %s made", runtime.id, operation.backup_id)
            self.report(
                runtime.id, "backup_completed", "", backup_id=operation.backup_id, **details
            )

    def _writer(self, storage: Storage, operation: Operation) -> Any:
        if operation.cancel.is_set():  # the server was deleted meanwhile: its folder is gone
            raise Cancelled(operation.why_cancelled)
        if isinstance(storage, NodeStorage):
            return _NodeWriter(self.root / operation.server_id, operation.backup_id)
        key = storage.key(operation.server_id, operation.backup_id)
        return _S3Writer(storage, key, self.config.backup_part_mb * 2**20)

    async def _restore(
        self,
        runtime: ServerRuntime,
        operation: Operation,
        storage: Storage,
        checksum: str,
        truncate: bool,
    ) -> None:
        config = self.config
        was_running = runtime.status in ("starting", "running")
        reason = ""
        result: dict[str, Any] = {}
        try:
            if runtime.process is not None:  # running, starting or already stopping
                await runtime.stop()
            own = runtime.files()
            limit = runtime.disk_quota.limit_bytes
            # What is unpacked is counted against the disk limit on its own: it replaces
            # what the folder holds (AGENT_ARCHIVE_MAX_BYTES when there is no limit).
            files = ServerFiles(own.directory, own.uid, own.gid, quota=DiskQuota(limit))
            if isinstance(storage, NodeStorage):
                path = self.node_path(runtime.id, operation.backup_id)

                def source() -> Iterator[bytes]:
                    return _read_node(path)
            else:
                key = storage.key(runtime.id, operation.backup_id)

                def source() -> Iterator[bytes]:
                    return _read_s3(storage, key)

            chunks: queue.Queue = queue.Queue(QUEUE_CHUNKS)
            read: Future = Future()

            def feed() -> _Read:
                try:
                    found = _feed(operation, source, chunks)
                except BaseException as error:
                    read.set_exception(error)
                    raise
                read.set_result(found)
                return found

            _, result = await self._in_threads(
                operation,
                feed,
                lambda: files.run(
                    _unpack,
                    files,
                    operation,
                    chunks,
                    read,
                    checksum=checksum,
                    truncate=truncate,
                    max_members=config.max_files,
                    max_bytes=limit or config.archive_max_bytes,
                ),
            )
        except BackupFailed as error:
            reason = operation.why_cancelled or str(error)
        except AgentError as error:
            reason = error.message
        except OSError as error:
            reason = f"The backup could not be restored ({error.strerror})."
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: restore of %s failed", runtime.id, operation.backup_id)
            reason = "The agent failed; see its log."
        runtime.busy = None
        self._release(operation)
        if reason:
            log.info("%s: restore of %s failed: %s", runtime.id, operation.backup_id, reason)
            self.report(runtime.id, "backup_restore_failed", reason, backup_id=operation.backup_id)
        else:
            log.info("%s: %s restored", runtime.id, operation.backup_id)
            self.report(runtime.id, "backup_restored", "", backup_id=operation.backup_id, **result)
        if was_running and operation.why_cancelled != "the server was deleted":
            try:
                await runtime.start(background=True)
            except AgentError as error:
                log.info("%s: not started again after a restore: %s", runtime.id, error.message)


def _remove_matching(folder: Path, pattern: re.Pattern) -> None:
    """Remove the entries of ``folder`` whose name is ``pattern`` (as the agent, links never
    followed: rmtree works through descriptors)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for name in os.listdir(fd):
            if not pattern.fullmatch(name):
                continue
            with contextlib.suppress(OSError):
                _remove_entry(fd, name)
    finally:
        os.close(fd)


def _remove_entry(folder: int, name: str) -> None:
    """Remove ``name`` (a folder with all it holds) from ``folder``, if it is there."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=folder)
    else:
        os.unlink(name, dir_fd=folder)

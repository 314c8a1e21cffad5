"""A server's console: its output file, the ring of its last lines, and its standard input.

The process writes to ``<server dir>/.console.log`` (append mode) and reads a FIFO
``<server dir>/.stdin``, never pipes to the agent: so it survives an agent restart, is never
blocked by a slow reader, and a new agent can pick up both where the old one left. New output is
noticed through one inotify descriptor for every server, watched by the event loop.

The server's directory belongs to the customer's user, so both files are opened relative to a
directory descriptor, without following links, and checked to be ours; anything else there under
those names is removed first (a link planted there would otherwise have root write to its target).
"""

import asyncio
import contextlib
import ctypes
import errno
import logging
import os
import stat
from collections import deque
from collections.abc import Callable

from inotify_simple import INotify, flags

log = logging.getLogger(__name__)

LOG_NAME = ".console.log"
STDIN_NAME = ".stdin"
MAX_LOG_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024
READ_CHUNK = 1024 * 1024
SEED_BYTES = 256 * 1024

LineListener = Callable[[list[str]], None]


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def punch_hole(fd: int, length: int) -> bool:
    """Free the blocks of the file's first ``length`` bytes (they then read as zeros)."""
    if length <= 0:
        return True
    mode = _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE
    return _libc.fallocate(fd, mode, 0, length) == 0


def _is_ours(fd: int, kind: Callable[[int], bool]) -> bool:
    info = os.fstat(fd)
    return kind(info.st_mode) and info.st_uid == os.geteuid() and info.st_nlink == 1


def _remove(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        os.rename(
            name, f"{name}.removed-{os.urandom(4).hex()}", src_dir_fd=dir_fd, dst_dir_fd=dir_fd
        )


def open_private_file(dir_fd: int, name: str, flags_: int) -> int:
    """Open (creating) a regular file of ours in a directory someone else may write to."""
    base = flags_ | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(name, base | os.O_CREAT, 0o600, dir_fd=dir_fd)
        if _is_ours(fd, stat.S_ISREG):
            return fd
        os.close(fd)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EACCES):
            raise
    _remove(dir_fd, name)
    return os.open(name, base | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)


def open_private_fifo(dir_fd: int, name: str) -> int:
    """Open (creating) our FIFO read-write and non-blocking: a read-write end never blocks on
    open and keeps the pipe alive, so the process never reads end-of-file while we are away."""
    mode = os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, mode, dir_fd=dir_fd)
        if _is_ours(fd, stat.S_ISFIFO):
            return fd
        os.close(fd)
    except FileNotFoundError:
        pass
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EACCES):
            raise
    _remove(dir_fd, name)
    os.mkfifo(name, 0o600, dir_fd=dir_fd)
    return os.open(name, mode, dir_fd=dir_fd)


class Inotify:
    """The one inotify descriptor of the agent, read by the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._inotify = INotify(nonblocking=True)
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._loop = loop
        loop.add_reader(self._inotify.fileno(), self._on_readable)

    def watch(self, fd: int, callback: Callable[[], None]) -> int:
        # Watching /proc/self/fd/N watches the file we hold open, whatever its name becomes.
        wd = self._inotify.add_watch(f"/proc/self/fd/{fd}", flags.MODIFY)
        self._callbacks[wd] = callback
        return wd

    def unwatch(self, wd: int) -> None:
        self._callbacks.pop(wd, None)
        with contextlib.suppress(OSError):
            self._inotify.rm_watch(wd)

    def _on_readable(self) -> None:
        try:
            events = self._inotify.read(timeout=0)
        except BlockingIOError:
            return
        for wd in {event.wd for event in events}:
            callback = self._callbacks.get(wd)
            if callback is not None:
                callback()

    def close(self) -> None:
        self._loop.remove_reader(self._inotify.fileno())
        self._inotify.close()


class Console:
    """One server's console: follows its log file, keeps the last lines, feeds listeners."""

    def __init__(self, dir_fd: int, *, keep_lines: int, inotify: Inotify):
        self._fd = open_private_file(dir_fd, LOG_NAME, os.O_RDWR | os.O_APPEND)
        self._stdin = open_private_fifo(dir_fd, STDIN_NAME)
        self._inotify = inotify
        self._partial = b""
        self._listeners: set[LineListener] = set()
        self._closed = False
        self.lines: deque[str] = deque(maxlen=keep_lines)
        self._offset = self._seed()
        # Where the part of the file whose blocks were given back ends (_release_read_part).
        self._released = self._offset - self._offset % 4096
        self._wd = inotify.watch(self._fd, self.poll)

    def _seed(self) -> int:
        """Fill the ring with the file's last lines (after a restart); follow from its end."""
        size = os.fstat(self._fd).st_size
        start = max(0, size - SEED_BYTES)
        data = os.pread(self._fd, size - start, start)
        if start:
            data = data.partition(b"\n")[2]
        data = data.lstrip(b"\0")  # a hole punched over what an earlier agent had read
        self.lines.extend(self._decode(data.splitlines()))
        return size

    @staticmethod
    def _decode(raw_lines: list[bytes]) -> list[str]:
        return [line.decode("utf-8", "replace").rstrip("\r") for line in raw_lines]

    def add_listener(self, listener: LineListener) -> None:
        self._listeners.add(listener)

    def remove_listener(self, listener: LineListener) -> None:
        self._listeners.discard(listener)

    def tail(self, count: int) -> list[str]:
        if count <= 0:
            return []
        return list(self.lines)[-count:]

    def poll(self) -> None:
        """Read what was appended since the last call; publish complete lines."""
        if self._closed:
            return
        size = os.fstat(self._fd).st_size
        if size < self._offset:  # truncated by someone else: start over
            self._offset, self._partial = 0, b""
        data = os.pread(self._fd, min(READ_CHUNK, size - self._offset), self._offset)
        self._offset += len(data)
        raw = (self._partial + data).split(b"\n")
        self._partial = raw.pop()
        while len(self._partial) > MAX_LINE_BYTES:
            raw.append(self._partial[:MAX_LINE_BYTES])
            self._partial = self._partial[MAX_LINE_BYTES:]
        if raw:
            self._publish(self._decode(raw))
        if self._offset < size:
            # More than one chunk waiting: go on after other work, inotify will not say it again.
            asyncio.get_running_loop().call_soon(self.poll)
        elif self._offset - self._released > MAX_LOG_BYTES:
            self._release_read_part()

    def _release_read_part(self) -> None:
        """Give back the disk space of what was read, without losing what is being written.

        Truncating would lose whatever the process appends between our last read and the
        truncation. Punching a hole over the part already read frees its blocks while the
        file's size, and every offset, stay: writers go on appending at the end. Where the
        file system cannot punch holes, the file is truncated as before (that race included).
        """
        end = self._offset - self._offset % 4096
        if punch_hole(self._fd, end):
            self._released = end
            return
        os.ftruncate(self._fd, 0)
        self._offset = self._released = 0

    def _publish(self, lines: list[str]) -> None:
        self.lines.extend(lines)
        for listener in list(self._listeners):
            try:
                listener(lines)
            except Exception:
                log.exception("console listener failed")

    def write_agent_line(self, text: str) -> None:
        """A line of the agent's own (install steps, exits) in the console, where users look."""
        os.write(self._fd, f"[agent] {text}\n".encode())

    def output_fd(self) -> int:
        """A new append-only descriptor of the log for a child's stdout and stderr."""
        return os.open(f"/proc/self/fd/{self._fd}", os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)

    def input_fd(self) -> int:
        """A new blocking read-write descriptor of the FIFO for a child's stdin."""
        return os.open(f"/proc/self/fd/{self._stdin}", os.O_RDWR | os.O_CLOEXEC)

    def drain_input(self) -> None:
        """Throw away what a previous process left unread (a stop command it never read)."""
        try:
            while os.read(self._stdin, 65536):
                pass
        except BlockingIOError:
            pass

    def send(self, command: str) -> bool:
        """Write a command line to the process's standard input; False when its pipe is full."""
        data = command.rstrip("\n").encode() + b"\n"
        try:
            written = os.write(self._stdin, data)
        except BlockingIOError:
            return False
        return written == len(data)

    def close(self) -> None:
        self._closed = True
        self._inotify.unwatch(self._wd)
        os.close(self._fd)
        os.close(self._stdin)

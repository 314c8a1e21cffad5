"""A bot's code: cloned from git (by the bot's own user, through the launcher) or downloaded as an
archive (by the agent) and unpacked into a private staging directory, then moved into place.

Archives are unpacked as root, so nothing in them may land outside the staging directory:
tarballs go through tarfile's ``data`` filter, zip members are checked one by one
(``member_name``), and the whole archive is refused at the first member that points elsewhere.
The file manager's archives (agent/archives.py) go through the same two checks.
"""

import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import aiohttp

from agent.console import LOG_NAME, STDIN_NAME

# Run with /bin/sh in the server's directory. ``git clone`` wants an empty directory and the
# console's files are already there, so: init once, fetch the one commit, check it out.
GIT_SCRIPT = """set -e
[ -d .git ] || git -c init.defaultBranch=main init -q .
git fetch -q --depth 1 -- "$AGENT_GIT_URL" "$AGENT_GIT_REF"
git checkout -q -f FETCH_HEAD
"""
RESERVED_NAMES = {LOG_NAME, STDIN_NAME}


class SourceError(Exception):
    """The code could not be fetched or unpacked; the message is for the customer."""


class UnsafeMember(Exception):
    """An archive member's name that leads outside the folder it is unpacked into."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def member_name(name: str) -> str:
    """An archive member's name as a path relative to the folder it unpacks into ("" for that
    folder itself), whatever that folder holds: ``UnsafeMember`` when it is absolute, climbs
    with ``..``, or holds a backslash (a Windows separator) or a NUL."""
    if name.startswith("/") or "\\" in name or "\x00" in name:
        raise UnsafeMember(name)
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember(name)
    return "/".join(parts)


async def download(url: str, destination: Path, *, token: str | None, max_bytes: int) -> None:
    """Save ``url`` to ``destination``; ``token`` (the node token) only for the control plane."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=900, sock_connect=20)
    written = 0
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            # Never follow a redirect with the node token: it would go wherever it points.
            session.get(url, headers=headers, allow_redirects=token is None) as response,
        ):
            if response.status != 200:
                raise SourceError(f"The download of the code failed: HTTP {response.status}.")
            with open(destination, "wb") as file:
                async for chunk in response.content.iter_chunked(256 * 1024):
                    written += len(chunk)
                    if written > max_bytes:
                        raise SourceError(
                            f"The code archive is larger than {max_bytes // 1024 // 1024} MB."
                        )
                    file.write(chunk)
    except (aiohttp.ClientError, TimeoutError) as error:
        raise SourceError(f"The download of the code failed: {error or 'timed out'}.") from None


def _too_many(max_members: int) -> SourceError:
    return SourceError(f"The code archive holds more than {max_members:,} files and folders.")


def _unpack_zip(archive: Path, staging: Path, max_bytes: int, max_members: int) -> None:
    root = staging.resolve()
    with zipfile.ZipFile(archive) as bundle:
        members = bundle.infolist()
        if len(members) > max_members:
            raise _too_many(max_members)
        if sum(member.file_size for member in members) > max_bytes:
            raise SourceError("The code archive unpacks to more than the disk limit.")
        for member in members:
            name = member.filename
            try:
                inside = (root / member_name(name)).resolve().is_relative_to(root)
            except UnsafeMember:
                inside = False
            if not inside:
                raise SourceError(f"The code archive holds a file outside its folder: {name!r}.")
        bundle.extractall(root)  # noqa: S202 - every member was checked above


def _unpack_tar(archive: Path, staging: Path, max_bytes: int, max_members: int) -> None:
    try:
        with tarfile.open(archive, "r:*") as bundle:
            # Counted while the index is read, so that a small archive of a million entries is
            # refused before it is all in memory.
            size = 0
            for count, member in enumerate(bundle, start=1):
                size += member.size
                if count > max_members:
                    raise _too_many(max_members)
            if size > max_bytes:
                raise SourceError("The code archive unpacks to more than the disk limit.")
            bundle.extractall(staging, filter="data")
    except tarfile.FilterError as error:
        raise SourceError(f"The code archive was refused: {error}.") from None
    except tarfile.TarError:
        raise SourceError("The code archive is neither a .tar.gz nor a .zip file.") from None


def unpack(archive: Path, staging: Path, *, max_bytes: int, max_members: int) -> Path:
    """Unpack into ``staging``; returns the folder holding the code (an archive with one
    top-level folder, as GitHub makes them, is entered). At most ``max_members`` entries."""
    if zipfile.is_zipfile(archive):
        _unpack_zip(archive, staging, max_bytes, max_members)
    else:
        _unpack_tar(archive, staging, max_bytes, max_members)
    entries = list(staging.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return staging


def chown_tree(top: Path, uid: int, gid: int) -> None:
    os.lchown(top, uid, gid)
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, gid)


def move_into(code: Path, directory: Path) -> None:
    """Move every entry of ``code`` into ``directory``, replacing entries of the same name. The
    directory is the customer's: ``rename`` and fd-based ``rmtree`` never follow its links."""
    for entry in os.scandir(code):
        if entry.name in RESERVED_NAMES:
            continue
        target = directory / entry.name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        os.rename(entry.path, target)

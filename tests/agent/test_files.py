"""A server's files through agent/files.py: confined by the kernel to the server's folder, done as
the server's own user, versions for editors. Real files, real links; as root the operations
run with the server's uid (the agent's case on a node)."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.errors import NotFound, ValidationFailed
from agent.files import (
    DiskQuota,
    DiskQuotaExceeded,
    FileConflict,
    NotPermitted,
    OutsideServer,
    ServerFiles,
    TooLarge,
    VersionMismatch,
)

IS_ROOT = os.geteuid() == 0
SERVER_UID = 64_123  # a user no one else is, as the agent's per-server users are


@pytest.fixture
def tree() -> Iterator[Path]:
    """``top/server`` (the server's folder, its user's) beside ``top/secret`` (another's)."""
    top = Path(tempfile.mkdtemp(prefix="hms-files-"))
    top.chmod(0o711)
    server, secret = top / "server", top / "secret"
    server.mkdir(mode=0o700)
    secret.mkdir(mode=0o755)
    (secret / "token.txt").write_text("another tenant's secret\n")
    (server / "server.properties").write_text("motd=Hello\nmax-players=20\n")
    (server / ".hidden").write_text("dot\n")
    (server / "world").mkdir()
    (server / "world" / "level.dat").write_bytes(b"\x0a\x00\x00level")
    (server / "plugins").mkdir()
    (server / "plugins" / "Essentials.jar").write_bytes(b"PK\x03\x04jar")
    os.symlink("world/level.dat", server / "level-link")  # stays inside
    os.symlink("../secret", server / "out")  # relative, leaves
    os.symlink("/etc", server / "etc-link")  # absolute
    os.symlink(str(secret / "token.txt"), server / "world" / "token-link")
    if IS_ROOT:
        for folder, dirs, files in os.walk(server):
            os.lchown(folder, SERVER_UID, SERVER_UID)
            for name in dirs + files:
                os.lchown(os.path.join(folder, name), SERVER_UID, SERVER_UID)
    yield server
    shutil.rmtree(top)


@pytest.fixture
def files(tree) -> ServerFiles:
    return ServerFiles(tree, SERVER_UID if IS_ROOT else None, SERVER_UID if IS_ROOT else None)


def run(files: ServerFiles, method: str, *args, **kwargs):
    """As the agent does: in a pool thread, as the server's user."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(files.run, getattr(files, method), *args, **kwargs).result()


@pytest.mark.parametrize(
    "path",
    [
        "../secret/token.txt",
        "world/../../secret/token.txt",
        "out/token.txt",
        "world/token-link",
        "etc-link/passwd",
    ],
)
def test_no_path_or_link_reads_outside_the_folder(files, path):
    with pytest.raises(OutsideServer):
        run(files, "read_text", path, max_bytes=10_000)


def test_an_absolute_path_is_the_servers_not_the_nodes(files):
    with pytest.raises(NotFound):
        run(files, "read_text", "/etc/passwd", max_bytes=10_000)
    read = run(files, "read_text", "/server.properties", max_bytes=10_000)
    assert read["content"] == "motd=Hello\nmax-players=20\n"
    assert read["path"] == "/server.properties"


def test_a_link_that_stays_inside_is_followed(files, tree):
    os.symlink("../server.properties", tree / "world" / "props")
    assert run(files, "read_text", "world/props", max_bytes=100)["content"].startswith("motd")
    assert run(files, "stat", "level-link")["type"] == "link"


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("write_text", ("out/new.txt", "x")),
        ("create_folder", ("out/made",)),
        ("rename", ("server.properties", "out/stolen.properties")),
        ("copy", ("server.properties", "out/copied.properties")),
        ("copy", ("out/token.txt", "token.txt")),
        ("change_mode", ("out/token.txt", "777")),
        ("delete", (["out/token.txt"],)),
        ("listing", ("out",)),
        ("search", ("out",)),
    ],
)
def test_no_change_reaches_outside_the_folder(files, tree, method, args):
    kwargs = {"if_match": None} if method == "write_text" else {}
    if method == "search":
        kwargs = {"query": "token"}
    with pytest.raises(OutsideServer):
        run(files, method, *args, **kwargs)
    secret = tree.parent / "secret"
    assert sorted(os.listdir(secret)) == ["token.txt"]
    assert (secret / "token.txt").read_text() == "another tenant's secret\n"
    assert oct((secret / "token.txt").stat().st_mode & 0o777) == "0o644"


def test_deleting_a_link_deletes_the_link_not_its_target(files, tree):
    assert run(files, "delete", ["out", "etc-link"]) == {"deleted": ["/out", "/etc-link"]}
    assert (tree.parent / "secret" / "token.txt").exists()
    assert Path("/etc/passwd").exists()
    assert not os.path.lexists(tree / "out")


def test_a_folder_lists_hidden_entries_links_sorted_and_in_pages(files):
    listed = run(files, "listing", "/")
    names = [entry["name"] for entry in listed["entries"]]
    assert names == [
        "plugins",
        "world",
        ".hidden",
        "etc-link",
        "level-link",
        "out",
        "server.properties",
    ]
    assert listed["total"] == 7
    link = next(entry for entry in listed["entries"] if entry["name"] == "out")
    assert (link["type"], link["link_target"]) == ("link", "../secret")
    page = run(files, "listing", "", sort="size", descending=True, offset=1, limit=2)
    sizes = [entry["size"] for entry in run(files, "listing", "", sort="size")["entries"]]
    assert [entry["size"] for entry in page["entries"]] == sorted(sizes, reverse=True)[1:3]
    with pytest.raises(ValidationFailed):
        run(files, "listing", "", sort="owner")
    with pytest.raises(NotFound):
        run(files, "listing", "nowhere")


def test_a_write_against_a_stale_version_is_refused(files, tree):
    first = run(files, "read_text", "server.properties", max_bytes=1000)
    saved = run(files, "write_text", "server.properties", "motd=One\n", if_match=first["version"])
    assert (tree / "server.properties").read_text() == "motd=One\n"
    with pytest.raises(VersionMismatch):  # a second editor, still on the first version
        run(files, "write_text", "server.properties", "motd=Two\n", if_match=first["version"])
    assert (tree / "server.properties").read_text() == "motd=One\n"
    run(files, "write_text", "server.properties", "motd=Two\n", if_match=saved["version"])
    assert (tree / "server.properties").read_text() == "motd=Two\n"
    with pytest.raises(VersionMismatch):  # "*": only if it exists
        run(files, "write_text", "new.yml", "a: 1\n", if_match="*")
    created = run(files, "write_text", "new.yml", "a: 1\n", if_match=None)
    assert created["size"] == 5
    assert sorted(name for name in os.listdir(tree) if name.endswith(".tmp")) == []
    if IS_ROOT:
        assert (tree / "new.yml").stat().st_uid == SERVER_UID


def test_folders_rename_copy_and_mode(files, tree):
    run(files, "create_folder", "mods")
    with pytest.raises(FileConflict):
        run(files, "create_folder", "mods")
    run(files, "rename", "plugins/Essentials.jar", "mods/Essentials.jar")
    assert (tree / "mods" / "Essentials.jar").read_bytes() == b"PK\x03\x04jar"
    with pytest.raises(FileConflict):  # never over an existing entry
        run(files, "rename", "server.properties", "mods/Essentials.jar")
    run(files, "copy", "server.properties", "server.properties.bak")
    assert (tree / "server.properties.bak").read_text() == "motd=Hello\nmax-players=20\n"
    with pytest.raises(FileConflict):
        run(files, "copy", "server.properties", "server.properties.bak")
    assert run(files, "change_mode", "server.properties", "600")["mode"] == "0600"
    with pytest.raises(ValidationFailed):
        run(files, "change_mode", "server.properties", "4755")  # no set-id bits
    with pytest.raises(ValidationFailed):  # a link's mode is not changed (nor its target's)
        run(files, "change_mode", "level-link", "777")


def test_search_finds_names_beneath_without_following_links(files):
    found = run(files, "search", "", query="LEVEL")
    assert sorted(entry["path"] for entry in found["entries"]) == [
        "/level-link",
        "/world/level.dat",
    ]


def test_text_reads_have_a_size_cap_and_refuse_binary(files, tree):
    with pytest.raises(TooLarge):
        run(files, "read_text", "server.properties", max_bytes=5)
    with pytest.raises(ValidationFailed):
        run(files, "read_text", "world/level.dat", max_bytes=1000)
    (tree / "utf16.txt").write_bytes("Grüße\n".encode("utf-16"))
    read = run(files, "read_text", "utf16.txt", max_bytes=1000)
    assert (read["content"], read["encoding"]) == ("Grüße\n", "utf-16")


@pytest.mark.skipif(not IS_ROOT, reason="the server's own user needs root to take")
def test_operations_are_the_servers_user_not_root(files, tree):
    (tree / "root-only.txt").write_text("root's\n")
    os.chown(tree / "root-only.txt", 0, 0)
    (tree / "root-only.txt").chmod(0o600)
    with pytest.raises(NotPermitted):
        run(files, "read_text", "root-only.txt", max_bytes=100)
    with pytest.raises(NotPermitted):
        run(files, "change_mode", "root-only.txt", "644")
    # The pool thread is root again afterwards (the agent's own work goes on as root).
    assert os.stat(tree / "root-only.txt").st_mode & 0o777 == 0o600


def test_writes_past_the_disk_limit_are_refused_before_a_byte_is_written(tree):
    quota = DiskQuota(limit_bytes=1000)
    owner = SERVER_UID if IS_ROOT else None
    files = ServerFiles(tree, owner, owner, quota=quota)
    quota.measured(900)  # what the last usage sample found
    run(files, "write_text", "small.txt", "x" * 60, if_match=None)
    with pytest.raises(DiskQuotaExceeded):  # 60 written since the sample: 40 left
        run(files, "write_text", "big.txt", "x" * 41, if_match=None)
    assert not (tree / "big.txt").exists()
    with pytest.raises(DiskQuotaExceeded):
        run(files, "copy", "small.txt", "small-copy.txt")
    # Shrinking a file needs no room; a new sample counts afresh.
    run(files, "write_text", "small.txt", "x", if_match=None)
    quota.measured(500)
    run(files, "copy", "server.properties", "server.properties.bak")
    assert DiskQuota(None).take(10**12) is None  # no limit

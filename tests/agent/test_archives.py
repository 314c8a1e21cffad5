"""Compressing and decompressing in a server's folder (agent/archives.py) on real agents: round
trips keep modes and links, hostile archives are refused whole with nothing written outside
and nothing left behind, existing files are kept unless overwritten, the caps and the quota
hold, and a link out of the folder is archived as a link, never followed."""

import io
import os
import re
import secrets
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.conftest import AgentPool, gameserver_spec

MIB = 1024 * 1024
CONTENT = (
    "mkdir -p plugins/sub world; printf hello > a.txt; chmod 640 a.txt; "
    "printf '#!/bin/sh\\necho hi\\n' > run.sh; chmod 755 run.sh; "
    "printf 'cfg: 1\\n' > plugins/sub/config.yml; ln -s sub/config.yml plugins/config-link; "
    "ln -s /etc etc-link"
)


@pytest.fixture
def server(make_server):
    made = make_server(install_script=CONTENT)
    assert made.post("install").status_code == 200
    return made


@pytest.fixture(scope="module")
def strict_agent(control_plane, work_root) -> Iterator:
    """An agent of small archive caps: 50 members, 1 MiB unpacked."""
    pool = AgentPool(control_plane, work_root / "archives-strict")
    yield pool.start(AGENT_ARCHIVE_MAX_MEMBERS="50", AGENT_ARCHIVE_MAX_BYTES=str(MIB))
    pool.close()


@pytest.fixture
def strict_server(make_server, strict_agent):
    made = make_server(strict_agent, install_script=CONTENT)
    assert made.post("install").status_code == 200
    return made


def call(server, action: str, body: dict):
    with server.api() as api:
        return api.post(server.path(f"files/{action}"), json=body)


def folder_of(server) -> Path:
    return Path(server.agent.data_root) / "servers" / server.id


def tree(folder: Path) -> set[str]:
    """Every name beneath ``folder`` (links not followed)."""
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


def leftovers(folder: Path) -> list[str]:
    return [name for name in tree(folder) if re.search(r"\.(unpack|tmp)\b|\.tmp$", name)]


def put(server, name: str, content: bytes) -> None:
    """An archive in the server's folder, readable by its user."""
    path = folder_of(server) / name
    path.write_bytes(content)
    path.chmod(0o644)


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None], mode: str = "w:gz") -> bytes:
    content = io.BytesIO()
    with tarfile.open(fileobj=content, mode=mode) as archive:
        for member, data in members:
            if data is not None:
                member.size = len(data)
            archive.addfile(member, io.BytesIO(data) if data is not None else None)
    return content.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, **attributes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in attributes.items():
        setattr(info, key, value)
    return info


def zip_of(*members: tuple[str, bytes], links: tuple[tuple[str, str], ...] = ()) -> bytes:
    content = io.BytesIO()
    with zipfile.ZipFile(content, "w") as archive:
        for name, data in members:
            archive.writestr(name, data)
        for name, target in links:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return content.getvalue()


def names_in(path: Path) -> dict[str, str]:
    """An archive's members: name → "file", "folder" or "link:<target>"."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            found = {}
            for info in archive.infolist():
                mode = info.external_attr >> 16
                if info.is_dir():
                    found[info.filename.rstrip("/")] = "folder"
                elif stat.S_ISLNK(mode):
                    found[info.filename] = "link:" + archive.read(info).decode()
                else:
                    found[info.filename] = "file"
            return found
    with tarfile.open(path) as archive:
        return {
            info.name: "folder"
            if info.isdir()
            else f"link:{info.linkname}"
            if info.issym()
            else "file"
            for info in archive
        }


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_a_selection_round_trips_with_its_modes_and_links(server, kind):
    folder = folder_of(server)
    made = call(
        server,
        "compress",
        {"paths": ["/a.txt", "run.sh", "/plugins"], "format": kind, "to": f"/backup.{kind}"},
    )
    assert made.status_code == 201, made.text
    archive = folder / f"backup.{kind}"
    assert made.json() == {
        "path": f"/backup.{kind}",
        "size": archive.stat().st_size,
        "version": made.json()["version"],
    }
    assert made.headers["ETag"] == f'"{made.json()["version"]}"'
    assert names_in(archive) == {
        "a.txt": "file",
        "run.sh": "file",
        "plugins": "folder",
        "plugins/sub": "folder",
        "plugins/sub/config.yml": "file",
        "plugins/config-link": "link:sub/config.yml",
    }
    assert archive.stat().st_uid == folder.stat().st_uid

    unpacked = call(server, "decompress", {"path": f"/backup.{kind}", "to": "/restored"})
    assert unpacked.status_code == 200, unpacked.text
    assert unpacked.json() == {"path": "/restored", "files": 6, "size": 5 + 18 + 7}
    restored = folder / "restored"
    assert (restored / "a.txt").read_text() == "hello"
    assert stat.S_IMODE((restored / "a.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE((restored / "run.sh").stat().st_mode) == 0o755
    assert os.readlink(restored / "plugins/config-link") == "sub/config.yml"
    assert (restored / "plugins/config-link").read_text() == "cfg: 1\n"
    assert {path.stat(follow_symlinks=False).st_uid for path in restored.rglob("*")} == {
        folder.stat().st_uid
    }
    assert leftovers(folder) == []


def test_the_default_archive_is_named_in_the_selections_folder(server):
    made = call(server, "compress", {"paths": ["/plugins/sub/config.yml", "/plugins/config-link"]})
    assert made.status_code == 201, made.text
    assert re.fullmatch(r"/plugins/archive-\d{8}T\d{6}Z\.tar\.gz", made.json()["path"])
    archive = folder_of(server) / made.json()["path"].lstrip("/")
    assert names_in(archive) == {"sub/config.yml": "file", "config-link": "link:sub/config.yml"}


def test_an_archive_of_its_own_folder_leaves_itself_out(server):
    made = call(
        server, "compress", {"paths": ["/plugins"], "to": "/plugins/all.zip", "format": "zip"}
    )
    assert made.status_code == 201, made.text
    assert "plugins/all.zip" not in names_in(folder_of(server) / "plugins/all.zip")


def test_an_archive_never_replaces_an_entry(server):
    refused = call(server, "compress", {"paths": ["/plugins"], "to": "/a.txt"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "conflict"
    assert (folder_of(server) / "a.txt").read_text() == "hello"
    assert leftovers(folder_of(server)) == []


def test_a_link_out_of_the_folder_is_archived_as_a_link_and_never_followed(server):
    made = call(server, "compress", {"paths": ["/etc-link"], "to": "/etc.tar.gz"})
    assert made.status_code == 201, made.text
    assert names_in(folder_of(server) / "etc.tar.gz") == {"etc-link": "link:/etc"}

    through = call(server, "compress", {"paths": ["/etc-link/passwd"], "to": "/passwd.zip"})
    assert through.status_code == 400, through.text
    assert through.json()["error"]["code"] == "outside_server"
    assert not (folder_of(server) / "passwd.zip").exists()
    assert leftovers(folder_of(server)) == []


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"paths": []}, 400, "validation_failed"),
        ({"paths": ["/a.txt"] * 1001}, 400, "validation_failed"),
        ({"paths": ["/"]}, 400, "validation_failed"),
        ({"paths": ["/a.txt"], "format": "rar"}, 400, "validation_failed"),
        ({"paths": ["/nothing"]}, 404, "not_found"),
    ],
)
def test_a_bad_compression_is_refused(server, body, status, code):
    response = call(server, "compress", body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("plain.tar", lambda: tar_of((member("x/one.txt"), b"1"), mode="w")),
        ("mods.zip", lambda: tar_of((member("x/one.txt"), b"1"), mode="w:xz")),
        ("pack.bin", lambda: tar_of((member("x/one.txt"), b"1"), mode="w:bz2")),
        ("pack.tgz", lambda: zip_of(("x/one.txt", b"1"))),
    ],
)
def test_an_archive_is_told_by_its_content(server, name, content):
    put(server, name, content())
    unpacked = call(server, "decompress", {"path": name})
    assert unpacked.status_code == 200, unpacked.text
    assert unpacked.json() == {"path": "/", "files": 1, "size": 1}
    assert (folder_of(server) / "x/one.txt").read_text() == "1"


def test_what_is_not_an_archive_is_refused(server):
    unpacked = call(server, "decompress", {"path": "/a.txt", "to": "/x"})
    assert unpacked.status_code == 400, unpacked.text
    assert unpacked.json()["error"]["code"] == "validation_failed"
    assert not (folder_of(server) / "x").exists()


ESCAPED = f"escaped-{secrets.token_hex(4)}.txt"
# A folder the server's user could write to, were an absolute name followed.
WRITABLE = Path("/tmp")  # noqa: S108 - the target of an escape, checked to stay empty of it


def _hostile() -> dict[str, bytes]:
    first = (member("first.txt"), b"fine")
    return {
        "dot-dot": tar_of(first, (member(f"../../{ESCAPED}"), b"x")),
        "absolute": tar_of(first, (member(str(WRITABLE / ESCAPED)), b"x")),
        "link-to-etc-then-through-it": tar_of(
            first,
            (member("etc", tarfile.SYMTYPE, linkname="/etc"), None),
            (member(f"etc/{ESCAPED}"), b"x"),
        ),
        "relative-link-out-then-through-it": tar_of(
            first,
            (member("up", tarfile.SYMTYPE, linkname="../../.."), None),
            (member(f"up/{ESCAPED}"), b"x"),
        ),
        "inside-link-then-through-it": tar_of(
            first,
            (member("here", tarfile.SYMTYPE, linkname="."), None),
            (member("here/second.txt"), b"x"),
        ),
        "hard-link-out": tar_of(
            first, (member("passwd", tarfile.LNKTYPE, linkname="/etc/passwd"), None)
        ),
        "hard-link-up": tar_of(
            first, (member("passwd", tarfile.LNKTYPE, linkname="../../../etc/passwd"), None)
        ),
        "device": tar_of(first, (member("null", tarfile.CHRTYPE, devmajor=1, devminor=3), None)),
        "fifo": tar_of(first, (member("pipe", tarfile.FIFOTYPE), None)),
        "zip-dot-dot": zip_of(("first.txt", b"fine"), (f"../{ESCAPED}", b"x")),
        "zip-absolute": zip_of(("first.txt", b"fine"), (str(WRITABLE / ESCAPED), b"x")),
        "zip-link-out": zip_of(("first.txt", b"fine"), links=(("etc", "/etc"),)),
        # A header that says 5,000 bytes, and the archive ends after 100.
        "tar-header-lies": tar_of(first, (member("big.bin"), b"y" * 5000), mode="w")[
            : 3 * 512 + 100
        ],
    }


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_a_hostile_archive_is_refused_whole_and_leaves_nothing(server, case):
    folder = folder_of(server)
    put(server, "evil.bin", _hostile()[case])
    before = tree(folder)
    outside_before = set(os.listdir(folder.parent))
    refused = call(server, "decompress", {"path": "/evil.bin", "to": "/unpacked"})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "validation_failed"
    message = refused.json()["error"]["message"]
    assert "nothing was unpacked" in message.lower()
    assert str(folder.parent) not in message  # the node's own paths are not shown
    assert tree(folder) == before
    assert set(os.listdir(folder.parent)) == outside_before
    assert not (folder.parent.parent / ESCAPED).exists()
    assert not Path("/etc", ESCAPED).exists()
    assert not (WRITABLE / ESCAPED).exists()


def test_unpacking_into_the_archives_folder_refuses_a_clash_unless_overwritten(server):
    folder = folder_of(server)
    put(
        server,
        "update.zip",
        zip_of(("a.txt", b"new"), ("plugins/new.txt", b"added"), ("fresh.txt", b"f")),
    )
    refused = call(server, "decompress", {"path": "/update.zip"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "conflict"
    assert refused.json()["error"]["message"].startswith("/a.txt already exists")
    assert (folder / "a.txt").read_text() == "hello"
    assert not (folder / "plugins/new.txt").exists()
    assert not (folder / "fresh.txt").exists()

    replaced = call(server, "decompress", {"path": "/update.zip", "overwrite": True})
    assert replaced.status_code == 200, replaced.text
    assert (folder / "a.txt").read_text() == "new"
    assert (folder / "plugins/new.txt").read_text() == "added"
    assert (folder / "plugins/sub/config.yml").read_text() == "cfg: 1\n"  # merged, not replaced
    assert leftovers(folder) == []


def test_a_folder_is_never_replaced_by_a_file(server):
    put(server, "flat.zip", zip_of(("plugins", b"a file now")))
    refused = call(server, "decompress", {"path": "/flat.zip", "overwrite": True})
    assert refused.status_code == 409, refused.text
    assert (folder_of(server) / "plugins/sub/config.yml").exists()


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_more_members_than_the_cap_are_refused(strict_server, kind):
    folder = folder_of(strict_server)
    files = [(f"many/{index}.txt", b"") for index in range(51)]
    if kind == "zip":
        content = zip_of(*files)
    else:
        content = tar_of(*((member(name), data) for name, data in files))
    put(strict_server, f"many.{kind}", content)
    before = tree(folder)
    refused = call(strict_server, "decompress", {"path": f"/many.{kind}"})
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["code"] == "too_large"
    assert tree(folder) == before


def test_compressing_more_members_than_the_cap_is_refused(strict_server):
    folder = folder_of(strict_server)
    (folder / "many").mkdir()
    for index in range(60):
        (folder / "many" / f"{index}.txt").write_text("")
    refused = call(
        strict_server, "compress", {"paths": ["/many"], "to": "/many.zip", "format": "zip"}
    )
    assert refused.status_code == 413, refused.text
    assert not (folder / "many.zip").exists()
    assert leftovers(folder) == []


@pytest.mark.parametrize("kind", ["zip", "tar.bz2"])
def test_a_bomb_is_refused_by_what_it_unpacks_to(strict_server, kind):
    zeros = b"\0" * (16 * MIB)
    if kind == "zip":
        content = io.BytesIO()
        with zipfile.ZipFile(content, "w", zipfile.ZIP_BZIP2) as archive:
            archive.writestr("bomb.bin", zeros)
        bomb = content.getvalue()
    else:
        bomb = tar_of((member("bomb.bin"), zeros), mode="w:bz2")
    assert len(bomb) * 10_000 < len(zeros)
    folder = folder_of(strict_server)
    put(strict_server, f"bomb.{kind}", bomb)
    before = tree(folder)
    refused = call(strict_server, "decompress", {"path": f"/bomb.{kind}", "to": "/bomb"})
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["code"] == "too_large"
    assert tree(folder) == before


def test_the_disk_quota_bounds_what_is_unpacked_and_compressed(make_server):
    spec = gameserver_spec("srv_placeholder", 1)
    spec["limits"]["disk_mb"] = 1
    small = make_server(spec=spec)
    folder = folder_of(small)
    put(small, "noise.bin", os.urandom(2 * MIB))  # not the file manager's: not counted

    refused = call(small, "compress", {"paths": ["/noise.bin"], "to": "/noise.tar.gz"})
    assert refused.status_code == 507, refused.text
    assert refused.json()["error"]["code"] == "disk_quota_exceeded"
    assert not (folder / "noise.tar.gz").exists()

    put(small, "zeros.tar.gz", tar_of((member("zeros.bin"), b"\0" * (3 * MIB))))
    before = tree(folder)
    refused = call(small, "decompress", {"path": "/zeros.tar.gz", "to": "/zeros"})
    assert refused.status_code == 507, refused.text
    assert refused.json()["error"]["code"] == "disk_quota_exceeded"
    assert tree(folder) == before

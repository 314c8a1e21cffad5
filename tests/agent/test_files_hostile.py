"""The hostile-tenant test extended to the file manager (issue 30): two customers' servers on
one node, A hostile. A plants links to B's folder, to /etc/shadow and to ``..``, a relative
chain of links that ends outside, a pipe, and tries a hard link to B's file; then every call
of A's file API (and A's signed URLs) is aimed through them. Each is refused or confined, B's
folder and /etc/shadow are unchanged to the byte, and nothing of them appears in any answer or
archive."""

import errno
import hashlib
import io
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx

from tests.agent.test_isolation import pytestmark  # noqa: F401 - its skip: a root agent
from tests.agent.test_transfers import transfer_token  # noqa: F401 - a fixture

VICTIM_SECRET = "victim-bytes-9f3c2a7e51d04b86"
VICTIM_NAME = "victim-only-name.txt"
UNNAMED = "never-asked-for-7c1e.txt"  # a name of B's no request names: must never be answered
SHADOW = Path("/etc/shadow")


def _tree(folder: Path) -> dict[str, tuple]:
    """Every entry beneath ``folder`` (hidden ones too) with its kind, mode, owner and bytes
    (or a link's target): what must not change."""
    tree = {}
    for path in sorted([folder, *folder.rglob("*")]):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            content = os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            content = None
        tree[str(path.relative_to(folder))] = (
            stat.S_IFMT(info.st_mode),
            stat.S_IMODE(info.st_mode),
            info.st_uid,
            info.st_nlink,
            content,
        )
    return tree


def _shadow() -> tuple:
    info = SHADOW.stat()
    return hashlib.sha256(SHADOW.read_bytes()).hexdigest(), info.st_mode, info.st_nlink


def _secrets_of_the_node() -> list[bytes]:
    """Byte strings that would betray a read of B's file or of /etc/shadow."""
    lines = [line for line in SHADOW.read_bytes().splitlines() if b":" in line]
    return [VICTIM_SECRET.encode(), UNNAMED.encode(), *(line[:40] for line in lines[:5])]


def _link_as(uid: int, gid: int, source: Path, target: Path) -> int:
    """``link(2)`` as A's user, outside any sandbox: the errno it failed with (0: linked)."""
    script = (
        "import os, sys\n"
        f"os.setgroups([]); os.setgid({gid}); os.setuid({uid})\n"
        "try:\n"
        f"    os.link({str(source)!r}, {str(target)!r})\n"
        "except OSError as error:\n"
        "    sys.exit(error.errno)\n"
    )
    return subprocess.run([sys.executable, "-c", script], check=False).returncode  # noqa: S603


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as bundle:
        for member, data in members:
            if data is not None:
                member.size = len(data)
            bundle.addfile(member, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, linkname, 0o644
    return member


def test_no_path_link_or_archive_of_a_hostile_tenant_reaches_outside_its_server(
    make_server,
    agent,
    transfer_token,  # noqa: F811 - the fixture imported above
):
    assert agent.api().get("/api/system").json()["isolation"]["mode"] == "sandbox"
    victim = make_server(
        install_script=(
            f"printf '{VICTIM_SECRET}' > {VICTIM_NAME}; mkdir -p world;"
            f" printf '{VICTIM_SECRET} world' > world/level.dat; echo x > world/{UNNAMED}"
        )
    )
    assert victim.post("install").status_code == 200
    victim_dir = agent.data_root / "servers" / victim.id
    attacker = make_server(
        install_script=(
            "printf 'mine' > own.txt; mkdir -p sub;"
            f" ln -s {victim_dir} link-to-b;"
            " ln -s /etc/shadow link-to-shadow; ln -s /etc/shadow shadow-for-upload;"
            " ln -s .. up;"
            # A relative chain that ends in B's folder: hop1 → hop2 → sub/hop3 → ../../<B>.
            f" ln -s hop2 hop1; ln -s sub/hop3 hop2; ln -s ../../{victim.id} sub/hop3;"
            " mkfifo fifo"
        )
    )
    assert attacker.post("install").status_code == 200
    attacker_dir = agent.data_root / "servers" / attacker.id
    assert os.readlink(attacker_dir / "link-to-b") == str(victim_dir)
    assert stat.S_ISFIFO((attacker_dir / "fifo").lstat().st_mode)
    uid = agent.state()["uids"][attacker.id]
    before, shadow_before = _tree(victim_dir), _shadow()
    answers: list[bytes] = []

    def call(method: str, action: str, **arguments) -> httpx.Response:
        with attacker.api() as api:
            response = api.request(method, attacker.path(f"files/{action}"), **arguments)
        answers.append(response.content)
        return response

    def refused(response: httpx.Response, code: str = "outside_server", status: int = 400):
        assert response.status_code == status, response.text
        assert response.json()["error"]["code"] == code, response.text

    # A hard link to B's file, made by A's user on the node itself: the kernel refuses it.
    failed = _link_as(uid, uid, victim_dir / VICTIM_NAME, attacker_dir / "hard-to-b")
    assert failed in (errno.EACCES, errno.EPERM, errno.EXDEV), failed
    assert not os.path.lexists(attacker_dir / "hard-to-b")

    through = ["link-to-b", "hop1", "up/" + victim.id, "sub/hop3"]

    # list and stat: the links are listed as links, never entered.
    listed = call("GET", "list", params={"path": "/", "limit": "1000"})
    assert listed.status_code == 200, listed.text
    kinds = {entry["name"]: entry["type"] for entry in listed.json()["entries"]}
    assert kinds["link-to-b"] == kinds["link-to-shadow"] == kinds["up"] == "link"
    assert kinds["fifo"] == "other"
    for path in [*through, "up", "link-to-shadow"]:
        refused(call("GET", "list", params={"path": path}))
    assert call("GET", "stat", params={"path": "link-to-shadow"}).json()["type"] == "link"
    for path in through:
        refused(call("GET", "stat", params={"path": f"{path}/{VICTIM_NAME}"}))

    # read and write through the links; the pipe is neither read nor written (nor waited on).
    refused(call("GET", "contents", params={"path": "link-to-shadow"}))
    refused(call("GET", "contents", params={"path": "fifo"}), "validation_failed")
    for path in through:
        refused(call("GET", "contents", params={"path": f"{path}/{VICTIM_NAME}"}))
        body = {"path": f"{path}/{VICTIM_NAME}", "content": "owned"}
        refused(call("PUT", "contents", json=body))
    for path in ("link-to-shadow", "fifo", "link-to-b"):
        body = {"path": path, "content": "owned"}
        refused(call("PUT", "contents", json=body), "validation_failed")

    # rename onto and into a link; copy from and into one; chmod a link; delete through one.
    moved = call("POST", "rename", json={"from": "own.txt", "to": "link-to-b"})
    refused(moved, "conflict", 409)
    for path in through:
        refused(call("POST", "rename", json={"from": "own.txt", "to": f"{path}/own.txt"}))
        refused(call("POST", "rename", json={"from": f"{path}/{VICTIM_NAME}", "to": "got"}))
        refused(call("POST", "copy", json={"from": f"{path}/{VICTIM_NAME}", "to": "got"}))
        refused(call("POST", "copy", json={"from": "own.txt", "to": f"{path}/copied"}))
        refused(call("POST", "chmod", json={"path": f"{path}/{VICTIM_NAME}", "mode": "777"}))
        refused(call("POST", "delete", json={"paths": ["own.txt", f"{path}/{VICTIM_NAME}"]}))
    refused(call("POST", "copy", json={"from": "link-to-shadow", "to": "got"}))
    refused(call("POST", "copy", json={"from": "fifo", "to": "got"}), "validation_failed")
    refused(
        call("POST", "chmod", json={"path": "link-to-shadow", "mode": "666"}), "validation_failed"
    )
    refused(call("POST", "chmod", json={"path": "link-to-b", "mode": "777"}), "validation_failed")
    assert (attacker_dir / "own.txt").read_text() == "mine"  # the refused batch deleted nothing
    assert not os.path.lexists(attacker_dir / "got")

    # compress: the links go in as links, B's and /etc's bytes never.
    for path in through:
        refused(call("POST", "compress", json={"paths": [f"{path}/{VICTIM_NAME}"]}))
    selection = ["link-to-b", "link-to-shadow", "up", "hop1", "hop2", "sub/hop3", "fifo"]
    for kind in ("tar.gz", "zip"):
        made = call(
            "POST", "compress", json={"paths": selection, "format": kind, "to": f"a.{kind}"}
        )
        assert made.status_code == 201, made.text
        answers.append((attacker_dir / f"a.{kind}").read_bytes())
    with tarfile.open(attacker_dir / "a.tar.gz") as bundle:
        links = {m.name: m.linkname for m in bundle.getmembers() if m.issym()}
        assert all(m.issym() or m.isdir() for m in bundle.getmembers()), bundle.getnames()
    assert links == {
        "link-to-b": str(victim_dir),
        "link-to-shadow": "/etc/shadow",
        "up": "..",
        "hop1": "hop2",
        "hop2": "sub/hop3",
        "sub/hop3": f"../../{victim.id}",
    }
    with zipfile.ZipFile(attacker_dir / "a.zip") as bundle:
        zipped = {info.filename: bundle.read(info) for info in bundle.infolist()}
    assert zipped["link-to-b"] == str(victim_dir).encode()
    assert zipped["link-to-shadow"] == b"/etc/shadow"
    assert "fifo" not in zipped

    # decompress: members written through a link that is already there, or into one.
    crafted = {
        "through-link.tar": _tar((_member(f"link-to-b/{VICTIM_NAME}"), b"owned")),
        "through-chain.tar": _tar((_member("hop1/planted.txt"), b"owned")),
        "new-link-then-file.tar": _tar(
            (_member("escape", tarfile.SYMTYPE, str(victim_dir)), None),
            (_member("escape/planted.txt"), b"owned"),
        ),
        "relative-link.tar": _tar((_member("escape", tarfile.SYMTYPE, f"../{victim.id}"), None)),
        "hard-link.tar": _tar(
            (_member("stolen", tarfile.LNKTYPE, f"link-to-b/{VICTIM_NAME}"), None)
        ),
        "hard-link-up.tar": _tar(
            (_member("stolen", tarfile.LNKTYPE, f"../{victim.id}/{VICTIM_NAME}"), None)
        ),
    }
    for name, data in crafted.items():
        (attacker_dir / name).write_bytes(data)
        os.chown(attacker_dir / name, uid, uid)
    for name in crafted:
        for overwrite in (False, True):
            if name.startswith("through-"):
                if not overwrite:  # with overwrite: at the end, it replaces A's links
                    refused(call("POST", "decompress", json={"path": name}), "conflict", 409)
                continue
            response = call("POST", "decompress", json={"path": name, "overwrite": overwrite})
            refused(response, "validation_failed")
    for path in through:
        to = {"path": "through-chain.tar", "to": path, "overwrite": True}
        refused(call("POST", "decompress", json=to))
        refused(call("POST", "decompress", json={"path": f"{path}/{VICTIM_NAME}"}))
    assert os.readlink(attacker_dir / "link-to-b") == str(victim_dir)
    assert not os.path.lexists(attacker_dir / "escape")
    assert not os.path.lexists(attacker_dir / "stolen")

    # search: the links are not descended into.
    for query in ("victim", "never", "level", "shadow", "txt"):
        found = call("GET", "search", params={"path": "/", "query": query})
        assert found.status_code == 200, found.text
        paths = [entry["path"] for entry in found.json()["entries"]]
        assert all(path.count("/") == 1 for path in paths), paths  # only A's own top links
    refused(call("GET", "search", params={"path": "link-to-b", "query": "level"}))

    # signed URLs of A for paths through the links.
    with httpx.Client(base_url=agent.url, timeout=30) as client:

        def transfer(method: str, server, token: str, **arguments) -> httpx.Response:
            action = "download" if method == "GET" else "upload"
            url = server.path(f"files/{action}")
            response = client.request(method, url, params={"token": token}, **arguments)
            answers.append(response.content)
            return response

        for path in [*(f"{p}/{VICTIM_NAME}" for p in through), "link-to-shadow", "up"]:
            refused_as = "outside_server" if "/" in path else "validation_failed"
            refused(transfer("GET", attacker, transfer_token(attacker.id, path)), refused_as)
        refused(transfer("GET", attacker, transfer_token(attacker.id, "fifo")), "validation_failed")
        for path in through:
            token = transfer_token(attacker.id, f"{path}/uploaded.txt", "files.upload")
            refused(transfer("PUT", attacker, token, content=b"owned"))
            chunk = {"Content-Range": "bytes 0-4/10"}
            refused(transfer("PUT", attacker, token, content=b"owned", headers=chunk))
            assert transfer("HEAD", attacker, token).status_code == 400
        # A link at the upload's path is replaced by the file, as PROTOCOL.md says: not followed.
        token = transfer_token(attacker.id, "shadow-for-upload", "files.upload")
        replaced = transfer("PUT", attacker, token, content=b"uploaded")
        assert replaced.status_code == 200, replaced.text
        assert (attacker_dir / "shadow-for-upload").lstat().st_mode & stat.S_IFREG
        assert not (attacker_dir / "shadow-for-upload").is_symlink()

        # A's tokens on B's URLs: 401, whatever the path.
        for path in (VICTIM_NAME, f"/{VICTIM_NAME}"):
            for method, permission in (("GET", "files.download"), ("PUT", "files.upload")):
                token = transfer_token(attacker.id, path, permission)
                body = b"owned" if method == "PUT" else None
                refused(transfer(method, victim, token, content=body), "invalid_token", 401)

    # With overwrite, a member at a link's name replaces the link (A's own), never writes
    # through it.
    for name, link in (("through-link.tar", "link-to-b"), ("through-chain.tar", "hop1")):
        unpacked = call("POST", "decompress", json={"path": name, "overwrite": True})
        assert unpacked.status_code == 200, unpacked.text
        assert (attacker_dir / link).is_dir() and not (attacker_dir / link).is_symlink()
    assert (attacker_dir / "link-to-b" / VICTIM_NAME).read_text() == "owned"

    # Deleting the links removes the links, not what they point at.
    deleted = call("POST", "delete", json={"paths": ["link-to-b", "link-to-shadow", "up", "hop1"]})
    assert deleted.status_code == 200, deleted.text
    assert not os.path.lexists(attacker_dir / "link-to-shadow")

    assert _tree(victim_dir) == before
    assert _shadow() == shadow_before
    leaks = [
        (secret, answer[:200])
        for answer in answers
        for secret in _secrets_of_the_node()
        if secret in answer
    ]
    assert leaks == []


def test_a_folder_holding_a_link_to_a_neighbours_folder_is_compressed_with_the_link(
    make_server, agent
):
    assert agent.api().get("/api/system").json()["isolation"]["mode"] == "sandbox"
    victim = make_server(install_script=f"printf '{VICTIM_SECRET}' > {VICTIM_NAME}")
    assert victim.post("install").status_code == 200
    victim_dir = agent.data_root / "servers" / victim.id
    attacker = make_server(install_script=f"mkdir sub; ln -s ../../{victim.id} sub/to-b")
    assert attacker.post("install").status_code == 200
    before = _tree(victim_dir)
    with attacker.api() as api:
        made = api.post(attacker.path("files/compress"), json={"paths": ["sub"], "to": "a.tar.gz"})
    assert _tree(victim_dir) == before
    assert made.status_code == 201, made.text
    with tarfile.open(agent.data_root / "servers" / attacker.id / "a.tar.gz") as bundle:
        assert {m.name: m.linkname for m in bundle.getmembers()} == {
            "sub": "",
            "sub/to-b": f"../../{victim.id}",
        }

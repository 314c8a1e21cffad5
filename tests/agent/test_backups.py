"""Backups on a real agent (agent/backups.py, PROTOCOL.md "Backups"), stored on the node: made
and restored (contents, modes, links as links), ignore patterns, the console commands around
them, merge and truncate, a changed archive refused, the signed download with ranges, deletion,
one operation at a time, the events, and an agent restart in the middle."""

import gzip
import hashlib
import os
import secrets
import stat
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from agent.config import ConfigError
from agent.sources import RESERVED_NAMES
from tests.agent.conftest import NODE_ID, public_pem, wait_until
from tests.agent.test_transfers import config

NODE = {"kind": "node"}
USER = "usr_Backer"


def new_id() -> str:
    return "bkp_" + secrets.token_hex(12)


def folder_of(server) -> Path:
    return Path(server.agent.data_root) / "servers" / server.id


def stored(server, backup_id: str) -> Path:
    return Path(server.agent.data_root) / "backups" / server.id / f"{backup_id}.tar.gz"


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


def back_up(server, backup_id: str, storage: dict = NODE, **body: Any) -> httpx.Response:
    return server.post("backups", {"backup_id": backup_id, "storage": storage, **body})


def restore(server, backup_id: str, checksum: str, storage: dict = NODE, **body) -> httpx.Response:
    return server.post(
        f"backups/{backup_id}/restore", {"storage": storage, "checksum": checksum, **body}
    )


def event_of(control_plane, server, backup_id: str, timeout: float = 60) -> dict[str, Any]:
    """The first event of ``backup_id``."""

    def ended():
        found = [
            event
            for event in control_plane.events_of(server.id)
            if event.get("backup_id") == backup_id and event["type"].startswith("backup_")
        ]
        return found[0] if found else None

    return wait_until(ended, timeout, lambda: control_plane.events_of(server.id))


def wait_for_end(control_plane, server, backup_id: str, count: int, timeout: float = 60) -> dict:
    def events():
        found = [
            event
            for event in control_plane.events_of(server.id)
            if event.get("backup_id") == backup_id
        ]
        return found if len(found) >= count else None

    return wait_until(events, timeout, lambda: control_plane.events_of(server.id))[count - 1]


def made(control_plane, server, storage: dict = NODE, **body: Any) -> dict[str, Any]:
    """A backup made: its completed event (with ``backup_id``)."""
    backup_id = new_id()
    response = back_up(server, backup_id, storage, **body)
    assert response.status_code == 202, response.text
    assert response.json() == {"backup_id": backup_id, "status": "running"}
    event = event_of(control_plane, server, backup_id)
    assert event["type"] == "backup_completed", event
    return event


def restored(control_plane, server, event: dict, storage: dict = NODE, **body) -> dict:
    before = len(
        [e for e in control_plane.events_of(server.id) if e.get("backup_id") == event["backup_id"]]
    )
    response = restore(server, event["backup_id"], event["checksum"], storage, **body)
    assert response.status_code == 202, response.text
    ended = wait_for_end(control_plane, server, event["backup_id"], before + 1)
    assert ended["type"] == "backup_restored", ended
    return ended


def as_server(server, path: Path, data: bytes | None = None) -> None:
    """Make a file (or, without ``data``, a folder) as the server's user would."""
    if data is None:
        path.mkdir()
    else:
        path.write_bytes(data)
    owner = folder_of(server).stat()
    os.chown(path, owner.st_uid, owner.st_gid)


def tree(folder: Path) -> dict[str, tuple]:
    """Every entry beneath ``folder`` but the console's files: kind, mode, content or target."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if name in RESERVED_NAMES:
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            content: Any = os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            content = None
        found[name] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), content)
    return found


def members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive, "r:gz") as bundle:
        return {member.name: member for member in bundle.getmembers()}


CONTENT = (
    "mkdir -p world/region plugins/Essentials empty private;"
    " head -c 300000 /dev/urandom > world/region/r.0.0.mca;"
    " printf 'level' > world/level.dat; printf 'motd=hi' > server.properties;"
    " printf 'run' > start.sh; chmod 0750 start.sh; printf 'key' > private/key.txt;"
    " chmod 0600 private/key.txt; chmod 0700 private;"
    " printf 'cfg' > plugins/Essentials/config.yml;"
    " ln -s world/level.dat latest-level; ln -s /etc/passwd outside-link; ln -s world world-link"
)


def installed(server):
    assert server.post("install").status_code == 200
    return server


@pytest.fixture
def server(make_server):
    return installed(make_server(install_script=CONTENT))


@pytest.fixture
def backup_token(console_key) -> Callable[..., str]:
    """A backup download's token as the control plane signs it."""

    def make(server_id: str, backup_id: str, permission: str = "backups.download") -> str:
        now = time.time()
        claims = {
            "iss": "hosting-control-plane",
            "aud": NODE_ID,
            "sub": USER,
            "server_id": server_id,
            "backup_id": backup_id,
            "permissions": [permission],
            "iat": int(now),
            "exp": int(now + 300),
            "jti": secrets.token_urlsafe(12),
        }
        return jwt.encode(claims, console_key, algorithm="EdDSA")

    return make


# -- making and restoring -----------------------------------------------------------------------


def test_a_backup_on_the_node_holds_the_folder_and_restores_it(server, control_plane):
    folder = folder_of(server)
    original = tree(folder)
    event = made(control_plane, server)
    archive = stored(server, event["backup_id"])
    data = archive.read_bytes()
    assert event["size"] == len(data)
    assert event["checksum"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert event["reason"] == ""
    # The node's copy is the agent's: out of every server's reach.
    assert stat.S_IMODE(archive.parent.stat().st_mode) == 0o700
    assert archive.parent.stat().st_uid == os.geteuid()
    assert not [name for name in os.listdir(archive.parent) if name.startswith(".")]
    inside = members(archive)
    assert set(inside) == set(original)
    assert event["files"] == len(inside)
    # Links are links, never followed: the link out holds no byte of /etc/passwd.
    assert inside["outside-link"].issym() and inside["outside-link"].linkname == "/etc/passwd"
    assert inside["world-link"].issym() and inside["latest-level"].issym()
    assert inside["private/key.txt"].mode == 0o600 and inside["start.sh"].mode == 0o750
    assert b"root:" not in data and b"root:" not in gzip.decompress(data)

    # The folder changes; a restore (merging) brings back every member as it was.
    (folder / "world" / "level.dat").write_bytes(b"broken")
    (folder / "private" / "key.txt").unlink()
    (folder / "latest-level").unlink()
    as_server(server, folder / "latest-level", b"not a link any more")
    as_server(server, folder / "new-file.txt", b"made after the backup")
    ended = restored(control_plane, server, event)
    assert ended["files"] == len(inside)
    assert ended["links_skipped"] == 1  # the link out of the folder is not made again
    after = tree(folder)
    assert after.pop("new-file.txt")[2] == hashlib.sha256(b"made after the backup").hexdigest()
    assert after == original  # the link out was left in place (merged), not made
    assert not [name for name in os.listdir(folder) if name.startswith(".unpack")]


def test_truncate_empties_the_folder_first_and_merge_keeps_what_is_new(server, control_plane):
    folder = folder_of(server)
    event = made(control_plane, server)
    as_server(server, folder / "new-file.txt", b"new")
    as_server(server, folder / "newdir")
    as_server(server, folder / "newdir" / "inside.txt", b"x")
    (folder / "world").rename(folder / "world-moved")
    as_server(server, folder / "world")
    as_server(server, folder / "world" / "only-now.txt", b"y")
    # A folder where the backup has a file: replaced, with what it holds.
    (folder / "server.properties").unlink()
    as_server(server, folder / "server.properties")
    as_server(server, folder / "server.properties" / "inner", b"z")
    merged = restored(control_plane, server, event)
    assert merged["type"] == "backup_restored"
    after = tree(folder)
    assert "new-file.txt" in after and "newdir/inside.txt" in after
    assert "world/only-now.txt" in after and "world/level.dat" in after  # folders merged
    assert (folder / "server.properties").read_bytes() == b"motd=hi"
    (folder / "outside-link").unlink()
    ended = restored(control_plane, server, event, truncate=True)
    assert ended["type"] == "backup_restored"
    after = tree(folder)
    assert "new-file.txt" not in after and "newdir" not in after and "world-moved" not in after
    assert "world/only-now.txt" not in after and "outside-link" not in after
    assert (folder / "server.properties").read_bytes() == b"motd=hi"
    assert (folder / "world" / "level.dat").read_bytes() == b"level"
    # The console's own files stay where they are (the agent's, not the backup's).
    assert set(os.listdir(folder)) >= RESERVED_NAMES


def test_ignore_patterns_of_the_call_and_of_the_folders_files_leave_entries_out(
    make_server, control_plane
):
    server = make_server(
        install_script=(
            "mkdir -p logs cache/deep world tmp; echo a > logs/latest.log; echo b > debug.log;"
            " echo c > cache/deep/x; echo d > world/level.dat; echo e > secret.txt;"
            " echo f > tmp/t; echo g > keep.log;"
            " printf 'secret.txt\\n# a comment\\n' > .backupignore; printf 'tmp/\\n' > .pteroignore"
        )
    )
    assert server.post("install").status_code == 200
    event = made(control_plane, server, ignore=["*.log", "!keep.log", "cache/"])
    names = set(members(stored(server, event["backup_id"])))
    assert names == {
        "logs",
        "world",
        "world/level.dat",
        "keep.log",
        ".backupignore",
        ".pteroignore",
    }


def test_before_commands_run_first_and_after_commands_last_on_a_running_server(
    server, control_plane
):
    assert server.post("start").status_code == 200
    event = made(
        control_plane,
        server,
        commands={"before": ["say saving", "write 1"], "after": ["say saved"]},
    )
    # The file the before command wrote is in the archive: the commands ran before it was made.
    names = members(stored(server, event["backup_id"]))
    assert [name for name in names if name.startswith("written-")]
    server.wait_for_line("[Server] saved")
    lines = server.logs()
    text = [line for line in lines if "[Server]" in line or "Wrote" in line]
    assert text.index(next(line for line in text if "saving" in line)) < text.index(
        next(line for line in text if "Wrote" in line)
    )
    assert server.get()["status"] == "running"


def test_a_restore_stops_a_running_server_and_starts_it_again(server, control_plane):
    event = made(control_plane, server)
    assert server.post("start").status_code == 200
    (folder_of(server) / "world" / "level.dat").write_bytes(b"broken")
    restored(control_plane, server, event)
    assert (folder_of(server) / "world" / "level.dat").read_bytes() == b"level"
    server.wait_for_status("running", timeout=30)
    logs = "\n".join(server.logs())
    assert "Stopping server" in logs


def test_a_changed_archive_is_refused_and_the_folder_is_left_as_it_was(server, control_plane):
    event = made(control_plane, server)
    folder = folder_of(server)
    (folder / "world" / "level.dat").write_bytes(b"changed since")
    before = tree(folder)
    other = "sha256:" + "0" * 64
    response = restore(server, event["backup_id"], other)
    assert response.status_code == 202
    ended = wait_for_end(control_plane, server, event["backup_id"], 2)
    assert ended["type"] == "backup_restore_failed"
    assert "checksum" in ended["reason"] and "Nothing was restored" in ended["reason"]
    assert tree(folder) == before
    # The archive itself changed on the disk: the same.
    archive = stored(server, event["backup_id"])
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    archive.write_bytes(bytes(data))
    assert restore(server, event["backup_id"], event["checksum"]).status_code == 202
    ended = wait_for_end(control_plane, server, event["backup_id"], 3)
    assert ended["type"] == "backup_restore_failed"
    assert tree(folder) == before


# -- the calls' refusals, status, one at a time -------------------------------------------------


def test_bad_calls_are_refused_with_the_protocols_codes(server, agent):
    def post(action: str, body: Any) -> httpx.Response:
        return server.post(action, body)

    assert error_code(post("backups", {"storage": NODE})) == "validation_failed"
    bad = [
        {"backup_id": "nope", "storage": NODE},
        {"backup_id": new_id(), "storage": {"kind": "ftp"}},
        {"backup_id": new_id(), "storage": {"kind": "s3", "endpoint": "file:///x"}},
        {"backup_id": new_id(), "storage": NODE, "ignore": ["x"] * 201},
        {"backup_id": new_id(), "storage": NODE, "ignore": "*.log"},
        {"backup_id": new_id(), "storage": NODE, "commands": {"before": ["a\nb"]}},
        {"backup_id": new_id(), "storage": NODE, "commands": ["save-all"]},
    ]
    for body in bad:
        response = post("backups", body)
        assert response.status_code == 400, (body, response.text)
        assert error_code(response) == "validation_failed"
    with agent.api() as api:
        response = api.post(server.path("backups"), content=b"{nope")
        assert error_code(response) == "invalid_json"
        unknown = api.post(
            "/api/servers/srv_unknown000/backups", json={"backup_id": new_id(), "storage": NODE}
        )
        assert unknown.status_code == 404 and error_code(unknown) == "unknown_server"
        assert api.get(server.path(f"backups/{new_id()}")).status_code == 404
    response = restore(server, new_id(), "sha256:" + "a" * 64)
    assert response.status_code == 404  # not stored on this node
    response = restore(server, new_id(), "md5:abc")
    assert error_code(response) == "validation_failed"
    response = server.post(
        f"backups/{new_id()}/restore",
        {"storage": NODE, "checksum": "sha256:" + "a" * 64, "truncate": "yes"},
    )
    assert error_code(response) == "validation_failed"


def test_one_backup_or_restore_at_a_time_with_its_progress(server, control_plane, agent):
    assert server.post("start").status_code == 200
    first = made(control_plane, server)
    # The before commands' quiet second keeps the next backup running long enough to look.
    backup_id = new_id()
    slow = {"before": ["say one", "say two"]}
    assert back_up(server, backup_id, commands=slow).status_code == 202
    with agent.api() as api:
        status = api.get(server.path(f"backups/{backup_id}")).json()
    assert status == {
        "backup_id": backup_id,
        "operation": "backup",
        "status": "running",
        "bytes": status["bytes"],
        "files": status["files"],
    }
    again = back_up(server, new_id())
    assert again.status_code == 409 and error_code(again) == "conflict"
    busy = restore(server, first["backup_id"], first["checksum"])
    assert busy.status_code == 409 and error_code(busy) == "conflict"
    with agent.api() as api:
        deleting = api.request(
            "DELETE", server.path(f"backups/{backup_id}"), json={"storage": NODE}
        )
    assert deleting.status_code == 409
    assert deleting.json()["error"]["message"] == "The backup is being made: wait for it to end."
    assert event_of(control_plane, server, backup_id)["type"] == "backup_completed"
    with agent.api() as api:
        assert api.get(server.path(f"backups/{backup_id}")).status_code == 404
    assert back_up(server, backup_id).status_code == 409  # that id is stored already


def test_a_start_during_a_restore_is_refused(make_server, control_plane):
    server = make_server(install_script="head -c 40000000 /dev/urandom > big.bin")
    assert server.post("install").status_code == 200
    event = made(control_plane, server)
    response = restore(server, event["backup_id"], event["checksum"])
    assert response.status_code == 202
    start = server.post("start")
    ended = wait_for_end(control_plane, server, event["backup_id"], 2)
    assert ended["type"] == "backup_restored"
    # Unless the restore had ended already, the start was refused.
    if start.status_code != 200:
        assert start.status_code == 409 and error_code(start) == "invalid_state"
        assert "restoring a backup" in start.json()["error"]["message"]


# -- download and deletion ----------------------------------------------------------------------


def test_a_node_backup_is_downloaded_with_ranges_through_its_signed_url(
    server, control_plane, agent, backup_token, make_server
):
    event = made(control_plane, server)
    backup_id = event["backup_id"]
    data = stored(server, backup_id).read_bytes()
    url = server.path(f"backups/{backup_id}/download")
    token = backup_token(server.id, backup_id)
    with httpx.Client(base_url=agent.url, timeout=30) as client:
        whole = client.get(url, params={"token": token})
        assert whole.status_code == 200, whole.text
        assert whole.content == data
        assert whole.headers["Content-Disposition"] == (
            f"attachment; filename*=UTF-8''{backup_id}.tar.gz"
        )
        assert whole.headers["Accept-Ranges"] == "bytes"
        part = client.get(url, params={"token": token}, headers={"Range": "bytes=10-19"})
        assert part.status_code == 206 and part.content == data[10:20]
        assert part.headers["Content-Range"] == f"bytes 10-19/{len(data)}"
        head = client.head(url, params={"token": token})
        assert head.status_code == 200 and int(head.headers["Content-Length"]) == len(data)
        past = client.get(url, params={"token": token}, headers={"Range": f"bytes={len(data)}-"})
        assert past.status_code == 416
        # Without the token, with the node token, with another backup's, another server's,
        # or a file download's: refused.
        assert client.get(url).status_code == 401
        refused = [
            backup_token(server.id, new_id()),
            backup_token(server.id, backup_id, permission="files.download"),
        ]
        for other in refused:
            response = client.get(url, params={"token": other})
            assert response.status_code == 401 and error_code(response) == "invalid_token"
        neighbour = make_server()
        foreign = client.get(
            neighbour.path(f"backups/{backup_id}/download"),
            params={"token": backup_token(neighbour.id, backup_id)},
        )
        assert foreign.status_code == 404  # not the neighbour's backup
        response = client.get(url, params={"token": backup_token(neighbour.id, backup_id)})
        assert response.status_code == 401


def test_deleting_a_backup_and_the_server_removes_what_is_stored(make_server, control_plane, agent):
    server = make_server(install_script="echo x > a.txt")
    assert server.post("install").status_code == 200
    first, second = made(control_plane, server), made(control_plane, server)
    with agent.api() as api:
        path = server.path(f"backups/{first['backup_id']}")
        assert api.request("DELETE", path, json={"storage": NODE}).status_code == 204
        assert not stored(server, first["backup_id"]).exists()
        assert api.request("DELETE", path, json={"storage": NODE}).status_code == 204
        assert stored(server, second["backup_id"]).exists()
        assert api.delete(server.path()).status_code == 204
    assert not stored(server, second["backup_id"]).parent.exists()


# -- an agent restart ---------------------------------------------------------------------------


def test_an_agent_restart_reports_the_backup_it_lost(
    agents, make_server, control_plane, console_key, test_root
):
    agent = agents.start()
    with agent.api() as api:
        api.post("/api/sync", json={"console_public_key": public_pem(console_key), "servers": []})
    server = make_server(agent)
    assert server.post("start").status_code == 200
    backup_id = new_id()
    response = back_up(server, backup_id, commands={"before": ["say hold on"]})
    assert response.status_code == 202
    wait_until(lambda: agent.state()["backups"].get(server.id), 5, agent.state)
    agent.process.kill()
    agent.process.wait()
    again = agents.start(data_root=agent.data_root)
    server.agent = again
    event = event_of(control_plane, server, backup_id)
    assert event["type"] == "backup_failed"
    assert event["reason"] == "the agent restarted"
    assert again.state()["backups"] == {}
    leftovers = list((again.data_root / "backups").rglob(".*"))
    assert leftovers == []


def test_a_tar_member_count_over_the_limit_fails_the_backup_and_stores_nothing(
    agents, make_server, control_plane, console_key
):
    agent = agents.start(AGENT_MAX_FILES="5")
    with agent.api() as api:
        api.post("/api/sync", json={"console_public_key": public_pem(console_key), "servers": []})
    server = make_server(agent, install_script="for i in 1 2 3 4 5 6 7; do echo $i > f$i; done")
    assert server.post("install").status_code == 200
    backup_id = new_id()
    assert back_up(server, backup_id).status_code == 202
    event = event_of(control_plane, server, backup_id)
    assert event["type"] == "backup_failed"
    assert "more than 5" in event["reason"]
    assert os.listdir(agent.data_root / "backups" / server.id) == []


# -- the settings ---------------------------------------------------------------------------------


def test_the_backup_settings_have_defaults_and_bounds():
    assert (config().backup_part_mb, config().backup_gzip_level) == (16, 6)
    given = config(AGENT_BACKUP_PART_MB="5", AGENT_BACKUP_GZIP_LEVEL="1")
    assert (given.backup_part_mb, given.backup_gzip_level) == (5, 1)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AGENT_BACKUP_PART_MB", "4"),  # S3 refuses parts under 5 MiB
        ("AGENT_BACKUP_PART_MB", "5121"),
        ("AGENT_BACKUP_PART_MB", "16M"),
        ("AGENT_BACKUP_GZIP_LEVEL", "0"),
        ("AGENT_BACKUP_GZIP_LEVEL", "10"),
        ("AGENT_BACKUP_GZIP_LEVEL", "best"),
    ],
)
def test_a_bad_backup_setting_stops_the_agent(variable, value):
    with pytest.raises(ConfigError, match=variable):
        config(**{variable: value})


def test_a_server_that_installs_is_neither_backed_up_nor_restored(make_server):
    server = make_server(install_script="sleep 3")
    installing = threading.Thread(target=server.post, args=("install",))
    installing.start()
    try:
        server.wait_for_status("installing")
        response = back_up(server, new_id())
        assert response.status_code == 409 and error_code(response) == "invalid_state"
    finally:
        installing.join()


def test_an_agent_restart_reports_the_restore_it_lost_and_removes_its_hidden_folder(
    agents, make_server, control_plane, console_key
):
    agent = agents.start()
    with agent.api() as api:
        api.post("/api/sync", json={"console_public_key": public_pem(console_key), "servers": []})
    server = installed(
        make_server(
            agent,
            install_script=(
                "mkdir many; for i in $(seq 1 3000); do echo $i > many/f$i; done;"
                " head -c 30000000 /dev/urandom > big.bin"
            ),
        )
    )
    event = made(control_plane, server)
    assert restore(server, event["backup_id"], event["checksum"]).status_code == 202
    assert agent.state()["backups"][server.id]["operation"] == "restore"
    agent.process.kill()
    agent.process.wait()
    again = agents.start(data_root=agent.data_root)
    server.agent = again
    ended = wait_for_end(control_plane, server, event["backup_id"], 2)
    assert ended["type"] == "backup_restore_failed"
    assert ended["reason"] == "the agent restarted"
    assert not [name for name in os.listdir(folder_of(server)) if name.startswith(".unpack.")]
    # The server may be started again: nothing of the restore holds it.
    assert server.post("start").status_code == 200

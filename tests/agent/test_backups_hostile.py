"""The hostile-tenant test extended to backups (issue 30): A plants links to B's folder, to
/etc/shadow, up the tree, a chain of links out and a pipe; A's backup holds them as links and
never a byte of what they point at, and its restore makes none of them outside. Crafted
archives put in A's storage (their checksums right: the storage itself was tampered with) write
nothing outside A's folder. B's backup ids are nobody else's: A's calls and A's download tokens
with B's ids find nothing, and delete nothing of B's. B's folder and /etc/shadow stay unchanged
to the byte."""

import gzip
import hashlib
import tarfile

import httpx

from tests.agent.test_backups import (
    NODE,
    back_up,
    backup_token,  # noqa: F401 - a fixture
    event_of,
    folder_of,
    installed,
    members,
    new_id,
    restore,
    restored,
    stored,
    wait_for_end,
)
from tests.agent.test_files_hostile import (
    UNNAMED,
    VICTIM_NAME,
    VICTIM_SECRET,
    _member,
    _secrets_of_the_node,
    _shadow,
    _tar,
    _tree,
)
from tests.agent.test_isolation import pytestmark  # noqa: F401 - its skip: a root agent


def test_no_backup_or_restore_of_a_hostile_tenant_reaches_outside_its_server(
    make_server,
    agent,
    control_plane,
    backup_token,  # noqa: F811 - the fixture imported above
):
    assert agent.api().get("/api/system").json()["isolation"]["mode"] == "sandbox"
    victim = installed(
        make_server(
            install_script=(
                f"printf '{VICTIM_SECRET}' > {VICTIM_NAME}; mkdir -p world;"
                f" printf '{VICTIM_SECRET} world' > world/level.dat; echo x > world/{UNNAMED}"
            )
        )
    )
    victim_dir = folder_of(victim)
    attacker = installed(
        make_server(
            install_script=(
                "printf 'mine' > own.txt; mkdir -p sub;"
                f" ln -s {victim_dir} link-to-b; ln -s /etc/shadow link-to-shadow; ln -s .. up;"
                f" ln -s hop2 hop1; ln -s sub/hop3 hop2; ln -s ../../{victim.id} sub/hop3;"
                " mkfifo fifo"
            )
        )
    )
    attacker_dir = folder_of(attacker)
    servers_dir = attacker_dir.parent
    outside_before = sorted(path.name for path in servers_dir.iterdir())
    victim_event = event_of(control_plane, victim, _made(victim))
    assert victim_event["type"] == "backup_completed"
    before, shadow_before = _tree(victim_dir), _shadow()

    # A's backup: the links as links, the pipe left out, nothing of B or /etc/shadow in it.
    event = event_of(control_plane, attacker, _made(attacker, ignore=["!link-to-b"]))
    assert event["type"] == "backup_completed", event
    archive = stored(attacker, event["backup_id"])
    inside = members(archive)
    assert inside["link-to-b"].issym() and inside["link-to-b"].linkname == str(victim_dir)
    assert inside["link-to-shadow"].linkname == "/etc/shadow"
    assert inside["up"].issym() and inside["sub/hop3"].issym()
    assert "fifo" not in inside
    assert not [name for name in inside if name.startswith(("link-to-b/", "up/", "hop1/"))]
    raw = gzip.decompress(archive.read_bytes())
    for secret in _secrets_of_the_node():
        assert secret not in raw

    # Its restore (folder emptied first) makes none of the links out again, writes nothing
    # outside, and follows none of them.
    ended = restored(control_plane, attacker, event, truncate=True)
    # link-to-b, link-to-shadow, up and the chain's last hop (sub/hop3 → ../../<B>).
    assert ended["links_skipped"] == 4
    assert (attacker_dir / "own.txt").read_bytes() == b"mine"

    # Crafted archives in A's storage, each with its right checksum.
    # A link out is left out (the members after it are made inside A's folder, as folders
    # and files of A's); a name or a hard link out, or a pipe, refuses the whole archive.
    failed, made = "backup_restore_failed", "backup_restored"
    crafted = [
        (failed, [(_member("../escape.txt"), b"out")]),
        (failed, [(_member("/abs-escape.txt"), b"out")]),
        (failed, [(_member("sub/../../escape.txt"), b"out")]),
        (
            made,
            [
                (_member("evil", tarfile.SYMTYPE, str(victim_dir)), None),
                (_member("evil/owned.txt"), b"owned"),
            ],
        ),
        (
            made,
            [
                (_member("rel", tarfile.SYMTYPE, f"../{victim.id}"), None),
                (_member(f"rel/{VICTIM_NAME}"), b"owned"),
            ],
        ),
        (failed, [(_member("hard", tarfile.LNKTYPE, "/etc/shadow"), None)]),
        (failed, [(_member("hard", tarfile.LNKTYPE, f"../{victim.id}/{VICTIM_NAME}"), None)]),
        (failed, [(_member("pipe", tarfile.FIFOTYPE), None)]),
        (made, [(_member(".console.log"), b"forged console"), (_member("ok.txt"), b"ok")]),
    ]
    for expected, entries in crafted:
        backup_id = new_id()
        data = gzip.compress(_tar(*entries))
        path = stored(attacker, backup_id)
        path.write_bytes(data)
        checksum = "sha256:" + hashlib.sha256(data).hexdigest()
        assert restore(attacker, backup_id, checksum).status_code == 202
        result = wait_for_end(control_plane, attacker, backup_id, 1)
        assert result["type"] == expected, (entries, result)
        assert _tree(victim_dir) == before, entries
        assert _shadow() == shadow_before
        assert sorted(path.name for path in servers_dir.iterdir()) == outside_before
        assert not (servers_dir.parent / "escape.txt").exists()
        assert not (servers_dir / "escape.txt").exists()
    # What stayed inside A's folder is A's own, made as A's user.
    uid = agent.state()["uids"][attacker.id]
    assert (attacker_dir / "evil" / "owned.txt").stat().st_uid == uid
    assert not (attacker_dir / "evil").is_symlink()
    assert b"forged" not in (attacker_dir / ".console.log").read_bytes()
    assert (attacker_dir / "ok.txt").read_bytes() == b"ok"

    # B's backup is nobody else's: A's calls with its id find and delete nothing of B's.
    other = victim_event["backup_id"]
    missing = restore(attacker, other, victim_event["checksum"])
    assert missing.status_code == 404
    with agent.api() as api:
        assert api.get(attacker.path(f"backups/{other}")).status_code == 404
        deleted = api.request("DELETE", attacker.path(f"backups/{other}"), json={"storage": NODE})
        assert deleted.status_code == 204
    assert stored(victim, other).exists()
    with httpx.Client(base_url=agent.url, timeout=30) as client:
        own_url = client.get(
            attacker.path(f"backups/{other}/download"),
            params={"token": backup_token(attacker.id, other)},
        )
        assert own_url.status_code == 404
        their_url = client.get(
            victim.path(f"backups/{other}/download"),
            params={"token": backup_token(attacker.id, other)},
        )
        assert their_url.status_code == 401
        for response in (own_url, their_url):
            assert VICTIM_SECRET.encode() not in response.content
    assert _tree(victim_dir) == before
    assert _shadow() == shadow_before


def _made(server, **body) -> str:
    backup_id = new_id()
    assert back_up(server, backup_id, **body).status_code == 202
    return backup_id

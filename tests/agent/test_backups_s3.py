"""Backups in S3 on a real agent and a real S3 server (moto's server mode, tests/s3.py): the
archive goes up in parts of AGENT_BACKUP_PART_MB (5 here, S3's least), comes back whole and
checked, is deleted; a failed backup leaves neither an object nor an unfinished upload; the
agent's memory stays flat while a few hundred MB go through it."""

import hashlib
import os
import secrets
import threading
import time

import pytest

from tests.agent.conftest import gameserver_spec, public_pem
from tests.agent.harness import free_port
from tests.agent.test_backups import (
    back_up,
    event_of,
    folder_of,
    installed,
    new_id,
    restore,
    restored,
    tree,
    wait_for_end,
)

PART_MB = 5
MAX_FILES = 60


def roomy(make_server, agent, disk_mb: int, install_script: str):
    """A game server installed on ``agent`` with room for ``disk_mb`` on its disk."""
    spec = gameserver_spec("srv_later", free_port(), install_script=install_script)
    spec["limits"]["disk_mb"] = disk_mb
    return installed(make_server(agent, spec=spec))


@pytest.fixture
def s3_agent(agents, console_key):
    agent = agents.start(AGENT_BACKUP_PART_MB=str(PART_MB), AGENT_MAX_FILES=str(MAX_FILES))
    with agent.api() as api:
        api.post("/api/sync", json={"console_public_key": public_pem(console_key), "servers": []})
    return agent


def test_a_backup_goes_to_s3_in_parts_and_is_restored_from_there(
    s3_agent, make_server, control_plane, s3_server
):
    bucket = s3_server.new_bucket()
    storage = s3_server.storage(bucket)
    # 12 MB that gzip cannot shrink: three parts of 5 MB at least.
    server = roomy(
        make_server,
        s3_agent,
        500,
        "head -c 12000000 /dev/urandom > world.bin; mkdir -p plugins;"
        " echo cfg > plugins/a.yml; chmod 600 plugins/a.yml; ln -s plugins/a.yml cfg-link",
    )
    folder = folder_of(server)
    original = tree(folder)
    backup_id = new_id()
    assert back_up(server, backup_id, storage).status_code == 202
    event = event_of(control_plane, server, backup_id)
    assert event["type"] == "backup_completed", event
    key = f"backups/{server.id}/{backup_id}.tar.gz"
    assert s3_server.keys(bucket) == [key]
    client = s3_server.client()
    data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert event["size"] == len(data) > 12_000_000
    assert event["checksum"] == "sha256:" + hashlib.sha256(data).hexdigest()
    parts = client.head_object(Bucket=bucket, Key=key, PartNumber=1)["PartsCount"]
    assert parts == 3
    assert s3_server.multipart_uploads(bucket) == []
    # Nothing of it on the node.
    assert not (s3_agent.data_root / "backups" / server.id).exists() or not os.listdir(
        s3_agent.data_root / "backups" / server.id
    )

    (folder / "world.bin").write_bytes(b"lost")
    (folder / "plugins" / "a.yml").unlink()
    ended = restored(control_plane, server, event, storage, truncate=True)
    assert ended["files"] == event["files"]
    assert tree(folder) == original

    # A checksum that is not the object's: refused, nothing changed.
    (folder / "world.bin").write_bytes(b"changed again")
    before = tree(folder)
    assert restore(server, backup_id, "sha256:" + "1" * 64, storage).status_code == 202
    failed = wait_for_end(control_plane, server, backup_id, 3)
    assert failed["type"] == "backup_restore_failed" and "checksum" in failed["reason"]
    assert tree(folder) == before

    with s3_agent.api() as api:
        path = server.path(f"backups/{backup_id}")
        assert api.request("DELETE", path, json={"storage": storage}).status_code == 204
        assert api.request("DELETE", path, json={"storage": storage}).status_code == 204
    assert s3_server.keys(bucket) == []
    # A backup no longer there fails its restore with a sentence.
    assert restore(server, backup_id, event["checksum"], storage).status_code == 202
    gone = wait_for_end(control_plane, server, backup_id, 4)
    assert gone["type"] == "backup_restore_failed"
    assert "not in its storage" in gone["reason"]


def test_a_failed_s3_backup_leaves_no_object_and_no_unfinished_upload(
    s3_agent, make_server, control_plane, s3_server
):
    bucket = s3_server.new_bucket()
    # A large file first (a part or two go up), then more files than AGENT_MAX_FILES.
    server = installed(
        make_server(
            s3_agent,
            install_script=(
                "head -c 11000000 /dev/urandom > a-big.bin; mkdir many;"
                f" for i in $(seq 1 {MAX_FILES + 5}); do echo $i > many/f$i; done"
            ),
        )
    )
    backup_id = new_id()
    assert back_up(server, backup_id, s3_server.storage(bucket)).status_code == 202
    event = event_of(control_plane, server, backup_id)
    assert event["type"] == "backup_failed"
    assert f"more than {MAX_FILES}" in event["reason"]
    assert s3_server.keys(bucket) == []
    assert s3_server.multipart_uploads(bucket) == []

    # A bucket that does not exist, and an S3 that does not answer: failed with a sentence
    # that names no credential.
    for storage in (
        s3_server.storage("no-such-bucket-" + secrets.token_hex(4)),
        s3_server.storage(bucket) | {"endpoint": "http://127.0.0.1:9"},
    ):
        backup_id = new_id()
        assert back_up(server, backup_id, storage).status_code == 202
        failed = event_of(control_plane, server, backup_id, timeout=120)
        assert failed["type"] == "backup_failed"
        assert "S3" in failed["reason"]
        assert storage["secret_access_key"] not in failed["reason"]
    assert storage["secret_access_key"] not in s3_agent.log()


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_the_agents_memory_stays_flat_while_a_few_hundred_mb_are_backed_up_and_restored(
    s3_agent, make_server, control_plane, s3_server
):
    bucket = s3_server.new_bucket()
    storage = s3_server.storage(bucket)
    server = roomy(make_server, s3_agent, 1000, "head -c 300000000 /dev/urandom > big.bin")
    pid = s3_agent.process.pid
    start = _rss_kib(pid)
    peak = [start]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_kib(pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        backup_id = new_id()
        assert back_up(server, backup_id, storage).status_code == 202
        event = event_of(control_plane, server, backup_id, timeout=300)
        assert event["type"] == "backup_completed", event
        restored(control_plane, server, event, storage, truncate=True)
    finally:
        stop.set()
        watcher.join()
    # Queues of 8 MiB each way, three 5 MiB parts, boto3's buffers: far below the 300 MB.
    assert peak[0] - start < 120 * 1024, (start, peak[0])

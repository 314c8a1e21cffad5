"""Backups through the public API with a real agent: the control plane (Django's live server)
calls the agent, which archives a real server's folder as that server's user into the node's
storage or moto's S3 server, and reports back; the archive is downloaded through the signed
(or presigned) address, checked against its checksum, restored over a changed folder, and
deleted. Another account sees none of it."""

import hashlib
import io
import tarfile

import httpx
import pytest

from accounts.actors import SYSTEM
from events.models import Event
from servers.models import Backup, Server
from servers.services.backups import node_backup_storage_set
from tests.agent.loop import wait_for
from tests.agent.test_control_plane import create_server
from tests.envelopes import error_of
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server(node_agent, owner_api) -> Server:
    server = create_server(owner_api)
    run_worker()  # create (the spec) and install, on the agent
    server.refresh_from_db()
    assert server.status == "stopped", server.status_reason
    return server


def write(api, server, path: str, content: str) -> None:
    answer = api.put(
        f"/v1/servers/{server.id}/files/contents",
        {"path": path, "content": content},
        format="json",
    )
    assert answer.status_code == 200, answer.content


def read(api, server, path: str):
    return api.get(f"/v1/servers/{server.id}/files/contents?path={path}")


def settled(backup_id: str, field: str = "status") -> Backup:
    def done():
        backup = Backup.objects.get(pk=backup_id)
        return backup if getattr(backup, field) not in ("running", "") else None

    return wait_for(done, timeout=60, what=f"the {field} of {backup_id}")


def members(archive: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return sorted(member.name.lstrip("./") for member in tar.getmembers() if member.isfile())


def back_up_restore_and_delete(api, outsider_api, server: Server) -> str:
    """The whole round on whatever storage the node has; the backup's id."""
    base = f"/v1/servers/{server.id}"
    for folder in ("/world", "/logs"):
        api.post(f"{base}/files/folders", {"path": folder}, format="json")
    write(api, server, "/world/level.dat", "the world, version one\n")
    write(api, server, "/logs/latest.log", "noise\n")

    made = api.post(f"{base}/backups", {"name": "Before", "ignore": ["logs/"]}, format="json")
    assert made.status_code == 202, made.content
    backup_id = made.json()["data"]["backup"]["id"]
    backup = settled(backup_id)
    assert backup.status == "completed", backup.error
    assert backup.checksum.startswith("sha256:") and backup.size > 0 and backup.files >= 1
    assert Event.objects.filter(type="backup.completed", object_id=backup_id).count() == 1

    listed = api.get(f"{base}/backups?status=completed").json()["data"]
    assert [b["id"] for b in listed["backups"]] == [backup_id]
    shown = api.get(f"{base}/backups/{backup_id}").json()["data"]["backup"]
    assert shown["progress"] is None and shown["checksum"] == backup.checksum
    error_of(outsider_api.get(f"{base}/backups/{backup_id}"), 404, "not_found")

    # Downloaded through the address, with no API key: the archive the checksum names.
    transfer = api.post(f"{base}/backups/{backup_id}/download-url").json()["data"]["transfer"]
    archive = httpx.get(transfer["url"], timeout=30)
    assert archive.status_code == 200, archive.text[:500]
    assert f"sha256:{hashlib.sha256(archive.content).hexdigest()}" == backup.checksum
    assert len(archive.content) == backup.size
    names = members(archive.content)
    assert "world/level.dat" in names and not any(name.startswith("logs/") for name in names)

    # Changed since, and a file added: a truncating restore brings the folder back.
    write(api, server, "/world/level.dat", "the world, ruined\n")
    write(api, server, "/world/new.dat", "made after the backup\n")
    restored = api.post(f"{base}/backups/{backup_id}/restore", {"truncate": True}, format="json")
    assert restored.status_code == 202, restored.content
    backup = settled(backup_id, "restore_status")
    assert backup.restore_status == "completed", backup.restore_error
    assert read(api, server, "/world/level.dat").json()["data"]["file"]["content"] == (
        "the world, version one\n"
    )
    error_of(read(api, server, "/world/new.dat"), 404, "not_found")
    assert Event.objects.filter(type="backup.restored", object_id=backup_id).exists()

    # Locked, it stays; unlocked, it goes, and its address finds nothing any more.
    api.patch(f"{base}/backups/{backup_id}", {"locked": True}, format="json")
    error_of(api.delete(f"{base}/backups/{backup_id}"), 409, "locked")
    api.patch(f"{base}/backups/{backup_id}", {"locked": False}, format="json")
    assert api.delete(f"{base}/backups/{backup_id}").json()["data"] == {
        "id": backup_id,
        "deleted": True,
    }
    assert httpx.get(transfer["url"], timeout=30).status_code in (403, 404)
    error_of(api.get(f"{base}/backups/{backup_id}"), 404, "not_found")
    return backup_id


def test_a_backup_on_the_node_round_trip(server, owner_api, outsider_api):
    back_up_restore_and_delete(owner_api, outsider_api, server)


def test_a_backup_in_s3_round_trip(server, owner_api, outsider_api, node_agent, s3_server):
    node, _ = node_agent
    bucket = s3_server.new_bucket()
    storage = s3_server.storage(bucket, prefix="cp/")
    node_backup_storage_set(
        node=node,
        kind="s3",
        endpoint=storage["endpoint"],
        region=storage["region"],
        bucket=bucket,
        prefix="cp/",
        access_key_id=storage["access_key_id"],
        secret_access_key=storage["secret_access_key"],
        actor=SYSTEM,
    )
    made = owner_api.post(f"/v1/servers/{server.id}/backups", {}, format="json")
    first = made.json()["data"]["backup"]["id"]
    assert made.json()["data"]["backup"]["storage"] == "s3"
    assert settled(first).status == "completed"
    assert s3_server.keys(bucket) == [f"cp/{server.id}/{first}.tar.gz"]
    owner_api.delete(f"/v1/servers/{server.id}/backups/{first}")
    assert s3_server.keys(bucket) == []
    backup_id = back_up_restore_and_delete(owner_api, outsider_api, server)
    assert Backup.objects.filter(pk=backup_id).count() == 0
    assert s3_server.keys(bucket) == []

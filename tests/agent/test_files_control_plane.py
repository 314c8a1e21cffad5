"""The file manager through the public API: the control plane (Django's live server) calls a real
agent, which works on a real server's folder as that server's user. Each operation once, with
the errors the agent answers turned into the contract's, and the activity it records."""

import httpx
import pytest

from events.models import Event
from servers.models import Server
from tests.agent.loop import wait_for
from tests.agent.test_control_plane import create_server
from tests.envelopes import error_of, field_errors
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server(node_agent, owner_api) -> Server:
    server = create_server(owner_api)
    run_worker()  # create (the spec) and install, on the agent
    server.refresh_from_db()
    assert server.status == "stopped", server.status_reason
    return server


def test_a_customer_edits_files_through_the_api(server, owner_api, outsider_api):
    base = f"/v1/servers/{server.id}/files"
    listed = owner_api.get(f"{base}?path=/").json()["data"]
    assert listed["path"] == "/" and listed["pagination"]["page"] == 1
    # Pages as every list has them: pagination and the Link header.
    first = owner_api.get(f"{base}?path=/&per_page=1")
    assert first.json()["data"]["pagination"]["total_pages"] == listed["pagination"]["total"]
    assert 'rel="next"' in first["Link"] and "page=2" in first["Link"]
    assert all(entry["path"] == f"/{entry['name']}" for entry in listed["files"])

    answer = owner_api.post(f"{base}/folders", {"path": "/config"}, format="json")
    assert answer.status_code == 201, answer.content
    folder = answer.json()["data"]["file"]
    assert folder["type"] == "folder" and folder["path"] == "/config"
    assert folder["modified_at"].endswith("Z") and len(folder["modified_at"]) == 20

    written = owner_api.put(
        f"{base}/contents",
        {"path": "/config/server.properties", "content": "motd=Hello\n"},
        format="json",
    )
    assert written.status_code == 200, written.content
    version = written.json()["data"]["file"]["version"]
    assert written["ETag"] == f'"{version}"'

    read = owner_api.get(f"{base}/contents?path=/config/server.properties")
    assert read.json()["data"]["file"] == {
        "path": "/config/server.properties",
        "content": "motd=Hello\n",
        "encoding": "utf-8",
        "version": version,
    }
    assert read["ETag"] == f'"{version}"'

    # Two editors: the second save, based on the old version, is refused.
    first = owner_api.put(
        f"{base}/contents",
        {"path": "/config/server.properties", "content": "motd=First\n"},
        format="json",
        HTTP_IF_MATCH=f'"{version}"',
    )
    assert first.status_code == 200, first.content
    second = owner_api.put(
        f"{base}/contents",
        {"path": "/config/server.properties", "content": "motd=Second\n"},
        format="json",
        HTTP_IF_MATCH=f'"{version}"',
    )
    error_of(second, 412, "version_mismatch")
    assert (
        owner_api.get(f"{base}/contents?path=/config/server.properties").json()["data"]["file"][
            "content"
        ]
        == "motd=First\n"
    )

    copied = owner_api.post(
        f"{base}/copy",
        {"from": "/config/server.properties", "to": "/config/backup.properties"},
        format="json",
    )
    assert copied.status_code == 201, copied.content
    error_of(
        owner_api.post(
            f"{base}/rename",
            {"from": "/config/backup.properties", "to": "/config/server.properties"},
            format="json",
        ),
        409,
        "conflict",
    )
    moved = owner_api.post(
        f"{base}/rename",
        {"from": "/config/backup.properties", "to": "/old.properties"},
        format="json",
    )
    assert moved.json()["data"]["file"]["path"] == "/old.properties"

    changed = owner_api.post(
        f"{base}/chmod", {"path": "/old.properties", "mode": "600"}, format="json"
    )
    assert changed.json()["data"]["file"]["mode"] == "0600"
    stat = owner_api.get(f"{base}/stat?path=/old.properties").json()["data"]["file"]
    assert stat["mode"] == "0600" and stat["version"]

    found = owner_api.get(f"{base}/search?query=PROPERTIES").json()["data"]["search"]
    paths = {entry["path"] for entry in found["files"]}
    assert {"/config/server.properties", "/old.properties"} <= paths
    assert all("properties" in path for path in paths)
    assert found["truncated"] is False

    page = owner_api.get(f"{base}?path=/config&ordering=-name&per_page=1&page=1").json()["data"]
    assert [entry["name"] for entry in page["files"]] == ["server.properties"]
    assert page["pagination"] == {"page": 1, "per_page": 1, "total": 1, "total_pages": 1}

    deleted = owner_api.post(
        f"{base}/delete", {"paths": ["/old.properties", "/config"]}, format="json"
    )
    assert deleted.json()["data"]["files"]["deleted"] == ["/old.properties", "/config"]
    event = Event.objects.get(type="server.files.deleted", related_id=server.id)
    assert event.data["object"]["paths"] == ["/old.properties", "/config"]
    assert event.data["object"]["server_id"] == server.id
    activity = owner_api.get(f"/v1/servers/{server.id}/activity").json()["data"]["events"]
    assert "server.files.deleted" in [item["type"] for item in activity]

    error_of(owner_api.get(f"{base}/contents?path=/config/server.properties"), 404, "not_found")
    # Someone else's server is not there at all; the node is never asked.
    error_of(outsider_api.get(f"{base}?path=/"), 404, "not_found")


def test_the_kernels_refusals_become_the_contracts_errors(server, node_agent, owner_api):
    _, agent = node_agent
    base = f"/v1/servers/{server.id}/files"
    for path in ("/../../etc", "/.."):
        answer = owner_api.get(f"{base}?path={path}")
        assert field_errors(answer) == [("path", "outside_server")]
    owner_api.post(f"{base}/folders", {"path": "/plugins"}, format="json")
    answer = owner_api.post(f"{base}/rename", {"from": "/plugins", "to": "/../x"}, format="json")
    assert field_errors(answer) == [("to", "outside_server")]
    # A link the server's own process made, pointing out of its folder: listed, never followed.
    (agent.data_root / "servers" / server.id / "escape").symlink_to("/etc/passwd")
    listed = owner_api.get(f"{base}?path=/").json()["data"]["files"]
    link = next(entry for entry in listed if entry["name"] == "escape")
    assert link["type"] == "link" and link["link_target"] == "/etc/passwd"
    answer = owner_api.get(f"{base}/contents?path=/escape")
    assert field_errors(answer) == [("path", "outside_server")]
    error_of(owner_api.get(f"{base}/contents?path=/plugins"), 400, "validation_failed")
    error_of(owner_api.get(f"{base}?path=/nowhere"), 404, "not_found")


def test_a_file_goes_up_and_down_through_signed_addresses(server, node_agent, owner, owner_api):
    """The control plane signs, the agent checks and streams: in two chunks up (the second
    after asking where to resume), whole and by range down, and the upload in the activity."""
    base = f"/v1/servers/{server.id}/files"
    data = bytes(range(256)) * 4096  # 1 MiB
    answer = owner_api.post(f"{base}/upload-url", {"path": "/world/level.dat"}, format="json")
    error_of(answer, 404, "not_found")  # its folder does not exist yet
    owner_api.post(f"{base}/folders", {"path": "/world"}, format="json")
    error_of(
        owner_api.post(f"{base}/upload-url", {"path": "/world"}, format="json"), 409, "conflict"
    )
    answer = owner_api.post(f"{base}/upload-url", {"path": "/world/level.dat"}, format="json")
    assert answer.status_code == 200, answer.content
    transfer = answer.json()["data"]["transfer"]
    assert transfer["method"] == "PUT" and transfer["path"] == "/world/level.dat"
    half = len(data) // 2
    with httpx.Client(timeout=30) as client:
        first = client.put(
            transfer["url"],
            content=data[:half],
            headers={"Content-Range": f"bytes 0-{half - 1}/{len(data)}"},
        )
        assert first.status_code == 202, first.text
        offset = int(client.head(transfer["url"]).headers["Upload-Offset"])
        assert offset == half
        rest = client.put(
            transfer["url"],
            content=data[offset:],
            headers={"Content-Range": f"bytes {offset}-{len(data) - 1}/{len(data)}"},
        )
        assert rest.status_code == 201, rest.text

        listed = owner_api.get(f"{base}?path=/world").json()["data"]["files"]
        assert [(entry["name"], entry["size"]) for entry in listed] == [("level.dat", len(data))]

        answer = owner_api.post(f"{base}/download-url", {"path": "/world/level.dat"}, format="json")
        transfer = answer.json()["data"]["transfer"]
        assert transfer["method"] == "GET"
        whole = client.get(transfer["url"])
        assert whole.status_code == 200 and whole.content == data
        part = client.get(transfer["url"], headers={"Range": "bytes=1000-1999"})
        assert part.status_code == 206 and part.content == data[1000:2000]
        # The address is for that file only: another path, another server is refused.
        other = transfer["url"].replace(server.id, "srv_" + "x" * 24)
        assert client.get(other).status_code in (401, 404)
    error_of(
        owner_api.post(f"{base}/download-url", {"path": "/world"}, format="json"),
        400,
        "validation_failed",
    )
    # The agent reported the upload; the control plane recorded it as the uploader's.
    event = wait_for(
        lambda: Event.objects.filter(type="server.files.uploaded", related_id=server.id).first(),
        what="the upload's event",
    )
    assert event.actor_user_id == owner.pk
    assert event.data["object"]["paths"] == ["/world/level.dat"]
    assert event.data["object"]["size"] == len(data)


@pytest.fixture
def pulling_server(control_plane_url, test_root, owner_api, settings):
    """A server on a node whose agent may fetch from loopback (as the control plane may here),
    so that it pulls from the live server itself."""
    from tests.agent.loop import node_with_agent

    settings.FILES_PULL_ALLOW_PRIVATE = True
    with node_with_agent(control_plane_url, test_root, AGENT_PULL_ALLOW_PRIVATE="1"):
        server = create_server(owner_api)
        run_worker()
        server.refresh_from_db()
        assert server.status == "stopped", server.status_reason
        yield server, control_plane_url


def test_archives_and_pulls_through_the_api(pulling_server, owner_api, settings):
    server, control_plane = pulling_server
    base = f"/v1/servers/{server.id}/files"
    owner_api.post(f"{base}/folders", {"path": "/world"}, format="json")
    owner_api.put(
        f"{base}/contents", {"path": "/world/level.txt", "content": "seed=42\n"}, format="json"
    )
    made = owner_api.post(
        f"{base}/compress", {"paths": ["/world"], "format": "zip", "to": "/w.zip"}, format="json"
    )
    assert made.status_code == 201, made.content
    archive = made.json()["data"]["file"]
    assert archive["path"] == "/w.zip" and archive["type"] == "file" and archive["size"] > 0
    error_of(
        owner_api.post(f"{base}/compress", {"paths": ["/world"], "to": "/w.zip"}, format="json"),
        409,
        "conflict",
    )
    owner_api.post(f"{base}/folders", {"path": "/restore"}, format="json")
    unpacked = owner_api.post(
        f"{base}/decompress", {"path": "/w.zip", "to": "/restore"}, format="json"
    )
    assert unpacked.status_code == 200, unpacked.content
    assert unpacked.json()["data"]["decompressed"]["path"] == "/restore"
    read = owner_api.get(f"{base}/contents?path=/restore/world/level.txt")
    assert read.json()["data"]["file"]["content"] == "seed=42\n"
    # Again over the same files: refused unless asked to overwrite.
    again = owner_api.post(
        f"{base}/decompress", {"path": "/w.zip", "to": "/restore"}, format="json"
    )
    error_of(again, 409, "conflict")
    again = owner_api.post(
        f"{base}/decompress", {"path": "/w.zip", "to": "/restore", "overwrite": True}, format="json"
    )
    assert again.status_code == 200, again.content

    pulled = owner_api.post(
        f"{base}/pull", {"url": f"{control_plane}/healthz", "path": "/health.json"}, format="json"
    )
    assert pulled.status_code == 201, pulled.content
    assert pulled.json()["data"]["file"]["path"] == "/health.json"
    health = owner_api.get(f"{base}/contents?path=/health.json").json()["data"]["file"]
    assert '"status"' in health["content"]
    missing = owner_api.post(
        f"{base}/pull",
        {"url": f"{control_plane}/no-such-page", "path": "/missing.bin"},
        format="json",
    )
    error_of(missing, 422, "pull_failed")
    # With private addresses refused here again, loopback is refused before the node is asked.
    settings.FILES_PULL_ALLOW_PRIVATE = False
    refused = owner_api.post(
        f"{base}/pull", {"url": f"{control_plane}/healthz", "path": "/h2.json"}, format="json"
    )
    assert field_errors(refused) == [("url", "unsafe_address")]

"""The agent's file manager API (agent/file_routes.py) on a real agent, on a server it installed:
the server's files as its user, confined to its folder, errors in the protocol's shape."""

import os
from pathlib import Path

import pytest


@pytest.fixture
def server(make_server):
    made = make_server(
        install_script=(
            "printf 'motd=Hello\\nmax-players=20\\n' > server.properties; mkdir -p world; "
            "echo seed > world/seed.txt; ln -s .. up; ln -s /etc etc-link"
        )
    )
    assert made.post("install").status_code == 200
    return made


def call(server, method: str, action: str, **kwargs):
    with server.api() as api:
        return api.request(method, server.path(f"files/{action}"), **kwargs)


def folder_of(server) -> Path:
    return Path(server.agent.data_root) / "servers" / server.id


def test_a_file_is_read_edited_with_its_version_and_a_stale_edit_refused(server):
    read = call(server, "GET", "contents", params={"path": "/server.properties"})
    assert read.status_code == 200, read.text
    assert read.json()["content"] == "motd=Hello\nmax-players=20\n"
    version = read.json()["version"]
    assert read.headers["ETag"] == f'"{version}"'

    body = {"path": "/server.properties", "content": "motd=Edited\n"}
    saved = call(server, "PUT", "contents", json=body, headers={"If-Match": f'"{version}"'})
    assert saved.status_code == 200, saved.text
    stale = call(server, "PUT", "contents", json=body, headers={"If-Match": f'"{version}"'})
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "version_mismatch"
    again = call(server, "GET", "contents", params={"path": "server.properties"}).json()
    assert again["content"] == "motd=Edited\n"
    assert again["version"] == saved.json()["version"]


def test_a_folder_is_listed_in_pages_and_changed(server):
    assert call(server, "POST", "folders", json={"path": "/plugins"}).status_code == 201
    copied = call(server, "POST", "copy", json={"from": "world/seed.txt", "to": "seed.bak"})
    assert copied.status_code == 201, copied.text
    moved = call(server, "POST", "rename", json={"from": "seed.bak", "to": "plugins/seed.bak"})
    assert moved.json()["path"] == "/plugins/seed.bak"
    assert (
        call(server, "POST", "chmod", json={"path": "plugins", "mode": "750"}).json()["mode"]
        == "0750"
    )
    listed = call(server, "GET", "list", params={"path": "/", "limit": "2"}).json()
    assert [entry["name"] for entry in listed["entries"]] == ["plugins", "world"]
    assert listed["total"] > 2
    found = call(server, "GET", "search", params={"query": "seed"}).json()["entries"]
    assert sorted(entry["path"] for entry in found) == ["/plugins/seed.bak", "/world/seed.txt"]
    deleted = call(server, "POST", "delete", json={"paths": ["plugins", "up"]})
    assert deleted.json() == {"deleted": ["/plugins", "/up"]}
    # "up" was a link to the folder above: the link went, not what it pointed at.
    assert not os.path.lexists(folder_of(server) / "up")
    assert (folder_of(server) / "server.properties").is_file()
    assert folder_of(server).parent.is_dir()


@pytest.mark.parametrize(
    ("method", "action", "arguments"),
    [
        ("GET", "contents", {"params": {"path": "up/up/etc/passwd"}}),
        ("GET", "contents", {"params": {"path": "etc-link/hostname"}}),
        ("GET", "list", {"params": {"path": "../"}}),
        ("PUT", "contents", {"json": {"path": "up/escaped.txt", "content": "x"}}),
        ("POST", "rename", {"json": {"from": "server.properties", "to": "up/stolen"}}),
    ],
)
def test_nothing_reaches_outside_the_servers_folder(server, method, action, arguments):
    response = call(server, method, action, **arguments)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "outside_server"
    assert not (folder_of(server).parent / "stolen").exists()
    assert not (folder_of(server).parent / "escaped.txt").exists()


@pytest.mark.parametrize(
    ("method", "action", "arguments", "status", "code"),
    [
        ("GET", "contents", {"params": {"path": "nothing.txt"}}, 404, "not_found"),
        ("GET", "list", {"params": {"limit": "0"}}, 400, "invalid_parameter"),
        ("GET", "list", {"params": {"sort": "owner"}}, 400, "validation_failed"),
        ("POST", "delete", {"json": {"paths": []}}, 400, "validation_failed"),
        ("POST", "delete", {"content": b"{"}, 400, "invalid_json"),
        ("POST", "folders", {"json": {"path": "world"}}, 409, "conflict"),
        ("POST", "chmod", {"json": {"path": "world", "mode": "4755"}}, 400, "validation_failed"),
    ],
)
def test_bad_requests_are_refused_in_the_protocols_shape(
    server, method, action, arguments, status, code
):
    response = call(server, method, action, **arguments)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_an_unknown_server_and_a_missing_token_are_refused(server):
    with server.api() as api:
        unknown = api.get("/api/servers/srv_none/files/list")
        anonymous = api.get(server.path("files/list"), headers={"Authorization": ""})
    assert unknown.status_code == 404
    assert anonymous.status_code == 401

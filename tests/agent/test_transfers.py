"""File transfers through a signed URL on a real agent (agent/transfers.py): downloads with
ranges, restartable uploads, the token's checks, the quota, the event to the control plane,
CORS; and the pure parts (ranges, names) without processes."""

import hashlib
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agent.config import ConfigError, load_config
from agent.errors import InvalidToken
from agent.transfers import RangeNotSatisfiable, byte_range, content_disposition, content_range
from agent.ws import verify_file_token
from tests.agent.conftest import NODE_ID, gameserver_spec, wait_until

USER = "usr_Uploader"
MIB = 1024 * 1024


@pytest.fixture
def transfer_token(console_key) -> Callable[..., str]:
    """A file transfer token as the control plane signs it."""

    def make(
        server_id: str,
        path: str,
        permission: str = "files.download",
        *,
        lifetime: float = 300,
        issued_at: float | None = None,
        key: Ed25519PrivateKey | None = None,
        audience: str = NODE_ID,
        jti: str | None = None,
    ) -> str:
        now = time.time() if issued_at is None else issued_at
        claims = {
            "iss": "hosting-control-plane",
            "aud": audience,
            "sub": USER,
            "server_id": server_id,
            "path": path,
            "permissions": [permission],
            "iat": int(now),
            "exp": int(now + lifetime),
            "jti": jti or secrets.token_urlsafe(12),
        }
        return jwt.encode(claims, key or console_key, algorithm="EdDSA")

    return make


@pytest.fixture
def server(make_server):
    made = make_server(
        install_script=(
            "printf 'hello world' > hello.txt; printf 'accented' > 'café menu.txt'; "
            "mkdir -p world plugins; echo seed > world/seed.txt; "
            "ln -s /etc etc-link; ln -s /etc/passwd passwd-link"
        )
    )
    assert made.post("install").status_code == 200
    return made


def folder_of(server) -> Path:
    return Path(server.agent.data_root) / "servers" / server.id


def partial_files(server) -> list[str]:
    return [path.name for path in folder_of(server).rglob(".*.part")]


@pytest.fixture
def client(agent) -> Iterator[httpx.Client]:
    """A browser-like client: no node token, only the signed URLs."""
    with httpx.Client(base_url=agent.url, timeout=30) as made:
        yield made


def url(server, action: str) -> str:
    return server.path(f"files/{action}")


def download(client, server, token: str, method: str = "GET", **headers: str) -> httpx.Response:
    return client.request(method, url(server, "download"), params={"token": token}, headers=headers)


def upload(client, server, token: str, body, **headers: str) -> httpx.Response:
    return client.put(url(server, "upload"), params={"token": token}, content=body, headers=headers)


def version_of(server, path: str) -> str:
    with server.api() as api:
        return api.get(server.path("files/stat"), params={"path": path}).json()["version"]


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


# -- downloads ----------------------------------------------------------------------------------


def test_a_file_is_downloaded_whole_with_its_headers(server, client, transfer_token):
    token = transfer_token(server.id, "/café menu.txt")
    response = download(client, server, token)
    assert response.status_code == 200, response.text
    assert response.content == b"accented"
    headers = response.headers
    assert headers["Content-Length"] == "8"
    assert headers["Accept-Ranges"] == "bytes"
    assert headers["ETag"] == f'"{version_of(server, "/café menu.txt")}"'
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Cache-Control"] == "no-store"
    assert headers["Content-Disposition"] == "attachment; filename*=UTF-8''caf%C3%A9%20menu.txt"
    modified = os.stat(folder_of(server) / "café menu.txt").st_mtime
    assert headers["Last-Modified"] == time.strftime(
        "%a, %d %b %Y %H:%M:%S GMT", time.gmtime(int(modified) + (modified % 1 > 0))
    )

    head = download(client, server, token, method="HEAD")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["Content-Length"] == "8"
    assert head.headers["ETag"] == headers["ETag"]


@pytest.mark.parametrize(
    ("range_", "status", "body", "content_range_"),
    [
        ("bytes=0-4", 206, b"hello", "bytes 0-4/11"),
        ("bytes=6-", 206, b"world", "bytes 6-10/11"),
        ("bytes=-5", 206, b"world", "bytes 6-10/11"),
        ("bytes=4-4", 206, b"o", "bytes 4-4/11"),
        ("bytes=3-999", 206, b"lo world", "bytes 3-10/11"),
        ("bytes=0-1,4-5", 200, b"hello world", None),
        ("lines=1-2", 200, b"hello world", None),
    ],
)
def test_a_range_is_served_as_asked(
    server, client, transfer_token, range_, status, body, content_range_
):
    response = download(client, server, transfer_token(server.id, "hello.txt"), Range=range_)
    assert response.status_code == status, response.text
    assert response.content == body
    assert response.headers.get("Content-Range") == content_range_
    assert response.headers["Content-Length"] == str(len(body))


@pytest.mark.parametrize("range_", ["bytes=11-", "bytes=50-60", "bytes=-0"])
def test_a_range_past_the_end_is_not_satisfiable(server, client, transfer_token, range_):
    response = download(client, server, transfer_token(server.id, "hello.txt"), Range=range_)
    assert response.status_code == 416
    assert response.headers["Content-Range"] == "bytes */11"
    assert error_code(response) == "range_not_satisfiable"


def test_if_range_sends_the_whole_file_once_it_changed(server, client, transfer_token):
    token = transfer_token(server.id, "hello.txt")
    current = f'"{version_of(server, "/hello.txt")}"'
    same = download(client, server, token, Range="bytes=6-", **{"If-Range": current})
    assert (same.status_code, same.content) == (206, b"world")
    changed = download(client, server, token, Range="bytes=6-", **{"If-Range": '"1-b-0"'})
    assert (changed.status_code, changed.content) == (200, b"hello world")
    assert "Content-Range" not in changed.headers


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("etc-link/passwd", 400, "outside_server"),
        ("../../../../etc/passwd", 400, "outside_server"),
        ("passwd-link", 400, "validation_failed"),
        ("world", 400, "validation_failed"),
        ("/", 400, "validation_failed"),
        ("missing.txt", 404, "not_found"),
    ],
)
def test_only_a_file_within_the_folder_is_downloaded(
    server, client, transfer_token, path, status, code
):
    response = download(client, server, transfer_token(server.id, path))
    assert response.status_code == status, response.text
    assert error_code(response) == code
    assert b"root:" not in response.content


@pytest.mark.parametrize(
    "bad_token",
    [
        lambda make, server: make("srv_another", "hello.txt"),
        lambda make, server: make(server.id, "hello.txt", issued_at=time.time() - 600),
        lambda make, server: make(server.id, "hello.txt", "files.upload"),
        lambda make, server: make(server.id, "hello.txt", lifetime=3600),
        lambda make, server: make(server.id, "hello.txt", audience="node_another"),
        lambda make, server: make(server.id, "hello.txt", key=Ed25519PrivateKey.generate()),
        lambda make, server: "not-a-token",
    ],
    ids=["other-server", "expired", "upload-token", "too-long", "other-node", "bad-key", "junk"],
)
def test_a_download_needs_a_valid_download_token(server, client, transfer_token, bad_token):
    response = download(client, server, bad_token(transfer_token, server))
    assert response.status_code == 401, response.text
    assert error_code(response) == "invalid_token"
    assert b"hello" not in response.content
    missing = client.get(url(server, "download"))
    assert (missing.status_code, error_code(missing)) == (401, "invalid_token")


# -- uploads ------------------------------------------------------------------------------------


def test_an_upload_creates_a_file_then_replaces_it_and_tells_the_control_plane(
    server, client, transfer_token, control_plane
):
    first = upload(
        client, server, transfer_token(server.id, "/plugins/new.jar", "files.upload"), b"v1"
    )
    assert first.status_code == 201, first.text
    assert first.json() == {
        "path": "/plugins/new.jar",
        "size": 2,
        "version": version_of(server, "/plugins/new.jar"),
    }
    again = upload(
        client, server, transfer_token(server.id, "plugins/new.jar", "files.upload"), b"second"
    )
    assert again.status_code == 200, again.text
    assert again.json()["size"] == 6
    written = folder_of(server) / "plugins" / "new.jar"
    assert written.read_bytes() == b"second"
    # Written as the server's user, with the usual mode, not as the agent's.
    assert written.stat().st_uid == (folder_of(server) / "hello.txt").stat().st_uid
    assert oct(written.stat().st_mode & 0o777) == "0o644"
    assert partial_files(server) == []

    def uploaded():
        return [e for e in control_plane.events_of(server.id) if e["type"] == "files_uploaded"]

    events = control_plane.wait_for(lambda: len(uploaded()) == 2 and uploaded())
    assert [(e["path"], e["size"], e["user"], e["reason"]) for e in events] == [
        ("/plugins/new.jar", 2, USER, ""),
        ("/plugins/new.jar", 6, USER, ""),
    ]
    assert all(e["at"].endswith("Z") for e in events)


def test_an_upload_in_chunks_is_put_together(server, client, transfer_token):
    token = transfer_token(server.id, "world/level.dat", "files.upload")
    content = secrets.token_bytes(3000)
    for start, end, status in ((0, 999, 202), (1000, 1999, 202), (2000, 2999, 201)):
        response = upload(
            client,
            server,
            token,
            content[start : end + 1],
            **{"Content-Range": f"bytes {start}-{end}/3000"},
        )
        assert response.status_code == status, response.text
        assert response.headers["Upload-Offset"] == str(end + 1)
        assert not (folder_of(server) / "world" / "level.dat").exists() or status == 201
    assert (folder_of(server) / "world" / "level.dat").read_bytes() == content
    assert partial_files(server) == []


def send_cut_short(agent, path: str, headers: dict[str, str], body: bytes) -> None:
    """Send a request whose body is shorter than its Content-Length, then hang up."""
    address = urlsplit(agent.url)
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    with socket.create_connection((address.hostname, address.port)) as sock:
        sock.sendall(f"PUT {path} HTTP/1.1\r\nHost: agent\r\n{head}\r\n".encode() + body)
        time.sleep(0.3)  # the agent reads it all before the connection goes


def test_an_interrupted_upload_is_resumed_from_its_offset(agent, server, client, transfer_token):
    token = transfer_token(server.id, "backup.zip", "files.upload")
    content = secrets.token_bytes(3 * MIB)
    total = len(content)
    assert (
        client.head(url(server, "upload"), params={"token": token}).headers["Upload-Offset"] == "0"
    )
    sent = 1 * MIB + 12345
    send_cut_short(
        agent,
        f"{url(server, 'upload')}?token={token}",
        {"Content-Length": str(total), "Content-Range": f"bytes 0-{total - 1}/{total}"},
        content[:sent],
    )

    def offset() -> int:
        response = client.head(url(server, "upload"), params={"token": token})
        assert response.status_code == 200, response.text
        return int(response.headers["Upload-Offset"])

    wait_until(lambda: offset() == sent, 5, offset)
    assert not (folder_of(server) / "backup.zip").exists()

    def resume() -> httpx.Response | None:
        response = upload(
            client,
            server,
            token,
            content[sent:],
            **{"Content-Range": f"bytes {sent}-{total - 1}/{total}"},
        )
        # 409 while the cut request still holds the partial file (it lets go at once).
        return None if response.status_code == 409 else response

    resumed = wait_until(resume, 2)
    assert resumed.status_code == 201, resumed.text
    assert (folder_of(server) / "backup.zip").read_bytes() == content
    assert offset() == 0
    assert partial_files(server) == []


def test_a_chunk_from_the_wrong_offset_is_refused_with_the_offset(server, client, transfer_token):
    token = transfer_token(server.id, "big.bin", "files.upload")
    first = upload(client, server, token, b"a" * 100, **{"Content-Range": "bytes 0-99/300"})
    assert first.status_code == 202, first.text
    for start in (0, 150):
        refused = upload(
            client, server, token, b"b" * 50, **{"Content-Range": f"bytes {start}-{start + 49}/300"}
        )
        assert refused.status_code == 409, refused.text
        assert refused.headers["Upload-Offset"] == "100"
        assert refused.json()["error"]["code"] == "conflict"
        assert refused.json()["error"]["offset"] == 100
    rest = upload(client, server, token, b"c" * 200, **{"Content-Range": "bytes 100-299/300"})
    assert rest.status_code == 201, rest.text
    assert (folder_of(server) / "big.bin").read_bytes() == b"a" * 100 + b"c" * 200


def test_an_upload_sweeps_away_partial_files_abandoned_for_a_day(server, client, transfer_token):
    world = folder_of(server) / "world"
    old, fresh, other = (
        world / ".map.zip.0123456789abcdef.part",
        world / ".map2.zip.0123456789abcdef.part",
        world / ".notes.part",
    )
    for path in (old, fresh, other):
        path.write_bytes(b"left over")
    two_days_ago = time.time() - 2 * 24 * 3600
    for path in (old, other):
        os.utime(path, (two_days_ago, two_days_ago))
    token = transfer_token(server.id, "world/new.txt", "files.upload")
    assert upload(client, server, token, b"new").status_code == 201
    assert not old.exists()
    assert fresh.exists()
    assert other.exists()  # not a name the agent gives its partial files


def test_an_upload_over_the_disk_quota_is_refused_and_leaves_nothing(
    make_server, client, transfer_token
):
    spec = gameserver_spec("srv_placeholder", 1)
    spec["limits"]["disk_mb"] = 1
    small = make_server(spec=spec)
    token = transfer_token(small.id, "huge.bin", "files.upload")
    refused = upload(client, small, token, b"x" * (2 * MIB))
    assert refused.status_code == 507, refused.text
    assert error_code(refused) == "disk_quota_exceeded"
    assert not (folder_of(small) / "huge.bin").exists()
    assert partial_files(small) == []


@pytest.mark.parametrize(
    ("path", "headers", "status", "code"),
    [
        ("world", {}, 409, "conflict"),
        ("etc-link/evil", {}, 400, "outside_server"),
        ("nowhere/file.txt", {}, 404, "not_found"),
        ("a.bin", {"Content-Range": "bytes 0-1/30000000000"}, 413, "too_large"),
        ("a.bin", {"Content-Range": "bytes 5-1/10"}, 400, "validation_failed"),
        ("a.bin", {"Content-Range": "bytes 0-9/10"}, 400, "validation_failed"),
    ],
)
def test_a_bad_upload_is_refused(server, client, transfer_token, path, headers, status, code):
    response = upload(
        client, server, transfer_token(server.id, path, "files.upload"), b"ab", **headers
    )
    assert response.status_code == status, response.text
    assert error_code(response) == code
    assert partial_files(server) == []
    assert (folder_of(server) / "world").is_dir()


def test_an_upload_needs_an_upload_token(server, client, transfer_token):
    response = upload(client, server, transfer_token(server.id, "x.txt"), b"x")
    assert (response.status_code, error_code(response)) == (401, "invalid_token")
    head = client.head(url(server, "upload"), params={"token": transfer_token(server.id, "x.txt")})
    assert head.status_code == 401
    assert not (folder_of(server) / "x.txt").exists()


def rss_growth(pid: int, action: Callable[[], None]) -> int:
    """How far above its resident size before ``action`` the process's peak went during it."""

    def status(field: str) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(field)

    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak starts again from now
    before = status("VmRSS")
    action()
    return status("VmHWM") - before


def test_a_large_file_is_streamed_both_ways(agent, server, client, transfer_token):
    size = 20 * MIB
    digest = hashlib.sha256()

    def pieces() -> Iterator[bytes]:
        for index in range(size // (256 * 1024)):
            piece = hashlib.sha256(str(index).encode()).digest() * 8192
            digest.update(piece)
            yield piece

    token = transfer_token(server.id, "large.bin", "files.upload")
    sent: list[httpx.Response] = []
    grew = rss_growth(
        agent.process.pid, lambda: sent.append(upload(client, server, token, pieces()))
    )
    assert sent[0].status_code == 201, sent[0].text
    assert sent[0].json()["size"] == size
    assert grew < 8 * MIB, f"the agent's memory grew by {grew // MIB} MiB for a 20 MiB upload"

    received = hashlib.sha256()
    token = transfer_token(server.id, "large.bin")

    def fetch() -> None:
        with client.stream("GET", url(server, "download"), params={"token": token}) as response:
            assert response.status_code == 200
            assert response.headers["Content-Length"] == str(size)
            for piece in response.iter_bytes():
                received.update(piece)

    grew = rss_growth(agent.process.pid, fetch)
    assert received.hexdigest() == digest.hexdigest()
    assert grew < 8 * MIB, f"the agent's memory grew by {grew // MIB} MiB for a 20 MiB download"

    # A client that stops reading and goes away ends the download, not the agent.
    with client.stream("GET", url(server, "download"), params={"token": token}) as response:
        next(response.iter_raw(64 * 1024))
    tail = download(client, server, token, Range="bytes=-4")
    last_piece = hashlib.sha256(str(size // (256 * 1024) - 1).encode()).digest()
    assert (tail.status_code, tail.content) == (206, last_piece[-4:])
    assert "unhandled error" not in agent.log()


# -- CORS ---------------------------------------------------------------------------------------


def test_cors_is_answered_for_the_control_planes_origin_only(
    server, client, transfer_token, control_plane
):
    allowed = control_plane.url  # the agent's default: its control plane's origin
    asked = {
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-range",
    }
    preflight = client.options(url(server, "upload"), headers={"Origin": allowed, **asked})
    assert preflight.status_code == 204, preflight.text
    assert preflight.headers["Access-Control-Allow-Origin"] == allowed
    assert preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, PUT"
    assert "Content-Range" in preflight.headers["Access-Control-Allow-Headers"]

    other = client.options(
        url(server, "upload"), headers={"Origin": "https://evil.example", **asked}
    )
    assert other.status_code == 403
    assert "Access-Control-Allow-Origin" not in other.headers

    token = transfer_token(server.id, "hello.txt")
    got = download(client, server, token, Origin=allowed)
    assert got.headers["Access-Control-Allow-Origin"] == allowed
    assert "Upload-Offset" in got.headers["Access-Control-Expose-Headers"]
    refused = download(client, server, "bad", Origin=allowed)  # errors are readable too
    assert refused.status_code == 401
    assert refused.headers["Access-Control-Allow-Origin"] == allowed
    assert (
        "Access-Control-Allow-Origin"
        not in download(client, server, token, Origin="https://evil.example").headers
    )
    with server.api() as api:  # the node-token API answers no browser
        listed = api.get(server.path("files/list"), headers={"Origin": allowed})
    assert "Access-Control-Allow-Origin" not in listed.headers


# -- the pure parts -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        (None, 10, None),
        ("bytes=0-0", 10, (0, 0)),
        ("bytes=2-", 10, (2, 9)),
        ("bytes=-3", 10, (7, 9)),
        ("bytes=-30", 10, (0, 9)),
        ("bytes=5-100", 10, (5, 9)),
        ("BYTES=1-2", 10, (1, 2)),
        ("bytes=0-1,3-4", 10, None),
        ("bytes=4-2", 10, None),
        ("bytes=-", 10, None),
        ("bytes=a-b", 10, None),
        ("items=0-1", 10, None),
    ],
)
def test_a_range_header_is_read(header, size, expected):
    assert byte_range(header, size) == expected


@pytest.mark.parametrize(("header", "size"), [("bytes=10-", 10), ("bytes=-0", 10), ("bytes=-1", 0)])
def test_a_range_past_the_end_is_refused(header, size):
    with pytest.raises(RangeNotSatisfiable):
        byte_range(header, size)


def test_a_content_range_is_read_and_checked():
    assert content_range(None, 100) is None
    assert content_range("bytes 0-9/10", 100) == (0, 9, 10)
    for bad in ("bytes 0-9/*", "bytes 9-0/10", "bytes 0-10/10", "0-9/10", "bytes */10"):
        with pytest.raises(Exception, match="Content-Range"):
            content_range(bad, 100)
    with pytest.raises(Exception, match="at most 100 bytes"):
        content_range("bytes 0-9/101", 100)


def test_a_name_is_quoted_for_content_disposition():
    assert content_disposition("world.zip") == "attachment; filename*=UTF-8''world.zip"
    assert (
        content_disposition('a "b";\r\n.txt')
        == "attachment; filename*=UTF-8''a%20%22b%22%3B%0D%0A.txt"
    )
    assert content_disposition("\udcff.bin") == "attachment; filename*=UTF-8''%FF.bin"


def test_a_file_token_carries_its_grant(console_key, transfer_token):
    token = transfer_token("srv_1", "/world.zip", "files.upload", jti="jti-1")
    grant = verify_file_token(
        token,
        public_key=console_key.public_key(),
        node_id=NODE_ID,
        server_id="srv_1",
        permission="files.upload",
    )
    assert (grant.user, grant.path, grant.jti) == (USER, "/world.zip", "jti-1")
    for server_id, permission in (("srv_2", "files.upload"), ("srv_1", "files.download")):
        with pytest.raises(InvalidToken):
            verify_file_token(
                token,
                public_key=console_key.public_key(),
                node_id=NODE_ID,
                server_id=server_id,
                permission=permission,
            )


def config(**environment: str):
    base = {"AGENT_TOKEN": "hmn_abc", "AGENT_NODE_ID": "node_1"}
    return load_config([], base | environment, is_root=False, which=lambda command: command)


def test_the_transfer_settings_have_defaults():
    assert config().files_max_upload_bytes == 20 * 1024**3
    assert config().allowed_origins == ()
    derived = config(AGENT_CONTROL_PLANE_URL="https://Panel.example.com:443/base/")
    assert derived.allowed_origins == ("https://panel.example.com",)
    given = config(
        AGENT_CONTROL_PLANE_URL="http://127.0.0.1:8000",
        AGENT_ALLOWED_ORIGINS="https://panel.example.com, http://[::1]:8080/",
        AGENT_FILES_MAX_UPLOAD_BYTES="1048576",
    )
    assert given.allowed_origins == ("https://panel.example.com", "http://[::1]:8080")
    assert given.files_max_upload_bytes == 1048576


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AGENT_ALLOWED_ORIGINS", "panel.example.com"),
        ("AGENT_ALLOWED_ORIGINS", "https://panel.example.com/dashboard"),
        ("AGENT_ALLOWED_ORIGINS", "ftp://panel.example.com"),
        ("AGENT_ALLOWED_ORIGINS", "https://user@panel.example.com"),
        ("AGENT_FILES_MAX_UPLOAD_BYTES", "0"),
        ("AGENT_FILES_MAX_UPLOAD_BYTES", "20G"),
    ],
)
def test_a_bad_transfer_setting_stops_the_agent(variable, value):
    with pytest.raises(ConfigError, match=variable):
        config(**{variable: value})

"""Files pulled from a URL by the agent (agent/pull.py) on real agents, from a local HTTP server:
a file arrives whole or not at all; the remote's failures, a redirect chain, the size cap and
the timeout; and the URL checks: no loopback, private, link-local or metadata address (nor a
name resolving to one) unless AGENT_PULL_ALLOW_PRIVATE, only the hosts allowed, and every
redirect checked again. The address checks themselves are tested as pure functions."""

import ipaddress
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.pull import UrlRefused, address_refusal, check_url
from tests.agent.conftest import AgentPool

MIB = 1024 * 1024
PLUGIN = bytes(range(256)) * 1200  # 300 KiB


class Remote(BaseHTTPRequestHandler):
    """What the tests pull from: a file, a 404, redirects, a file too large, a slow one, one
    that breaks off, and redirects to where the agent must not go."""

    def do_GET(self) -> None:
        path = self.path
        if path == "/plugin.jar":
            self._send(200, PLUGIN)
        elif path == "/big.bin":
            self._send(200, b"\0" * (2 * MIB))
        elif hop := re.fullmatch(r"/hop/(\d+)", path):
            left = int(hop.group(1))
            self._redirect(f"/hop/{left - 1}" if left else "/plugin.jar")
        elif path == "/to-localhost":
            self._redirect(f"http://localhost:{self.server.server_port}/plugin.jar")
        elif path == "/to-file":
            self._redirect("file:///etc/passwd")
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.wfile.flush()
            time.sleep(4)
        elif path == "/broken":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.close_connection = True
        else:
            self._send(404, b"not here")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Remote)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def open_agent(control_plane, work_root) -> Iterator:
    """An agent that may pull from loopback (127.0.0.1 only), 1 MiB at most, 2 s at most."""
    pool = AgentPool(control_plane, work_root / "pull-open")
    yield pool.start(
        AGENT_PULL_ALLOW_PRIVATE="1",
        AGENT_PULL_ALLOWED_HOSTS="127.0.0.1",
        AGENT_FILES_MAX_UPLOAD_BYTES=str(MIB),
        AGENT_PULL_TIMEOUT_SECONDS="2",
    )
    pool.close()


@pytest.fixture
def server(make_server, open_agent):
    made = make_server(open_agent, install_script="mkdir plugins; printf old > plugins/old.jar")
    assert made.post("install").status_code == 200
    return made


@pytest.fixture
def guarded_server(make_server):
    """A server on the shared agent, which pulls from public addresses only."""
    made = make_server(install_script="mkdir plugins")
    assert made.post("install").status_code == 200
    return made


def pull(server, url: str, path: str = "/plugins/plugin.jar"):
    with server.api() as api:
        return api.post(server.path("files/pull"), json={"url": url, "path": path}, timeout=30)


def folder_of(server) -> Path:
    return Path(server.agent.data_root) / "servers" / server.id


def hidden(server) -> list[str]:
    return [path.name for path in folder_of(server).rglob(".*.tmp")]


def test_a_file_is_pulled_whole(server, remote):
    pulled = pull(server, f"{remote}/plugin.jar")
    assert pulled.status_code == 201, pulled.text
    target = folder_of(server) / "plugins/plugin.jar"
    assert pulled.json() == {
        "path": "/plugins/plugin.jar",
        "size": len(PLUGIN),
        "version": pulled.json()["version"],
    }
    assert target.read_bytes() == PLUGIN
    assert target.stat().st_uid == folder_of(server).stat().st_uid
    assert hidden(server) == []


def test_a_redirect_chain_is_followed_up_to_five(server, remote):
    followed = pull(server, f"{remote}/hop/4")  # five redirects
    assert followed.status_code == 201, followed.text
    assert (folder_of(server) / "plugins/plugin.jar").read_bytes() == PLUGIN
    too_long = pull(server, f"{remote}/hop/5", "/plugins/again.jar")
    assert too_long.status_code == 502, too_long.text
    assert too_long.json()["error"]["code"] == "pull_failed"
    assert not (folder_of(server) / "plugins/again.jar").exists()


@pytest.mark.parametrize(
    ("route", "status", "code"),
    [
        ("/missing.jar", 502, "pull_failed"),
        ("/broken", 502, "pull_failed"),
        ("/big.bin", 413, "too_large"),
        ("/slow", 504, "pull_timeout"),
        ("/to-file", 400, "validation_failed"),
        ("/to-localhost", 400, "validation_failed"),  # not among the hosts allowed
    ],
)
def test_a_failed_pull_leaves_nothing(server, remote, route, status, code):
    failed = pull(server, f"{remote}{route}")
    assert failed.status_code == status, failed.text
    assert failed.json()["error"]["code"] == code
    assert not (folder_of(server) / "plugins/plugin.jar").exists()
    assert hidden(server) == []


def test_a_pull_never_replaces_an_entry(server, remote):
    refused = pull(server, f"{remote}/plugin.jar", "/plugins/old.jar")
    assert refused.status_code == 409, refused.text
    assert (folder_of(server) / "plugins/old.jar").read_text() == "old"


def test_a_host_outside_the_allowed_ones_is_refused(server, remote):
    port = remote.rsplit(":", 1)[1]
    refused = pull(server, f"http://localhost:{port}/plugin.jar")
    assert refused.status_code == 400, refused.text
    assert "not among the hosts" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:{port}/plugin.jar", "127.0.0.1 is a loopback address"),
        ("http://10.0.0.1/plugin.jar", "10.0.0.1 is a private address"),
        ("http://[::1]:{port}/plugin.jar", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]:{port}/plugin.jar", "is a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://localhost:{port}/plugin.jar", "localhost resolves to"),
        ("http://2130706433:{port}/plugin.jar", "not an address written in full"),
        ("ftp://example.com/plugin.jar", "only http"),
        ("http://user:secret@example.com/plugin.jar", "user name or password"),
    ],
)
def test_an_address_that_is_not_public_is_refused(guarded_server, remote, url, why):
    port = remote.rsplit(":", 1)[1]
    refused = pull(guarded_server, url.format(port=port))
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "validation_failed"
    assert refused.json()["error"]["message"].startswith("url: ")
    assert why in refused.json()["error"]["message"]
    assert not (folder_of(guarded_server) / "plugins/plugin.jar").exists()
    assert hidden(guarded_server) == []


# -- the checks, without processes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("100.64.0.1", "a shared (carrier-grade NAT) address"),
        ("169.254.169.254", "a link-local address"),
        ("224.0.0.1", "a multicast address"),
        ("0.0.0.0", "an unspecified address"),  # noqa: S104 - an address, not a bind
        ("240.0.0.1", "a private address"),
        ("::1", "a loopback address"),
        ("::", "an unspecified address"),
        ("fd00::1", "a private address"),
        ("fe80::1", "a link-local address"),
        ("fec0::1", "a site-local address"),
        ("ff02::1", "a multicast address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("::ffff:169.254.169.254", "a link-local address in IPv6"),
        ("2002:a00:1::", "a private address in IPv6"),
        ("64:ff9b::7f00:1", "a loopback address in IPv6"),
        ("::10.0.0.1", "a private address in IPv6"),
        ("2001:db8::1", "a private address"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
    ],
)
def test_only_public_addresses_are_reached(address, reason):
    assert address_refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    ("url", "allowed", "message"),
    [
        ("https://example.com/a.jar", None, None),
        ("https://cdn.example.com/a.jar", ("*.example.com",), None),
        ("https://example.org/a.jar", ("*.example.com",), "not among the hosts"),
        ("http://0x7f.1/a.jar", None, "not an address written in full"),
        ("http://127.1/a.jar", None, "not an address written in full"),
        ("http://[fe80::1%25eth0]/a.jar", None, "link-local"),
        ("http://example.com:99999/a.jar", None, "port"),
        ("file:///etc/passwd", None, "only http"),
        ("http:///a.jar", None, "no host"),
    ],
)
def test_a_url_is_checked_before_anything_is_fetched(url, allowed, message):
    if message is None:
        assert check_url(url, allowed_hosts=allowed, allow_private=False) == url
    else:
        with pytest.raises(UrlRefused, match=message):
            check_url(url, allowed_hosts=allowed, allow_private=False)

"""The agent's HTTP API: the node token, errors in the protocol's shape, specs, sync."""

import datetime
import ipaddress
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.agent.conftest import NODE_ID, gameserver_spec, new_node_token, public_pem


def test_it_refuses_a_missing_node_token(agent):
    with agent.api() as api:
        response = api.get("/api/system", headers={"Authorization": ""})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_token"


def test_it_refuses_a_wrong_node_token(agent):
    with agent.api(token=new_node_token()) as api:
        for response in (
            api.get("/api/system"),
            api.put("/api/servers/srv_x", json={}),
            api.get("/api/servers/srv_x/logs"),
            api.get("/api/nowhere"),
        ):
            assert response.status_code == 401
            assert response.json() == {
                "error": {"code": "invalid_token", "message": "A valid node token is required."}
            }


@pytest.mark.parametrize(
    "raw", [b"Bearer hmn_\xff\xfe" + b"a" * 48, b"Bearer \xc3\xa9" * 8, b"Bearer eyJ\xff.x.y"]
)
def test_a_token_of_any_bytes_is_invalid_token_not_a_crash(agent, raw):
    """Issue 28: aiohttp keeps a header's undecodable bytes as surrogates; every credential
    check treats them as a wrong token (401), never an encoding error (500)."""
    with agent.api() as api:
        response = api.get("/api/system", headers=[(b"Authorization", raw)])
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "invalid_token"


def test_the_token_checks_take_any_text():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from agent.ws import ConsoleAuthError, verify_console_token, verify_request_token

    key = Ed25519PrivateKey.generate().public_key()
    for token in ["\udcff", "é" * 40, "eyJ\u0663.x.y", 5]:
        assert verify_request_token(token, public_key=key, node_id=NODE_ID) is False
        with pytest.raises(ConsoleAuthError):
            verify_console_token(token, public_key=key, node_id=NODE_ID, server_id="srv_x")


def test_it_refuses_the_token_with_another_scheme(agent):
    with agent.api() as api:
        response = api.get("/api/system", headers={"Authorization": f"Basic {agent.token}"})
    assert response.status_code == 401


def test_it_describes_the_node(agent):
    with agent.api() as api:
        system = api.get("/api/system").json()
    assert system["node_id"] == NODE_ID
    assert system["limits"] in ("cgroup-v1", "cgroup-v2", "rlimit")
    assert system["data_root"] == str(agent.data_root)
    assert system["cpu_count"] >= 1
    assert system["memory_bytes"] > 0
    assert isinstance(system["servers"], int)


def test_it_answers_not_found_for_an_unknown_server(agent):
    with agent.api() as api:
        for response in (
            api.get("/api/servers/srv_unknown"),
            api.post("/api/servers/srv_unknown/start"),
            api.delete("/api/servers/srv_unknown"),
        ):
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "not_found"


def test_it_rejects_an_invalid_spec(agent):
    spec = gameserver_spec("srv_bad", 1)
    spec["template"]["ready_pattern"] = "Server ready ("
    with agent.api() as api:
        response = api.put("/api/servers/srv_bad", json=spec)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "validation_failed"
        assert error["message"].startswith("template.ready_pattern:")
        not_json = api.put("/api/servers/srv_bad", content=b"{not json")
        assert not_json.status_code == 400
        assert not_json.json()["error"]["code"] == "invalid_json"
        assert api.get("/api/servers/srv_bad").status_code == 404


def test_a_server_id_must_be_safe_as_a_folder_name(agent):
    with agent.api() as api:
        response = api.put("/api/servers/srv%20..", json=gameserver_spec("srv ..", 1))
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("id:")


def test_it_rejects_a_spec_whose_id_differs_from_the_address(agent):
    with agent.api() as api:
        response = api.put("/api/servers/srv_one", json=gameserver_spec("srv_two", 1))
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("id:")


def test_put_creates_then_replaces(make_server):
    server = make_server()
    created = server.get()
    assert created["status"] == "stopped"
    assert created["installed"] is False
    assert created["pid"] is None
    assert created["limits"]["memory_mb"] == 256
    with server.api() as api:
        spec = gameserver_spec(server.id, server.port)
        spec["limits"]["memory_mb"] = 512
        response = api.put(server.path(), json=spec)
    assert response.status_code == 200
    assert response.json()["limits"]["memory_mb"] == 512


def test_the_logs_need_a_sensible_line_count(make_server):
    server = make_server()
    with server.api() as api:
        response = api.get(server.path("logs"), params={"lines": "lots"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_parameter"


def test_commands_need_a_running_server(make_server):
    server = make_server()
    response = server.post("commands", {"command": "say hi"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_state"


def test_stopping_a_stopped_server_is_harmless(make_server):
    server = make_server()
    response = server.post("stop")
    assert response.status_code == 200
    assert response.json() == {"status": "stopped", "how": "not_running"}


def test_sync_rejects_a_key_that_is_not_ed25519(agent):
    with agent.api() as api:
        response = api.post("/api/sync", json={"console_public_key": "not a key", "servers": []})
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("console_public_key:")


def test_sync_starts_what_is_desired_running_and_stops_the_rest(
    agent, make_server, control_plane, console_key
):
    server = make_server()
    spec = {**gameserver_spec(server.id, server.port), "desired": "running"}
    with agent.api() as api:
        response = api.post(
            "/api/sync", json={"console_public_key": public_pem(console_key), "servers": [spec]}
        )
    assert response.status_code == 200
    assert server.id in {entry["id"] for entry in response.json()["servers"]}
    server.wait_for_status("running", timeout=20)
    running = control_plane.wait_for(lambda: control_plane.events_of(server.id))
    assert running[0]["type"] == "running"

    with agent.api() as api:
        spec["desired"] = "stopped"
        assert api.post("/api/sync", json={"servers": [spec]}).status_code == 200
    server.wait_for_status("stopped")


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "agent.pem", folder / "agent.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_it_serves_https_with_a_certificate(agents, tmp_path):
    cert, key = self_signed_certificate(tmp_path)
    own = agents.start(AGENT_TLS_CERT=str(cert), AGENT_TLS_KEY=str(key))
    assert own.url.startswith("https://")
    with own.api() as api:
        assert api.get("/api/system").status_code == 200
    with pytest.raises(httpx.TransportError):
        httpx.get(own.url.replace("https://", "http://") + "/api/system", timeout=5)


def request_token(key, *, audience=NODE_ID, scope="node", lifetime=60, issued_at=None):
    import time

    import jwt

    now = int(time.time() if issued_at is None else issued_at)
    claims = {"iss": "hosting-control-plane", "aud": audience, "iat": now, "exp": now + lifetime}
    if scope is not None:
        claims["scope"] = scope
    return jwt.encode(claims, key, algorithm="EdDSA")


def test_the_control_planes_signed_request_token_is_accepted(agent, console_key):
    with agent.api(token=request_token(console_key)) as api:
        assert api.get("/api/system").status_code == 200


@pytest.mark.parametrize(
    "change",
    [
        {"audience": "node_SomeOtherNode"},
        {"scope": None},
        {"scope": "console"},
        {"lifetime": 3600},
        {"issued_at": 0},
    ],
)
def test_other_signed_tokens_are_refused(agent, console_key, change):
    with agent.api(token=request_token(console_key, **change)) as api:
        response = api.get("/api/system")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_token"


def test_a_request_token_signed_with_another_key_is_refused(agent):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    with agent.api(token=request_token(Ed25519PrivateKey.generate())) as api:
        assert api.get("/api/system").status_code == 401


def test_a_console_token_is_no_request_token(agent, console_token):
    with agent.api(token=console_token("srv_x")) as api:
        assert api.get("/api/system").status_code == 401

"""The console tab: shown for servers and bots on a node to roles with the power scope; the
page hands console.js a token for the signed-in person."""

import jwt
import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from analytics.models import UsageLatest
from servers.models import Server
from servers.services import server_create
from servers.signing import ISSUER, public_key_pem
from tests.dashboard import signed_in
from tests.factories import MembershipFactory
from tests.servers.test_nodes import new_node


@pytest.fixture
def placed(account) -> Server:
    new_node()
    return server_create(
        account=account,
        name="SMP",
        game="minecraft-java",
        region="eu-central",
        variables={"EULA": True},
        actor=SYSTEM,
    )


def test_the_console_tab_and_token_for_a_member_with_power(owner, placed):
    client = signed_in(owner)
    page = client.get(f"/servers/{placed.id}").content.decode()
    assert f'href="/servers/{placed.id}/console"' in page
    console = client.get(f"/servers/{placed.id}/console")
    assert console.status_code == 200
    html = console.content.decode()
    assert "vendor/xterm/xterm/xterm.js" in html and "js/console.js" in html
    assert f'data-token-url="/servers/{placed.id}/console/token"' in html
    answer = client.post(f"/servers/{placed.id}/console/token")
    assert answer.status_code == 200
    data = answer.json()["data"]["console"]
    claims = jwt.decode(
        data["token"],
        public_key_pem(),
        algorithms=["EdDSA"],
        audience=placed.node_id,
        issuer=ISSUER,
    )
    assert claims["sub"] == str(owner.pk) and claims["server_id"] == placed.id


def test_a_viewer_gets_no_console(account, placed):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    client = signed_in(viewer)
    assert "console-link" not in client.get(f"/servers/{placed.id}").content.decode()
    refused = client.post(f"/servers/{placed.id}/console/token")
    assert refused.status_code == 403 and refused.json()["success"] is False
    assert client.get(f"/servers/{placed.id}/console").status_code == 302


def test_an_outsider_gets_404(outsider, placed):
    client = signed_in(outsider)
    assert client.get(f"/servers/{placed.id}/console").status_code == 404
    assert client.post(f"/servers/{placed.id}/console/token").status_code == 404


def test_a_simulated_server_has_no_console(owner, account):
    server = server_create(
        account=account,
        name="SMP",
        game="minecraft-java",
        region="eu-central",
        variables={"EULA": True},
        actor=SYSTEM,
    )
    client = signed_in(owner)
    assert "console-link" not in client.get(f"/servers/{server.id}").content.decode()
    answer = client.post(f"/servers/{server.id}/console/token")
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "console_unavailable"


def test_the_overview_shows_the_last_measured_usage(owner, placed):
    UsageLatest.objects.create(
        instance_id=placed.id,
        at="2026-11-24T10:00:00Z",
        cpu_percent=42.25,
        memory_bytes=512 * 2**20,
        disk_bytes=3 * 2**30,
        uptime_seconds=120,
    )
    client = signed_in(owner)
    page = client.get(f"/servers/{placed.id}").content.decode()
    assert "42.2 %" in page or "42.3 %" in page
    assert "512.0\xa0MB" in page and "3.0\xa0GB" in page

"""The dashboard for a sub-user: a guest sees only the servers and bots of their grants, and on
each only the tabs and buttons their permissions open (servers/services/permissions.py)."""

import jwt
import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from servers.models import Server, ServerGrant
from servers.services import server_create
from servers.signing import ISSUER, public_key_pem
from tests.dashboard import signed_in
from tests.factories import MembershipFactory, ServerFactory
from tests.servers.test_nodes import new_node

pytestmark = pytest.mark.django_db


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


@pytest.fixture
def guest(account):
    return MembershipFactory(account=account, role=Role.GUEST).user


def grant(server, user, permissions):
    return ServerGrant.objects.create(
        account=server.account, server=server, user=user, permissions=permissions
    )


def test_a_guest_lists_and_opens_only_their_servers(account, guest, placed):
    other = ServerFactory(account=account, name="Hidden")
    grant(placed, guest, ["console.view"])
    client = signed_in(guest)
    listed = client.get("/").content.decode()
    assert "SMP" in listed and "Hidden" not in listed
    assert client.get(f"/servers/{placed.id}").status_code == 200
    assert client.get(f"/servers/{other.id}").status_code == 404


@pytest.mark.parametrize(
    "permissions,console_write,tabs,absent",
    [
        (["console.view"], False, ["/console"], ["/files", "/backups", "/activity", "/edit"]),
        (
            ["console.view", "console.command", "power.start", "activity.read"],
            True,
            ["/console", "/activity"],
            ["/files", "/edit", "/delete"],
        ),
        (["files.read", "backups.read"], None, ["/files", "/backups"], ["/console", "/edit"]),
    ],
)
def test_the_tabs_and_console_follow_the_grant(
    guest, placed, permissions, console_write, tabs, absent
):
    grant(placed, guest, permissions)
    client = signed_in(guest)
    page = client.get(f"/servers/{placed.id}").content.decode()
    for piece in tabs:
        assert f'href="/servers/{placed.id}{piece}"' in page, piece
    for piece in absent:
        assert f'href="/servers/{placed.id}{piece}"' not in page, piece
    answer = client.post(f"/servers/{placed.id}/console/token")
    if console_write is None:
        assert answer.status_code == 403
        return
    token = answer.json()["data"]["console"]["token"]
    claims = jwt.decode(
        token, public_key_pem(), algorithms=["EdDSA"], audience=placed.node_id, issuer=ISSUER
    )
    assert ("console.write" in claims["permissions"]) is console_write


def test_a_guest_cannot_press_a_power_button_they_lack(guest, placed):
    grant(placed, guest, ["power.start"])
    client = signed_in(guest)
    client.post(f"/servers/{placed.id}/actions", {"type": "kill"})
    assert not placed.actions.filter(type="kill").exists()
    assert client.get(f"/servers/{placed.id}/edit").status_code == 302
    assert client.get(f"/servers/{placed.id}/delete").status_code == 302

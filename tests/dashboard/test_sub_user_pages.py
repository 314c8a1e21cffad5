"""The dashboard for a sub-user: a guest sees only the servers and bots of their grants, and on
each only the tabs and buttons their permissions open (servers/services/permissions.py)."""

import jwt
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.actors import SYSTEM
from accounts.roles import Role
from servers.models import Server, ServerGrant
from servers.services import server_create
from servers.services.permissions import PRESETS
from servers.signing import ISSUER, public_key_pem
from tests.dashboard import signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory
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


def test_the_owner_sees_the_users_tab_and_manages_sub_users(owner, teammate, placed):
    client = signed_in(owner)
    base = f"/servers/{placed.id}/users"
    assert f'href="{base}"' in client.get(f"/servers/{placed.id}").content.decode()
    page = client.get(base).content.decode()
    assert 'id="user-create-form"' in page and 'name="preset"' in page
    for group in ("Console", "Power", "Settings", "Activity", "Files", "Backups", "Schedules"):
        assert f"<legend>{group}</legend>" in page, group

    client.post(f"{base}/do", {"op": "create", "email": teammate.email, "preset": "moderator"})
    member = ServerGrant.objects.get(server=placed, user=teammate)
    assert sorted(member.permissions) == sorted(PRESETS["moderator"][1])
    client.post(
        f"{base}/do",
        {"op": "create", "email": "newcomer@example.com", "permissions": ["files.read", "sftp"]},
    )
    invited = ServerGrant.objects.get(server=placed, invitation__email="newcomer@example.com")
    assert invited.user_id is None and invited.permissions == ["files.read", "sftp"]
    page = client.get(base).content.decode()
    assert 'data-status="active"' in page and 'data-status="invited"' in page
    assert "newcomer@example.com" in page and "Files (2)" in page

    client.post(
        f"{base}/do", {"op": "update", "grant_id": member.id, "permissions": ["console.view"]}
    )
    member.refresh_from_db()
    assert member.permissions == ["console.view"]
    client.post(f"{base}/do", {"op": "update", "grant_id": member.id})  # no box ticked
    member.refresh_from_db()
    assert member.permissions == ["console.view"]  # refused: at least one

    client.post(f"{base}/do", {"op": "delete", "grant_id": invited.id})
    assert not ServerGrant.objects.filter(pk=invited.pk).exists()
    assert ServerGrant.objects.filter(pk=member.pk).exists()


def test_a_developer_reads_the_users_but_does_not_manage_them(account, teammate, placed):
    assert teammate.memberships.get(account=account).role == Role.DEVELOPER
    target = ServerGrant.objects.create(
        account=account, server=placed, user=teammate, permissions=["console.view"]
    )
    client = signed_in(teammate)
    base = f"/servers/{placed.id}/users"
    page = client.get(base).content.decode()
    assert f'id="user-{target.id}"' in page
    assert "user-create-form" not in page and "user-update-form" not in page
    client.post(f"{base}/do", {"op": "delete", "grant_id": target.id})
    client.post(f"{base}/do", {"op": "create", "email": "x@example.com", "preset": "full"})
    assert list(ServerGrant.objects.values_list("id", flat=True)) == [target.id]


def test_a_guest_has_no_users_tab(guest, placed):
    grant(placed, guest, ["console.view"])
    client = signed_in(guest)
    assert "/users" not in client.get(f"/servers/{placed.id}").content.decode()
    assert client.get(f"/servers/{placed.id}/users").status_code == 302


def test_an_outsider_gets_404_on_the_users_tab(outsider, placed):
    client = signed_in(outsider)
    assert client.get(f"/servers/{placed.id}/users").status_code == 404
    answer = client.post(f"/servers/{placed.id}/users/do", {"op": "delete", "grant_id": "x"})
    assert answer.status_code == 404


def test_the_bot_page_has_the_users_tab_too(owner, account):
    bot = BotFactory(account=account)
    client = signed_in(owner)
    assert f'href="/bots/{bot.id}/users"' in client.get(f"/bots/{bot.id}").content.decode()
    client.post(
        f"/bots/{bot.id}/users/do",
        {"op": "create", "email": "helper@example.com", "preset": "console_only"},
    )
    assert ServerGrant.objects.get(bot=bot).permissions == ["console.view"]
    assert "helper@example.com" in client.get(f"/bots/{bot.id}/users").content.decode()


def test_the_users_tab_reads_its_rows_in_one_query(owner, account, placed):
    client = signed_in(owner)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/servers/{placed.id}/users").status_code == 200
        return len(captured)

    grant(placed, MembershipFactory(account=account, role=Role.VIEWER).user, ["console.view"])
    one = queries()
    for _ in range(3):
        grant(placed, MembershipFactory(account=account, role=Role.VIEWER).user, ["files.read"])
    assert queries() == one

"""The status endpoint behind the live badges and power buttons (static/js/status.js):
``GET /servers/status`` and ``/bots/status``, the statuses of the account's instances the person
sees, with the power actions each status allows that they may press, answered 304 while nothing
changed. Access as the pages: owner and teammates, a guest through their grant, an outsider 404."""

import re

import pytest
from django.db import transaction

from accounts.actors import SYSTEM
from accounts.roles import Role
from accounts.services import account_suspend
from servers.models import ServerGrant
from servers.services.actions import instance_crash
from tests.dashboard import signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db

RUNNING_ACTIONS = ["stop", "restart", "kill"]


@pytest.fixture
def server(account):
    return ServerFactory(account=account, name="Alpha SMP", auto_restart=False)


@pytest.fixture
def guest(account):
    return MembershipFactory(account=account, role=Role.GUEST).user


def entry(instance, status="running", label="Running", actions=RUNNING_ACTIONS, reason=""):
    return {
        "id": instance.pk,
        "name": instance.name,
        "status": status,
        "status_label": label,
        "status_reason": reason,
        "changing": False,
        "actions": actions,
    }


def status_of(client, *ids, kind="servers", **headers):
    query = "&".join(f"id={each}" for each in ids)
    return client.get(f"/{kind}/status?{query}", headers=headers)


def test_the_owner_gets_each_status_with_the_actions_it_allows(owner, server):
    answer = status_of(signed_in(owner), server.pk)
    assert answer.status_code == 200
    assert answer.json() == {"success": True, "data": {"servers": [entry(server)]}}
    assert re.fullmatch(r'"[0-9a-f]{32}"', answer["ETag"])
    assert answer["Cache-Control"] == "private, no-cache"


def test_without_ids_it_answers_for_every_server_of_the_account_and_no_other(
    owner, account, server, other_account
):
    stopped = ServerFactory(account=account, name="Beta SMP", status="stopped")
    ServerFactory(account=other_account)
    BotFactory(account=account)
    servers = signed_in(owner).get("/servers/status").json()["data"]["servers"]
    assert sorted(servers, key=lambda item: item["name"]) == [
        entry(server),
        entry(stopped, status="stopped", label="Stopped", actions=["start", "reinstall"]),
    ]


def test_a_teammate_sees_them_and_a_viewer_may_press_nothing(account, server, teammate):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    assert status_of(signed_in(teammate), server.pk).json()["data"]["servers"] == [entry(server)]
    assert status_of(signed_in(viewer), server.pk).json()["data"]["servers"] == [
        entry(server, actions=[])
    ]


def test_an_outsider_gets_404_for_another_accounts_server(outsider, server):
    answer = status_of(signed_in(outsider), server.pk)
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"
    assert signed_in(outsider).get("/servers/status").json()["data"]["servers"] == []


def test_a_sub_user_sees_only_their_granted_server_with_only_their_buttons(account, server, guest):
    other = ServerFactory(account=account)
    ServerGrant.objects.create(
        account=account, server=server, user=guest, permissions=["console.view", "power.stop"]
    )
    client = signed_in(guest)
    assert status_of(client, server.pk).json()["data"]["servers"] == [
        entry(server, actions=["stop"])
    ]
    assert status_of(client, other.pk).status_code == 404
    assert status_of(client, server.pk, other.pk).status_code == 404
    assert client.get("/servers/status").json()["data"]["servers"] == [
        entry(server, actions=["stop"])
    ]


def test_it_answers_304_until_the_status_changes(owner, server):
    client = signed_in(owner)
    first = status_of(client, server.pk)
    etag = first["ETag"]
    unchanged = status_of(client, server.pk, If_None_Match=etag)
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged["ETag"] == etag

    with transaction.atomic():  # the agent reports a crash
        instance_crash(instance=server, reason="exit code 1")
    changed = status_of(client, server.pk, If_None_Match=etag)
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert changed.json()["data"]["servers"] == [
        entry(
            server,
            status="stopped",
            label="Stopped",
            actions=["start", "reinstall"],
            reason="Crashed: exit code 1",
        )
    ]
    assert status_of(client, server.pk, If_None_Match=changed["ETag"]).status_code == 304


def test_a_suspended_account_shows_its_statuses_without_buttons(owner, account, server):
    account_suspend(account=account, reason="Unpaid", actor=SYSTEM)
    assert status_of(signed_in(owner), server.pk).json()["data"]["servers"] == [
        entry(server, actions=[])
    ]


def test_bots_have_theirs(owner, account):
    bot = BotFactory(account=account, name="Helper", status="starting")
    answer = status_of(signed_in(owner), bot.pk, kind="bots")
    starting = entry(bot, status="starting", label="Starting", actions=["kill"])
    assert answer.json() == {"success": True, "data": {"bots": [{**starting, "changing": True}]}}
    server = ServerFactory(account=account)
    assert status_of(signed_in(owner), server.pk, kind="bots").status_code == 404


def test_too_many_ids_are_refused(owner, server):
    answer = status_of(signed_in(owner), *[server.pk] * 101)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_parameter"


def test_signed_out_it_sends_to_the_sign_in_page(client, server):
    answer = status_of(client, server.pk)
    assert answer.status_code == 302 and "/login" in answer["Location"]


def test_its_queries_do_not_grow_with_the_servers(
    owner, account, guest, django_assert_max_num_queries
):
    servers = [ServerFactory(account=account) for _ in range(12)]
    for each in servers:
        ServerGrant.objects.create(account=account, server=each, user=guest, permissions=[])
    for user in (owner, guest):
        client = signed_in(user)
        client.get("/servers/status")  # the session's first request warms what it caches
        with django_assert_max_num_queries(8):
            answer = client.get("/servers/status")
        assert len(answer.json()["data"]["servers"]) == 12


def test_the_page_renders_the_buttons_the_status_does_not_allow_yet_hidden(owner, server):
    page = signed_in(owner).get(f"/servers/{server.pk}").content.decode()
    shown = re.findall(r'data-action="(\w+)"(?! hidden)', page)
    hidden = re.findall(r'data-action="(\w+)" hidden', page)
    assert shown == RUNNING_ACTIONS and hidden == ["start", "reinstall"]
    assert f'data-instance-status="{server.pk}" data-status="running"' in page
    assert 'data-status-url="/servers/status"' in page

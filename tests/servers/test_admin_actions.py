"""Django admin for servers and bots: the lifecycle actions go through the services (with their
events and refusals), deleted instances stay visible to staff, and a bot's token never shows."""

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from events.models import Event
from events.services import Actor
from servers.models import Action, Bot, Game, Region, Server
from servers.services import bot_create, server_create
from tests.servers.helpers import MINECRAFT, run_worker

TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.staff-never-sees-this-9f3e"


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_superuser(email="staff@hosting.test", password="staff-password-1")


@pytest.fixture
def staff_client(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def server(owner, account) -> Server:
    """Installed by the worker: stopped."""
    created = server_create(account=account, actor=Actor(user=owner), **MINECRAFT)
    run_worker()
    created.refresh_from_db()
    return created


@pytest.fixture
def bot(owner, account) -> Bot:
    created = bot_create(
        account=account, name="Moderator", region="eu-west", runtime="node-22",
        start_command="node index.js", token=TOKEN, actor=Actor(user=owner),
    )  # fmt: skip
    run_worker()
    created.refresh_from_db()
    return created


def admin_url(model, view: str, *args) -> str:
    # Admin URLs carry quoted keys: unquoted, "srv_3Bx…" would read as "srv;x…".
    name = f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}"
    return reverse(name, args=[quote(arg) for arg in args])


def run_admin_action(client: Client, model, action: str, *objects) -> list[str]:
    response = client.post(
        admin_url(model, "changelist"),
        {"action": action, "_selected_action": [obj.pk for obj in objects]},
        follow=True,
    )
    assert response.status_code == 200
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_every_model_is_registered_with_its_pages(staff_client, server, bot):
    assert {Server, Bot, Action, Region, Game} <= set(admin.site._registry)
    for model in [Server, Bot, Action, Region, Game]:
        response = staff_client.get(admin_url(model, "changelist"), {"q": "eu"})
        assert response.status_code == 200, model.__name__
    action = server.actions.get()
    for obj in [server, bot, action, Region.objects.get(slug="eu-central")]:
        assert staff_client.get(admin_url(type(obj), "change", obj.pk)).status_code == 200


def test_suspending_goes_through_the_service_and_is_recorded(staff_client, staff, server):
    messages = run_admin_action(staff_client, Server, "suspend_selected", server)
    assert messages == ["Suspended 1 server."]
    server.refresh_from_db()
    assert server.status == "suspended"
    assert server.suspended_reason == "Suspended by staff@hosting.test"
    event = Event.objects.get(type="server.suspended", object_id=server.id)
    assert event.actor_user == staff
    assert event.data["object"]["suspended_reason"] == "Suspended by staff@hosting.test"
    assert Action.objects.filter(server=server, type="suspend").exists()

    run_worker()
    messages = run_admin_action(staff_client, Server, "unsuspend_selected", server)
    assert messages == ["Unsuspended 1 server."]
    server.refresh_from_db()
    assert (server.status, server.suspended_reason) == ("stopped", "")
    assert Event.objects.get(type="server.unsuspended").actor_user == staff


def test_each_refusal_is_reported_and_the_rest_still_done(staff_client, owner, account, server):
    running = server_create(
        account=account, actor=Actor(user=owner), **{**MINECRAFT, "name": "Busy"}
    )
    messages = run_admin_action(staff_client, Server, "unsuspend_selected", server, running)
    assert sorted(messages) == sorted(
        [
            f"{server}: Cannot unsuspend a server that is stopped; allowed: start, reinstall.",
            f"{running}: Cannot unsuspend a server that is provisioning.",
        ]
    )
    messages = run_admin_action(staff_client, Server, "reinstall_selected", server, running)
    assert messages == [
        f"{running}: Cannot reinstall a server that is provisioning.",
        "Started reinstalling 1 server.",
    ]
    server.refresh_from_db()
    assert server.status == "installing"
    run_worker()
    server.refresh_from_db()
    assert server.status == "stopped"
    assert Action.objects.get(server=server, type="reinstall").status == "succeeded"
    assert Event.objects.filter(
        type="server.status_changed", object_id=server.id, data__object__status="installing"
    ).exists()


def test_a_bot_is_suspended_and_reinstalled_the_same_way(staff_client, bot):
    assert run_admin_action(staff_client, Bot, "reinstall_selected", bot) == [
        "Started reinstalling 1 bot."
    ]
    run_worker()
    assert run_admin_action(staff_client, Bot, "suspend_selected", bot) == ["Suspended 1 bot."]
    bot.refresh_from_db()
    assert bot.status == "suspended"
    assert Event.objects.filter(type="bot.suspended", object_id=bot.id).exists()


def test_the_bot_pages_never_show_its_token(staff_client, bot):
    for url in [admin_url(Bot, "change", bot.pk), admin_url(Bot, "changelist")]:
        body = staff_client.get(url).content.decode()
        assert TOKEN not in body
        assert bot.token_encrypted not in body
        assert "token_encrypted" not in body
        assert "…9f3e" in body


def test_deleted_instances_stay_visible_to_staff(staff_client, server, owner, account):
    gone = server_create(account=account, actor=Actor(user=owner), **{**MINECRAFT, "name": "Gone"})
    Server.objects.filter(pk=gone.pk).update(deleted_at=timezone.now())
    url = admin_url(Server, "changelist")
    assert set(staff_client.get(url).context["cl"].result_list) == {server, gone}
    assert list(staff_client.get(url, {"deleted": "yes"}).context["cl"].result_list) == [gone]
    assert list(staff_client.get(url, {"deleted": "no"}).context["cl"].result_list) == [server]
    assert staff_client.get(admin_url(Server, "change", gone.pk)).status_code == 200


def test_status_and_other_service_owned_fields_are_read_only(staff_client, server):
    response = staff_client.get(admin_url(Server, "change", server.pk))
    form_fields = set(response.context["adminform"].form.fields)
    assert form_fields == {"simulation"}
    assert staff_client.get(admin_url(Server, "add")).status_code == 403
    assert staff_client.get(admin_url(Server, "delete", server.pk)).status_code == 403


def test_actions_are_read_only(staff_client, server):
    action = server.actions.get()
    response = staff_client.get(admin_url(Action, "change", action.pk))
    assert response.status_code == 200
    assert response.context["has_change_permission"] is False
    assert staff_client.get(admin_url(Action, "add")).status_code == 403
    staff_client.post(admin_url(Action, "change", action.pk), {"status": "failed"})
    action.refresh_from_db()
    assert action.status == "succeeded"

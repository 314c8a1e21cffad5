"""Django admin for servers and bots: the lifecycle actions, from the changelist and from the
buttons of one instance's change page, go through the services (with their events and refusals),
deleted instances stay visible to staff, and a bot's token never shows."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import User
from events.models import Event
from servers.models import Action, Bot, Game, Region, Server
from servers.services import bot_create, server_create
from tests.accounts.test_admin import admin_url
from tests.servers.helpers import MINECRAFT, run_worker

TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.staff-never-sees-this-9f3e"


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
        account=account,
        name="Moderator",
        region="eu-west",
        runtime="node-22",
        start_command="node index.js",
        token=TOKEN,
        actor=Actor(user=owner),
    )
    run_worker()
    created.refresh_from_db()
    return created


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


def test_suspending_goes_through_the_service_and_is_recorded(staff_client, superuser, server):
    messages = run_admin_action(staff_client, Server, "suspend_selected", server)
    assert messages == ["Suspended 1 server."]
    server.refresh_from_db()
    assert server.status == "suspended"
    assert server.suspended_reason == "Suspended by staff@hosting.test"
    event = Event.objects.get(type="server.suspended", object_id=server.id)
    assert event.actor_user == superuser
    assert event.data["object"]["suspended_reason"] == "Suspended by staff@hosting.test"
    assert Action.objects.filter(server=server, type="suspend").exists()

    run_worker()
    messages = run_admin_action(staff_client, Server, "unsuspend_selected", server)
    assert messages == ["Unsuspended 1 server."]
    server.refresh_from_db()
    assert (server.status, server.suspended_reason) == ("stopped", "")
    assert Event.objects.get(type="server.unsuspended").actor_user == superuser


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


# --- One instance's change page: a button for each action its status allows ---------------------


def lifecycle_url(instance, action_type: str) -> str:
    return admin_url(type(instance), "lifecycle", instance.pk, action_type)


def press(client: Client, instance, action_type: str):
    """Press a change-page button: POST, as its form does, and follow back to the page."""
    return client.post(lifecycle_url(instance, action_type), follow=True)


def shown_messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def offered(client: Client, instance) -> list[str]:
    response = client.get(admin_url(type(instance), "change", instance.pk))
    assert response.status_code == 200
    return [action["label"] for action in response.context.get("lifecycle_actions", [])]


def set_status(instance, status: str) -> None:
    """Put an instance in a status directly, as the worker would have left it."""
    type(instance).objects.filter(pk=instance.pk).update(status=status)
    instance.refresh_from_db()


@pytest.mark.parametrize(
    ("status", "buttons"),
    [
        ("stopped", ["Start", "Reinstall", "Suspend"]),
        ("running", ["Stop", "Restart", "Suspend"]),
        ("install_failed", ["Reinstall", "Suspend"]),
        ("starting", ["Suspend"]),
        ("suspended", ["Unsuspend"]),
        ("deleting", []),
    ],
)
def test_the_change_page_offers_what_the_status_allows(staff_client, server, status, buttons):
    set_status(server, status)

    assert offered(staff_client, server) == buttons


def test_each_button_is_a_post_form_with_a_csrf_token(staff_client, server):
    page = staff_client.get(admin_url(Server, "change", server.pk)).content.decode()

    for action_type in ["start", "reinstall", "suspend"]:
        opening = f'<form method="post" action="{lifecycle_url(server, action_type)}"'
        assert opening in page
        form = page.split(opening, 1)[1].split("</form>", 1)[0]
        assert 'name="csrfmiddlewaretoken"' in form
        assert f'value="{action_type.capitalize()}"' in form
    assert lifecycle_url(server, "stop") not in page


def test_a_deleted_instance_offers_nothing_and_refuses_every_action(staff_client, server):
    Server.objects.filter(pk=server.pk).update(deleted_at=timezone.now())
    events = Event.objects.count()

    assert offered(staff_client, server) == []
    response = press(staff_client, server, "start")

    assert shown_messages(response) == [f"{server}: The requested resource does not exist."]
    server.refresh_from_db()
    assert server.status == "stopped"
    assert Event.objects.count() == events


def test_starting_from_the_change_page_goes_through_the_service(staff_client, superuser, server):
    response = press(staff_client, server, "start")

    assert response.redirect_chain == [(admin_url(Server, "change", server.pk), 302)]
    assert shown_messages(response) == ["Starting 1 server."]
    server.refresh_from_db()
    assert server.status == "starting"
    action = Action.objects.get(server=server, type="start")
    assert (action.status, action.requested_by_user) == ("pending", superuser)
    event = Event.objects.get(
        type="server.status_changed", object_id=server.id, actor_user=superuser
    )
    assert event.data["object"]["status"] == "starting"
    assert event.data["previous_attributes"] == {"status": "stopped"}
    run_worker()
    server.refresh_from_db()
    assert server.status == "running"
    assert offered(staff_client, server) == ["Stop", "Restart", "Suspend"]


@pytest.mark.parametrize(
    ("action_type", "message", "at_once", "after_worker"),
    [
        ("stop", "Stopping 1 server.", "stopping", "stopped"),
        ("restart", "Restarting 1 server.", "stopping", "running"),
    ],
)
def test_a_running_server_is_stopped_or_restarted_from_its_page(
    staff_client, superuser, server, action_type, message, at_once, after_worker
):
    press(staff_client, server, "start")
    run_worker()

    response = press(staff_client, server, action_type)

    assert shown_messages(response) == [message]
    server.refresh_from_db()
    assert server.status == at_once
    assert Action.objects.get(server=server, type=action_type).requested_by_user == superuser
    assert Event.objects.filter(
        type="server.status_changed",
        object_id=server.id,
        actor_user=superuser,
        data__object__status=at_once,
    ).exists()
    run_worker()
    server.refresh_from_db()
    assert server.status == after_worker


def test_reinstalling_from_the_change_page_runs_the_install_again(staff_client, superuser, server):
    response = press(staff_client, server, "reinstall")

    assert shown_messages(response) == ["Started reinstalling 1 server."]
    server.refresh_from_db()
    assert server.status == "installing"
    run_worker()
    assert Action.objects.get(server=server, type="reinstall").status == "succeeded"
    server.refresh_from_db()
    assert server.status == "stopped"


def test_suspending_and_unsuspending_from_the_change_page(staff_client, superuser, server):
    response = press(staff_client, server, "suspend")

    assert shown_messages(response) == ["Suspended 1 server."]
    server.refresh_from_db()
    assert (server.status, server.suspended_reason) == ("suspended", f"Suspended by {superuser}")
    event = Event.objects.get(type="server.suspended", object_id=server.id)
    assert event.actor_user == superuser
    run_worker()
    assert offered(staff_client, server) == ["Unsuspend"]

    response = press(staff_client, server, "unsuspend")

    assert shown_messages(response) == ["Unsuspended 1 server."]
    server.refresh_from_db()
    assert (server.status, server.suspended_reason) == ("stopped", "")
    assert Event.objects.get(type="server.unsuspended", object_id=server.id).actor_user == superuser


def test_a_bot_is_started_from_its_change_page(staff_client, superuser, bot):
    assert offered(staff_client, bot) == ["Start", "Reinstall", "Suspend"]

    response = press(staff_client, bot, "start")

    assert response.redirect_chain == [(admin_url(Bot, "change", bot.pk), 302)]
    assert shown_messages(response) == ["Starting 1 bot."]
    bot.refresh_from_db()
    assert bot.status == "starting"
    assert Event.objects.filter(
        type="bot.status_changed", object_id=bot.id, actor_user=superuser
    ).exists()
    run_worker()
    bot.refresh_from_db()
    assert bot.status == "running"


def test_an_action_the_status_does_not_allow_is_refused_with_a_message(staff_client, server):
    events, actions = Event.objects.count(), Action.objects.count()

    response = press(staff_client, server, "unsuspend")

    assert response.status_code == 200
    assert response.redirect_chain == [(admin_url(Server, "change", server.pk), 302)]
    assert shown_messages(response) == [
        f"{server}: Cannot unsuspend a server that is stopped; allowed: start, reinstall."
    ]
    assert [m.level_tag for m in get_messages(response.wsgi_request)] == ["error"]
    server.refresh_from_db()
    assert server.status == "stopped"
    assert (Event.objects.count(), Action.objects.count()) == (events, actions)


def test_an_action_still_in_progress_is_reported_not_raised(staff_client, server):
    press(staff_client, server, "suspend")  # its kill step is still queued
    suspend = Action.objects.get(server=server, type="suspend")
    events = Event.objects.count()

    response = press(staff_client, server, "unsuspend")

    assert shown_messages(response) == [
        f"{server}: The suspend action {suspend.id} is still pending."
    ]
    server.refresh_from_db()
    assert server.status == "suspended"
    assert Event.objects.count() == events


def test_a_get_is_refused_and_changes_nothing(staff_client, server):
    response = staff_client.get(lifecycle_url(server, "start"))

    assert response.status_code == 405
    server.refresh_from_db()
    assert server.status == "stopped"
    assert not Action.objects.filter(server=server, type="start").exists()


@pytest.mark.parametrize("action_type", ["delete", "kill", "create", "nonsense"])
def test_other_actions_are_not_found(staff_client, server, action_type):
    response = staff_client.post(lifecycle_url(server, action_type))

    assert response.status_code == 404
    server.refresh_from_db()
    assert server.status == "stopped"
    assert list(server.actions.values_list("type", flat=True)) == ["create"]


def test_an_unknown_instance_is_not_found(staff_client, server):
    response = staff_client.post(
        reverse("admin:servers_server_lifecycle", args=["srv_unknown", "start"])
    )

    assert response.status_code == 404


def test_customers_cannot_reach_the_buttons(owner, server):
    client = Client()
    client.force_login(owner)  # the server's own owner, but not superuser

    response = client.post(lifecycle_url(server, "start"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    server.refresh_from_db()
    assert server.status == "stopped"
    assert not Action.objects.filter(server=server, type="start").exists()


def test_staff_who_may_only_view_servers_get_no_buttons_and_a_refusal(server):
    viewer = User.objects.create_user(email="viewer@hosting.test", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_server"))
    client = Client()
    client.force_login(viewer)

    assert offered(client, server) == []
    response = client.post(lifecycle_url(server, "suspend"))

    assert response.status_code == 403
    server.refresh_from_db()
    assert server.status == "stopped"
    assert not Event.objects.filter(type="server.suspended").exists()


def test_the_csrf_token_is_required(superuser, server):
    client = Client(enforce_csrf_checks=True)
    client.force_login(superuser)

    response = client.post(lifecycle_url(server, "start"))

    assert response.status_code == 403
    server.refresh_from_db()
    assert server.status == "stopped"


def test_editing_the_simulation_writes_that_column_only(staff_client, server, monkeypatch):
    # The page's copy was read while stopped; the worker started the server before the save.
    stale = Server.objects.get(pk=server.pk)
    set_status(server, "running")
    monkeypatch.setattr(admin.site._registry[Server], "get_object", lambda *args, **kw: stale)
    events = Event.objects.count()
    before = Server.objects.get(pk=server.pk).updated_at

    response = staff_client.post(
        admin_url(Server, "change", server.pk),
        # The allocations' read-only inline sends its (empty) management form, as the page does.
        {
            "simulation": '{"fail_start": true}',
            "allocations-TOTAL_FORMS": "0",
            "allocations-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302
    server.refresh_from_db()
    assert server.simulation == {"fail_start": True}
    assert server.status == "running"
    assert server.updated_at > before
    assert Event.objects.count() == events


# --- Nothing here deletes past the services -------------------------------------------------------


@pytest.mark.parametrize("model", [Server, Bot, Action])
def test_instances_and_actions_are_never_deleted_in_admin(staff_client, server, bot, model):
    obj = model.objects.first()
    changelist = admin_url(model, "changelist")

    action_form = staff_client.get(changelist).context["action_form"]
    response = staff_client.post(
        changelist, {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"}
    )

    assert action_form is None or "delete_selected" not in dict(
        action_form.fields["action"].choices
    )
    assert response.status_code in {200, 302}
    assert staff_client.post(admin_url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model", [Game, Region])
def test_catalogue_entries_in_use_are_not_deleted(staff_client, server, model):
    entry = server.game if model is Game else server.region
    # A game is removed through its service (the action names what uses it); a region by
    # Django's own delete, which its servers protect.
    action = "remove_unused" if model is Game else "delete_selected"

    response = staff_client.post(
        admin_url(model, "changelist"),
        {"action": action, "_selected_action": [entry.pk], "post": "yes"},
        follow=True,
    )

    assert response.status_code == 200
    shown = response.content.decode()
    assert ("is still used by 1 server" if model is Game else "Cannot delete") in shown
    assert model.objects.filter(pk=entry.pk).exists()

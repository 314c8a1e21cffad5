"""Servers pages: creating in two steps, the detail page's power buttons driven by the real worker,
settings, deleting, activity, live statuses, and who may see and do what."""

import re

import pytest
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.roles import Role
from accounts.services import account_suspend
from events.models import Event
from servers.models import Action, Server
from servers.services import server_create
from tests.dashboard import field_errors, messages_of, signed_in
from tests.factories import MembershipFactory, ServerFactory
from tests.servers.helpers import MINECRAFT, run_worker

MINECRAFT_FORM = {
    "name": "Survival SMP",
    "region": "eu-central",
    "memory_mb": "2048",
    "cpu_percent": "100",
    "disk_mb": "10240",
    "auto_restart": "on",
    "variable_EULA": "on",
    "variable_VERSION": "latest",
    "variable_MAX_PLAYERS": "20",
    "variable_DIFFICULTY": "normal",
}
CREATE_URL = "/servers/new?game=minecraft-java"
SUSPENDED = "This account is suspended, so its data cannot be changed."


@pytest.fixture
def viewer(account):
    return MembershipFactory(account=account, role=Role.VIEWER).user


@pytest.fixture
def support(account):
    return MembershipFactory(account=account, role=Role.SUPPORT).user


@pytest.fixture
def server(owner, account) -> Server:
    """A Minecraft server the worker has provisioned and installed: stopped."""
    created = server_create(account=account, actor=Actor(user=owner), **MINECRAFT)
    run_worker()
    created.refresh_from_db()
    assert created.status == "stopped"
    return created


def power_buttons(response) -> list[str]:
    return re.findall(r'data-action="(\w+)"(?! hidden)', response.content.decode())


def live_region(response) -> str:
    return re.search(r'<div id="live" data-live data-poll="(\w+)"', response.content.decode())[1]


def server_urls(server: Server) -> list[str]:
    base = f"/servers/{server.id}"
    return [base, f"{base}/edit", f"{base}/delete", f"{base}/activity"]


# --- Creating ---------------------------------------------------------------------------------


def test_creating_starts_by_choosing_a_game(owner):
    client = signed_in(owner)
    body = client.get("/").content.decode()
    assert 'id="new-server" class="button button-primary" href="/servers/new"' in body

    chooser = client.get("/servers/new")
    body = chooser.content.decode()
    assert '<select name="game"' in body
    assert '<option value="minecraft-java">Minecraft: Java Edition</option>' in body
    assert 'id="create-server"' not in body

    unknown = client.get("/servers/new", {"game": "tetris"})
    assert unknown.context["chooser"].errors["game"]
    assert 'id="create-server"' not in unknown.content.decode()


def test_the_second_step_asks_for_the_games_variables_with_their_defaults(owner):
    response = signed_in(owner).get(CREATE_URL)
    body = response.content.decode()
    assert 'id="chosen-game">Minecraft: Java Edition<' in body
    assert '<input type="checkbox" name="variable_EULA"' in body
    assert re.search(r'<input type="text" name="variable_VERSION" value="latest"', body)
    assert re.search(
        r'<input type="number" name="variable_MAX_PLAYERS" value="20"[^>]*min="1"', body
    )
    assert '<select name="variable_DIFFICULTY"' in body
    assert '<option value="normal" selected>normal</option>' in body
    assert re.search(r'name="memory_mb" value="2048"', body)
    assert re.search(r'name="cpu_percent" value="100"', body)
    assert re.search(r'name="disk_mb" value="10240"', body)
    assert 'action="/servers/new?game=minecraft-java"' in body


def test_a_refused_variable_is_shown_next_to_its_input_and_the_form_kept(owner):
    data = {**MINECRAFT_FORM, "name": "My World", "variable_MAX_PLAYERS": "42"}
    del data["variable_EULA"]
    response = signed_in(owner).post(CREATE_URL, data)

    assert response.status_code == 200
    assert field_errors(response, "variable_EULA") == ["Accept the Minecraft EULA must be true."]
    body = response.content.decode()
    eula = re.search(r'<div class="field field-invalid">(.*?)</div>\s*</div>', body, re.S)[1]
    assert 'name="variable_EULA"' in eula
    assert "Accept the Minecraft EULA must be true." in body
    assert 'value="My World"' in body
    assert re.search(r'name="variable_MAX_PLAYERS" value="42"', body)
    assert not Server.objects.exists()


def test_a_new_server_is_installed_then_started_from_its_page(owner, account):
    client = signed_in(owner)
    response = client.post(CREATE_URL, MINECRAFT_FORM, follow=True)
    server = Server.objects.get(account=account)
    assert response.redirect_chain == [(f"/servers/{server.id}", 302)]
    assert messages_of(response) == [
        "Created “Survival SMP”: it is being provisioned and installed."
    ]
    assert server.status == "provisioning"
    assert server.variables["EULA"] is True
    assert power_buttons(response) == []
    assert live_region(response) == "true"
    assert Event.objects.get(type="server.created").actor_user == owner

    run_worker()
    detail = client.get(f"/servers/{server.id}")
    assert re.search(
        r'<span id="status" class="badge badge-stopped"[^>]*>Stopped</span>',
        detail.content.decode(),
    )
    assert power_buttons(detail) == ["start", "reinstall"]
    assert live_region(detail) == "false"
    assert "203.0.113.10:25565" in detail.content.decode()

    response = client.post(f"/servers/{server.id}/actions", {"type": "start"}, follow=True)
    assert response.redirect_chain == [(f"/servers/{server.id}", 302)]
    assert messages_of(response) == ["Start requested for “Survival SMP”."]
    server.refresh_from_db()
    assert server.status == "starting"
    assert power_buttons(response) == ["kill"]
    assert live_region(response) == "true"

    run_worker()
    detail = client.get(f"/servers/{server.id}")
    body = detail.content.decode()
    assert re.search(r'<span id="status" class="badge badge-running"[^>]*>Running</span>', body)
    assert power_buttons(detail) == ["stop", "restart", "kill"]
    actions = re.search(r'<table id="actions".*?</table>', body, re.S)[0]
    assert re.findall(r"<td><code>(\w+)</code></td>", actions) == ["start", "create"]
    assert actions.count("Succeeded") == 2
    assert owner.email in actions


def test_an_action_the_status_does_not_allow_is_a_message(owner, server):
    response = signed_in(owner).post(f"/servers/{server.id}/actions", {"type": "stop"}, follow=True)
    assert messages_of(response) == [
        "Cannot stop a server that is stopped; allowed: start, reinstall."
    ]
    server.refresh_from_db()
    assert server.status == "stopped"


def test_an_action_while_another_runs_is_a_message(owner, account, server):
    running = Action.objects.create(account=account, server=server, type="reinstall")
    response = signed_in(owner).post(
        f"/servers/{server.id}/actions", {"type": "start"}, follow=True
    )
    assert messages_of(response) == [f"The reinstall action {running.id} is still pending."]
    assert server.actions.count() == 2


def test_an_unknown_action_is_refused(owner, server):
    response = signed_in(owner).post(
        f"/servers/{server.id}/actions", {"type": "suspend"}, follow=True
    )
    assert messages_of(response) == ["Choose one of the power actions."]
    server.refresh_from_db()
    assert server.status == "stopped"


def test_the_quota_is_said_above_the_form_and_the_form_stays(owner, account):
    account.max_servers = 0
    account.save()
    response = signed_in(owner).post(CREATE_URL, MINECRAFT_FORM)
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "The account may have 0 servers; delete one or ask for a higher limit."
    ]
    assert messages_of(response) == []
    assert 'value="Survival SMP"' in response.content.decode()
    assert not Server.objects.exists()


# --- Settings, deleting, activity ---------------------------------------------------------------


def test_settings_are_saved_and_say_when_a_restart_is_needed(owner, server):
    client = signed_in(owner)
    page = client.get(f"/servers/{server.id}/edit")
    body = page.content.decode()
    assert 'value="Survival SMP"' in body
    assert re.search(r'name="variable_MAX_PLAYERS" value="20"', body)
    assert re.search(r'<input type="checkbox" name="variable_EULA"[^>]*checked', body)

    form = {**MINECRAFT_FORM, "name": "Survival 2", "memory_mb": "4096"}
    response = client.post(f"/servers/{server.id}/edit", form, follow=True)
    assert messages_of(response) == ["Saved “Survival 2”."]
    server.refresh_from_db()
    assert (server.name, server.memory_mb) == ("Survival 2", 4096)

    client.post(f"/servers/{server.id}/actions", {"type": "start"}, follow=True)
    run_worker()
    form = {**form, "memory_mb": "3072", "variable_DIFFICULTY": "hard"}
    response = client.post(f"/servers/{server.id}/edit", form, follow=True)
    assert messages_of(response) == [
        "Saved. Restart “Survival 2” for the new memory and variables to take effect."
    ]
    server.refresh_from_db()
    assert (server.memory_mb, server.variables["DIFFICULTY"]) == (3072, "hard")
    assert Event.objects.filter(type="server.updated", object_id=server.id).count() == 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("variable_MAX_PLAYERS", "5000", "Max players must be from 1 to 1000."),
        ("cpu_percent", "5", "cpu_percent must be an integer from 10 to 800."),
    ],
)
def test_a_refused_setting_is_shown_next_to_its_input(owner, server, field, value, message):
    response = signed_in(owner).post(
        f"/servers/{server.id}/edit", {**MINECRAFT_FORM, "name": "Renamed", field: value}
    )
    assert response.status_code == 200
    assert response.context["form"].errors == {field: [message]}
    assert re.search(rf'name="{field}" value="{value}"', response.content.decode())
    server.refresh_from_db()
    assert (server.name, server.variables["MAX_PLAYERS"], server.cpu_percent) == (
        "Survival SMP",
        20,
        100,
    )


def test_deleting_asks_first_then_the_server_is_gone(owner, server):
    client = signed_in(owner)
    detail = client.get(f"/servers/{server.id}").content.decode()
    assert f'id="delete-link" class="tab-danger" href="/servers/{server.id}/delete"' in detail

    confirm = client.get(f"/servers/{server.id}/delete")
    assert 'id="confirm-delete"' in confirm.content.decode()
    server.refresh_from_db()
    assert server.status == "stopped"

    response = client.post(f"/servers/{server.id}/delete", follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert messages_of(response) == [
        "“Survival SMP” is being deleted; it leaves this list once it is gone."
    ]
    assert re.search(
        r'<span class="badge badge-deleting"[^>]*>Deleting</span>',
        response.content.decode(),
    )
    assert live_region(response) == "true"

    run_worker()
    assert server.id not in client.get("/").content.decode()
    for url in server_urls(server):
        assert client.get(url).status_code == 404, url
    assert Server.objects.get(pk=server.pk).deleted_at is not None


def test_activity_lists_the_servers_events_and_its_actions(owner, account, server):
    ServerFactory(account=account, name="Another")
    response = signed_in(owner).get(f"/servers/{server.id}/activity")
    body = response.content.decode()
    assert 'id="activity"' in body
    types = [event.type for event in response.context["events"]]
    assert types[-1] == "server.created"
    assert {"action.succeeded", "server.status_changed"} <= set(types)
    assert {event.object_id or event.related_id for event in response.context["events"]} == {
        server.id
    } | {action.id for action in server.actions.all()}
    assert "Provisioning → Installing" in body  # by their labels (issue 34 item 15)
    assert owner.email in body


# --- Live statuses -----------------------------------------------------------------------------


def test_the_list_refreshes_itself_only_while_a_server_is_changing(owner, account):
    ServerFactory(account=account, status="running")
    client = signed_in(owner)
    settled = client.get("/")
    assert live_region(settled) == "false"
    assert "<noscript>" not in settled.content.decode()

    ServerFactory(account=account, status="starting")
    moving = client.get("/")
    assert live_region(moving) == "true"
    assert "reload the page</a>" in moving.content.decode()


def test_the_live_partial_is_the_region_alone(owner, account, server):
    client = signed_in(owner)
    for url in ["/", f"/servers/{server.id}"]:
        body = client.get(url, {"partial": "live"}).content.decode().strip()
        assert body.startswith('<div id="live" data-live'), url
        assert "<html" not in body
        assert 'class="sidebar"' not in body
    assert client.get(f"/servers/{server.id}", {"partial": "live"}).context is not None


def test_the_live_partial_does_not_use_up_messages(owner, server):
    client = signed_in(owner)
    client.post(f"/servers/{server.id}/actions", {"type": "start"})
    client.get(f"/servers/{server.id}", {"partial": "live"})
    response = client.get(f"/servers/{server.id}")
    assert messages_of(response) == ["Start requested for “Survival SMP”."]


# --- Who may see and do what -------------------------------------------------------------------


def test_an_outsider_gets_404_for_every_page_and_change(outsider, server):
    client = signed_in(outsider)
    for url in server_urls(server):
        assert client.get(url).status_code == 404, url
    for url, data in [
        (f"/servers/{server.id}/actions", {"type": "start"}),
        (f"/servers/{server.id}/edit", {**MINECRAFT_FORM, "name": "Taken"}),
        (f"/servers/{server.id}/delete", {}),
    ]:
        assert client.post(url, data).status_code == 404, url
    server.refresh_from_db()
    assert (server.name, server.status) == ("Survival SMP", "stopped")
    assert server.id not in client.get("/").content.decode()


def test_a_deleted_server_is_404(owner, server):
    Server.objects.filter(pk=server.pk).update(deleted_at=timezone.now())
    client = signed_in(owner)
    for url in server_urls(server):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/servers/{server.id}/actions", {"type": "start"}).status_code == 404


def test_a_viewer_reads_but_gets_no_buttons_and_is_refused(viewer, server):
    client = signed_in(viewer)
    assert 'id="new-server"' not in client.get("/").content.decode()
    detail = client.get(f"/servers/{server.id}")
    assert detail.status_code == 200
    assert power_buttons(detail) == []
    assert 'id="edit-link"' not in detail.content.decode()
    assert 'id="delete-link"' not in detail.content.decode()

    refused_power = "As Viewer, you may not start, stop, restart and kill game servers."
    refused_write = "As Viewer, you may not create, configure and delete game servers."
    response = client.post(f"/servers/{server.id}/actions", {"type": "start"}, follow=True)
    assert response.redirect_chain == [(f"/servers/{server.id}", 302)]
    assert messages_of(response) == [refused_power]
    for url, data in [
        (CREATE_URL, MINECRAFT_FORM),
        (f"/servers/{server.id}/edit", {**MINECRAFT_FORM, "name": "Mine now"}),
        (f"/servers/{server.id}/delete", {}),
    ]:
        assert messages_of(client.post(url, data, follow=True)) == [refused_write], url
    assert messages_of(client.get("/servers/new", follow=True)) == [refused_write]
    server.refresh_from_db()
    assert (server.name, server.status) == ("Survival SMP", "stopped")
    assert Server.objects.count() == 1


def test_every_role_reads_the_servers(account, server):
    billing = MembershipFactory(account=account, role=Role.BILLING).user
    client = signed_in(billing)
    assert server.id in client.get("/").content.decode()
    detail = client.get(f"/servers/{server.id}")
    assert detail.status_code == 200
    assert power_buttons(detail) == []


def test_support_may_power_but_not_change_settings(support, server):
    client = signed_in(support)
    detail = client.get(f"/servers/{server.id}")
    assert power_buttons(detail) == ["start", "reinstall"]
    assert 'id="edit-link"' not in detail.content.decode()
    client.post(f"/servers/{server.id}/actions", {"type": "start"})
    server.refresh_from_db()
    assert server.status == "starting"


def test_a_suspended_account_reads_but_changes_nothing(owner, account, server):
    account_suspend(account=account, reason="Unpaid invoice", actor=SYSTEM)
    client = signed_in(owner)
    assert 'id="new-server"' not in client.get("/").content.decode()
    detail = client.get(f"/servers/{server.id}")
    assert detail.status_code == 200
    assert power_buttons(detail) == []
    assert 'id="edit-link"' not in detail.content.decode()
    for url, data in [
        (f"/servers/{server.id}/actions", {"type": "start"}),
        (f"/servers/{server.id}/edit", {**MINECRAFT_FORM, "name": "Renamed"}),
        (f"/servers/{server.id}/delete", {}),
        (CREATE_URL, MINECRAFT_FORM),
    ]:
        assert messages_of(client.post(url, data, follow=True)) == [SUSPENDED], url
    server.refresh_from_db()
    assert (server.name, server.status) == ("Survival SMP", "stopped")
    assert Server.objects.count() == 1


def test_a_refusal_is_said_in_the_pages_language_and_the_api_keeps_its_english(
    owner, account, server, make_token, client_for
):
    """Issue 34 item 15: the services' refusals are marked; a German member reads them in
    German on the page, while the API answers the same refusal in English whatever the
    request's Accept-Language."""
    owner.language = "de"
    owner.save(update_fields=["language"])
    response = signed_in(owner).post(f"/servers/{server.id}/actions", {"type": "stop"}, follow=True)
    assert messages_of(response) == [
        "stop ist für einen Server im Status stopped nicht möglich; erlaubt: start, reinstall."
    ]

    token = make_token(owner, account)
    answer = client_for(token).post(
        f"/v1/servers/{server.id}/actions",
        {"type": "stop"},
        format="json",
        HTTP_ACCEPT_LANGUAGE="de",
    )
    assert answer.status_code == 409
    assert answer.json()["error"]["message"] == (
        "Cannot stop a server that is stopped; allowed: start, reinstall."
    )

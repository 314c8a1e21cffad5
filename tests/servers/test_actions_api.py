"""Power actions, their history, bulk actions, a server's activity and the region catalogue."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_tasks_db.models import DBTaskResult

from events.models import Event
from servers.models import ACTIVE_ACTION, Action, Server
from tests.conftest import auth_queries
from tests.envelopes import error_of
from tests.factories import ServerFactory
from tests.servers.helpers import MINECRAFT, run_worker

BOT = {
    "name": "Helper",
    "region": "eu-central",
    "runtime": "node-22",
    "start_command": "node index.js",
    "token": "a-discord-bot-token-of-30-chars",
}


def post_action(api, server_id: str, action_type: str):
    return api.post(f"/v1/servers/{server_id}/actions", {"type": action_type}, format="json")


def accepted(api, server_id: str, action_type: str) -> dict:
    response = post_action(api, server_id, action_type)
    assert response.status_code == 202, response.content
    return response.json()["data"]["action"]


def status_of(server_id: str) -> str:
    return Server.objects.get(pk=server_id).status


def status_changes(server_id: str) -> list[tuple[str, str]]:
    return [
        (event.data["previous_attributes"]["status"], event.data["object"]["status"])
        for event in Event.objects.filter(
            type="server.status_changed", object_id=server_id
        ).order_by("created_at", "id")
    ]


@pytest.fixture
def stopped(owner_api) -> str:
    response = owner_api.post("/v1/servers", MINECRAFT, format="json")
    assert response.status_code == 201, response.content
    run_worker()
    server_id = response.json()["data"]["server"]["id"]
    assert status_of(server_id) == "stopped"
    return server_id


@pytest.fixture
def running(owner_api, stopped) -> str:
    accepted(owner_api, stopped, "start")
    run_worker()
    assert status_of(stopped) == "running"
    return stopped


@pytest.fixture(autouse=True)
def _every_task_succeeded(db):
    yield
    assert not DBTaskResult.objects.failed().exists()


# --- Each action from each status ----------------------------------------------------------

ALLOWED = {
    "provisioning": [],
    "installing": [],
    "install_failed": ["reinstall"],
    "stopped": ["start", "reinstall"],
    "starting": ["kill"],
    "running": ["stop", "restart", "kill"],
    "stopping": ["kill"],
    "suspended": [],
    "deleting": [],
}


@pytest.mark.parametrize("status", ALLOWED)
@pytest.mark.parametrize("action_type", ["start", "stop", "restart", "kill", "reinstall"])
def test_each_action_is_accepted_only_from_the_statuses_the_table_allows(
    owner_api, account, status, action_type
):
    server = ServerFactory(account=account, status=status)
    response = post_action(owner_api, server.id, action_type)
    if action_type in ALLOWED[status]:
        assert response.status_code == 202, response.content
        assert Action.objects.get(server=server).type == action_type
    else:
        error = error_of(response, 409, "invalid_state")
        assert error["details"] == {"status": status, "allowed_actions": ALLOWED[status]}
        assert not Action.objects.filter(server=server).exists()
        assert status_of(server.id) == status


def test_start_from_stopped(owner_api, stopped):
    action = accepted(owner_api, stopped, "start")
    assert (action["type"], action["status"], action["target"]) == (
        "start",
        "pending",
        {"type": "server", "id": stopped},
    )
    assert status_of(stopped) == "starting"
    run_worker()
    assert status_of(stopped) == "running"
    assert Action.objects.get(pk=action["id"]).status == "succeeded"
    assert status_changes(stopped)[-2:] == [("stopped", "starting"), ("starting", "running")]


def test_stop_from_running(owner_api, running):
    action = accepted(owner_api, running, "stop")
    assert status_of(running) == "stopping"
    run_worker()
    assert status_of(running) == "stopped"
    assert Action.objects.get(pk=action["id"]).status == "succeeded"
    assert status_changes(running)[-2:] == [("running", "stopping"), ("stopping", "stopped")]


def test_restart_from_running_goes_through_stopping_and_starting(owner_api, running):
    action = accepted(owner_api, running, "restart")
    assert status_of(running) == "stopping"
    run_worker()
    assert status_of(running) == "running"
    assert Action.objects.get(pk=action["id"]).status == "succeeded"
    assert status_changes(running)[-3:] == [
        ("running", "stopping"),
        ("stopping", "starting"),
        ("starting", "running"),
    ]


def test_kill_from_running_stops_at_once(owner_api, running):
    action = accepted(owner_api, running, "kill")
    assert status_of(running) == "stopped"
    run_worker()
    assert status_of(running) == "stopped"
    assert Action.objects.get(pk=action["id"]).status == "succeeded"


def test_reinstall_from_stopped(owner_api, stopped):
    accepted(owner_api, stopped, "reinstall")
    assert status_of(stopped) == "installing"
    run_worker()
    assert status_of(stopped) == "stopped"
    assert status_changes(stopped)[-2:] == [("stopped", "installing"), ("installing", "stopped")]


def test_reinstall_recovers_a_failed_install(owner_api):
    response = owner_api.post("/v1/servers", MINECRAFT, format="json")
    server_id = response.json()["data"]["server"]["id"]
    Server.objects.filter(pk=server_id).update(simulation={"fail_install": True})
    run_worker()
    assert status_of(server_id) == "install_failed"
    assert "simulated" in Server.objects.get(pk=server_id).status_reason
    Server.objects.filter(pk=server_id).update(simulation={})
    accepted(owner_api, server_id, "reinstall")
    assert Server.objects.get(pk=server_id).status_reason == ""
    run_worker()
    assert status_of(server_id) == "stopped"


def test_a_failed_start_leaves_the_server_stopped_with_the_reason(owner_api, stopped):
    Server.objects.filter(pk=stopped).update(simulation={"fail_start": True})
    action = accepted(owner_api, stopped, "start")
    run_worker()
    server = Server.objects.get(pk=stopped)
    assert server.status == "stopped"
    assert "simulated" in server.status_reason
    done = owner_api.get(f"/v1/actions/{action['id']}").json()["data"]["action"]
    assert done["status"] == "failed"
    assert "simulated" in done["error"]


@pytest.mark.parametrize(
    "body",
    [{"type": "explode"}, {"type": "delete"}, {"type": "suspend"}, {"type": "create"}, {}],
)
def test_an_unknown_action_type_is_refused(owner_api, running, body):
    response = owner_api.post(f"/v1/servers/{running}/actions", body, format="json")
    error = error_of(response, 400, "validation_failed")
    assert [field["name"] for field in error["details"]["fields"]] == ["type"]
    assert status_of(running) == "running"
    assert Action.objects.filter(server_id=running).count() == 2


def test_power_actions_need_servers_power(account, owner, make_token, client_for, running):
    writer = client_for(make_token(owner, account, ["servers:write"]))
    error = error_of(post_action(writer, running, "stop"), 403, "insufficient_scope")
    assert error["details"] == {"required_scopes": ["servers:power"]}
    assert status_of(running) == "running"


# --- Kill cuts short what is in progress ---------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "cut_short", "in_progress_status"),
    [
        ("stopped", "start", "starting"),
        ("running", "stop", "stopping"),
        ("running", "restart", "stopping"),
    ],
)
def test_kill_interrupts_an_action_in_progress(
    owner_api, request, setup, cut_short, in_progress_status
):
    server_id = request.getfixturevalue(setup)
    first = accepted(owner_api, server_id, cut_short)
    assert status_of(server_id) == in_progress_status
    kill = accepted(owner_api, server_id, "kill")
    assert status_of(server_id) == "stopped"
    interrupted = Action.objects.get(pk=first["id"])
    assert (interrupted.status, interrupted.error) == ("failed", "Interrupted by kill.")
    assert interrupted.completed_at is not None
    assert Event.objects.filter(type="action.failed", object_id=first["id"]).count() == 1
    run_worker()
    assert status_of(server_id) == "stopped"
    assert Action.objects.get(pk=first["id"]).status == "failed"
    assert Action.objects.get(pk=kill["id"]).status == "succeeded"
    assert not Action.objects.filter(ACTIVE_ACTION).exists()


def test_another_action_while_one_is_in_progress_is_refused(owner_api, running):
    first = accepted(owner_api, running, "restart")
    Server.objects.filter(pk=running).update(status="running")  # as if the stop step were slow
    error = error_of(post_action(owner_api, running, "stop"), 409, "action_in_progress")
    assert error["details"] == {"action_id": first["id"]}


# --- Action history ------------------------------------------------------------------------


def test_the_action_list_is_paginated_newest_first(owner_api, running):
    accepted(owner_api, running, "stop")
    run_worker()
    response = owner_api.get(f"/v1/servers/{running}/actions")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert [action["type"] for action in data["actions"]] == ["stop", "start", "create"]
    assert {action["status"] for action in data["actions"]} == {"succeeded"}
    assert data["pagination"] == {"page": 1, "per_page": 25, "total": 3, "total_pages": 1}
    second_page = owner_api.get(f"/v1/servers/{running}/actions?per_page=2&page=2").json()
    assert [action["type"] for action in second_page["data"]["actions"]] == ["create"]
    assert second_page["data"]["pagination"]["total_pages"] == 2
    bad = owner_api.get(f"/v1/servers/{running}/actions?per_page=101")
    error_of(bad, 400, "invalid_parameter")


@pytest.mark.parametrize("per_page", [1, 50])
@pytest.mark.parametrize(("path", "key"), [("actions", "actions"), ("activity", "events")])
def test_history_lists_run_a_fixed_number_of_queries(owner_api, running, per_page, path, key):
    for _ in range(60):
        accepted(owner_api, running, "restart")
        Action.objects.filter(server_id=running).update(status="succeeded")
        Server.objects.filter(pk=running).update(status="running")
    url = f"/v1/servers/{running}/{path}?per_page={per_page}"
    owner_api.get(url)  # the first call records the key's last use; steady state follows
    with CaptureQueriesContext(connection) as queries:
        response = owner_api.get(url)
    assert len(response.json()["data"][key]) == per_page
    # The key with its user, account and role; the server; the count; the page.
    assert len(queries) == 3 + auth_queries(), [query["sql"] for query in queries]


def test_the_action_list_holds_only_that_servers_actions(owner_api, running):
    other = owner_api.post("/v1/servers", {**MINECRAFT, "name": "Other"}, format="json")
    run_worker()
    actions = owner_api.get(f"/v1/servers/{running}/actions").json()["data"]["actions"]
    other_id = other.json()["data"]["server"]["id"]
    assert {action["target"]["id"] for action in actions} == {running}
    assert len(owner_api.get(f"/v1/servers/{other_id}/actions").json()["data"]["actions"]) == 1


@pytest.fixture
def bot_action(owner_api) -> str:
    response = owner_api.post("/v1/bots", BOT, format="json")
    assert response.status_code == 201, response.content
    return Action.objects.get(bot_id=response.json()["data"]["bot"]["id"]).id


def test_reading_an_action_needs_the_read_scope_of_its_target(
    account, owner, make_token, client_for, running, bot_action
):
    server_action = Action.objects.filter(server_id=running).first().id
    servers_reader = client_for(make_token(owner, account, ["servers:read"]))
    bots_reader = client_for(make_token(owner, account, ["bots:power"]))
    neither = client_for(make_token(owner, account, ["billing:read"]))

    detail = servers_reader.get(f"/v1/actions/{server_action}")
    assert detail.status_code == 200, detail.content
    assert detail.json()["data"]["action"]["target"] == {"type": "server", "id": running}
    assert bots_reader.get(f"/v1/actions/{bot_action}").status_code == 200
    for api, action_id, scope in (
        (servers_reader, bot_action, "bots:read"),
        (bots_reader, server_action, "servers:read"),
        (neither, server_action, "servers:read"),
    ):
        error = error_of(api.get(f"/v1/actions/{action_id}"), 403, "insufficient_scope")
        assert error["details"] == {"required_scopes": [scope]}
    error_of(servers_reader.get("/v1/actions/act_000000000000000000000000"), 404, "not_found")


# --- Bulk actions --------------------------------------------------------------------------


def bulk(api, body):
    return api.post("/v1/servers/actions", body, format="json")


def test_bulk_answers_each_id_in_the_order_sent(owner_api, account, other_account, running):
    idle = ServerFactory(account=account, status="stopped")
    busy = ServerFactory(account=account, status="running")
    busy_action = accepted(owner_api, busy.id, "stop")
    Server.objects.filter(pk=busy.id).update(status="running")
    theirs = ServerFactory(account=other_account, status="running")
    missing = "srv_000000000000000000000000"
    sent = [idle.id, running, missing, theirs.id, busy.id, running, idle.id]

    response = bulk(owner_api, {"type": "restart", "server_ids": sent})
    assert response.status_code == 200, response.content
    results = response.json()["data"]["results"]
    assert [result["id"] for result in results] == [idle.id, running, missing, theirs.id, busy.id]
    assert [result["accepted"] for result in results] == [False, True, False, False, False]
    assert results[0]["error"] == {
        "code": "invalid_state",
        "message": "Cannot restart a server that is stopped; allowed: start, reinstall.",
        "details": {"status": "stopped", "allowed_actions": ["start", "reinstall"]},
    }
    action = results[1]["action"]
    assert (action["type"], action["status"], action["target"]["id"]) == (
        "restart",
        "pending",
        running,
    )
    assert "error" not in results[1]
    for result in results[2:4]:
        assert result["error"]["code"] == "not_found"
        assert set(result["error"]) == {"code", "message"}
    assert results[4]["error"]["code"] == "action_in_progress"
    assert results[4]["error"]["details"] == {"action_id": busy_action["id"]}

    assert status_of(running) == "stopping"
    assert (status_of(idle.id), status_of(theirs.id)) == ("stopped", "running")
    assert Action.objects.filter(type="restart").count() == 1
    run_worker()
    assert status_of(running) == "running"


@pytest.mark.parametrize(
    "body",
    [
        {"type": "restart", "server_ids": []},
        {"type": "restart", "server_ids": [f"srv_{n:024d}" for n in range(101)]},
        {"type": "restart"},
        {"type": "restart", "server_ids": "srv_000000000000000000000000"},
    ],
)
def test_bulk_needs_one_to_a_hundred_server_ids(owner_api, running, body):
    error = error_of(bulk(owner_api, body), 400, "validation_failed")
    assert [field["name"] for field in error["details"]["fields"]] == ["server_ids"]
    assert status_of(running) == "running"


def test_bulk_takes_a_hundred_ids(owner_api, running):
    ids = [running] + [f"srv_{n:024d}" for n in range(99)]
    response = bulk(owner_api, {"type": "stop", "server_ids": ids})
    assert response.status_code == 200, response.content
    assert len(response.json()["data"]["results"]) == 100


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "delete", "server_ids": ["srv_000000000000000000000000"]}, "type"),
        ({"type": "stop", "server_ids": ["srv_000000000000000000000000"], "force": True}, "force"),
        ({"type": "stop", "bot_ids": ["srv_000000000000000000000000"]}, "bot_ids"),
    ],
)
def test_bulk_refuses_other_types_and_fields(owner_api, body, field):
    error = error_of(bulk(owner_api, body), 400, "validation_failed")
    assert field in [f["name"] for f in error["details"]["fields"]]


def test_bulk_needs_servers_power(account, owner, make_token, client_for, running):
    reader = client_for(make_token(owner, account, ["servers:write"]))
    response = bulk(reader, {"type": "stop", "server_ids": [running]})
    assert error_of(response, 403, "insufficient_scope")["details"] == {
        "required_scopes": ["servers:power"]
    }
    assert status_of(running) == "running"


# --- Activity and regions ------------------------------------------------------------------


def test_activity_holds_the_servers_events_and_its_actions_newest_first(owner_api, running):
    other = owner_api.post("/v1/servers", {**MINECRAFT, "name": "Other"}, format="json")
    run_worker()
    response = owner_api.get(f"/v1/servers/{running}/activity?per_page=100")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    events = data["events"]
    expected = Event.objects.filter(object_id=running) | Event.objects.filter(related_id=running)
    assert [event["id"] for event in events] == [
        event.id for event in expected.order_by("-created_at", "-id")
    ]
    assert data["pagination"]["total"] == len(events)
    types = [event["type"] for event in events]
    assert types[0] == "action.succeeded"
    assert types[-1] == "server.created"
    assert types.count("action.succeeded") == 2  # create and start
    assert "server.status_changed" in types
    other_id = other.json()["data"]["server"]["id"]
    assert other_id not in {event["data"]["object"]["id"] for event in events}
    first_action = events[0]["data"]["object"]
    assert (first_action["type"], first_action["target"]) == (
        "start",
        {"type": "server", "id": running},
    )
    assert set(events[0]) == {"id", "type", "created_at", "data", "actor"}


def test_regions_are_listed_with_their_location(teammate_api):
    response = teammate_api.get("/v1/regions")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["regions"][0] == {
        "slug": "ap-southeast",
        "name": "Asia Pacific Southeast",
        "location": "Singapore",
    }
    assert [region["slug"] for region in data["regions"]] == [
        "ap-southeast",
        "eu-central",
        "eu-west",
        "us-east",
        "us-west",
    ]
    assert all(set(region) == {"slug", "name", "location"} for region in data["regions"])
    assert data["pagination"]["total"] == 5


def test_regions_need_a_key(client, db):
    error_of(client.get("/v1/regions"), 401, "authentication_required")

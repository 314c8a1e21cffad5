"""Discord bots over the API: validation, the lifecycle, quotas, and a token that never leaks."""

import json
import logging

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_tasks_db.compat import TASKS_LOGGER
from django_tasks_db.models import DBTaskResult

from events.models import Event
from hosting.secrets_box import decrypt_secret
from servers.models import Action, Bot
from tests.conftest import auth_queries
from tests.envelopes import error_of, field_errors
from tests.factories import UserFactory
from tests.servers.helpers import run_worker

TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.discord-bot-token-ZQ7x"
NEW_TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0.MnOpQr.rotated-bot-token-Wk3v"
BOT = {
    "name": "Moderator",
    "region": "eu-central",
    "runtime": "python-3.13",
    "start_command": "python bot.py",
    "token": TOKEN,
    "environment": {"LOG_LEVEL": "info", "PREFIX": "!"},
}


def create(api, **overrides):
    return api.post("/v1/bots", {**BOT, **overrides}, format="json")


def created_id(api, **overrides) -> str:
    response = create(api, **overrides)
    assert response.status_code == 201, response.content
    return response.json()["data"]["bot"]["id"]


def accepted(api, bot_id: str, action_type: str):
    response = api.post(f"/v1/bots/{bot_id}/actions", {"type": action_type}, format="json")
    assert response.status_code == 202, response.content
    return response


def status_of(bot_id: str) -> str:
    return Bot.objects.get(pk=bot_id).status


def events_text() -> str:
    return json.dumps([event.data for event in Event.objects.all()])


@pytest.fixture(autouse=True)
def _every_task_succeeded(db):
    yield
    assert not DBTaskResult.objects.failed().exists()


# --- Creating ------------------------------------------------------------------------------


def test_create_answers_201_with_the_bot_and_only_the_tokens_last_four(owner_api, owner):
    response = create(owner_api)
    assert response.status_code == 201, response.content
    assert TOKEN not in response.content.decode()
    bot = response.json()["data"]["bot"]
    assert response["Location"] == f"http://testserver/v1/bots/{bot['id']}"
    assert bot["id"].startswith("bot_")
    assert bot["status"] == "provisioning"
    assert bot["token_last4"] == "ZQ7x"
    assert "token" not in bot
    assert (bot["runtime"], bot["start_command"], bot["region"]) == (
        "python-3.13",
        "python bot.py",
        "eu-central",
    )
    assert bot["environment"] == {"LOG_LEVEL": "info", "PREFIX": "!"}
    assert bot["resources"] == {"memory_mb": 512, "cpu_percent": 50, "disk_mb": 2048}

    stored = Bot.objects.get(pk=bot["id"])
    assert stored.token_encrypted != TOKEN
    assert TOKEN not in stored.token_encrypted
    assert decrypt_secret(stored.token_encrypted) == TOKEN
    assert Action.objects.get(bot=stored).type == "create"
    event = Event.objects.get(type="bot.created")
    assert (event.object_id, event.actor_user) == (bot["id"], owner)
    assert TOKEN not in events_text()


@pytest.mark.parametrize(
    "runtime", ["python-3.12", "node-20", "bun-1", "deno-2", "java-21", "go-1.23"]
)
def test_every_runtime_of_the_list_is_accepted(owner_api, runtime):
    assert create(owner_api, runtime=runtime).status_code == 201


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"runtime": "cobol-85"}, [("runtime", "invalid_choice")]),
        ({"runtime": "Python-3.13"}, [("runtime", "invalid_choice")]),
        ({"start_command": ""}, [("start_command", "blank")]),
        ({"start_command": "x" * 501}, [("start_command", "max_length")]),
        ({"region": "moon-base"}, [("region", "invalid_choice")]),
        ({"environment": {"1ST": "x"}}, [("environment.1ST", "invalid")]),
        ({"environment": {"MY-VAR": "x"}}, [("environment.MY-VAR", "invalid")]),
        ({"environment": {"A" * 65: "x"}}, [(f"environment.{'A' * 65}", "invalid")]),
        ({"environment": {"OK": "x" * 4097}}, [("environment.OK", "invalid")]),
        ({"environment": {"OK": ["x"]}}, [("environment.OK", "invalid")]),
        ({"environment": {f"V{n}": "x" for n in range(101)}}, [("environment", "invalid")]),
        ({"environment": "LOG_LEVEL=info"}, [("environment", "not_a_dict")]),
        ({"token": "x" * 19}, [("token", "invalid")]),
        ({"token": "x" * 201}, [("token", "invalid")]),
        ({"token": "a-discord-bot token-with-a-space"}, [("token", "invalid")]),
        ({"token": "a-discord-bot\ttoken-with-a-tab"}, [("token", "invalid")]),
        ({"token": ""}, [("token", "blank")]),
        ({"image": "python:3.13"}, [("image", "unknown_field")]),
    ],
)
def test_invalid_fields_are_named_and_nothing_is_created(owner_api, overrides, expected):
    response = create(owner_api, **overrides)
    assert field_errors(response) == expected
    assert TOKEN not in response.content.decode()
    assert not Bot.objects.exists()
    assert not Event.objects.filter(type__startswith="bot.").exists()


def test_missing_fields_are_each_named(owner_api):
    response = owner_api.post("/v1/bots", {}, format="json")
    assert sorted(field_errors(response)) == [
        ("name", "required"),
        ("region", "required"),
        ("runtime", "required"),
        ("start_command", "required"),
        ("token", "required"),
    ]


def test_an_environment_name_with_a_trailing_newline_is_refused(owner_api):
    response = create(owner_api, environment={"LOG_LEVEL\n": "info"})
    assert field_errors(response) == [("environment.LOG_LEVEL\n", "invalid")]


@pytest.mark.parametrize("length", [20, 200])
def test_tokens_of_twenty_to_two_hundred_characters_are_accepted(owner_api, length):
    token = ("abcdefghij" * 20)[:length]
    bot_id = created_id(owner_api, token=token)
    assert decrypt_secret(Bot.objects.get(pk=bot_id).token_encrypted) == token


def test_the_bot_quota_is_enforced(owner_api, account):
    account.max_bots = 1
    account.save()
    created_id(owner_api)
    error = error_of(create(owner_api, name="Second"), 422, "quota_exceeded")
    assert error["details"]["limit"] == 1
    assert Bot.objects.count() == 1


def test_bots_count_against_the_memory_quota(owner_api, account):
    account.max_memory_mb = 1024
    account.save()
    created_id(owner_api, resources={"memory_mb": 768})
    error = error_of(create(owner_api, resources={"memory_mb": 512}), 422, "quota_exceeded")
    assert error["details"]["limit"] == 1024
    assert Bot.objects.count() == 1


def test_creating_needs_bots_write(account, owner, make_token, client_for):
    reader = client_for(make_token(owner, account, ["bots:read", "bots:power", "servers:write"]))
    error = error_of(create(reader), 403, "insufficient_scope")
    assert error["details"] == {"required_scopes": ["bots:write"]}
    assert not Bot.objects.exists()


# --- The lifecycle -------------------------------------------------------------------------


def test_a_bot_is_provisioned_started_stopped_and_deleted_without_an_address(owner_api):
    bot_id = created_id(owner_api)
    run_worker()
    detail = owner_api.get(f"/v1/bots/{bot_id}").json()["data"]["bot"]
    assert detail["status"] == "stopped"
    assert Bot.objects.get(pk=bot_id).address == ""

    accepted(owner_api, bot_id, "start")
    assert status_of(bot_id) == "starting"
    run_worker()
    assert status_of(bot_id) == "running"
    accepted(owner_api, bot_id, "restart")
    run_worker()
    assert status_of(bot_id) == "running"
    accepted(owner_api, bot_id, "stop")
    run_worker()
    assert status_of(bot_id) == "stopped"

    history = owner_api.get(f"/v1/bots/{bot_id}/actions").json()["data"]["actions"]
    assert [action["type"] for action in history] == ["stop", "restart", "start", "create"]
    assert {action["target"]["type"] for action in history} == {"bot"}
    changes = [
        (event.data["previous_attributes"]["status"], event.data["object"]["status"])
        for event in Event.objects.filter(type="bot.status_changed").order_by("created_at", "id")
    ]
    assert changes == [
        ("provisioning", "installing"),
        ("installing", "stopped"),
        ("stopped", "starting"),
        ("starting", "running"),
        ("running", "stopping"),
        ("stopping", "starting"),
        ("starting", "running"),
        ("running", "stopping"),
        ("stopping", "stopped"),
    ]

    assert owner_api.delete(f"/v1/bots/{bot_id}").status_code == 202
    assert status_of(bot_id) == "deleting"
    run_worker()
    error_of(owner_api.get(f"/v1/bots/{bot_id}"), 404, "not_found")
    assert Bot.objects.get(pk=bot_id).deleted_at is not None
    assert Event.objects.filter(type="bot.deleted", object_id=bot_id).count() == 1


def test_a_bot_action_the_status_does_not_allow_is_invalid_state(owner_api):
    bot_id = created_id(owner_api)
    run_worker()
    response = owner_api.post(f"/v1/bots/{bot_id}/actions", {"type": "stop"}, format="json")
    error = error_of(response, 409, "invalid_state")
    assert error["details"] == {"status": "stopped", "allowed_actions": ["start", "reinstall"]}


def test_bot_power_actions_need_bots_power(account, owner, make_token, client_for, owner_api):
    bot_id = created_id(owner_api)
    run_worker()
    server_power = client_for(make_token(owner, account, ["bots:write", "servers:power"]))
    response = server_power.post(f"/v1/bots/{bot_id}/actions", {"type": "start"}, format="json")
    assert error_of(response, 403, "insufficient_scope")["details"] == {
        "required_scopes": ["bots:power"]
    }
    assert status_of(bot_id) == "stopped"


def test_bulk_actions_on_bots_take_bot_ids(owner_api, outsider_api):
    first, second = created_id(owner_api), created_id(owner_api, name="Second")
    run_worker()
    response = owner_api.post(
        "/v1/bots/actions", {"type": "start", "bot_ids": [second, first, second]}, format="json"
    )
    assert response.status_code == 200, response.content
    results = response.json()["data"]["results"]
    assert [(result["id"], result["accepted"]) for result in results] == [
        (second, True),
        (first, True),
    ]
    assert TOKEN not in response.content.decode()
    run_worker()
    assert (status_of(first), status_of(second)) == ("running", "running")
    theirs = outsider_api.post(
        "/v1/bots/actions", {"type": "stop", "bot_ids": [first]}, format="json"
    )
    assert theirs.json()["data"]["results"][0]["error"]["code"] == "not_found"
    assert status_of(first) == "running"
    wrong_field = owner_api.post(
        "/v1/bots/actions", {"type": "stop", "server_ids": [first]}, format="json"
    )
    assert sorted(field_errors(wrong_field)) == [
        ("bot_ids", "required"),
        ("server_ids", "unknown_field"),
    ]


@pytest.mark.parametrize("per_page", [1, 25])
def test_the_bot_list_runs_a_fixed_number_of_queries(owner_api, account, per_page):
    account.max_bots, account.max_memory_mb = 30, 30 * 512
    account.save()
    for number in range(30):
        created_id(owner_api, name=f"Bot {number}")
    owner_api.get("/v1/bots")  # the first call records the key's last use; steady state follows
    with CaptureQueriesContext(connection) as queries:
        response = owner_api.get(f"/v1/bots?per_page={per_page}")
    bots = response.json()["data"]["bots"]
    assert len(bots) == per_page
    assert {bot["token_last4"] for bot in bots} == {"ZQ7x"}
    # The key with its user, account and role; the page with its total (one statement).
    assert len(queries) == 1 + auth_queries(), [query["sql"] for query in queries]


# --- Changing ------------------------------------------------------------------------------


def patch(api, bot_id: str, body: dict):
    return api.patch(f"/v1/bots/{bot_id}", body, format="json")


def test_patch_changes_settings_and_a_running_bot_needs_a_restart(owner_api):
    bot_id = created_id(owner_api)
    run_worker()
    stopped = patch(owner_api, bot_id, {"start_command": "python main.py"})
    assert stopped.status_code == 200, stopped.content
    assert stopped.json()["data"]["restart_required"] is False
    accepted(owner_api, bot_id, "start")
    run_worker()
    response = patch(
        owner_api,
        bot_id,
        {"runtime": "python-3.12", "environment": {"LOG_LEVEL": "debug"}, "name": "Mod"},
    )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["bot"]["environment"] == {"LOG_LEVEL": "debug"}  # replaced, not merged
    assert data["bot"]["runtime"] == "python-3.12"
    assert data["restart_required"] is True
    assert sorted(data["restart_required_for"]) == ["environment", "runtime"]
    last = Event.objects.filter(type="bot.updated").first()
    assert last.data["previous_attributes"] == {
        "name": "Moderator",
        "runtime": "python-3.13",
        "environment": {"LOG_LEVEL": "info", "PREFIX": "!"},
    }


def test_patching_the_token_rotates_it_without_showing_it(owner_api, owner):
    bot_id = created_id(owner_api)
    run_worker()
    accepted(owner_api, bot_id, "start")
    run_worker()
    response = patch(owner_api, bot_id, {"token": NEW_TOKEN})
    assert response.status_code == 200, response.content
    assert NEW_TOKEN not in response.content.decode()
    data = response.json()["data"]
    assert data["bot"]["token_last4"] == "Wk3v"
    assert (data["restart_required"], data["restart_required_for"]) == (True, ["token"])

    stored = Bot.objects.get(pk=bot_id)
    assert decrypt_secret(stored.token_encrypted) == NEW_TOKEN
    assert NEW_TOKEN not in stored.token_encrypted
    event = Event.objects.get(type="bot.updated")
    assert event.actor_user == owner
    assert event.data["previous_attributes"] == {"token_last4": "ZQ7x"}
    assert event.data["object"]["token_last4"] == "Wk3v"
    assert TOKEN not in events_text()
    assert NEW_TOKEN not in events_text()


def test_a_bot_being_deleted_cannot_be_changed(owner_api):
    bot_id = created_id(owner_api)
    run_worker()
    assert owner_api.delete(f"/v1/bots/{bot_id}").status_code == 202
    error = error_of(patch(owner_api, bot_id, {"token": NEW_TOKEN}), 409, "invalid_state")
    assert error["message"] == "A bot being deleted cannot be changed."
    assert error["details"] == {"status": "deleting", "allowed_actions": []}
    assert decrypt_secret(Bot.objects.get(pk=bot_id).token_encrypted) == TOKEN


def test_an_invalid_new_token_is_refused_and_the_old_one_kept(owner_api):
    bot_id = created_id(owner_api)
    response = patch(owner_api, bot_id, {"token": "too short"})
    assert field_errors(response) == [("token", "invalid")]
    stored = Bot.objects.get(pk=bot_id)
    assert (decrypt_secret(stored.token_encrypted), stored.token_last4) == (TOKEN, "ZQ7x")
    assert not Event.objects.filter(type="bot.updated").exists()


def test_the_token_is_in_no_response_of_a_whole_flow(owner_api):
    responses = [create(owner_api)]
    bot_id = responses[0].json()["data"]["bot"]["id"]
    run_worker()
    responses += [
        owner_api.get(f"/v1/bots/{bot_id}"),
        owner_api.get("/v1/bots"),
        accepted(owner_api, bot_id, "start"),
    ]
    run_worker()
    action_id = Action.objects.filter(bot_id=bot_id).first().id
    responses += [
        patch(owner_api, bot_id, {"name": "Renamed"}),
        owner_api.get(f"/v1/bots/{bot_id}/actions"),
        owner_api.get(f"/v1/actions/{action_id}"),
        owner_api.get(f"/v1/bots/{bot_id}/activity?per_page=100"),
        owner_api.delete(f"/v1/bots/{bot_id}"),
    ]
    for response in responses:
        assert response.status_code < 300, response.content
        assert TOKEN not in response.content.decode()
        assert "token_encrypted" not in response.content.decode()
    listed = responses[2].json()["data"]["bots"][0]
    assert listed["token_last4"] == "ZQ7x"
    assert "token" not in listed
    activity = responses[-2].json()["data"]["events"]
    assert {"bot.created", "bot.status_changed", "action.succeeded"} <= {
        event["type"] for event in activity
    }
    assert TOKEN not in events_text()


@pytest.fixture
def verbose_logs(caplog):
    """Every logger at DEBUG, SQL with its parameters included, and the worker talking."""
    worker_loggers = [logging.getLogger(name) for name in ("django_tasks_db", TASKS_LOGGER)]
    levels = [logger.level for logger in worker_loggers]
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django")  # Django's default config says INFO
    connection.force_debug_cursor = True
    yield caplog
    connection.force_debug_cursor = False
    for logger, level in zip(worker_loggers, levels, strict=True):
        logger.setLevel(level)


def run_worker_verbosely() -> None:
    run_worker(verbosity=3)


def test_the_token_is_never_logged(owner_api, verbose_logs):
    bot_id = created_id(owner_api)
    run_worker_verbosely()
    accepted(owner_api, bot_id, "start")
    run_worker_verbosely()
    accepted(owner_api, bot_id, "stop")
    run_worker_verbosely()
    patch(owner_api, bot_id, {"token": NEW_TOKEN})
    create(owner_api, token="short")
    assert status_of(bot_id) == "stopped"
    # The log did see the work, SQL parameters included: the checks below are not vacuous.
    assert Bot.objects.get(pk=bot_id).token_encrypted in verbose_logs.text
    assert "run_action" in verbose_logs.text
    for secret in (TOKEN, NEW_TOKEN, TOKEN[-12:], NEW_TOKEN[-12:]):
        assert secret not in verbose_logs.text


def test_the_token_is_never_shown_in_django_admin(owner_api, client):
    bot_id = created_id(owner_api)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    assert admin.site.is_registered(Bot)
    # Admin reads "_3F" in a path as "?" (its quoting escapes "_"): the id is quoted as admin's
    # own links quote it, or "bot_3F…" (about 1 id in 8) would be a page that does not exist.
    change = reverse("admin:servers_bot_change", args=[quote(bot_id)])
    for url in (reverse("admin:servers_bot_changelist"), change):
        response = client.get(url)
        assert response.status_code == 200
        page = response.content.decode()
        assert bot_id in page
        assert "…ZQ7x" in page
        assert TOKEN not in page
        assert Bot.objects.get(pk=bot_id).token_encrypted not in page

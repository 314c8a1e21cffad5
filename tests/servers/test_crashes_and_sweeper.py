"""Crashes reported by nodes (with the crash-loop guard) and the sweeper of abandoned actions."""

from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from events.models import Event
from servers.models import ACTIVE_ACTION, Action, Bot, Server
from servers.services import actions_recover_stale, instance_crash
from tests.factories import ServerFactory
from tests.servers.helpers import MINECRAFT, run_worker

BOT = {
    "name": "Helper",
    "region": "eu-central",
    "runtime": "node-22",
    "start_command": "node index.js",
    "token": "a-discord-bot-token-of-30-chars",
}


def accepted(api, server_id: str, action_type: str) -> str:
    response = api.post(f"/v1/servers/{server_id}/actions", {"type": action_type}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["data"]["action"]["id"]


def fresh(server_id: str) -> Server:
    return Server.objects.get(pk=server_id)


@pytest.fixture(autouse=True)
def _every_task_succeeded(db):
    yield
    assert not DBTaskResult.objects.failed().exists()


@pytest.fixture
def server_id(owner_api) -> str:
    response = owner_api.post("/v1/servers", MINECRAFT, format="json")
    assert response.status_code == 201, response.content
    run_worker()
    return response.json()["data"]["server"]["id"]


@pytest.fixture
def running(owner_api, server_id) -> str:
    accepted(owner_api, server_id, "start")
    run_worker()
    assert fresh(server_id).status == "running"
    return server_id


# --- Crashes -------------------------------------------------------------------------------


def test_a_crash_without_auto_restart_leaves_the_server_stopped(running):
    Server.objects.filter(pk=running).update(auto_restart=False)
    actions_before = Action.objects.count()
    assert instance_crash(instance=fresh(running), reason="Out of memory.") is None
    server = fresh(running)
    assert (server.status, server.status_reason) == ("stopped", "Crashed: Out of memory.")
    crashed = Event.objects.get(type="server.crashed")
    assert crashed.object_id == running
    assert crashed.actor_user is None and crashed.actor_api_key is None
    assert crashed.data["object"]["status"] == "stopped"
    assert crashed.data["object"]["status_reason"] == "Crashed: Out of memory."
    change = Event.objects.filter(type="server.status_changed").first()
    assert change.data["previous_attributes"] == {"status": "running"}
    assert change.data["object"]["status"] == "stopped"
    assert Action.objects.count() == actions_before
    run_worker()
    assert fresh(running).status == "stopped"


def test_a_crash_with_auto_restart_starts_the_server_again(running):
    restart = instance_crash(instance=fresh(running), reason="Segmentation fault.")
    assert restart is not None
    assert (restart.type, restart.status) == ("start", "pending")
    assert (restart.requested_by_user, restart.requested_by_key) == (None, None)
    assert fresh(running).status == "starting"
    assert Event.objects.get(type="server.crashed").data["object"]["status_reason"] == (
        "Crashed: Segmentation fault."
    )
    run_worker()
    assert fresh(running).status == "running"
    assert Action.objects.get(pk=restart.pk).status == "succeeded"
    recent = [
        (event.data["previous_attributes"]["status"], event.data["object"]["status"])
        for event in Event.objects.filter(type="server.status_changed")[:3]
    ]
    assert recent == [("starting", "running"), ("stopped", "starting"), ("running", "stopped")]


def crash_and_recover(server_id: str) -> Action | None:
    restart = instance_crash(instance=fresh(server_id), reason="Exit code 137.")
    run_worker()
    return restart


def test_the_fourth_crash_in_ten_minutes_is_a_crash_loop_and_stays_stopped(running):
    for _ in range(3):
        assert crash_and_recover(running) is not None
        assert fresh(running).status == "running"
    assert instance_crash(instance=fresh(running), reason="Exit code 137.") is None
    server = fresh(running)
    assert server.status == "stopped"
    assert server.status_reason.startswith("Crashed: Exit code 137.")
    assert "crash loop" in server.status_reason
    assert "3 automatic restarts" in server.status_reason
    assert Action.objects.filter(server_id=running, type="start").count() == 4  # 1 by hand
    assert Event.objects.filter(type="server.crashed").count() == 4
    assert not Action.objects.filter(ACTIVE_ACTION).exists()


def test_restarts_older_than_ten_minutes_do_not_count(running):
    for _ in range(3):
        crash_and_recover(running)
    Action.objects.filter(server_id=running).update(
        created_at=timezone.now() - timedelta(minutes=11)
    )
    assert crash_and_recover(running) is not None
    assert fresh(running).status == "running"


def test_starts_by_people_do_not_count_towards_the_crash_loop(owner_api, running):
    for _ in range(2):
        crash_and_recover(running)
    for _ in range(2):  # the customer stops and starts it by hand
        accepted(owner_api, running, "stop")
        run_worker()
        accepted(owner_api, running, "start")
        run_worker()
    assert crash_and_recover(running) is not None
    assert fresh(running).status == "running"


@pytest.mark.parametrize("status", ["stopped", "starting", "stopping", "installing", "suspended"])
def test_a_crash_of_a_server_that_is_not_running_is_ignored(account, status):
    server = ServerFactory(account=account, status=status)
    assert instance_crash(instance=server, reason="Exit code 1.") is None
    server.refresh_from_db()
    assert (server.status, server.status_reason) == (status, "")
    assert not Event.objects.exists()
    assert not Action.objects.exists()


def test_the_simulate_crash_command_crashes_and_restarts(running, capsys):
    call_command("simulate_crash", running, "--reason", "Killed by the OOM killer.")
    restart = Action.objects.filter(server_id=running).first()
    assert capsys.readouterr().out.strip() == (
        f"{running} crashed and stopped; restarting with action {restart.id}."
    )
    assert Event.objects.get(type="server.crashed").data["object"]["status_reason"] == (
        "Crashed: Killed by the OOM killer."
    )
    run_worker()
    assert fresh(running).status == "running"


def test_the_simulate_crash_command_says_when_it_does_not_restart(running, capsys):
    Server.objects.filter(pk=running).update(auto_restart=False)
    call_command("simulate_crash", running)
    assert capsys.readouterr().out.strip() == f"{running} crashed and stopped; not restarted."
    server = fresh(running)
    assert (server.status, server.status_reason) == (
        "stopped",
        "Crashed: The process exited with code 137 (simulated).",
    )


def test_the_simulate_crash_command_refuses_what_is_not_running(server_id):
    with pytest.raises(CommandError, match="only a running process can crash"):
        call_command("simulate_crash", server_id)
    assert fresh(server_id).status == "stopped"
    assert not Event.objects.filter(type="server.crashed").exists()


@pytest.mark.parametrize("unknown", ["srv_000000000000000000000000", "bot_x", "act_x", "x"])
def test_the_simulate_crash_command_refuses_unknown_ids(db, unknown):
    with pytest.raises(CommandError, match="No server or bot"):
        call_command("simulate_crash", unknown)


def test_a_bot_crashes_and_comes_back_too(owner_api, capsys):
    response = owner_api.post("/v1/bots", BOT, format="json")
    bot_id = response.json()["data"]["bot"]["id"]
    run_worker()
    owner_api.post(f"/v1/bots/{bot_id}/actions", {"type": "start"}, format="json")
    run_worker()
    call_command("simulate_crash", bot_id)
    assert Bot.objects.get(pk=bot_id).status == "starting"
    assert Event.objects.filter(type="bot.crashed", object_id=bot_id).count() == 1
    run_worker()
    assert Bot.objects.get(pk=bot_id).status == "running"


# --- Stale actions -------------------------------------------------------------------------


def long_ago() -> datetime:
    return timezone.now() - timedelta(seconds=settings.STALE_ACTION_SECONDS + 1)


def worker_died(action_id: str, *, heartbeat=None) -> None:
    """As if a worker had claimed the action's task and then been killed mid-step."""
    DBTaskResult.objects.filter(status=TaskResultStatus.READY).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now()
    )
    beat = heartbeat or long_ago()
    Action.objects.filter(pk=action_id).update(status="running", started_at=beat, heartbeat_at=beat)


def nothing_active() -> bool:
    return not Action.objects.filter(ACTIVE_ACTION).exists()


@pytest.mark.parametrize(
    ("action_type", "status_when_it_died", "resting"),
    [
        ("create", "provisioning", "install_failed"),
        ("create", "installing", "install_failed"),
        ("start", "starting", "stopped"),
        ("stop", "stopping", "stopped"),
        ("restart", "starting", "stopped"),
    ],
)
def test_a_stale_running_action_is_failed_and_its_server_put_to_rest(
    owner_api, account, action_type, status_when_it_died, resting
):
    response = owner_api.post("/v1/servers", MINECRAFT, format="json")
    server_id = response.json()["data"]["server"]["id"]
    action_id = Action.objects.get(server_id=server_id).id
    if action_type != "create":
        run_worker()
        if action_type != "start":
            accepted(owner_api, server_id, "start")
            run_worker()
        action_id = accepted(owner_api, server_id, action_type)
    worker_died(action_id)
    Server.objects.filter(pk=server_id).update(status=status_when_it_died)

    assert actions_recover_stale() == {"failed": 1, "resumed": 0, "requeued": 0}
    action = Action.objects.get(pk=action_id)
    assert action.status == "failed"
    assert action.error == "The worker stopped while carrying out this action."
    server = fresh(server_id)
    assert (server.status, server.status_reason) == (resting, "The worker stopped mid-action.")
    change = Event.objects.filter(type="server.status_changed").first()
    assert change.data["previous_attributes"] == {"status": status_when_it_died}
    assert Event.objects.filter(type="action.failed", object_id=action_id).count() == 1
    run_worker()
    assert fresh(server_id).status == resting
    assert nothing_active()
    assert actions_recover_stale() == {"failed": 0, "resumed": 0, "requeued": 0}


def test_a_running_action_with_a_recent_heartbeat_is_left_alone(owner_api, server_id):
    action_id = accepted(owner_api, server_id, "start")
    worker_died(action_id, heartbeat=timezone.now() - timedelta(seconds=30))
    assert actions_recover_stale() == {"failed": 0, "resumed": 0, "requeued": 0}
    assert Action.objects.get(pk=action_id).status == "running"
    assert fresh(server_id).status == "starting"
    later = timezone.now() + timedelta(seconds=settings.STALE_ACTION_SECONDS)
    assert actions_recover_stale(now=later)["failed"] == 1
    assert fresh(server_id).status == "stopped"


def test_a_stale_delete_is_resumed_and_finished(owner_api, server_id):
    response = owner_api.delete(f"/v1/servers/{server_id}")
    action_id = response.json()["data"]["action"]["id"]
    worker_died(action_id)

    assert actions_recover_stale() == {"failed": 0, "resumed": 1, "requeued": 0}
    assert Action.objects.get(pk=action_id).status == "pending"
    assert fresh(server_id).status == "deleting"
    run_worker()
    assert Action.objects.get(pk=action_id).status == "succeeded"
    assert fresh(server_id).deleted_at is not None
    assert owner_api.get(f"/v1/servers/{server_id}").status_code == 404
    assert Event.objects.filter(type="server.deleted", object_id=server_id).count() == 1
    assert nothing_active()


def test_an_old_stale_delete_is_queued_once(owner_api, server_id):
    response = owner_api.delete(f"/v1/servers/{server_id}")
    action_id = response.json()["data"]["action"]["id"]
    Action.objects.filter(pk=action_id).update(created_at=long_ago())
    worker_died(action_id)
    ready_before = DBTaskResult.objects.ready().count()
    assert actions_recover_stale() == {"failed": 0, "resumed": 1, "requeued": 0}
    assert DBTaskResult.objects.ready().count() == ready_before + 1
    run_worker()
    assert fresh(server_id).deleted_at is not None


def test_an_old_pending_action_is_queued_again_and_completed(owner_api, server_id):
    action_id = accepted(owner_api, server_id, "start")
    DBTaskResult.objects.filter(status=TaskResultStatus.READY).delete()  # its task was lost
    Action.objects.filter(pk=action_id).update(created_at=long_ago())
    run_worker()
    assert Action.objects.get(pk=action_id).status == "pending"  # nothing ran it

    assert actions_recover_stale() == {"failed": 0, "resumed": 0, "requeued": 1}
    run_worker()
    assert Action.objects.get(pk=action_id).status == "succeeded"
    assert fresh(server_id).status == "running"
    assert nothing_active()


def test_an_old_pending_action_still_waiting_in_the_queue_is_not_queued_twice(owner_api, server_id):
    # A backed-up queue: the action is old, but its task is still there, waiting.
    action_id = accepted(owner_api, server_id, "start")
    Action.objects.filter(pk=action_id).update(created_at=long_ago())
    ready_before = DBTaskResult.objects.ready().count()
    assert actions_recover_stale() == {"failed": 0, "resumed": 0, "requeued": 0}
    assert actions_recover_stale() == {"failed": 0, "resumed": 0, "requeued": 0}
    assert DBTaskResult.objects.ready().count() == ready_before
    run_worker()
    assert Action.objects.get(pk=action_id).status == "succeeded"


def test_a_recent_pending_action_is_not_queued_again(owner_api, server_id):
    accepted(owner_api, server_id, "start")
    ready_before = DBTaskResult.objects.ready().count()
    assert actions_recover_stale() == {"failed": 0, "resumed": 0, "requeued": 0}
    assert DBTaskResult.objects.ready().count() == ready_before


def test_housekeeping_settles_every_action_a_dead_worker_left(owner_api, account, capsys):
    ids = []
    for name in ("Installing", "Starting", "Deleting", "Lost"):
        response = owner_api.post("/v1/servers", {**MINECRAFT, "name": name}, format="json")
        ids.append(response.json()["data"]["server"]["id"])
    installing, starting, deleting, lost = ids
    run_worker()
    reinstall = accepted(owner_api, installing, "reinstall")
    start = accepted(owner_api, starting, "start")
    delete = owner_api.delete(f"/v1/servers/{deleting}").json()["data"]["action"]["id"]
    for action_id in (reinstall, start, delete):
        worker_died(action_id)
    pending = accepted(owner_api, lost, "start")
    DBTaskResult.objects.filter(status=TaskResultStatus.READY).delete()
    Action.objects.filter(pk=pending).update(created_at=long_ago())

    call_command("housekeeping")
    assert "actions failed 2, actions resumed 1, actions requeued 1" in capsys.readouterr().out
    run_worker()
    assert nothing_active()
    assert fresh(installing).status == "install_failed"
    assert fresh(starting).status == "stopped"
    assert fresh(deleting).deleted_at is not None
    assert fresh(lost).status == "running"
    call_command("housekeeping")
    assert "actions failed 0, actions resumed 0, actions requeued 0" in capsys.readouterr().out

"""A worker process killed in the middle of an action: the sweeper settles what it left behind.

The worker is a real ``manage.py db_worker`` process on the test database, killed with SIGKILL
while its driver call is in progress (``SIMULATED_DRIVER_DELAY_SECONDS=5`` keeps it there). Only
on PostgreSQL: a second process cannot open SQLite's in-memory test database.
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from io import StringIO
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from events.models import Event
from servers.models import Action, ActionStatus, Server
from servers.services import actions_recover_stale
from tests.servers.helpers import MINECRAFT, run_worker

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the worker process cannot open SQLite's in-memory test database",
    ),
]

BUSY = [ActionStatus.PENDING, ActionStatus.RUNNING]


def worker_database_url() -> str:
    """The URL of the database this test runs on (``test_…``), for the worker process."""
    db = connection.settings_dict
    credentials = quote(db["USER"] or "")
    if db["PASSWORD"]:
        credentials += f":{quote(db['PASSWORD'])}"
    return f"postgres://{credentials}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def worker_process(tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A ``db_worker`` process on the test database; killed on the way out whatever happens."""
    env = os.environ | {
        "DATABASE_URL": worker_database_url(),
        "SIMULATED_DRIVER_DELAY_SECONDS": "5",
    }
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.1",
        ],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        log.close()


def wait_until_running(action_id: str, process: subprocess.Popen, tmp_path: Path) -> None:
    deadline = time.monotonic() + 20
    while Action.objects.get(pk=action_id).status != ActionStatus.RUNNING:
        log = (tmp_path / "worker.log").read_text()
        assert process.poll() is None, f"the worker exited: {log}"
        assert time.monotonic() < deadline, f"the worker never took the action: {log}"
        time.sleep(0.05)


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=10) == -signal.SIGKILL


@pytest.fixture
def api(settings, owner, account, make_token, client_for):
    settings.RATE_LIMIT_PER_MINUTE = 100_000
    return client_for(make_token(owner, account))


@pytest.fixture
def stopped_server(api) -> str:
    response = api.post("/v1/servers", MINECRAFT, format="json")
    assert response.status_code == 201, response.content
    run_worker()
    server_id = response.json()["data"]["server"]["id"]
    assert Server.objects.get(pk=server_id).status == "stopped"
    return server_id


def test_a_start_cut_short_by_a_dead_worker_fails_and_leaves_the_server_stopped(
    api, stopped_server, settings, tmp_path
):
    url = f"/v1/servers/{stopped_server}/actions"
    response = api.post(url, {"type": "start"}, format="json")
    assert response.status_code == 202, response.content
    action_id = response.json()["data"]["action"]["id"]

    with worker_process(tmp_path) as process:
        wait_until_running(action_id, process, tmp_path)
        kill(process)

    assert Server.objects.get(pk=stopped_server).status == "starting"  # nobody finished it
    later = timezone.now() + timedelta(seconds=settings.STALE_ACTION_SECONDS + 1)
    assert actions_recover_stale(now=later) == {"failed": 1, "resumed": 0, "requeued": 0}

    action = Action.objects.get(pk=action_id)
    assert action.status == ActionStatus.FAILED
    assert action.error == "The worker stopped while carrying out this action."
    server = Server.objects.get(pk=stopped_server)
    assert (server.status, server.status_reason) == ("stopped", "The worker stopped mid-action.")
    changes = [
        (event.data["previous_attributes"]["status"], event.data["object"]["status"])
        for event in Event.objects.filter(
            type="server.status_changed", object_id=stopped_server
        ).order_by("created_at", "id")
    ]
    assert changes[-2:] == [("stopped", "starting"), ("starting", "stopped")]
    assert Event.objects.filter(type="action.failed", object_id=action_id).count() == 1

    run_worker()
    assert not Action.objects.filter(status__in=BUSY).exists()
    assert Server.objects.get(pk=stopped_server).status == "stopped"
    # Nothing is left stuck: the customer can simply start it again.
    assert api.post(url, {"type": "start"}, format="json").status_code == 202
    run_worker()
    assert Server.objects.get(pk=stopped_server).status == "running"


def test_a_delete_cut_short_by_a_dead_worker_is_resumed_to_the_end(
    api, stopped_server, settings, tmp_path
):
    response = api.delete(f"/v1/servers/{stopped_server}")
    assert response.status_code == 202, response.content
    action_id = response.json()["data"]["action"]["id"]

    with worker_process(tmp_path) as process:
        wait_until_running(action_id, process, tmp_path)
        kill(process)

    stale = timezone.now() - timedelta(seconds=settings.STALE_ACTION_SECONDS + 1)
    Action.objects.filter(pk=action_id).update(heartbeat_at=stale)
    output = StringIO()
    call_command("housekeeping", stdout=output)
    assert "actions failed 0, actions resumed 1, actions requeued 0" in output.getvalue()
    assert Action.objects.get(pk=action_id).status == ActionStatus.PENDING
    assert Server.objects.get(pk=stopped_server).status == "deleting"

    run_worker()
    assert Action.objects.get(pk=action_id).status == ActionStatus.SUCCEEDED
    assert not Action.objects.filter(status__in=BUSY).exists()
    assert Server.objects.get(pk=stopped_server).deleted_at is not None
    assert api.get(f"/v1/servers/{stopped_server}").status_code == 404
    assert Event.objects.filter(type="server.deleted", object_id=stopped_server).count() == 1

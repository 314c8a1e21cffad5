"""Races: two requests for the same server at once, and a crash reported while the worker works.

The simultaneous requests run in threads with their own database connections, on PostgreSQL,
where row locks are real (SQLite serializes every writer anyway).
"""

from collections.abc import Callable
from unittest import mock

import pytest
from django.db import connection, transaction

from events.models import Event
from hosting.errors import ApplicationError
from servers.models import Action, ActionStatus, Server
from servers.services import instance_crash
from servers.services.records import instance_status_set as set_status_for_real
from tests.concurrency import race
from tests.servers.helpers import MINECRAFT, run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

ROUNDS = 10
FIRST_STATUS = {"start": "starting", "reinstall": "installing", "delete": "deleting"}


def at_once(*calls: Callable) -> list:
    """The results of the calls raced against each other; none may raise."""
    results, failures = race(*calls, timeout=30)
    assert not failures, failures
    return results


def request(client, server_id: str, kind: str) -> Callable:
    if kind == "delete":
        return lambda: client.delete(f"/v1/servers/{server_id}")
    return lambda: client.post(f"/v1/servers/{server_id}/actions", {"type": kind}, format="json")


def stopped_server(api) -> str:
    response = api.post("/v1/servers", MINECRAFT, format="json")
    assert response.status_code == 201, response.content
    run_worker()
    server_id = response.json()["data"]["server"]["id"]
    assert Server.objects.get(pk=server_id).status == "stopped"
    return server_id


def back_to_stopped(api, server_id: str) -> None:
    run_worker()
    if Server.objects.get(pk=server_id).status == "running":
        response = api.post(f"/v1/servers/{server_id}/actions", {"type": "stop"}, format="json")
        assert response.status_code == 202, response.content
        run_worker()
    assert Server.objects.get(pk=server_id).status == "stopped"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's row locks")
@pytest.mark.parametrize(
    ("first", "second"), [("start", "start"), ("start", "reinstall"), ("start", "delete")]
)
def test_of_two_simultaneous_actions_exactly_one_is_accepted(
    settings, owner, account, make_token, client_for, first, second
):
    settings.RATE_LIMIT_PER_MINUTE = 100_000
    token = make_token(owner, account)
    api = client_for(token)
    server_id = stopped_server(api)

    for _ in range(ROUNDS):
        actions_before = set(Action.objects.values_list("id", flat=True))
        events_before = set(Event.objects.values_list("id", flat=True))

        responses = at_once(
            request(client_for(token), server_id, first),
            request(client_for(token), server_id, second),
        )

        assert sorted(r.status_code for r in responses) == [202, 409], [
            r.content for r in responses
        ]
        accepted = next(r for r in responses if r.status_code == 202).json()["data"]["action"]
        refused = next(r for r in responses if r.status_code == 409).json()["error"]
        assert refused["code"] in {"action_in_progress", "invalid_state"}
        if refused["code"] == "action_in_progress":
            assert refused["details"] == {"action_id": accepted["id"]}
        else:
            assert refused["details"]["status"] == FIRST_STATUS[accepted["type"]]
        new_actions = Action.objects.exclude(id__in=actions_before)
        assert list(new_actions.values_list("id", "status")) == [
            (accepted["id"], ActionStatus.PENDING)
        ]
        assert Server.objects.get(pk=server_id).status == FIRST_STATUS[accepted["type"]]
        new_events = Event.objects.exclude(id__in=events_before)
        changes = [
            (event.data["previous_attributes"]["status"], event.data["object"]["status"])
            for event in new_events.filter(type="server.status_changed")
        ]
        assert changes == [("stopped", FIRST_STATUS[accepted["type"]])]

        if accepted["type"] == "delete":
            run_worker()
            assert Server.objects.get(pk=server_id).deleted_at is not None
            server_id = stopped_server(api)
        else:
            back_to_stopped(api, server_id)


def test_a_crash_reported_the_moment_the_server_runs_is_not_lost(
    settings, owner, account, make_token, client_for
):
    """The node may report a crash as soon as the worker has committed ``running``."""
    settings.RATE_LIMIT_PER_MINUTE = 100_000
    api = client_for(make_token(owner, account))
    server_id = stopped_server(api)
    reports: list = []

    def report_crash() -> None:
        try:
            reports.append(instance_crash(instance=Server.objects.get(pk=server_id), reason="Exit"))
        except ApplicationError as refusal:
            reports.append(refusal)

    def set_status(instance, new, **kwargs):
        set_status_for_real(instance, new, **kwargs)
        if new == "running" and not reports:
            transaction.on_commit(report_crash)

    response = api.post(f"/v1/servers/{server_id}/actions", {"type": "start"}, format="json")
    assert response.status_code == 202, response.content
    with mock.patch("servers.services.actions.instance_status_set", set_status):
        run_worker()

    assert len(reports) == 1
    assert isinstance(reports[0], Action), f"the crash report was refused: {reports[0]!r}"
    assert reports[0].type == "start"  # auto_restart
    assert Event.objects.filter(type="server.crashed", object_id=server_id).count() == 1
    changes = [
        (event.data["previous_attributes"]["status"], event.data["object"]["status"])
        for event in Event.objects.filter(
            type="server.status_changed", object_id=server_id
        ).order_by("created_at", "id")
    ]
    # The worker went on with the automatic restart.
    assert changes[-5:] == [
        ("stopped", "starting"),
        ("starting", "running"),
        ("running", "stopped"),
        ("stopped", "starting"),
        ("starting", "running"),
    ]

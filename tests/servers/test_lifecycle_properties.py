"""The server lifecycle as a Hypothesis state machine, driven through the real API and worker.

A hand-written model of each server (its status history, its active action, its simulated
failures) predicts every answer and every status change; after each step the event log, the
database and the model must agree exactly (and the API's server list, after each worker run):

(a) every ``server.status_changed`` event is an edge of ``transitions.EDGES`` and each server's
    events form one continuous chain from ``provisioning``;
(b) every action request gets what the table says: 202 when the status allows it and no other
    action is active (``kill`` cuts them short), else 409 ``invalid_state`` or
    ``action_in_progress`` with the right details, and 404 once the server is gone;
(c) the database status is the last event's new status, and the chain is exactly the model's
    history (one event per change, none more);
(d) after the worker has run, no action is pending or running and no task failed.

Each example runs in a savepoint of the test's transaction, rolled back at teardown, so every
example starts from an empty account and an empty task queue.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from django.db import transaction
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from rest_framework.test import APIClient

from accounts.actors import SYSTEM
from accounts.roles import SCOPES, Role
from accounts.services import api_key_create
from events.models import Event
from hosting.errors import ApplicationError, NotFound
from servers.models import Action, ActionStatus, Server
from servers.models import ServerStatus as S
from servers.services import action_request, instance_crash, instance_suspend
from servers.transitions import (
    ACTIONS,
    CRASH_LOOP_LIMIT,
    EDGES,
    POWER_ACTIONS,
    PREEMPTING_ACTIONS,
    allowed_actions,
)
from tests.factories import MembershipFactory
from tests.servers.helpers import MINECRAFT, run_worker

ONE_IN_FOUR = st.integers(0, 3).map(lambda n: n == 3)


@dataclass
class ModelServer:
    """What the model expects of one server."""

    id: str
    start_on_install: bool
    auto_restart: bool = True
    history: list[str] = field(default_factory=lambda: [S.PROVISIONING])
    gone: bool = False
    live: tuple[str, str] | None = None  # (type, id) of the one active action other than kill
    kill: str | None = None  # a kill that waits for the worker
    fail_install: bool = False
    fail_start: bool = False
    automatic_restarts: int = 0

    @property
    def status(self) -> str:
        return self.history[-1]

    @property
    def active_action_id(self) -> str | None:
        return self.live[1] if self.live else self.kill

    def move(self, status: str) -> None:
        if status != self.status:
            self.history.append(status)


class ServerLifecycle(RuleBasedStateMachine):
    servers = Bundle("servers")

    def __init__(self):
        super().__init__()
        self.savepoint = transaction.savepoint_create()
        membership = MembershipFactory(role=Role.OWNER)
        self.account = membership.account
        _, token = api_key_create(
            account=self.account, user=membership.user, name="Lifecycle", scopes=list(SCOPES)
        )
        self.api = APIClient()
        self.api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        self.model: dict[str, ModelServer] = {}
        self.actions: dict[str, str] = {}  # action id → the status the model expects it in

    def teardown(self):
        transaction.savepoint_rollback(self.savepoint)

    # --- What the table says ---------------------------------------------------------------

    def refusal(self, server: ModelServer, kind: str) -> tuple[str, dict | None] | None:
        """The error code and details the model expects for ``kind``, or None: accepted."""
        if server.gone:
            return "not_found", None
        if server.status not in ACTIONS[kind].allowed_from:
            details = {"status": server.status, "allowed_actions": allowed_actions(server.status)}
            return "invalid_state", details
        if kind not in PREEMPTING_ACTIONS and server.active_action_id:
            # A kill still waiting for the worker blocks the rest too: were a start accepted
            # beside it, the worker might carry out the kill after the start.
            return "action_in_progress", {"action_id": server.active_action_id}
        return None

    def accept(self, server: ModelServer, kind: str, action_id: str) -> None:
        if kind in PREEMPTING_ACTIONS and server.live:
            self.actions[server.live[1]] = ActionStatus.FAILED
            server.live = None
        server.move(ACTIONS[kind].first_status)
        if not ACTIONS[kind].steps:
            self.actions[action_id] = ActionStatus.SUCCEEDED
            return
        self.actions[action_id] = ActionStatus.PENDING
        if kind in PREEMPTING_ACTIONS:
            server.kill = action_id
        else:
            server.live = (kind, action_id)

    def check_api_answer(self, server: ModelServer, kind: str, response) -> None:
        expected = self.refusal(server, kind)
        if expected is None:
            assert response.status_code == 202, response.content
            action = response.json()["data"]["action"]
            assert (action["type"], action["status"]) == (kind, "pending")
            self.accept(server, kind, action["id"])
            return
        code, details = expected
        assert response.status_code == (404 if code == "not_found" else 409), response.content
        error = response.json()["error"]
        assert error["code"] == code
        if details is not None:
            assert error["details"] == details

    def check_service_answer(self, server: ModelServer, kind: str, call) -> None:
        """The same for staff operations, which are services without an endpoint here."""
        expected = self.refusal(server, kind)
        try:
            action = call(Server.objects.get(pk=server.id))
        except ApplicationError as error:
            assert expected is not None, f"{kind} refused with {error.code}"
            assert error.code == expected[0]
            if expected[1] is not None:
                assert error.details == expected[1]
            return
        assert expected is None, f"{kind} accepted, expected {expected[0]}"
        self.accept(server, kind, action.id)

    # --- Rules -------------------------------------------------------------------------------

    @initialize(target=servers, start_on_install=st.booleans())
    def first_server(self, start_on_install):
        """One server, installed (and started, if asked), so that examples start further on."""
        server_id = self.create(start_on_install)
        self.worker_runs()
        return server_id

    @precondition(lambda self: sum(not server.gone for server in self.model.values()) < 2)
    @rule(target=servers, start_on_install=st.booleans())
    def second_server(self, start_on_install):
        return self.create(start_on_install)

    def create(self, start_on_install: bool) -> str:
        body = MINECRAFT | {"start_on_install": start_on_install}
        response = self.api.post("/v1/servers", body, format="json")
        assert response.status_code == 201, response.content
        server_id = response.json()["data"]["server"]["id"]
        assert response.json()["data"]["server"]["status"] == S.PROVISIONING
        server = ModelServer(server_id, start_on_install)
        create = Action.objects.get(server_id=server_id)
        assert create.type == "create"
        server.live = ("create", create.id)
        self.actions[create.id] = ActionStatus.PENDING
        self.model[server_id] = server
        return server_id

    @rule(server_id=servers, data=st.data())
    def power_action(self, server_id, data):
        # Mostly one the status allows, so that servers get far along their lifecycle.
        allowed = allowed_actions(self.model[server_id].status)
        choices = allowed if allowed and not data.draw(ONE_IN_FOUR, "any") else POWER_ACTIONS
        kind = data.draw(st.sampled_from(choices), "type")
        response = self.api.post(f"/v1/servers/{server_id}/actions", {"type": kind}, format="json")
        self.check_api_answer(self.model[server_id], kind, response)

    @rule(server_id=servers)
    def delete(self, server_id):
        response = self.api.delete(f"/v1/servers/{server_id}")
        self.check_api_answer(self.model[server_id], "delete", response)

    @rule(server_id=servers, toggle_auto_restart=ONE_IN_FOUR)
    def crash(self, server_id, toggle_auto_restart):
        server = self.model[server_id]
        if toggle_auto_restart:
            response = self.api.patch(
                f"/v1/servers/{server_id}", {"auto_restart": not server.auto_restart}, format="json"
            )
            if server.gone:
                assert response.status_code == 404, response.content
            elif server.status == S.DELETING:
                assert response.status_code == 409, response.content
                assert response.json()["error"]["code"] == "invalid_state"
            else:
                assert response.status_code == 200, response.content
                server.auto_restart = not server.auto_restart
        instance = Server.objects.get(pk=server_id)
        if server.gone:
            with pytest.raises(NotFound):
                instance_crash(instance=instance, reason="Segfault")
            return
        restart = instance_crash(instance=instance, reason="Segfault")
        if server.status != S.RUNNING:
            assert restart is None  # only a running process can crash
            return
        server.move(S.STOPPED)
        reason = Server.objects.get(pk=server_id).status_reason
        if server.auto_restart and server.automatic_restarts < CRASH_LOOP_LIMIT:
            assert restart is not None and restart.type == "start"
            server.automatic_restarts += 1
            self.accept(server, "start", restart.id)
        else:
            assert restart is None
            assert reason.startswith("Crashed: Segfault")
            assert ("crash loop" in reason) == server.auto_restart

    @rule(server_id=servers, fail_install=ONE_IN_FOUR, fail_start=ONE_IN_FOUR)
    def set_simulated_failures(self, server_id, fail_install, fail_start):
        Server.objects.filter(pk=server_id).update(
            simulation={"fail_install": fail_install, "fail_start": fail_start}
        )
        self.model[server_id].fail_install = fail_install
        self.model[server_id].fail_start = fail_start

    @rule(server_id=servers, kind=st.sampled_from(["suspend", "unsuspend"]))
    def staff_suspends_or_unsuspends(self, server_id, kind):
        def call(server: Server):
            if kind == "suspend":
                return instance_suspend(instance=server, reason="Unpaid", actor=SYSTEM)
            return action_request(instance=server, action_type=kind, actor=SYSTEM)

        self.check_service_answer(self.model[server_id], kind, call)

    @rule()
    def worker_runs(self):
        run_worker()
        for server in self.model.values():
            self.carry_out(server)
        busy = [ActionStatus.PENDING, ActionStatus.RUNNING]
        assert not Action.objects.filter(account=self.account, status__in=busy).exists()
        assert not DBTaskResult.objects.exclude(status=TaskResultStatus.SUCCESSFUL).exists()
        response = self.api.get("/v1/servers", {"per_page": 100})
        assert response.status_code == 200, response.content
        listed = {item["id"]: item["status"] for item in response.json()["data"]["servers"]}
        assert listed == {s.id: s.status for s in self.model.values() if not s.gone}

    def carry_out(self, server: ModelServer) -> None:
        """What the worker does with the server's queued actions, written out by hand."""
        if server.kill:
            self.actions[server.kill] = ActionStatus.SUCCEEDED
            server.kill = None
        if server.live is None:
            return
        (kind, action_id), server.live = server.live, None
        ok = True
        if kind == "delete":
            server.gone = True
        elif kind in {"create", "reinstall"}:
            server.move(S.INSTALLING)
            if server.fail_install:
                server.move(S.INSTALL_FAILED)
                ok = False
            elif kind == "create" and server.start_on_install:
                server.move(S.STARTING)
                ok = self.start(server)
            else:
                server.move(S.STOPPED)
        elif kind in {"start", "restart"}:
            server.move(S.STARTING)
            ok = self.start(server)
        elif kind == "stop":
            server.move(S.STOPPED)
        self.actions[action_id] = ActionStatus.SUCCEEDED if ok else ActionStatus.FAILED

    @staticmethod
    def start(server: ModelServer) -> bool:
        server.move(S.STOPPED if server.fail_start else S.RUNNING)
        return not server.fail_start

    # --- Invariants --------------------------------------------------------------------------

    @invariant()
    def status_events_are_one_continuous_chain_per_server(self):
        chains = defaultdict(list)
        events = Event.objects.filter(account=self.account, type="server.status_changed")
        for event in events.order_by("created_at", "id"):
            change = (event.data["previous_attributes"]["status"], event.data["object"]["status"])
            chains[event.object_id].append(change)
        rows = {
            row["id"]: row
            for row in Server.objects.filter(account=self.account).values(
                "id", "status", "deleted_at"
            )
        }
        assert set(rows) == set(self.model)
        for server_id, server in self.model.items():
            changes = chains.pop(server_id, [])
            assert set(changes) <= EDGES, f"{server_id}: {changes}"
            current = S.PROVISIONING
            for old, new in changes:
                assert old == current, f"{server_id}: the chain breaks at {old} → {new}"
                current = new
            assert rows[server_id]["status"] == current
            assert changes == list(pairwise(server.history))
            assert (rows[server_id]["deleted_at"] is not None) == server.gone
        assert not chains

    @invariant()
    def actions_are_where_the_model_expects(self):
        actions = Action.objects.filter(account=self.account).values_list("id", "status")
        assert dict(actions) == self.actions


def test_the_lifecycle_follows_the_table(db, settings):
    settings.RATE_LIMIT_PER_MINUTE = 1_000_000
    run_state_machine_as_test(
        ServerLifecycle,
        settings=hypothesis_settings(
            max_examples=40,
            stateful_step_count=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

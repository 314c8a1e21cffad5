"""Schedules through the API: the owner and a teammate with the schedules scopes get through, an
outsider gets 404 (and so does another server's schedule id), a key without the scopes 403;
bad input 400 by field, the plan's limit 409, the list's queries pinned, the answers exact."""

from datetime import UTC, datetime

import pytest
import time_machine

from accounts.actors import SYSTEM
from accounts.roles import ROLE_SCOPES, Role
from servers.models import Schedule, ScheduleRun
from servers.services.schedules import schedule_create
from tests.envelopes import error_of, field_errors
from tests.factories import MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 28, 12, 0, 5, tzinfo=UTC)
BODY = {
    "name": "Nightly restart",
    "cron": "0 4 * * *",
    "timezone": "Europe/Berlin",
    "only_when_running": True,
    "tasks": [
        {"action": "command", "payload": "say Restarting", "continue_on_failure": True},
        {"action": "power", "payload": "restart", "offset_seconds": 300},
    ],
}
READS = [
    ("get", "schedules", None, 200),
    ("get", "schedules/{s}", None, 200),
    ("get", "schedules/{s}/runs", None, 200),
]
WRITES = [
    ("post", "schedules", BODY, 201),
    ("patch", "schedules/{s}", {"active": False}, 200),
    ("delete", "schedules/{s}", None, 200),
    ("post", "schedules/{s}/run", None, 202),
]


def a_schedule(instance) -> Schedule:
    return schedule_create(
        instance=instance,
        actor=SYSTEM,
        name="Hourly",
        cron="0 * * * *",
        tasks=[{"action": "command", "payload": "save-all"}],
    )


def call(api, instance, method, suffix, body, schedule: Schedule):
    path = f"/v1/{instance.kind}s/{instance.pk}/" + suffix.format(s=schedule.id)
    return getattr(api, method)(path, body, format="json")


@pytest.mark.parametrize("method,suffix,body,status", READS + WRITES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_the_owner_gets_through_and_an_outsider_gets_404(
    owner_api, outsider_api, server, bot, kind, method, suffix, body, status
):
    instance = server if kind == "server" else bot
    schedule = a_schedule(instance)
    error_of(call(outsider_api, instance, method, suffix, body, schedule), 404, "not_found")
    answer = call(owner_api, instance, method, suffix, body, schedule)
    assert answer.status_code == status, answer.content


@pytest.mark.parametrize("method,suffix,body,status", [c for c in READS + WRITES if "{s}" in c[1]])
def test_another_servers_schedule_is_not_found_here(
    owner_api, account, server, node, method, suffix, body, status
):
    neighbour = ServerFactory(account=account, node=node)
    theirs = a_schedule(neighbour)
    error = error_of(call(owner_api, server, method, suffix, body, theirs), 404, "not_found")
    assert error["message"] == "No such schedule."
    assert Schedule.objects.filter(pk=theirs.pk, active=True).exists()
    assert not ScheduleRun.objects.exists()


@pytest.mark.parametrize("method,suffix,body,status", READS + WRITES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_teammate_needs_the_schedules_scopes(
    teammate, account, make_token, client_for, server, bot, kind, method, suffix, body, status
):
    instance = server if kind == "server" else bot
    schedule = a_schedule(instance)
    read = f"{kind}s:read"
    needed = "schedules:read" if (method, suffix, body, status) in READS else "schedules:write"
    without = client_for(make_token(teammate, account, [read, f"{kind}s:write", "backups:write"]))
    error = error_of(
        call(without, instance, method, suffix, body, schedule), 403, "insufficient_scope"
    )
    assert error["details"]["required_scopes"] == [read, needed]
    only_schedules = client_for(make_token(teammate, account, ["schedules:write"]))
    error_of(
        call(only_schedules, instance, method, suffix, body, schedule), 403, "insufficient_scope"
    )
    with_schedules = client_for(make_token(teammate, account, [read, "schedules:write"]))
    answer = call(with_schedules, instance, method, suffix, body, schedule)
    assert answer.status_code == status, answer.content


def test_which_roles_may_hold_the_schedules_scopes():
    for role in (Role.OWNER, Role.ADMIN, Role.DEVELOPER):
        assert {"schedules:read", "schedules:write"} <= ROLE_SCOPES[role]
    for role in (Role.SUPPORT, Role.VIEWER):
        assert "schedules:read" in ROLE_SCOPES[role]
        assert "schedules:write" not in ROLE_SCOPES[role]
    assert not {"schedules:read", "schedules:write"} & ROLE_SCOPES[Role.BILLING]


@pytest.mark.parametrize("role,reads", [(Role.SUPPORT, True), (Role.BILLING, False)])
def test_support_reads_schedules_and_billing_none(
    account, make_token, client_for, server, role, reads
):
    member = MembershipFactory(account=account, role=role).user
    scopes = sorted(ROLE_SCOPES[role] & {"servers:read", "schedules:read"}) or ["billing:read"]
    api = client_for(make_token(member, account, scopes))
    assert api.get(f"/v1/servers/{server.pk}/schedules").status_code == (200 if reads else 403)
    made = api.post(f"/v1/servers/{server.pk}/schedules", BODY, format="json")
    assert made.status_code == 403


def test_a_schedule_is_created_with_its_tasks_and_shown_in_words(owner_api, server):
    with time_machine.travel(NOW, tick=False):
        answer = owner_api.post(f"/v1/servers/{server.pk}/schedules", BODY, format="json")
    assert answer.status_code == 201, answer.content
    shown = answer.json()["data"]["schedule"]
    assert shown["id"].startswith("sch_")
    assert answer["Location"].endswith(f"/v1/servers/{server.pk}/schedules/{shown['id']}")
    assert shown == {
        "id": shown["id"],
        "name": "Nightly restart",
        "target": {"type": "server", "id": server.pk},
        "cron": "0 4 * * *",
        "timezone": "Europe/Berlin",
        "description": "every day at 04:00 (Europe/Berlin)",
        "active": True,
        "only_when_running": True,
        "next_run_at": "2026-11-29T03:00:00Z",
        "last_run_at": None,
        "tasks": [
            {
                "action": "command",
                "payload": "say Restarting",
                "offset_seconds": 0,
                "continue_on_failure": True,
            },
            {
                "action": "power",
                "payload": "restart",
                "offset_seconds": 300,
                "continue_on_failure": False,
            },
        ],
        "created_at": "2026-11-28T12:00:05Z",
        "updated_at": "2026-11-28T12:00:05Z",
    }


def test_patch_replaces_the_tasks_and_pauses(owner_api, server):
    schedule = a_schedule(server)
    path = f"/v1/servers/{server.pk}/schedules/{schedule.id}"
    answer = owner_api.patch(
        path,
        {"active": False, "tasks": [{"action": "backup", "payload": "Hourly"}]},
        format="json",
    )
    shown = answer.json()["data"]["schedule"]
    assert shown["active"] is False and shown["next_run_at"] is None
    assert shown["tasks"] == [
        {"action": "backup", "payload": "Hourly", "offset_seconds": 0, "continue_on_failure": False}
    ]
    assert owner_api.get(path).json()["data"]["schedule"] == shown


def test_run_now_answers_with_the_run_and_lists_it(owner_api, server):
    schedule = a_schedule(server)
    base = f"/v1/servers/{server.pk}/schedules/{schedule.id}"
    started = owner_api.post(f"{base}/run", format="json").json()["data"]["run"]
    assert started["id"].startswith("schr_")
    assert (started["tick"], started["trigger"], started["status"]) == (None, "manual", "running")
    assert started["tasks"][0]["status"] == "pending"
    runs = owner_api.get(f"{base}/runs").json()["data"]
    assert [run["id"] for run in runs["runs"]] == [started["id"]]
    assert runs["pagination"]["total"] == 1


@pytest.mark.parametrize(
    "body,expected",
    [
        (BODY | {"cron": "0 4 * *"}, [("cron", "invalid")]),
        (BODY | {"cron": "0 24 * * *"}, [("cron", "invalid")]),
        (BODY | {"timezone": "Europe/Atlantis"}, [("timezone", "invalid")]),
        (BODY | {"tasks": []}, [("tasks", "invalid")]),
        (
            BODY | {"tasks": [{"action": "power", "payload": "start"}] * 21},
            [("tasks", "invalid")],
        ),
        (BODY | {"tasks": [{"action": "reboot"}]}, [("tasks.0.action", "invalid_choice")]),
        (
            BODY | {"tasks": [{"action": "power", "payload": "explode"}]},
            [("tasks.0.payload", "invalid_choice")],
        ),
        (BODY | {"tasks": [{"action": "command"}]}, [("tasks.0.payload", "invalid")]),
        (
            BODY | {"tasks": [{"action": "command", "payload": "a\nb"}]},
            [("tasks.0.payload", "invalid")],
        ),
        (
            BODY | {"tasks": [{"action": "backup", "offset_seconds": 901}]},
            [("tasks.0.offset_seconds", "max_value")],
        ),
        (BODY | {"name": ""}, [("name", "blank")]),
        (BODY | {"every": "day"}, [("every", "unknown_field")]),
    ],
)
def test_a_bad_body_is_refused_by_field(owner_api, server, body, expected):
    answer = owner_api.post(f"/v1/servers/{server.pk}/schedules", body, format="json")
    assert field_errors(answer) == expected
    assert not Schedule.objects.exists()


def test_the_plans_limit_is_409(owner_api, server, settings):
    settings.SCHEDULE_DEFAULT_LIMIT = 1
    a_schedule(server)
    answer = owner_api.post(f"/v1/servers/{server.pk}/schedules", BODY, format="json")
    error = error_of(answer, 409, "schedule_limit_reached")
    assert error["details"] == {"limit": 1}
    assert error["message"] == (
        "This server has 1 schedules, as many as its plan allows; delete one first."
    )


def test_the_lists_pin_their_queries(owner_api, server, django_assert_max_num_queries, settings):
    settings.SCHEDULE_DEFAULT_LIMIT = 20
    schedules = [a_schedule(server) for _ in range(6)]
    with django_assert_max_num_queries(6):
        answer = owner_api.get(f"/v1/servers/{server.pk}/schedules")
    data = answer.json()["data"]
    assert [s["id"] for s in data["schedules"]] == [s.id for s in reversed(schedules)]
    for _ in range(6):
        owner_api.post(f"/v1/servers/{server.pk}/schedules/{schedules[0].id}/run")
    with django_assert_max_num_queries(6):
        answer = owner_api.get(f"/v1/servers/{server.pk}/schedules/{schedules[0].id}/runs")
    assert answer.json()["data"]["pagination"]["total"] == 6

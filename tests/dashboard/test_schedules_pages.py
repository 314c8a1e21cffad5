"""The Schedules tab's pages: who sees the tab, reads and changes; the list in words with the
next and last runs; a schedule created and edited with its tasks (bad input said on the page);
pause, resume, run now and delete; the runs' history; a bot's; a phone's width."""

import re
from zoneinfo import ZoneInfo

import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from servers.models import Schedule, ScheduleRun, ServerGrant
from servers.services.schedules import schedule_create
from tests.dashboard import messages_of, signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(account):
    return ServerFactory(account=account)


def a_schedule(instance, **fields) -> Schedule:
    return schedule_create(
        instance=instance,
        actor=SYSTEM,
        name=fields.pop("name", "Nightly restart"),
        cron=fields.pop("cron", "0 4 * * *"),
        time_zone=fields.pop("time_zone", "Europe/Berlin"),
        tasks=fields.pop("tasks", [{"action": "power", "payload": "restart"}]),
        **fields,
    )


def member(account, role):
    return MembershipFactory(account=account, role=role).user


def test_the_tab_shows_for_readers_of_schedules(owner, account, server):
    page = signed_in(owner).get(f"/servers/{server.id}").content.decode()
    assert f'href="/servers/{server.id}/schedules"' in page
    assert (
        "schedules-link"
        in signed_in(member(account, Role.VIEWER)).get(f"/servers/{server.id}").content.decode()
    )
    billing = signed_in(member(account, Role.BILLING))
    assert "schedules-link" not in billing.get(f"/servers/{server.id}").content.decode()
    refused = billing.get(f"/servers/{server.id}/schedules", follow=True)
    assert "you may not see this server's schedules" in messages_of(refused)[0]


def test_the_list_says_when_in_words_and_the_last_outcome(owner, server):
    schedule = a_schedule(server)
    ScheduleRun.objects.create(
        schedule=schedule, trigger="tick", status="failed", reason="Task 1 (power) failed: no."
    )
    html = signed_in(owner).get(f"/servers/{server.id}/schedules").content.decode()
    row = html[html.index(f'id="schedule-{schedule.id}"') :]
    assert "every day at 04:00 (Europe/Berlin)" in row
    berlin = schedule.next_run_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert f"{berlin:%a} {berlin.day} {berlin:%b %Y}, 04:00</time>" in row  # in its own zone
    assert f"Europe/Berlin · {schedule.next_run_at:%H:%M} UTC" in row
    assert "Task 1 (power) failed: no." in row
    assert "Run now" in row and "Pause" in row


def test_a_viewer_reads_but_has_no_buttons_and_cannot_post(account, server):
    schedule = a_schedule(server)
    client = signed_in(member(account, Role.VIEWER))
    html = client.get(f"/servers/{server.id}/schedules").content.decode()
    assert schedule.name in html and "Run now" not in html and "New schedule" not in html
    client.post(f"/servers/{server.id}/schedules/do", {"op": "delete", "schedule_id": schedule.id})
    assert client.get(f"/servers/{server.id}/schedules/new").status_code == 302
    assert Schedule.objects.filter(pk=schedule.pk).exists()


def test_a_schedule_is_created_with_its_tasks_from_the_form(owner, server):
    client = signed_in(owner)
    form = client.get(f"/servers/{server.id}/schedules/new").content.decode()
    assert 'name="task-2-action"' in form and 'name="task-3-action"' not in form
    answer = client.post(
        f"/servers/{server.id}/schedules/new",
        {
            "name": "Warn and restart",
            "cron": "0 6 * * 1",
            "timezone": "America/New_York",
            "active": "on",
            "task-0-action": "command",
            "task-0-payload": "say Restart in 5 minutes",
            "task-0-continue": "on",
            "task-1-action": "",
            "task-2-action": "power",
            "task-2-payload": "restart",
            "task-2-offset": "300",
        },
    )
    assert answer.status_code == 302
    schedule = Schedule.objects.get()
    assert (schedule.cron, schedule.time_zone, schedule.active) == (
        "0 6 * * 1",
        "America/New_York",
        True,
    )
    assert [
        (t.action, t.payload, t.offset_seconds, t.continue_on_failure) for t in schedule.tasks.all()
    ] == [
        ("command", "say Restart in 5 minutes", 0, True),
        ("power", "restart", 300, False),
    ]
    edit = client.get(f"/servers/{server.id}/schedules/{schedule.id}").content.decode()
    assert 'value="say Restart in 5 minutes"' in edit and 'name="task-4-action"' in edit


def test_the_order_numbers_reorder_the_tasks(owner, server):
    schedule = a_schedule(
        server,
        tasks=[
            {"action": "command", "payload": "say first"},
            {"action": "power", "payload": "restart", "offset_seconds": 60},
        ],
    )
    client = signed_in(owner)
    form = client.get(f"/servers/{server.id}/schedules/{schedule.id}").content.decode()
    assert 'name="task-1-order" value="2"' in form
    fields = {
        "name": "Nightly restart",
        "cron": "0 4 * * *",
        "timezone": "Europe/Berlin",
        "active": "on",
        "task-0-action": "command",
        "task-0-payload": "say first",
        "task-0-order": "3",
        "task-1-action": "power",
        "task-1-payload": "restart",
        "task-1-offset": "60",
        "task-1-order": "1",
        "task-2-action": "backup",
        "task-2-payload": "Before",
        "task-2-order": "1",  # the same number: its place on the form breaks the tie
    }
    assert client.post(f"/servers/{server.id}/schedules/{schedule.id}", fields).status_code == 302
    assert [(t.action, t.payload) for t in Schedule.objects.get().tasks.all()] == [
        ("power", "restart"),
        ("backup", "Before"),
        ("command", "say first"),
    ]
    answer = client.post(
        f"/servers/{server.id}/schedules/{schedule.id}", fields | {"task-2-order": "first"}
    )
    assert messages_of(answer)[-1] == "Task 3: the order is a whole number (1 runs first)."


def test_a_sub_user_with_schedules_read_only_sees_them_and_changes_nothing(account, server):
    schedule = a_schedule(server)
    guest = member(account, Role.GUEST)
    access = ServerGrant.objects.create(
        account=account, server=server, user=guest, permissions=["schedules.read"]
    )
    client = signed_in(guest)
    html = client.get(f"/servers/{server.id}/schedules").content.decode()
    assert "every day at 04:00 (Europe/Berlin)" in html
    assert "Run now" not in html and "New schedule" not in html and "Delete" not in html
    runs = client.get(f"/servers/{server.id}/schedules/{schedule.id}/runs")
    assert runs.status_code == 200
    for op in ("run", "pause", "delete"):
        refused = client.post(
            f"/servers/{server.id}/schedules/do",
            {"op": op, "schedule_id": schedule.id},
            follow=True,
        )
        assert "you may not change this server's schedules" in messages_of(refused)[-1]
    assert client.get(f"/servers/{server.id}/schedules/new").status_code == 302
    schedule.refresh_from_db()
    assert schedule.active and not ScheduleRun.objects.exists()
    # Without schedules.read: not even the list; on another server of the account: not found.
    access.permissions = ["console.view"]
    access.save()
    assert client.get(f"/servers/{server.id}/schedules").status_code == 302
    other = ServerFactory(account=account)
    assert client.get(f"/servers/{other.id}/schedules").status_code == 404


def test_bad_input_is_said_on_the_form_which_keeps_what_was_typed(owner, server):
    answer = signed_in(owner).post(
        f"/servers/{server.id}/schedules/new",
        {
            "name": "Typo",
            "cron": "0 25 * * *",
            "timezone": "UTC",
            "task-0-action": "power",
            "task-0-payload": "restart",
        },
    )
    assert answer.status_code == 200
    assert messages_of(answer) == ["The cron line is not valid: bad hour."]
    html = answer.content.decode()
    assert 'value="0 25 * * *"' in html and 'value="restart"' in html
    assert not Schedule.objects.exists()


def test_pause_resume_run_now_and_delete(owner, server):
    schedule = a_schedule(server)
    client = signed_in(owner)
    do = f"/servers/{server.id}/schedules/do"
    client.post(do, {"op": "pause", "schedule_id": schedule.id})
    schedule.refresh_from_db()
    assert (schedule.active, schedule.next_run_at) == (False, None)
    client.post(do, {"op": "resume", "schedule_id": schedule.id})
    schedule.refresh_from_db()
    assert schedule.active and schedule.next_run_at is not None
    ran = client.post(do, {"op": "run", "schedule_id": schedule.id}, follow=True)
    assert messages_of(ran)[-1] == "“Nightly restart” is running now: its runs show how it goes."
    run = ScheduleRun.objects.get()
    runs = client.get(f"/servers/{server.id}/schedules/{schedule.id}/runs").content.decode()
    assert f'id="run-{run.id}"' in runs and "Run now" in runs and "restart" in runs
    client.post(do, {"op": "delete", "schedule_id": schedule.id})
    assert not Schedule.objects.exists()


def test_another_servers_schedule_is_not_found_here(owner, account, server):
    theirs = a_schedule(ServerFactory(account=account))
    client = signed_in(owner)
    assert client.get(f"/servers/{server.id}/schedules/{theirs.id}").status_code == 404
    assert client.get(f"/servers/{server.id}/schedules/{theirs.id}/runs").status_code == 404
    answer = client.post(
        f"/servers/{server.id}/schedules/do",
        {"op": "delete", "schedule_id": theirs.id},
        follow=True,
    )
    assert messages_of(answer) == ["No such schedule."]
    assert Schedule.objects.filter(pk=theirs.pk).exists()


def test_an_outsiders_server_is_404(outsider, server):
    assert signed_in(outsider).get(f"/servers/{server.id}/schedules").status_code == 404


def test_a_bots_schedules(owner, account):
    bot = BotFactory(account=account)
    client = signed_in(owner)
    client.post(
        f"/bots/{bot.id}/schedules/new",
        {
            "name": "Nightly",
            "cron": "0 4 * * *",
            "timezone": "UTC",
            "active": "on",
            "task-0-action": "power",
            "task-0-payload": "restart",
        },
    )
    assert Schedule.objects.get().bot_id == bot.id
    assert "every day at 04:00 (UTC)" in client.get(f"/bots/{bot.id}/schedules").content.decode()


def test_the_page_fits_a_phone(owner, server):
    """At 390 px the table stacks (table-stack) and nothing is wider than the screen."""
    a_schedule(server)
    html = signed_in(owner).get(f"/servers/{server.id}/schedules").content.decode()
    assert 'class="table table-stack"' in html
    assert not re.search(r'style="[^"]*width:\s*\d{3,}px', html)

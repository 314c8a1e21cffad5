"""The Schedules tab in a real browser, against a real node agent (the live server is the
control plane, the real worker runs the steps). The owner creates a schedule with a cron line in
a time zone and sees it in words with its next run there, adds tasks (a console command, a
power action at an offset, a backup), reorders and edits them, pauses it, runs it now and
follows the run and each task's outcome on its runs page, then deletes it; on a phone none of
the three pages scrolls sideways."""

from zoneinfo import ZoneInfo

import pytest

from accounts.actors import SYSTEM
from servers.models import Schedule, ScheduleRun, Server, ServerStatus
from servers.services.actions import action_request
from tests.agent.loop import wait_for
from tests.browser.test_console_flow import PASSWORD, PHONE
from tests.browser.test_files_flow import server_on_node  # noqa: F401 - the fixture
from tests.servers.helpers import run_worker

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# Elements wider than the screen, outside the parts that scroll on their own by design.
WIDE = (
    "[...document.querySelectorAll('body *')]"
    ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)"
    ".filter(e => !e.parentElement.closest('.table-wrap, .tabs'))"
    ".map(e => e.tagName + '.' + e.className)"
)


def fits_a_phone(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(WIDE)
    assert (width, wide) == (PHONE["width"], []), wide


def running(server: Server) -> Server:
    """The server started through the actions service and the real worker."""
    action_request(instance=server, action_type="start", actor=SYSTEM)

    def started():
        run_worker()
        server.refresh_from_db()
        return server.status == ServerStatus.RUNNING

    wait_for(started, timeout=60, what="the server's start")
    return server


def sign_in_and_open_schedules(page, user, server):
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    page.goto(f"/servers/{server.id}")
    page.get_by_role("navigation", name="Server").get_by_role("link", name="Schedules").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")


def task_row(page, number: int):
    return page.locator(f"#task-{number - 1}")


def test_a_schedule_from_its_creation_to_its_runs_and_deletion(
    page,
    owner,
    server_on_node,  # noqa: F811
    screenshot,
):
    server = running(server_on_node)
    sign_in_and_open_schedules(page, owner, server)
    expect(page.locator("#schedules-empty")).to_be_visible()

    # Created with a cron line in Berlin's time and two tasks.
    page.get_by_role("link", name="New schedule").click()
    page.wait_for_url(f"/servers/{server.id}/schedules/new")
    page.get_by_label("Name", exact=True).fill("Nightly restart")
    page.locator("#schedule-cron").fill("0 4 * * *")
    page.locator("#schedule-timezone").fill("Europe/Berlin")
    task_row(page, 1).get_by_label("Task 1 action").select_option("command")
    task_row(page, 1).get_by_label("Task 1 payload").fill("say Restart in a minute")
    task_row(page, 1).get_by_label("Continue if it fails").check()
    task_row(page, 2).get_by_label("Task 2 action").select_option("power")
    task_row(page, 2).get_by_label("Task 2 payload").fill("restart")
    task_row(page, 2).get_by_label("Task 2 offset in seconds").fill("60")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")
    expect(page.locator(".messages")).to_contain_text("“Nightly restart” is saved.")
    schedule = Schedule.objects.get(server=server)
    row = page.locator(f"#schedule-{schedule.id}")
    expect(row).to_contain_text("every day at 04:00 (Europe/Berlin)")
    berlin = schedule.next_run_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert (berlin.hour, berlin.minute) == (4, 0)
    expect(row).to_contain_text(f"{berlin:%a} {berlin.day} {berlin:%b %Y}, 04:00")
    expect(row).to_contain_text("2 tasks")

    # Edited: a backup added and moved first, the restart's offset shortened.
    row.get_by_role("link", name="Edit").click()
    page.wait_for_url(f"/servers/{server.id}/schedules/{schedule.id}")
    expect(task_row(page, 2).get_by_label("Task 2 payload")).to_have_value("restart")
    task_row(page, 2).get_by_label("Task 2 offset in seconds").fill("2")
    task_row(page, 3).get_by_label("Task 3 action").select_option("backup")
    task_row(page, 3).get_by_label("Task 3 payload").fill("Before the restart")
    task_row(page, 1).get_by_label("Task 1 order").fill("2")
    task_row(page, 2).get_by_label("Task 2 order").fill("3")
    task_row(page, 3).get_by_label("Task 3 order").fill("1")
    page.set_viewport_size(PHONE)
    fits_a_phone(page)
    screenshot("schedule-form-phone")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")
    tasks = [
        (task.action, task.payload, task.offset_seconds, task.continue_on_failure)
        for task in Schedule.objects.get(pk=schedule.pk).tasks.all()
    ]
    assert tasks == [
        ("backup", "Before the restart", 0, False),
        ("command", "say Restart in a minute", 0, True),
        ("power", "restart", 2, False),
    ]
    expect(row).to_contain_text("3 tasks")
    fits_a_phone(page)
    # The row's buttons too (the table's frame would hide what runs past the screen).
    buttons = row.locator("td.actions a, td.actions button")
    expect(buttons).to_have_count(5)
    for box in (buttons.nth(n).bounding_box() for n in range(5)):
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    screenshot("schedules-phone")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Paused: no next run; run now runs it all the same.
    row.get_by_role("button", name="Pause").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")
    expect(page.locator(".messages")).to_contain_text("“Nightly restart” is paused.")
    expect(row.locator("td").nth(0)).to_contain_text("Paused")
    expect(row.locator("td").nth(2)).to_contain_text("Paused")
    row.get_by_role("button", name="Run now").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")
    expect(page.locator(".messages")).to_contain_text("is running now")
    run = ScheduleRun.objects.get(schedule=schedule)

    def finished():
        run_worker()
        run.refresh_from_db()
        return run.status != "running"

    wait_for(finished, timeout=60, what="the run")
    assert run.status == "succeeded", run.tasks
    page.reload()
    expect(row.locator("td").nth(3)).to_contain_text("Succeeded")

    # The runs page: the run with each task's outcome.
    row.get_by_role("link", name="Runs").click()
    page.wait_for_url(f"/servers/{server.id}/schedules/{schedule.id}/runs")
    shown = page.locator(f"#run-{run.id}")
    expect(shown).to_contain_text("Succeeded")
    expect(shown).to_contain_text("Run now")
    outcomes = shown.locator(".run-tasks li")
    expect(outcomes).to_have_count(3)
    for number, words in enumerate(
        ("Before the restart", "say Restart in a minute", "restart"), start=0
    ):
        expect(outcomes.nth(number)).to_contain_text("succeeded")
        expect(outcomes.nth(number)).to_contain_text(words)
    page.set_viewport_size(PHONE)
    fits_a_phone(page)
    screenshot("schedule-runs-phone")

    # Deleted, after its confirmation.
    page.get_by_role("link", name="← Schedules").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete").click()
    page.wait_for_url(f"/servers/{server.id}/schedules")
    expect(page.locator(".messages")).to_contain_text("“Nightly restart” is deleted.")
    expect(page.locator("#schedules-empty")).to_be_visible()
    assert not Schedule.objects.filter(pk=schedule.pk).exists()

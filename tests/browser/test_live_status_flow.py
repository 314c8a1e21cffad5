"""A server's status followed live in a real browser: the page is never reloaded while the status
changes from outside it (another member starting the server through the service and the real
worker, the node reporting a crash, the billing job suspending it), and the header's badge, its
power buttons, the live region and the servers list follow within a few seconds, at desktop
width and on a phone."""

import pytest
from django.db import transaction

from accounts.actors import SYSTEM, Actor
from accounts.roles import Role
from servers.models import Server, ServerStatus
from servers.services import action_request, server_create
from servers.services.actions import instance_crash, instance_suspend
from tests.factories import MembershipFactory
from tests.servers.helpers import MINECRAFT, run_worker

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}
FOLLOWS = 12_000  # ms: a few polls (status.js asks every 4 s)


@pytest.fixture
def stopped_server(owner, account) -> Server:
    server = server_create(
        account=account, actor=Actor(user=owner), **{**MINECRAFT, "auto_restart": False}
    )
    run_worker()
    server.refresh_from_db()
    assert server.status == ServerStatus.STOPPED
    return server


def sign_in(page, user) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")


def expect_buttons(page, shown: list[str], hidden: list[str]) -> None:
    for name in shown:
        expect(page.locator(f"#action-{name}")).to_be_visible()
    for name in hidden:
        expect(page.locator(f"#action-{name}")).to_be_hidden()


def follow_the_status(page, server: Server, teammate, screenshot, label: str) -> None:
    page.goto(f"/servers/{server.id}")
    badge = page.locator("h1 #status")
    expect(badge).to_have_text("Stopped")
    expect_buttons(page, ["start", "reinstall"], ["stop", "restart", "kill"])
    # Marks the document: a reload would lose it.
    page.evaluate("window.notReloaded = true")

    # Another member starts it; the real worker runs the action.
    action_request(instance=server, action_type="start", actor=Actor(user=teammate))
    run_worker()
    expect(badge).to_have_text("Running", timeout=FOLLOWS)
    expect(badge).to_have_class("badge badge-running")
    expect_buttons(page, ["stop", "restart", "kill"], ["start", "reinstall"])
    expect(page.locator("#status-announcer")).to_have_text(f"“{server.name}” is now Running.")
    screenshot(f"live-status-running-{label}")

    # The node reports a crash (auto_restart is off: it stays stopped).
    with transaction.atomic():
        instance_crash(instance=server, reason="exit code 137")
    expect(badge).to_have_text("Stopped", timeout=FOLLOWS)
    expect_buttons(page, ["start", "reinstall"], ["stop", "restart", "kill"])
    expect(page.locator("#status-announcer")).to_have_text(
        f"“{server.name}” is now Stopped. Crashed: exit code 137"
    )
    # The overview's refreshing region caught up as well: the crash is on the page.
    expect(page.get_by_role("note")).to_contain_text("Crashed: exit code 137", timeout=FOLLOWS)
    screenshot(f"live-status-crashed-{label}")

    # The billing job suspends it: no power button is left.
    instance_suspend(instance=server, reason="Invoice overdue", actor=SYSTEM)
    expect(badge).to_have_text("Suspended", timeout=FOLLOWS)
    expect_buttons(page, [], ["start", "reinstall", "stop", "restart", "kill"])
    expect(page.get_by_role("note")).to_contain_text("Invoice overdue", timeout=FOLLOWS)
    assert page.evaluate("window.notReloaded") is True
    screenshot(f"live-status-suspended-{label}")


def test_the_server_page_follows_status_changes_without_a_reload(
    page, owner, account, stopped_server, screenshot
):
    teammate = MembershipFactory(account=account, role=Role.DEVELOPER).user
    sign_in(page, owner)
    follow_the_status(page, stopped_server, teammate, screenshot, "desktop")


def test_on_a_phone_the_server_page_follows_too(page, owner, account, stopped_server, screenshot):
    teammate = MembershipFactory(account=account, role=Role.DEVELOPER).user
    page.set_viewport_size(PHONE)
    sign_in(page, owner)
    follow_the_status(page, stopped_server, teammate, screenshot, "phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_the_servers_list_follows_the_status_of_its_rows(
    page, owner, account, stopped_server, screenshot
):
    teammate = MembershipFactory(account=account, role=Role.DEVELOPER).user
    sign_in(page, owner)
    row = page.get_by_role("row").filter(has_text=stopped_server.name)
    expect(row.locator("[data-instance-status]")).to_have_text("Stopped")
    page.evaluate("window.notReloaded = true")

    action_request(instance=stopped_server, action_type="start", actor=Actor(user=teammate))
    run_worker()
    expect(row.locator("[data-instance-status]")).to_have_text("Running", timeout=FOLLOWS)
    expect(page.locator("#status-announcer")).to_have_text(
        f"“{stopped_server.name}” is now Running."
    )
    assert page.evaluate("window.notReloaded") is True
    screenshot("live-status-list-desktop")
    page.set_viewport_size(PHONE)
    screenshot("live-status-list-phone")


def test_the_console_tab_follows_the_status_too(page, owner, account, stopped_server):
    """Where the issue was seen: a stop typed in the console (here: a teammate's stop)."""
    teammate = MembershipFactory(account=account, role=Role.DEVELOPER).user
    action_request(instance=stopped_server, action_type="start", actor=Actor(user=teammate))
    run_worker()
    sign_in(page, owner)
    page.goto(f"/servers/{stopped_server.id}/console")
    badge = page.locator("h1 #status")
    expect(badge).to_have_text("Running")
    expect_buttons(page, ["stop", "restart", "kill"], ["start", "reinstall"])

    action_request(instance=stopped_server, action_type="stop", actor=Actor(user=teammate))
    run_worker()
    expect(badge).to_have_text("Stopped", timeout=FOLLOWS)
    expect_buttons(page, ["start", "reinstall"], ["stop", "restart", "kill"])

"""The Backups tab in a real browser, against a real node agent (the live server is the control
plane). The owner backs the server up, changes a file, restores the backup through its
confirmation (with the folder emptied first) and finds the file as it was; on a phone nothing
scrolls sideways."""

import pytest

from servers.models import Backup, Server
from tests.agent.loop import wait_for
from tests.browser.test_console_flow import PASSWORD, PHONE
from tests.browser.test_files_flow import server_on_node  # noqa: F401 - the fixture

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def write(api, server: Server, path: str, content: str) -> None:
    answer = api.put(
        f"/v1/servers/{server.id}/files/contents",
        {"path": path, "content": content},
        format="json",
    )
    assert answer.status_code == 200, answer.content


def sign_in_and_open_backups(page, user, server):
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    page.goto(f"/servers/{server.id}")
    page.get_by_role("navigation", name="Server").get_by_role("link", name="Backups").click()
    page.wait_for_url(f"/servers/{server.id}/backups")


def completed(backup_id: str, field: str = "status") -> Backup:
    def done():
        backup = Backup.objects.get(pk=backup_id)
        return backup if getattr(backup, field) not in ("running", "") else None

    return wait_for(done, timeout=60, what=f"the {field} of {backup_id}")


def test_back_up_and_restore_with_its_confirmation(
    page,
    owner,
    owner_api,
    server_on_node,  # noqa: F811
    screenshot,
):
    server = server_on_node
    write(owner_api, server, "/world.txt", "as it was\n")
    sign_in_and_open_backups(page, owner, server)
    expect(page.locator("#backups-empty")).to_be_visible()

    page.locator("#backup-name").fill("Before the change")
    page.get_by_role("button", name="Back up now").click()
    page.wait_for_url(f"/servers/{server.id}/backups")
    backup = completed(Backup.objects.get(server=server).id)
    assert backup.status == "completed", backup.error
    page.reload()
    row = page.locator(f"#backup-{backup.id}")
    expect(row).to_contain_text("Before the change")
    expect(row).to_contain_text("Completed")
    expect(row).to_contain_text(backup.checksum[:19])

    write(owner_api, server, "/world.txt", "ruined\n")
    write(owner_api, server, "/made-later.txt", "after the backup\n")
    row.get_by_role("link", name="Restore…").click()
    page.wait_for_url(f"/servers/{server.id}/backups/{backup.id}/restore")
    expect(page.locator("#restore-confirm")).to_contain_text("Restore “Before the change”?")
    page.get_by_label("Delete everything else in the folder first").check()
    screenshot("backups-restore-confirmation")
    page.get_by_role("button", name="Restore this backup").click()
    page.wait_for_url(f"/servers/{server.id}/backups")
    expect(page.locator(".messages")).to_contain_text("Restoring “Before the change”")
    backup = completed(backup.id, "restore_status")
    assert backup.restore_status == "completed", backup.restore_error

    text = owner_api.get(f"/v1/servers/{server.id}/files/contents?path=/world.txt")
    assert text.json()["data"]["file"]["content"] == "as it was\n"
    gone = owner_api.get(f"/v1/servers/{server.id}/files/contents?path=/made-later.txt")
    assert gone.status_code == 404
    page.reload()
    expect(page.locator(f"#backup-{backup.id}")).to_contain_text("restored")


def test_on_a_phone_the_backups_fit(page, owner, owner_api, server_on_node, screenshot):  # noqa: F811
    owner_api.post(f"/v1/servers/{server_on_node.id}/backups", {"name": "Nightly"}, format="json")
    completed(Backup.objects.get(server=server_on_node).id)
    page.set_viewport_size(PHONE)
    sign_in_and_open_backups(page, owner, server_on_node)
    expect(page.locator("#backup-table")).to_contain_text("Nightly")
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)"
        ".filter(e => !e.parentElement.closest('.table-wrap, .tabs'))"
        ".map(e => e.tagName + '.' + e.className)"
    )
    assert (width, wide) == (PHONE["width"], []), wide
    screenshot("backups-phone")

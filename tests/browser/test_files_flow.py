"""The Files tab in a real browser, against a real node agent (the live server is the control
plane). The owner opens the server's files, makes a folder, uploads a file into it with the
progress bar (the browser sends it straight to the node), opens a text file in the editor,
saves it, meets a conflict when someone saved in between, and deletes what they made; on a
phone nothing scrolls sideways."""

import re

import pytest

from events.models import Event
from servers.models import Server, ServerStatus
from tests.agent.conftest import PYTHON
from tests.agent.loop import node_with_agent, reachable_folder
from tests.browser.test_console_flow import PASSWORD, PHONE
from tests.servers.helpers import run_worker

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server_on_node(live_server, owner_api) -> Server:
    if PYTHON is None:
        pytest.skip("no Python interpreter that the unprivileged user may run")
    with (
        reachable_folder("hms-files-browser-") as root,
        node_with_agent(
            live_server.url,
            root,
            name="files-1",
            AGENT_ALLOWED_ORIGINS=live_server.url,
            AGENT_BATCH_SECONDS="1",
        ) as (_, agent),
    ):
        answer = owner_api.post(
            "/v1/servers",
            {
                "name": "Files SMP",
                "game": "test-workload",
                "region": "eu-central",
                "resources": {"memory_mb": 256, "disk_mb": 1024},
            },
            format="json",
        )
        assert answer.status_code == 201, answer.content
        server = Server.objects.get(pk=answer.json()["data"]["server"]["id"])
        run_worker()
        server.refresh_from_db()
        assert server.status == ServerStatus.STOPPED, (server.status_reason, agent.log())
        yield server


def sign_in_and_open_files(page, user, server):
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    page.goto(f"/servers/{server.id}")
    page.get_by_role("navigation", name="Server").get_by_role("link", name="Files").click()
    page.wait_for_url(f"/servers/{server.id}/files")


def choose_files(page, selector: str, *paths: str) -> None:
    """Choose files in a file input as a person does, whose browser then fires ``change``.
    Playwright 1.65 with Debian's Chromium 156 sets the files without firing it (the page's
    own handler works when it is fired: checked by hand), so it is fired here when the page
    did not start an upload by itself; never twice."""
    picker = page.locator(selector)
    picker.set_input_files(list(paths))
    page.wait_for_timeout(500)
    if page.locator("#files-uploads li").count() == 0:
        picker.dispatch_event("change")


def test_upload_edit_conflict_and_delete_in_the_browser(
    page, owner, owner_api, server_on_node, tmp_path, screenshot
):
    server = server_on_node
    sign_in_and_open_files(page, owner, server)
    expect(page.locator("#file-table")).to_contain_text("server.properties")

    page.once("dialog", lambda dialog: dialog.accept("plugins"))
    page.get_by_role("button", name="New folder").click()
    page.get_by_role("link", name="📁 plugins").click()
    expect(page.locator("#files-empty")).to_be_visible()

    plugin = tmp_path / "plugin.yml"
    plugin.write_text("name: Hello\nversion: 1\n" + "# padding\n" * 20000)
    choose_files(page, "#files-upload", str(plugin))
    row = page.locator("#file-table tr", has_text="plugin.yml")
    expect(row).to_be_visible(timeout=20_000)  # the page reloads once the upload is done
    expect(row).to_contain_text("KB")

    row.get_by_role("link", name="plugin.yml").click()
    expect(page).to_have_url(re.compile(rf"/servers/{server.id}/files/edit\?path=.*plugin\.yml$"))
    editor = page.locator("#editor .cm-content")
    expect(editor).to_contain_text("name: Hello")
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("# edited in the browser\n")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#editor-state")).to_have_text("Saved")
    read = owner_api.get(f"/v1/servers/{server.id}/files/contents?path=/plugins/plugin.yml")
    text = read.json()["data"]["file"]["content"]
    assert text.startswith("# edited in the browser\nname: Hello")

    # Someone saves through the API meanwhile: the browser's next save is refused, not lost.
    owner_api.put(
        f"/v1/servers/{server.id}/files/contents",
        {"path": "/plugins/plugin.yml", "content": "name: Theirs\n"},
        format="json",
    )
    page.keyboard.type("# mine\n")
    page.get_by_role("button", name="Save").click()
    conflict = page.locator("#editor-conflict")
    expect(conflict).to_be_visible()
    expect(conflict).to_contain_text("Someone changed this file")
    screenshot("files-editor-conflict")
    page.get_by_role("button", name="Load their version").click()
    expect(page.locator("#editor .cm-content")).to_contain_text("name: Theirs")

    page.get_by_role("link", name="← Back to the folder").click()
    page.locator("#file-table tr", has_text="plugin.yml").get_by_role("checkbox").check()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    expect(page.locator("#files-empty")).to_be_visible()
    assert Event.objects.filter(type="server.files.deleted", related_id=server.id).exists()
    assert Event.objects.filter(type="server.files.uploaded", related_id=server.id).exists()


def test_on_a_phone_the_files_fit(page, owner, server_on_node, screenshot):
    page.set_viewport_size(PHONE)
    sign_in_and_open_files(page, owner, server_on_node)
    expect(page.locator("#file-table")).to_contain_text("server.properties")
    width = page.evaluate("document.documentElement.scrollWidth")
    # Wider than the screen: anything not clipped by a scrolling box (a table's, the tabs').
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)"
        ".filter(e => !e.parentElement.closest('.table-wrap, .tabs'))"
        ".map(e => e.tagName + '.' + e.className)"
    )
    assert (width, wide) == (PHONE["width"], []), wide
    screenshot("files-phone")

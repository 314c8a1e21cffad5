"""The Users tab in a real browser: the owner invites a moderator with a preset, and on a phone
(390 px) the list and its forms do not scroll sideways."""

import pytest

from servers.models import ServerGrant
from tests.browser.test_console_flow import PASSWORD, PHONE
from tests.factories import ServerFactory

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_on_a_phone_the_owner_invites_a_moderator(page, owner, account, screenshot):
    server = ServerFactory(account=account, name="SMP")
    page.set_viewport_size(PHONE)
    page.goto("/login")
    page.get_by_label("E-mail").fill(owner.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    page.goto(f"/servers/{server.id}")
    page.get_by_role("navigation", name="Server").get_by_role("link", name="Users").click()
    page.wait_for_url(f"/servers/{server.id}/users")
    page.locator("#user-email").fill("mod@example.com")
    page.locator("#preset-new").select_option("moderator")
    page.locator("#user-create").click()
    expect(page.locator("#user-table")).to_contain_text("mod@example.com")
    assert ServerGrant.objects.get(server=server).invitation.email == "mod@example.com"
    page.locator(".user-edit summary").first.click()
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)"
        ".filter(e => !e.parentElement.closest('.table-wrap, .tabs'))"
        ".map(e => e.tagName + '.' + e.className)"
    )
    assert (width, wide) == (PHONE["width"], []), wide
    screenshot("users-phone")

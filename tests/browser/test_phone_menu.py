"""On a phone the main menu folds behind a "Menu" button (issue 34, item 8): it took a quarter
of the screen above every page. Without JavaScript it stays open."""

import pytest
from playwright.sync_api import expect

from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PHONE = {"width": 390, "height": 844}
PASSWORD = "correct-horse-battery"


def sign_in(page, user) -> None:
    page.goto("/login")
    page.fill("[name=username]", user.email)
    page.fill("[name=password]", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")


def test_the_menu_folds_on_a_phone_and_opens_with_its_button(page, screenshot):
    owner = MembershipFactory(account__name="Blocky Worlds").user
    page.set_viewport_size(PHONE)
    sign_in(page, owner)
    menu = page.get_by_role("navigation", name="Main")
    toggle = menu.get_by_role("button", name="Menu")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(menu.get_by_role("link", name="Billing")).to_be_hidden()
    assert menu.bounding_box()["height"] < PHONE["height"] / 10  # a line, not a quarter
    screenshot("phone-menu-folded")

    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    screenshot("phone-menu-open")
    menu.get_by_role("link", name="Billing").click()
    page.wait_for_url("/billing")
    expect(
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Billing")
    ).to_be_hidden()


def test_on_a_desktop_the_menu_is_always_open(page):
    owner = MembershipFactory(account__name="Blocky Worlds").user
    sign_in(page, owner)
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.get_by_role("button", name="Menu")).to_be_hidden()
    expect(menu.get_by_role("link", name="Billing")).to_be_visible()


def test_without_javascript_the_phone_menu_stays_open(browser, live_server):
    owner = MembershipFactory(account__name="Blocky Worlds").user
    context = browser.new_context(
        base_url=live_server.url, viewport=PHONE, java_script_enabled=False
    )
    try:
        page = context.new_page()
        sign_in(page, owner)
        menu = page.get_by_role("navigation", name="Main")
        expect(menu.get_by_role("link", name="Billing")).to_be_visible()
        expect(menu.get_by_role("button", name="Menu")).to_be_hidden()
    finally:
        context.close()

"""Settings → API Keys → New (issue 34, item 7), in a real browser: a preset ticks its scopes,
ticking by hand makes the choice "Custom", customers never see staff's scopes, and the API
documentation is one click away from the keys page and the menu."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import give_second_factor, sign_up, type_second_factor
from tests.factories import AccountFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PHONE = {"width": 390, "height": 844}


def ticked(page) -> set[str]:
    return set(
        page.eval_on_selector_all(
            "input[name=scopes]:checked", "boxes => boxes.map(box => box.value)"
        )
    )


def test_presets_tick_their_scopes_and_customers_see_no_staff_scopes(page, live_server, screenshot):
    sign_up(page, live_server, name="Ada", email="ada@example.com", account_name="Engines")
    page.goto("/settings/api-keys")
    expect(page.locator("#api-docs-link")).to_have_attribute("href", "/v1/docs")
    expect(page.locator("#nav-api-docs")).to_have_attribute("href", "/v1/docs")

    page.goto("/settings/api-keys/new")
    assert page.locator("input[name=scopes][value^='admin:']").count() == 0
    expect(page.locator(".scope-group h3", has_text="Staff")).to_have_count(0)

    page.select_option("[name=preset]", "read")
    read = ticked(page)
    assert "servers:read" in read and "billing:read" in read
    assert not any(scope.endswith((":write", ":power")) for scope in read)
    page.select_option("[name=preset]", "power")
    power = ticked(page)
    assert {"servers:read", "servers:write", "servers:power"} <= power
    page.select_option("[name=preset]", "write")
    assert "servers:power" not in ticked(page) and "servers:write" in ticked(page)
    page.uncheck("input[name=scopes][value='servers:write']")
    expect(page.locator("[name=preset]")).to_have_value("")  # by hand: Custom
    page.set_viewport_size(PHONE)
    screenshot("api-key-presets-phone")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]

    # What was ticked is what the key gets.
    page.fill("[name=name]", "Read and write, not servers' writes")
    page.click("#create-key")
    page.wait_for_url(re.compile(r".*/settings/api-keys/created$"))
    from accounts.models import ApiKey

    scopes = set(ApiKey.objects.get(name="Read and write, not servers' writes").scopes)
    assert "servers:write" not in scopes and "billing:write" in scopes


def test_staff_see_their_staff_scopes(page, live_server):
    staff = UserFactory(email="ops@hosting.example", is_staff=True, is_superuser=True)
    MembershipFactory(account=AccountFactory(name="Hosting Company"), user=staff, role="owner")
    secret = give_second_factor(staff)
    page.goto("/login")
    page.fill("[name=username]", staff.email)
    page.fill("[name=password]", "correct-horse-battery")
    page.get_by_role("button", name="Sign in", exact=True).click()
    type_second_factor(page, secret)
    page.goto("/settings/api-keys/new")
    expect(page.locator(".scope-group h3", has_text="Staff")).to_have_count(1)
    assert page.locator("input[name=scopes][value='admin:read']").count() == 1

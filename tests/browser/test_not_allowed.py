"""A page the member's role does not open says so (issue 34, item 6): which roles open it and
whom to ask, not the 404 page; at phone width too."""

import pytest
from playwright.sync_api import expect

from accounts.roles import Role
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_a_support_member_opening_billing_is_told_who_may_and_whom_to_ask(page, screenshot):
    owner = MembershipFactory(account__name="Blocky Worlds", role=Role.OWNER)
    support = MembershipFactory(account=owner.account, role=Role.SUPPORT).user
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/login")
    page.fill("[name=username]", support.email)
    page.fill("[name=password]", "correct-horse-battery")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    answer = page.goto("/billing")
    assert answer is not None and answer.status == 403
    notice = page.locator("#not-allowed")
    expect(notice).to_contain_text("Owner, Admin, Billing or Viewer")
    expect(notice).to_contain_text("You are Support")
    expect(notice.get_by_role("link", name=owner.user.email)).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot("not-allowed-phone")

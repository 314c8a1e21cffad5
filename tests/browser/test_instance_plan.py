"""The server page says what it costs (issue 34, item 5), in a real browser at desktop and
phone width: plan, price, renewal, and the way to the plan's change and cancel actions."""

import re

import pytest
from playwright.sync_api import expect

from tests.factories import MembershipFactory, PriceFactory, ServerFactory, SubscriptionFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PHONE = {"width": 390, "height": 844}


def test_the_server_page_shows_its_plan_and_leads_to_changing_it(page, screenshot):
    membership = MembershipFactory(account__name="Blocky Worlds")
    owner, account = membership.user, membership.account
    server = ServerFactory(account=account, name="Survival SMP")
    price = PriceFactory(product__name="Minecraft 4 GB", unit_amount=899)
    subscription = SubscriptionFactory(account=account, price=price, server=server)
    page.goto("/login")
    page.fill("[name=username]", owner.email)
    page.fill("[name=password]", "correct-horse-battery")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")

    for viewport, name in (({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto(f"/servers/{server.id}")
        plan = page.get_by_role("region", name="Plan")
        expect(plan).to_contain_text("Minecraft 4 GB")
        expect(plan.locator("#plan-price")).to_contain_text("8.99 EUR")
        expect(plan.locator("#plan-renews")).not_to_be_empty()
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        screenshot(f"server-plan-{name}")

    page.get_by_role("link", name="Upgrade or downgrade").click()
    page.wait_for_url(re.compile(rf".*/billing/subscriptions/{subscription.id}#change-plan$"))
    expect(page.locator("#change-plan")).to_be_visible()
    page.locator("#subscription-server").click()  # the plan leads back to its server
    page.wait_for_url(f"**/servers/{server.id}")

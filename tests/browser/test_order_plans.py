"""Ordering's first step (issue 34, item 4) in a real browser: plans side by side with game
names and GB, one currency at a time with the choice before the first order, at desktop and
phone width."""

import pytest
from playwright.sync_api import expect

from tests.factories import MembershipFactory, PriceFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_plans_side_by_side_in_one_currency(page, screenshot):
    owner = MembershipFactory(account__name="Blocky Worlds").user
    small = PriceFactory(
        product__name="Minecraft 2 GB", product__games=["minecraft-java"], unit_amount=600
    )
    big = PriceFactory(
        product__name="Minecraft 4 GB",
        product__memory_mb=4096,
        product__games=["minecraft-java"],
        unit_amount=1200,
    )
    PriceFactory(product=big.product, currency="USD", unit_amount=1300)
    page.goto("/login")
    page.fill("[name=username]", owner.email)
    page.fill("[name=password]", "correct-horse-battery")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")

    page.goto("/billing/order")
    first, second = (
        page.locator(f"#plan-{small.product.id}"),
        page.locator(f"#plan-{big.product.id}"),
    )
    expect(first).to_contain_text("Minecraft: Java Edition")
    expect(second).to_contain_text("4 GB")
    assert first.bounding_box()["y"] == second.bounding_box()["y"]  # side by side
    expect(page.locator("#plan-form")).not_to_contain_text("USD")
    screenshot("order-plans-desktop")
    page.get_by_role("navigation", name="Currency").get_by_role("link", name="USD").click()
    expect(page.locator("#plan-form")).to_contain_text("13.00 USD")
    expect(page.locator("#plan-form")).not_to_contain_text("EUR")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/billing/order")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot("order-plans-phone")

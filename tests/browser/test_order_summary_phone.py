"""Ordering on a phone (issue 27, case 8): the last step shows the total with tax and what is
due today before the order is placed, on screen at 390 px without scrolling sideways; a
promotion code typed there is shown in the total first, and the invoice is what was shown."""

import re
from decimal import Decimal

import pytest

from billing.models import Coupon, Invoice, Price, Product, PromotionCode, Subscription, TaxRate
from tests.browser.test_newcomer_walk import PHONE, assert_within_width, owner_of, sign_in

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_on_a_phone_the_last_step_shows_the_total_with_tax_before_ordering(page, screenshot):
    product = Product.objects.create(
        name="Minecraft 4 GB",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
    )
    price = Price.objects.create(
        product=product, currency="EUR", unit_amount=1200, interval="month", setup_fee=500
    )
    TaxRate.objects.create(country="BE", percentage=Decimal(21))  # the seller's country
    coupon = Coupon.objects.create(name="Half off", percent_off=Decimal(50), duration="once")
    PromotionCode.objects.create(coupon=coupon, code="HALF")
    owner, _ = owner_of("Compiler Craft")
    page.set_viewport_size(PHONE)
    sign_in(page, owner)

    page.goto(f"/billing/order?price={price.id}")
    summary = page.locator("#order-summary")
    expect(summary).to_contain_text("Tax 21%")
    expect(page.locator("#order-total")).to_have_text("20.57 EUR")  # 17.00 + 21 %
    expect(page.locator("#order-due-today")).to_have_text("20.57 EUR")
    expect(page.locator("#order-renewal")).to_have_text("14.52 EUR a month")
    for shown in ("#order-total", "#order-due-today", "#order-renewal", "#place-order"):
        assert_within_width(page.locator(shown), PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("order-summary-phone")

    page.fill("[name=name]", "Survival SMP")
    page.check("[name=variable_EULA]")
    page.fill("[name=promotion_code]", "half")
    page.click("#place-order")

    # The code changes the total: shown first, nothing ordered yet.
    expect(page.get_by_role("status")).to_contain_text("The total changed with your promotion")
    expect(page.locator("#order-total")).to_have_text("10.29 EUR")  # 8.50 + 21 %
    assert not Subscription.objects.exists()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("order-summary-phone-with-code")

    page.click("#place-order")
    page.wait_for_url(re.compile(r".*/billing/invoices/inv_\w+$"))
    assert Invoice.objects.get().total == 1029

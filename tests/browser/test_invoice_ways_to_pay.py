"""An open invoice on a phone: Billing's overview leads to it, every way to pay it is on screen
without scrolling sideways (credit, a card, the bank transfer with its IBAN and reference), and
paying part with credit leaves the rest to transfer."""

import pytest

from accounts.actors import SYSTEM
from billing.services import balance_change, invoice_create, invoice_finalize
from billing.services.gateways import GATEWAYS, gateway_register
from stripe_gateway.services.gateway import StripeGateway
from tests.browser.test_newcomer_walk import PHONE, assert_within_width, owner_of, sign_in

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BANK_ACCOUNT = {
    "account_holder": "Demo Hosting Co. (example bank details: not a real account)",
    "iban": "BE71 0961 2345 6769",
    "bic": "GKCCBEBB",
}


@pytest.fixture
def cards(settings):
    """A card gateway, so its way to pay is shown too (the page calls no Stripe)."""
    settings.STRIPE_ENABLED = True
    settings.BILLING_GATEWAYS = ["credit", "stripe", "bank_transfer"]
    gateway_register(StripeGateway())
    yield
    GATEWAYS.pop("stripe", None)


def test_on_a_phone_an_open_invoice_shows_every_way_to_pay(page, settings, cards, screenshot):
    settings.BILLING_SELLER = settings.BILLING_SELLER | {"bank_account": BANK_ACCOUNT}
    owner, account = owner_of("Compiler Craft")
    invoice = invoice_create(
        account=account,
        currency="EUR",
        lines=[{"description": "Minecraft 4 GB, Survival SMP", "quantity": 1, "unit_amount": 1200}],
    )
    invoice = invoice_finalize(invoice=invoice)
    balance_change(
        account=account,
        amount=500,
        currency="EUR",
        kind="adjustment",
        description="Welcome credit",
        actor=SYSTEM,
    )
    page.set_viewport_size(PHONE)
    sign_in(page, owner)

    # Billing's overview leads from the invoice to its ways to pay.
    page.goto("/billing")
    how_to_pay = page.locator(f"#to-pay-{invoice.id}").get_by_role("link", name="How to pay")
    assert_within_width(how_to_pay, PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("billing-overview-phone")
    how_to_pay.click()
    page.wait_for_url(f"**/billing/invoices/{invoice.id}#ways-to-pay")

    ways = page.locator("#ways-to-pay")
    expect(ways.get_by_role("heading", name="How to pay")).to_be_visible()
    credit_button = ways.get_by_role("button", name="Pay 5.00 EUR with credit")
    assert_within_width(credit_button, PHONE["width"])
    assert_within_width(ways.get_by_role("button", name="Pay by card"), PHONE["width"])
    assert_within_width(ways.get_by_role("link", name="Add a card"), PHONE["width"])
    transfer = page.locator("#pay-by-bank-transfer")
    assert_within_width(transfer.get_by_text("BE71 0961 2345 6769"), PHONE["width"])
    assert_within_width(transfer.get_by_text(invoice.number, exact=True), PHONE["width"])
    assert_within_width(transfer.get_by_text("not a real account", exact=False), PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("invoice-ways-to-pay-phone")

    credit_button.click()

    expect(page.get_by_role("status")).to_contain_text("7.00 EUR remains to be paid")
    expect(transfer).to_contain_text("7.00 EUR")
    expect(ways.locator(".pay-with-credit")).to_have_count(0)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

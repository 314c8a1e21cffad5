"""A new customer's whole journey when no card gateway is configured, in a real browser: sign
up, fill in the billing profile (a consumer in a country whose VAT is charged), order a plan
and see the total with tax before placing the order, get the invoice with the seller's bank
details, staff mark it paid by transfer in Django admin, and the server is made with the plan's
resources."""

import re
from decimal import ROUND_HALF_UP, Decimal

import pytest

from billing.models import Invoice, Price, Product, Subscription, TaxRate
from servers.models import Server
from tests.browser.conftest import SCREENSHOTS, give_second_factor, sign_up
from tests.browser.test_newcomer_walk import sign_in
from tests.factories import UserFactory
from tests.servers.helpers import run_worker

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BANK_ACCOUNT = {
    "account_holder": "Demo Hosting Co. (example bank details: not a real account)",
    "iban": "BE71 0961 2345 6769",
    "bic": "GKCCBEBB",
}
NET = Decimal("8.99")  # the plan's monthly price, without tax
GERMAN_VAT = Decimal(19)


def euros(amount: Decimal) -> str:
    """An amount as the pages write it, rounded half away from zero to the cent."""
    return f"{amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)} EUR"


def shown(page, container: str, term: str):
    """The value a details list (``<dl>``) in ``container`` gives for ``term``."""
    return page.locator(f"{container} dt:text-is('{term}') + dd")


def test_a_new_customer_orders_pays_by_bank_transfer_and_gets_the_server(
    page, browser, live_server, settings, screenshot
):
    # Staff's catalogue and configuration: a plan at 8.99 EUR a month, VAT for the seller's
    # country (BE) and for Germany, the seller's bank account; no card gateway.
    settings.BILLING_SELLER = settings.BILLING_SELLER | {"bank_account": BANK_ACCOUNT}
    assert settings.BILLING_SELLER["country"] == "BE"
    settings.STRIPE_ENABLED = False
    settings.BILLING_GATEWAYS = ["credit", "bank_transfer"]  # the default without Stripe's keys
    product = Product.objects.create(
        name="Minecraft 4 GB",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
    )
    Price.objects.create(product=product, currency="EUR", unit_amount=899, interval="month")
    TaxRate.objects.create(country="BE", percentage=Decimal(21))
    TaxRate.objects.create(country="DE", percentage=GERMAN_VAT)
    # A consumer (no VAT id) in Germany pays Germany's VAT on the net price.
    tax = (NET * GERMAN_VAT / 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    total = NET + tax
    assert (euros(NET), euros(tax), euros(total)) == ("8.99 EUR", "1.71 EUR", "10.70 EUR")

    sign_up(
        page,
        live_server,
        name="Grace Hopper",
        email="grace@example.com",
        account_name="Compiler Craft",
    )

    # The billing profile, through the dashboard's menu and Billing's tabs.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Billing").click()
    page.wait_for_url("**/billing")
    page.get_by_role("navigation", name="Billing").get_by_role(
        "link", name="Billing profile"
    ).click()
    page.wait_for_url("**/billing/profile")
    profile = page.locator("#billing-profile")
    profile.locator("[name=legal_name]").fill("Grace Hopper")
    profile.locator("[name=address_line1]").fill("Compilerstraße 1")
    profile.locator("[name=postal_code]").fill("10115")
    profile.locator("[name=city]").fill("Berlin")
    profile.locator("[name=country]").fill("DE")
    expect(profile.locator("[name=vat_id]")).to_have_value("")
    screenshot("journey-billing-profile")
    page.click("#save-billing-profile")
    expect(page.get_by_role("status")).to_contain_text("Saved the billing profile")
    expect(profile.locator("[name=country]")).to_have_value("DE")

    # Ordering: the plan, then the settings with the order's summary.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Servers").click()
    page.wait_for_url(f"{live_server.url}/")
    page.click("#order-server")
    page.wait_for_selector("#plan-form")
    assert "8.99 EUR a month" in page.inner_text("#plan-form")
    page.click("#choose-plan")
    page.wait_for_selector("#order-form")
    assert page.inner_text("#chosen-plan") == "Minecraft 4 GB"
    page.fill("[name=name]", "Survival SMP")
    page.check("[name=variable_EULA]")

    summary = "#order-summary"
    expect(shown(page, summary, "Subtotal")).to_have_text(euros(NET))
    expect(shown(page, summary, "Tax 19%")).to_have_text(euros(tax))
    expect(page.locator("#order-total")).to_have_text(euros(total))
    expect(page.locator("#order-due-today")).to_have_text(euros(total))
    expect(page.locator("#order-renewal")).to_have_text(f"{euros(total)} a month")
    expect(page.locator(summary)).not_to_contain_text("From your credit")
    summary_total = page.inner_text("#order-total")
    screenshot("journey-order-summary")
    page.click("#place-order")

    # The invoice: the summary's total, the bank transfer's instructions, no server yet.
    page.wait_for_url(re.compile(r".*/billing/invoices/inv_\w+$"))
    invoice = Invoice.objects.get()
    assert invoice.status == "open"
    assert (invoice.subtotal, invoice.tax, invoice.total) == (899, 171, 1070)
    expect(page.get_by_role("status")).to_contain_text(
        f"it is created once invoice {invoice.number} is paid"
    )
    expect(page.locator("h1")).to_contain_text(f"Invoice {invoice.number}")
    expect(page.locator("h1 .badge")).to_have_text("Open")
    expect(shown(page, "#invoice-totals", "Total")).to_have_text(summary_total)
    expect(shown(page, "#invoice-totals", "Tax 19%")).to_have_text(euros(tax))
    expect(shown(page, "#invoice-summary", "Amount due")).to_have_text(summary_total)
    expect(page.locator("#invoice-buyer")).to_contain_text("Grace Hopper")
    expect(page.locator("#invoice-buyer")).to_contain_text("DE")

    ways = page.locator("#ways-to-pay")
    expect(ways.get_by_role("heading", name=f"How to pay {summary_total}")).to_be_visible()
    expect(ways.locator("#pay-card")).to_have_count(0)  # no card gateway
    expect(ways.locator("#pay-from-credit")).to_have_count(0)  # no credit
    transfer = "#pay-by-bank-transfer"
    expect(shown(page, transfer, "Account holder")).to_have_text(BANK_ACCOUNT["account_holder"])
    expect(shown(page, transfer, "IBAN")).to_have_text(BANK_ACCOUNT["iban"])
    expect(shown(page, transfer, "BIC")).to_have_text(BANK_ACCOUNT["bic"])
    expect(shown(page, transfer, "Reference")).to_have_text(invoice.number)
    expect(shown(page, transfer, "Amount")).to_have_text(summary_total)
    expect(page.locator(transfer)).to_contain_text("Give the invoice number as the reference")
    screenshot("journey-invoice-open")

    subscription = Subscription.objects.get()
    assert subscription.status == "incomplete" and subscription.server_id is None
    assert not Server.objects.exists()

    # The transfer arrives: staff find the invoice in Django admin and mark it paid with the
    # transfer's reference (a browser context of their own, signed in as a superuser).
    staff = UserFactory(email="staff@hosting.test", is_staff=True, is_superuser=True)
    staff_context = browser.new_context(base_url=live_server.url)
    try:
        admin = staff_context.new_page()
        admin.set_default_timeout(10_000)
        sign_in(admin, staff, give_second_factor(staff))  # staff need one for admin
        admin.goto(f"/admin/billing/invoice/?q={invoice.number}")
        admin.locator("#result_list").get_by_role("link", name=invoice.number).click()
        actions = admin.locator("#invoice-actions")
        expect(actions.get_by_role("heading")).to_have_text("Invoice · Open")
        actions.get_by_role("button", name="Mark paid…").click()
        expect(admin.locator("#content-main")).to_contain_text(summary_total)
        admin.fill("[name=reference]", invoice.number)
        admin.locator(".submit-row [type=submit]").click()
        expect(admin.locator(".messagelist .success")).to_contain_text("paid")
        expect(admin.locator("#invoice-actions h2")).to_have_text(re.compile(r"Invoice · Paid"))
        admin.screenshot(path=str(SCREENSHOTS / "journey-admin-marked-paid.png"), full_page=True)
    finally:
        staff_context.close()

    # The customer reloads: the invoice is paid by bank transfer, nothing more to pay.
    page.reload()
    expect(page.locator("h1 .badge")).to_have_text("Paid")
    expect(page.locator("#ways-to-pay")).to_have_count(0)
    expect(shown(page, "#invoice-totals", "Paid")).to_have_text(summary_total)
    expect(shown(page, "#invoice-totals", "Amount due")).to_have_text("0.00 EUR")
    payment = page.locator("#invoice-payments tbody tr")
    expect(payment).to_have_count(1)
    expect(payment).to_contain_text("Bank transfer")
    expect(payment).to_contain_text(invoice.number)
    expect(payment.locator("td[data-label=Amount]")).to_have_text(summary_total)
    screenshot("journey-invoice-paid")

    # The subscription is active, and the worker makes the server with the plan's resources.
    subscription.refresh_from_db()
    assert subscription.status == "active"
    page.goto(f"/billing/subscriptions/{subscription.id}")
    expect(page.locator("#subscription-status")).to_have_text("Active")
    run_worker()
    server = Server.objects.get(pk=subscription.server_id)
    assert (server.name, server.memory_mb, server.cpu_percent, server.disk_mb) == (
        "Survival SMP",
        4096,
        200,
        20480,
    )
    assert server.status != "provisioning"
    page.get_by_role("link", name="Survival SMP").click()
    page.wait_for_url(re.compile(rf".*/servers/{server.id}$"))
    expect(page.locator("h1")).to_contain_text("Survival SMP")
    screenshot("journey-server-created")

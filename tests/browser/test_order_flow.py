"""Ordering a plan in a real browser: the plan, the settings, the invoice, paying it with
credit, and the server created with the plan's resources."""

import re

import pytest

from accounts.actors import SYSTEM
from accounts.models import Account
from billing.models import Invoice, Price, Product, Subscription
from billing.services import balance_change
from servers.models import Server
from tests.browser.conftest import sign_up
from tests.servers.helpers import run_worker

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_order_a_plan_pay_its_invoice_with_credit_and_get_the_server(page, live_server, screenshot):
    product = Product.objects.create(
        name="Minecraft 4 GB",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
    )
    Price.objects.create(product=product, currency="EUR", unit_amount=899, interval="month")

    sign_up(
        page,
        live_server,
        name="Grace Hopper",
        email="grace@example.com",
        account_name="Compiler Craft",
    )

    # The servers page offers the plans; the plan step lists them with their prices.
    page.click("#order-server")
    page.wait_for_selector("#plan-form")
    assert "8.99 EUR a month" in page.inner_text("#plan-form")
    screenshot("order-plan-step")
    page.click("#choose-plan")

    # One game in the plan: straight to the settings, without resource inputs.
    page.wait_for_selector("#order-form")
    assert page.inner_text("#chosen-plan") == "Minecraft 4 GB"
    assert page.locator("[name=memory_mb]").count() == 0
    page.fill("[name=name]", "Survival SMP")
    page.check("[name=variable_EULA]")
    screenshot("order-settings-step")
    page.click("#place-order")

    # No credit yet: the first invoice waits to be paid.
    page.wait_for_url(re.compile(r".*/billing/invoices/inv_\w+$"))
    invoice = Invoice.objects.get()
    assert invoice.status == "open" and invoice.total == 899
    assert invoice.number in page.inner_text("h1")
    assert page.locator(".pay-with-credit").count() == 0
    assert not Server.objects.exists()

    # Staff add credit; the invoice page now offers to pay with it.
    account = Account.objects.get(name="Compiler Craft")
    balance_change(
        account=account,
        amount=2000,
        currency="EUR",
        kind="adjustment",
        description="Welcome credit",
        actor=SYSTEM,
    )
    page.reload()
    assert "covers this invoice" in page.inner_text("#credit-available")
    page.click(".pay-with-credit")
    page.wait_for_selector(".messages, [role=status], .message", state="attached")
    assert "is paid with your credit" in page.content()
    screenshot("order-invoice-paid")

    # The paid order made the server with the plan's resources; the worker provisions it.
    subscription = Subscription.objects.get()
    assert subscription.status == "active"
    run_worker()
    server = Server.objects.get(pk=subscription.server_id)
    assert (server.name, server.memory_mb, server.cpu_percent) == ("Survival SMP", 4096, 200)
    assert server.status != "provisioning"

    page.goto(f"/billing/subscriptions/{subscription.id}")
    assert page.inner_text("#subscription-status") == "Active"
    page.get_by_role("link", name="Survival SMP").click()
    page.wait_for_url(re.compile(rf".*/servers/{server.id}$"))
    assert "Survival SMP" in page.inner_text("h1")
    screenshot("order-server-created")

"""The customer 360 in admin (issue 34, items 11 and 12), in real Chromium: an administrator
signs in with their second factor, opens a customer's account page, reads every section (money
in the currency's units), adds credit typed as "5.00", writes a staff note and suspends the
account from the page; the page fits a 390 px phone. Screenshots at desktop and phone width."""

import re

import pytest

from accounts.actors import Actor
from accounts.models import Account
from accounts.roles import Role, StaffRole
from billing.services.ledger import balance_change, balance_of
from tests.browser.conftest import give_second_factor, type_second_factor
from tests.factories import (
    AccountFactory,
    BotFactory,
    InvoiceFactory,
    MembershipFactory,
    ServerFactory,
    SubscriptionFactory,
    TicketFactory,
    UserFactory,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def customer(db):
    account = AccountFactory(name="Blockworks")
    owner = MembershipFactory(
        account=account, role=Role.OWNER, user__email="owner@blockworks.example"
    ).user
    ServerFactory(account=account, name="Survival SMP")
    BotFactory(account=account, name="Moderator bot")
    SubscriptionFactory(account=account)
    InvoiceFactory(
        account=account,
        finalize=True,
        lines=[{"description": "Minecraft 4 GB", "quantity": 1, "unit_amount": 899}],
    )
    balance_change(
        account=account,
        amount=250,
        currency="EUR",
        kind="adjustment",
        description="Goodwill",
        actor=Actor(),
    )
    TicketFactory(account=account, requester=owner, subject="Lag at night")
    return account


def sign_in_to_admin(page, user, secret: str) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    type_second_factor(page, secret)
    page.wait_for_url(re.compile(r".*/(staff)?$"))  # staff with no account: their home


def test_an_administrator_works_a_customer_from_its_360(page, live_server, customer, screenshot):
    staff = UserFactory(
        email="admin@hosting.example", is_staff=True, staff_role=StaffRole.ADMINISTRATOR
    )
    sign_in_to_admin(page, staff, give_second_factor(staff))
    account_page = f"/admin/accounts/account/{customer.pk}/change/"

    page.goto(account_page)
    for title in (
        "Servers and bots",
        "Subscriptions",
        "Invoices and balance",
        "Tickets",
        "Recent activity",
        "Staff notes",
    ):
        expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible()
    expect(page.locator("#customer-servers")).to_contain_text("Survival SMP")
    expect(page.locator("#customer-servers")).to_contain_text("Moderator bot")
    expect(page.locator("#customer-invoices")).to_contain_text("Balance (credit): 2.50 EUR")
    expect(page.locator("#customer-invoices")).to_contain_text("8.99 EUR")
    expect(page.locator("#customer-tickets")).to_contain_text("Lag at night")
    screenshot("customer-360-desktop")

    # Add credit: the form knows the account and its currency; "5.00" adds 5.00.
    page.locator("#customer-add-credit").click()
    expect(page.locator("[name=currency]")).to_have_value("EUR")
    page.locator("[name=amount]").fill("5.001")
    page.locator("[name=description]").fill("Outage on the 3rd")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errorlist")).to_contain_text("EUR has 2 decimals at most")
    page.locator("[name=amount]").fill("5.00")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("+5.00 EUR")
    assert balance_of(customer) == 750

    # A staff note, then suspend from the page.
    page.goto(account_page)
    expect(page.locator("#customer-invoices")).to_contain_text("Balance (credit): 7.50 EUR")
    page.get_by_label("Add a note").fill("Promised a refund if it happens again.")
    page.get_by_role("button", name="Add note").click()
    expect(page.locator("#customer-notes")).to_contain_text(
        "Promised a refund if it happens again."
    )
    page.locator("#customer-suspend").click()
    expect(page.locator(".messagelist")).to_contain_text("Suspended 1 account.")
    expect(page.locator("#customer-unsuspend")).to_be_visible()
    customer.refresh_from_db()
    assert customer.status == Account.Status.SUSPENDED

    # At a phone's width every section fits: wide tables scroll inside their own box.
    page.set_viewport_size(PHONE)
    page.goto(account_page)
    right = page.locator("#customer-360").evaluate("el => el.getBoundingClientRect().right")
    assert right <= PHONE["width"]
    widest = page.locator("#customer-360").evaluate("el => el.scrollWidth")
    assert widest <= PHONE["width"]
    screenshot("customer-360-phone")

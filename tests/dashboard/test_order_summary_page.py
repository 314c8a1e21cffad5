"""The order's last step shows its summary before the customer confirms (issue 27, case 8): the
lines, the tax of the buyer's country and VAT status, the total, what is due today and what the
renewal costs; an order is placed only at the total the page showed."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from accounts.actors import SYSTEM
from billing.clock import billing_clock_advance
from billing.models import Coupon, Invoice, Price, Product, PromotionCode, Subscription, TaxRate
from billing.services import balance_change
from billing.services.profile import BillingProfileChanges, billing_profile_update
from tests.dashboard import messages_of, signed_in

pytestmark = pytest.mark.django_db
NOW = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = {"name": "Survival SMP", "region": "eu-central", "variable_EULA": "on"}


@pytest.fixture(autouse=True)
def clock(account):
    billing_clock_advance(account=account, to=NOW)
    TaxRate.objects.create(country="BE", percentage=Decimal(21))  # the seller's country


@pytest.fixture
def price(db):
    product = Product.objects.create(
        name="Minecraft 2 GB",
        kind="server",
        memory_mb=2048,
        cpu_percent=100,
        disk_mb=10240,
        games=["minecraft-java"],
    )
    return Price.objects.create(
        product=product, currency="EUR", unit_amount=600, interval="month", setup_fee=400
    )


def url(price):
    return f"/billing/order?price={price.id}&game=minecraft-java"


def shown(response) -> str:
    """The summary the page asks to confirm (the hidden field the order form carries)."""
    return response.context["summary"]["key"]


def test_the_last_step_shows_the_total_with_tax_and_what_is_due_today(owner, account, price):
    balance_change(
        account=account,
        amount=300,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )

    response = signed_in(owner, account).get(url(price))

    page = response.content.decode()
    assert 'id="order-summary"' in page
    summary = response.context["summary"]
    assert [line["amount"] for line in summary["lines"]] == ["6.00 EUR", "4.00 EUR"]
    assert (summary["subtotal"], summary["tax_label"], summary["tax"]) == (
        "10.00 EUR",
        "Tax 21%",
        "2.10 EUR",
    )
    assert (summary["total"], summary["credit"], summary["due_today"]) == (
        "12.10 EUR",
        "-3.00 EUR",
        "9.10 EUR",
    )
    assert (summary["renewal"], summary["renewal_at"]) == (
        "7.26 EUR a month",
        "2031-04-01 12:00 UTC",
    )
    for text in (
        "12.10 EUR",
        "9.10 EUR",
        "Due today",
        "At renewal, 2031-04-01 12:00 UTC",
        "7.26 EUR a month",
    ):
        assert text in page


def test_a_reverse_charge_business_sees_the_note_and_no_tax(owner, account, price):
    changes = {"legal_name": "Blockworks GmbH", "country": "DE", "vat_id": "DE136695976"}
    billing_profile_update(account=account, changes=BillingProfileChanges.of(changes), actor=SYSTEM)

    response = signed_in(owner, account).get(url(price))

    summary = response.context["summary"]
    assert (summary["tax"], summary["total"]) == ("0.00 EUR", "10.00 EUR")
    assert "Reverse charge" in response.content.decode()


def test_the_order_is_placed_at_the_total_the_page_showed(owner, account, price):
    client = signed_in(owner, account)
    summary = client.get(url(price)).context["summary"]

    client.post(url(price), {**SETTINGS, "summary": summary["key"]})

    invoice = Invoice.objects.get()
    assert f"{invoice.total / 100:.2f} EUR" == summary["total"] == "12.10 EUR"


def test_a_promotion_code_is_shown_in_the_total_before_it_is_ordered(owner, account, price):
    coupon = Coupon.objects.create(name="Half off", percent_off=Decimal(50), duration="once")
    PromotionCode.objects.create(coupon=coupon, code="HALF")
    client = signed_in(owner, account)
    before = shown(client.get(url(price)))

    typed = client.post(url(price), {**SETTINGS, "promotion_code": "half", "summary": before})

    assert typed.status_code == 200 and not Subscription.objects.exists()
    assert messages_of(typed) == [
        "The total changed with your promotion code: check it, then place the order."
    ]
    summary = typed.context["summary"]
    assert (summary["discount"], summary["total"]) == ("-5.00 EUR", "6.05 EUR")
    assert summary["renewal"] == "7.26 EUR a month"
    assert 'value="half"' in typed.content.decode()  # what was typed stays

    client.post(url(price), {**SETTINGS, "promotion_code": "half", "summary": shown(typed)})
    assert Invoice.objects.get().total == 605


def test_a_bad_code_is_refused_on_its_field_with_the_summary_still_shown(owner, account, price):
    client = signed_in(owner, account)
    before = shown(client.get(url(price)))

    response = client.post(url(price), {**SETTINGS, "promotion_code": "NOPE", "summary": before})

    assert response.context["form"].errors["promotion_code"] == [
        "This promotion code does not exist."
    ]
    assert response.context["summary"]["total"] == "12.10 EUR"
    assert not Subscription.objects.exists()


def test_without_the_summary_it_was_shown_nothing_is_ordered(owner, account, price):
    response = signed_in(owner, account).post(url(price), SETTINGS)

    assert response.status_code == 200
    assert not Subscription.objects.exists()
    assert response.context["summary"]["total"] == "12.10 EUR"

"""``manage.py seed_billing_demo``: a catalogue the demo account can order from, its billing
profile and credit, all made through the billing services and made once however often it runs."""

import io
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from accounts.actors import SYSTEM, Actor
from accounts.models import Account
from accounts.roles import Role
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    Coupon,
    InvoiceStatus,
    Price,
    Product,
    PromotionCode,
    SubscriptionStatus,
    TaxRate,
)
from billing.services import balance_of
from billing.services.profile import BillingProfileChanges, billing_profile_update
from billing.services.subscriptions import subscription_order
from events.models import Event
from tests.servers.helpers import MINECRAFT

pytestmark = pytest.mark.django_db
EMAIL = "demo@example.com"
BOT_ORDER = {
    "name": "Helper",
    "region": "eu-west",
    "runtime": "python-3.13",
    "start_command": "python bot.py",
    "token": "MTA5.demo-token.for-the-seed-test-only",
}


def run(command: str, *args: str) -> list[str]:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue().splitlines()


@pytest.fixture
def demo_account() -> Account:
    run("seed_demo", "--servers", "0", "--email", EMAIL)
    return Account.objects.get(memberships__user__email=EMAIL)


def everything_seeded() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Product, Price, TaxRate, Coupon, PromotionCode, BalanceTransaction, Event)
    }


def test_it_seeds_the_catalogue_profile_and_credit_once_however_often_it_runs(demo_account):
    first = run("seed_billing_demo", "--email", EMAIL)
    seeded = everything_seeded()

    second = run("seed_billing_demo", "--email", EMAIL)

    assert everything_seeded() == seeded
    assert first[0] == "Billing catalogue: 6 products, 15 prices, 5 tax rates, 1 promotion code."
    assert first[1:] == [
        f"Set the billing profile of {demo_account.id}.",
        f"Added 50.00 EUR of credit to {demo_account.id}.",
    ]
    assert second == ["Billing catalogue: complete, nothing added."]
    assert sorted(Product.objects.values_list("name", flat=True)) == [
        "Bot 256 MB",
        "Bot 512 MB",
        "Game server 8 GB",
        "Minecraft 2 GB",
        "Minecraft 4 GB",
        "Valheim 4 GB",
    ]
    assert balance_of(demo_account) == 5000
    profile = BillingProfile.objects.get(account=demo_account)
    assert (profile.legal_name, profile.country, profile.vat_id, profile.currency) == (
        "Pixelforge Gaming GmbH",
        "DE",
        "DE136695976",
        "EUR",
    )


def test_the_catalogue_has_what_a_demo_needs():
    # Without the demo account nothing is written: the catalogue is seeded with the account.
    with pytest.raises(CommandError, match=r"No account is owned by nobody@example\.com"):
        run("seed_billing_demo", "--email", "nobody@example.com")
    assert not Product.objects.exists()

    run("seed_demo", "--servers", "0", "--email", EMAIL)
    run("seed_billing_demo")

    prices = Price.objects.select_related("product")
    assert {price.currency for price in prices} == {"EUR", "USD"}
    assert {(p.product.name, p.unit_amount) for p in prices if p.interval == "year"} == {
        ("Minecraft 4 GB", 8990),
        ("Minecraft 4 GB", 9990),
    }
    assert [(p.product.name, p.currency) for p in prices if p.interval == "hour"] == [
        ("Game server 8 GB", "EUR")
    ]
    assert {p.product.name for p in prices if p.trial_days == 7} == {"Minecraft 2 GB"}
    assert {p.product.name for p in prices if p.setup_fee} == {"Game server 8 GB"}
    assert Product.objects.get(name="Valheim 4 GB").games == ["valheim"]
    rates = {(rate.country, rate.region): rate.percentage for rate in TaxRate.objects.all()}
    assert rates[("DE", "")] == Decimal(19) and rates[("US", "US-NY")] == Decimal("8.875")
    code = PromotionCode.objects.select_related("coupon").get()
    assert (code.code, code.coupon.percent_off, code.coupon.duration) == (
        "WELCOME10",
        Decimal(10),
        "once",
    )


def test_every_plan_can_be_ordered_by_the_demo_account(demo_account):
    run("seed_billing_demo")
    actor = Actor(user=demo_account.memberships.get(role=Role.OWNER).user)

    def order(name: str, what: dict, **extra):
        price = Price.objects.get(product__name=name, currency="EUR", interval="month")
        return subscription_order(
            account=demo_account, price=price.id, order=dict(what), actor=actor, **extra
        )

    trial, _ = order("Minecraft 2 GB", MINECRAFT)
    paid, paid_invoice = order("Minecraft 4 GB", MINECRAFT, promotion_code="welcome10")
    for name, what in [
        (
            "Valheim 4 GB",
            {**MINECRAFT, "game": "valheim", "variables": {"SERVER_PASSWORD": "vikings"}},
        ),
        ("Game server 8 GB", {**MINECRAFT, "game": "terraria", "variables": {}}),
        ("Bot 256 MB", BOT_ORDER),
        ("Bot 512 MB", BOT_ORDER),
    ]:
        subscription, invoice = order(name, what)
        assert subscription.price.product.name == name
        assert invoice.status in {InvoiceStatus.OPEN, InvoiceStatus.PAID}

    assert trial.status == SubscriptionStatus.TRIALING
    # The demo credit pays a plan at once (a German business buying from the BE seller is
    # reverse charged: no VAT), the promotion code taking 10 % off.
    assert paid.status == SubscriptionStatus.ACTIVE
    assert (paid_invoice.status, paid_invoice.discount, paid_invoice.total) == ("paid", 90, 809)
    assert balance_of(demo_account) < 5000


def test_a_profile_the_customer_filled_in_is_left_alone(demo_account):
    billing_profile_update(
        account=demo_account,
        changes=BillingProfileChanges(legal_name="My Own Ltd", country="GB"),
        actor=SYSTEM,
    )

    run("seed_billing_demo")

    profile = BillingProfile.objects.get(account=demo_account)
    assert (profile.legal_name, profile.country, profile.vat_id) == ("My Own Ltd", "GB", "")

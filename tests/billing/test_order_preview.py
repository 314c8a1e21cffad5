"""The order summary (issue 27, case 8): ``subscription_order_preview`` comes to exactly the
invoice the order then creates (lines, tax, total), and its renewal to exactly the invoice the
billing job then issues, for a buyer charged VAT, a reverse-charge business, coupons, a setup
fee and a trial; and it writes nothing."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from accounts.actors import SYSTEM, Actor
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    BillingProfile,
    BillingReason,
    Coupon,
    Invoice,
    Price,
    Product,
    PromotionCode,
    Subscription,
    TaxRate,
)
from billing.rules.pricing import PricedLines
from billing.services import balance_change
from billing.services.job.renewals import billing_run
from billing.services.profile import BillingProfileChanges, billing_profile_update
from billing.services.subscriptions import subscription_order, subscription_order_preview
from events.models import Event
from hosting.errors import Conflict, ValidationFailed
from tests.servers.helpers import MINECRAFT

pytestmark = pytest.mark.django_db
START = datetime(2031, 1, 15, 12, 0, tzinfo=UTC)


def plan(amount=999, **price_fields) -> Price:
    product = Product.objects.create(
        name="Iron", kind="server", memory_mb=3072, cpu_percent=150, disk_mb=20480
    )
    return Price.objects.create(
        product=product, currency="EUR", unit_amount=amount, interval="month", **price_fields
    )


@pytest.fixture
def clock(account):
    billing_clock_advance(account=account, to=START)
    TaxRate.objects.create(country="BE", percentage=Decimal(21))  # the seller's country
    TaxRate.objects.create(country="DE", percentage=Decimal(19))
    return account


def belgian_consumer(account) -> dict:
    billing_profile_update(
        account=account, changes=BillingProfileChanges(country="BE"), actor=SYSTEM
    )
    return {}


def german_business(account) -> dict:
    changes = {"legal_name": "Blockworks GmbH", "country": "DE", "vat_id": "DE136695976"}
    billing_profile_update(account=account, changes=BillingProfileChanges.of(changes), actor=SYSTEM)
    return {}


def repeating_code(account) -> dict:
    coupon = Coupon.objects.create(
        name="Quarter off", percent_off=Decimal(25), duration="repeating", duration_in_months=3
    )
    PromotionCode.objects.create(coupon=coupon, code="QUARTER")
    return {"promotion_code": "quarter"}


def once_amount_coupon(account) -> dict:
    coupon = Coupon.objects.create(
        name="Five off", amount_off=500, currency="EUR", duration="once", directly_redeemable=True
    )
    return {"coupon": coupon.id}


SCENARIOS = {
    # name: (price's fields, who buys and with what, the first invoice's tax and total)
    "vat": ({}, belgian_consumer, (210, 999 + 210)),
    "reverse_charge": ({}, german_business, (0, 999)),
    "repeating_coupon": ({}, repeating_code, (157, 749 + 157)),  # 999 - 250 = 749; 21 %
    "once_coupon_and_setup_fee": ({"setup_fee": 501}, once_amount_coupon, (210, 1000 + 210)),
    "setup_fee": ({"setup_fee": 501}, belgian_consumer, (315, 1500 + 315)),
    "trial": ({"trial_days": 14, "setup_fee": 100}, belgian_consumer, (21, 121)),
}


def invoice_lines(invoice: Invoice) -> list[tuple]:
    return [
        (
            line.description,
            line.price_id,
            line.quantity,
            line.unit_amount,
            line.discount_amount,
            line.tax_amount,
            line.period_start,
            line.period_end,
        )
        for line in invoice.lines.order_by("position")
    ]


def preview_lines(priced: PricedLines) -> list[tuple]:
    return [
        (
            line["description"],
            line["price"].id,
            line["quantity"],
            line["unit_amount"],
            line["discount_amount"],
            line["tax_amount"],
            line.get("period_start"),
            line.get("period_end"),
        )
        for line in priced.lines
    ]


def assert_same(priced: PricedLines, invoice: Invoice) -> None:
    assert preview_lines(priced) == invoice_lines(invoice)
    assert priced.total == invoice.total
    assert sum(line["tax_amount"] for line in priced.lines) == invoice.tax
    assert priced.tax.percentage == invoice.tax_percentage
    assert priced.tax.inclusive == invoice.tax_inclusive
    assert ([priced.tax.note] if priced.tax.note else []) == invoice.notes


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_preview_is_the_invoice_the_order_creates_and_the_renewal_the_job_issues(
    clock, account, owner, scenario
):
    price_fields, buyer, (tax, total) = SCENARIOS[scenario]
    price = plan(**price_fields)
    extra = buyer(account)
    balance_change(
        account=account,
        amount=5000,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )
    written = (Event.objects.count(), BalanceTransaction.objects.count())

    preview = subscription_order_preview(
        account=account, price=price.id, order=dict(MINECRAFT), **extra
    )

    assert (Subscription.objects.count(), Invoice.objects.count()) == (0, 0)
    assert (Event.objects.count(), BalanceTransaction.objects.count()) == written
    assert not Coupon.objects.filter(times_redeemed__gt=0).exists()
    assert not PromotionCode.objects.filter(times_redeemed__gt=0).exists()
    assert (sum(line["tax_amount"] for line in preview.first.lines), preview.total) == (tax, total)
    assert (preview.credit_applied, preview.due_today) == (total, 0)

    subscription, invoice = subscription_order(
        account=account, price=price.id, order=dict(MINECRAFT), actor=Actor(user=owner), **extra
    )
    assert_same(preview.first, invoice)
    assert invoice.amount_paid == preview.credit_applied
    assert subscription.current_period_end == preview.renewal_at
    assert subscription.trial_end == preview.trial_end

    billing_clock_advance(account=account, to=preview.renewal_at - timedelta(hours=1))
    billing_run()
    renewal = Invoice.objects.get(
        subscription=subscription, billing_reason=BillingReason.SUBSCRIPTION_CYCLE
    )
    assert_same(preview.renewal, renewal)


def test_the_renewal_is_discounted_only_while_the_coupon_lasts(clock, account):
    price = plan()
    belgian_consumer(account)

    repeating = subscription_order_preview(
        account=account, price=price, order=dict(MINECRAFT), **repeating_code(account)
    )
    once = subscription_order_preview(
        account=account, price=price, order=dict(MINECRAFT), **once_amount_coupon(account)
    )

    assert repeating.renewal.total == repeating.first.total == 749 + 157
    assert once.first.total == 499 + 105
    assert once.renewal.total == 999 + 210  # a coupon "once" discounts the first invoice only


def test_without_credit_everything_is_due_today(clock, account):
    belgian_consumer(account)
    balance_change(
        account=account,
        amount=200,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )

    preview = subscription_order_preview(account=account, price=plan(), order=dict(MINECRAFT))

    assert (preview.total, preview.credit_applied, preview.due_today) == (1209, 200, 1009)


def test_the_amounts_alone_need_no_order_details(clock, account):
    """The dashboard shows the summary before the server's settings are typed."""
    preview = subscription_order_preview(account=account, price=plan())
    assert preview.total == 999 + 210  # no profile: a sale in the seller's country
    assert BillingProfile.objects.filter(account=account).count() == 0


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"price": "price_doesnotexist"}, "price", "invalid_choice"),
        ({"order": {**MINECRAFT, "region": "mars-1"}}, "order.region", "invalid_choice"),
        ({"promotion_code": "NOPE"}, "promotion_code", "coupon_not_found"),
        ({"quantity": 2}, "quantity", "invalid"),
    ],
)
def test_the_preview_refuses_what_ordering_refuses(clock, account, change, field, code):
    body = {"price": plan().id, "order": dict(MINECRAFT), **change}
    with pytest.raises(ValidationFailed) as refused:
        subscription_order_preview(account=account, **body)
    assert (field, code) in [
        (item["name"], item["code"]) for item in refused.value.details["fields"]
    ]


def test_another_currency_than_the_accounts_is_refused_without_fixing_one(clock, account, owner):
    usd = Price.objects.create(
        product=plan().product, currency="USD", unit_amount=1100, interval="month"
    )
    preview = subscription_order_preview(account=account, price=usd, order=dict(MINECRAFT))
    assert preview.first.lines[0]["unit_amount"] == 1100
    assert not BillingProfile.objects.filter(account=account, currency="USD").exists()

    subscription_order(
        account=account, price=plan(), order=dict(MINECRAFT), actor=Actor(user=owner)
    )
    with pytest.raises(Conflict) as refused:
        subscription_order_preview(account=account, price=usd, order=dict(MINECRAFT))
    assert refused.value.details == {"currency": "EUR"}

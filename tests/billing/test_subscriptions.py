"""Ordering a plan, paying it, trials, coupons, plan changes and cancelling, through the services,
with the server lifecycle really driven (the simulated driver and the real worker)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail

from accounts.actors import SYSTEM, Actor
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    Coupon,
    Invoice,
    Price,
    Product,
    PromotionCode,
    SubscriptionStatus,
    TaxRate,
)
from billing.services import balance_change, balance_of, invoice_pay_with_credit
from billing.services.job.renewals import billing_run
from billing.services.subscriptions import (
    subscription_cancel,
    subscription_change,
    subscription_change_preview,
    subscription_order,
)
from events.models import Event
from hosting.errors import InvalidState, PlanLimit, ValidationFailed
from servers.models import Server
from servers.services import InstanceChanges, instance_update
from tests.servers.helpers import MINECRAFT, run_worker

pytestmark = pytest.mark.django_db
START = datetime(2031, 1, 15, 12, 0, tzinfo=UTC)


def plan(name="Iron", amount=1000, interval="month", count=1, **price_fields) -> Price:
    product = Product.objects.create(
        name=name, kind="server", memory_mb=3072, cpu_percent=150, disk_mb=20480
    )
    return Price.objects.create(
        product=product,
        currency="EUR",
        unit_amount=amount,
        interval=interval,
        interval_count=count,
        **price_fields,
    )


@pytest.fixture
def clock(account):
    billing_clock_advance(account=account, to=START)
    return account


def credit(account, amount):
    balance_change(
        account=account,
        amount=amount,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )


def order(account, owner, price, **extra):
    return subscription_order(
        account=account, price=price.id, order=dict(MINECRAFT), actor=Actor(user=owner), **extra
    )


def test_an_order_waits_for_payment_then_creates_the_server_with_the_plans_resources(
    clock, account, owner
):
    price = plan(setup_fee=500)
    subscription, invoice = order(account, owner, price)
    assert mail.outbox == []  # queued for the worker, which sends it
    run_worker()

    assert subscription.status == SubscriptionStatus.INCOMPLETE
    assert subscription.server is None
    assert invoice.status == "open" and invoice.total == 1500
    assert [line.amount for line in invoice.lines.all()] == [1000, 500]
    assert invoice.number.startswith("TEST-INV-2031-")
    assert subscription.current_period_end == datetime(2031, 2, 15, 12, 0, tzinfo=UTC)
    [issued] = mail.outbox
    assert issued.subject == f"Invoice {invoice.number} issued"
    assert issued.to == [owner.email] and "15.00 EUR" in issued.body

    credit(account, 2000)
    invoice_pay_with_credit(invoice=invoice, actor=Actor(user=owner))

    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.ACTIVE
    server = subscription.server
    assert (server.memory_mb, server.cpu_percent, server.disk_mb) == (3072, 150, 20480)
    assert server.name == MINECRAFT["name"]
    assert balance_of(account) == 500
    run_worker()
    server.refresh_from_db()
    assert server.status in ("stopped", "running")
    types = set(Event.objects.filter(account=account).values_list("type", flat=True))
    assert {
        "subscription.created",
        "subscription.updated",
        "invoice.paid",
        "server.created",
    } <= types


def test_credit_that_covers_the_order_is_applied_at_once(clock, account, owner):
    credit(account, 1000)
    subscription, invoice = order(account, owner, plan())
    assert invoice.status == "paid"
    assert subscription.status == SubscriptionStatus.ACTIVE and subscription.server_id
    assert invoice.payments.get().gateway == "credit"


def test_credit_that_does_not_cover_the_order_pays_it_in_part(clock, account, owner):
    """Issue 27, case 4: the credit goes first, partly if need be; the rest stays owed."""
    credit(account, 999)
    subscription, invoice = order(account, owner, plan())
    assert (invoice.status, invoice.amount_paid, invoice.amount_remaining) == ("open", 999, 1)
    assert balance_of(account) == 0
    assert subscription.status == SubscriptionStatus.INCOMPLETE


def test_an_order_that_lapses_gives_back_the_credit_it_took(clock, account, owner):
    credit(account, 999)
    subscription, invoice = order(account, owner, plan())
    billing_clock_advance(account=account, to=invoice.due_date + timedelta(hours=1))
    billing_run()
    subscription.refresh_from_db()
    invoice.refresh_from_db()
    assert subscription.status == SubscriptionStatus.CANCELED
    assert invoice.amount_remaining == 0
    assert balance_of(account) == 999


def test_a_trial_or_a_free_plan_creates_the_server_at_once(clock, account, owner):
    trial, trial_invoice = order(account, owner, plan(trial_days=14))
    assert trial.status == SubscriptionStatus.TRIALING and trial.server_id
    assert trial_invoice.status == "paid" and trial_invoice.total == 0
    assert trial.current_period_end == START + timedelta(days=14)

    free, free_invoice = subscription_order(
        account=account,
        price=plan("Free", amount=0).id,
        order=dict(MINECRAFT, name="Free one"),
        actor=SYSTEM,
    )
    assert free.status == SubscriptionStatus.ACTIVE and free.server_id
    assert free_invoice.status == "paid"


def test_an_order_is_checked_before_anything_is_written(clock, account, owner):
    price = plan()
    price.product.games = ["terraria"]
    price.product.save()
    with pytest.raises(ValidationFailed) as refused:
        order(account, owner, price)
    assert refused.value.details["fields"][0]["name"] == "order.game"
    with pytest.raises(ValidationFailed):
        subscription_order(account=account, price="price_nope", order=MINECRAFT, actor=SYSTEM)
    assert not Invoice.objects.exists()


def test_a_promotion_code_discounts_and_is_counted_and_refused_when_used_up(clock, account, owner):
    price = plan(amount=2000)
    coupon = Coupon.objects.create(name="Welcome", percent_off=Decimal("25"), duration="once")
    PromotionCode.objects.create(code="WELCOME25", coupon=coupon, max_redemptions=1)

    subscription, invoice = order(account, owner, price, promotion_code="welcome25")
    assert (invoice.subtotal, invoice.discount, invoice.total) == (2000, 500, 1500)
    assert invoice.coupon_id == coupon.id
    assert subscription.discount_end == subscription.current_period_end  # once: this invoice only

    with pytest.raises(ValidationFailed) as refused:
        order(account, owner, price, promotion_code="WELCOME25")
    assert refused.value.details["fields"][0]["code"] == "coupon_used_up"
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 1


@pytest.mark.parametrize(
    ("coupon_fields", "code"),
    [
        ({"percent_off": Decimal(10), "redeem_by": START - timedelta(days=1)}, "coupon_expired"),
        ({"amount_off": 500, "currency": "USD"}, "coupon_not_applicable"),
        ({"percent_off": Decimal(10), "active": False}, "coupon_not_found"),
    ],
)
def test_a_coupon_that_does_not_apply_is_refused_with_its_reason(
    clock, account, owner, coupon_fields, code
):
    coupon = Coupon.objects.create(
        name="X", duration="forever", directly_redeemable=True, **coupon_fields
    )
    with pytest.raises(ValidationFailed) as refused:
        order(account, owner, plan(), coupon=coupon.id)
    assert refused.value.details["fields"][0]["code"] == code


def test_a_coupon_for_other_products_is_refused(clock, account, owner):
    coupon = Coupon.objects.create(
        name="Gold only", duration="forever", percent_off=Decimal(50), directly_redeemable=True
    )
    coupon.products.add(plan("Gold").product)
    with pytest.raises(ValidationFailed) as refused:
        order(account, owner, plan("Iron"), coupon=coupon.id)
    assert refused.value.details["fields"][0]["code"] == "coupon_not_applicable"


def test_tax_of_the_buyers_country_is_added_and_the_lines_sum_to_the_total(clock, account, owner):
    TaxRate.objects.create(country="BE", percentage=Decimal(21))
    _, invoice = order(account, owner, plan(amount=999, setup_fee=1))
    assert invoice.tax == 210  # 21 % of 10.00, rounded once on the invoice
    assert invoice.total == 1000 + 210
    assert sum(line.tax_amount for line in invoice.lines.all()) == invoice.tax


def active_subscription(account, owner, price):
    credit(account, price.unit_amount + price.setup_fee)
    subscription, invoice = order(account, owner, price)
    assert invoice.status == "paid"
    return subscription


def test_an_upgrade_mid_period_charges_the_difference_to_the_second(clock, account, owner):
    subscription = active_subscription(account, owner, plan("Iron", 3100))
    gold = Price.objects.create(
        product=Product.objects.create(
            name="Gold", kind="server", memory_mb=8192, cpu_percent=400, disk_mb=40960
        ),
        currency="EUR",
        unit_amount=6200,
        interval="month",
    )
    billing_clock_advance(account=account, to=START + timedelta(days=10, hours=12))
    # Jan 15 → Feb 15 is 31 days; 20.5 days remain: 3100 * 20.5/31 = 2050 back, 4100 on.
    preview = subscription_change_preview(subscription=subscription, price=gold.id)
    assert [line["unit_amount"] for line in preview.priced.lines] == [-2050, 4100]
    assert preview.total == 2050

    credit(account, 2050)
    subscription, invoice = subscription_change(
        subscription=subscription, price=gold.id, actor=Actor(user=owner)
    )
    assert invoice.billing_reason == "subscription_update"
    assert invoice.total == preview.total and invoice.status == "paid"
    assert subscription.price_id == gold.id
    server = Server.objects.get(pk=subscription.server_id)
    assert (server.memory_mb, server.cpu_percent, server.disk_mb) == (8192, 400, 40960)


def test_a_downgrade_mid_period_credits_the_balance(clock, account, owner):
    subscription = active_subscription(account, owner, plan("Gold", 6200))
    iron = Price.objects.create(
        product=plan("Iron").product, currency="EUR", unit_amount=3100, interval="month"
    )
    billing_clock_advance(account=account, to=START + timedelta(days=10, hours=12))
    before = balance_of(account)
    subscription, invoice = subscription_change(
        subscription=subscription, price=iron.id, actor=SYSTEM
    )
    assert invoice is None
    assert balance_of(account) == before + 2050
    entry = BalanceTransaction.objects.filter(account=account).order_by("-created_at", "-id")[0]
    assert entry.kind == "proration" and entry.amount == 2050


def test_a_plan_change_to_another_currency_or_kind_is_refused(clock, account, owner):
    subscription = active_subscription(account, owner, plan())
    usd = Price.objects.create(
        product=plan("US").product, currency="USD", unit_amount=1000, interval="month"
    )
    with pytest.raises(ValidationFailed) as refused:
        subscription_change_preview(subscription=subscription, price=usd.id)
    assert refused.value.details["fields"][0]["code"] == "currency_mismatch"


def test_cancel_now_deletes_the_server_and_a_canceled_subscription_cannot_change(
    clock, account, owner
):
    subscription = active_subscription(account, owner, plan())
    subscription = subscription_cancel(subscription=subscription, at_period_end=False, actor=SYSTEM)
    assert subscription.status == SubscriptionStatus.CANCELED
    # The server was still being created: the billing job deletes it once it can.
    assert Server.objects.get(pk=subscription.server_id).status == "provisioning"
    run_worker()
    assert billing_run().counts.get("terminated_late") == 1
    assert Server.objects.get(pk=subscription.server_id).status == "deleting"
    assert billing_run().counts.get("terminated_late") is None
    with pytest.raises(InvalidState) as refused:
        subscription_cancel(subscription=subscription, at_period_end=False, actor=SYSTEM)
    assert refused.value.details["allowed_statuses"] == []


def test_downgrading_right_after_an_unpaid_upgrade_mints_no_credit(clock, account, owner):
    """Issue 27, case 1: the unused time of a period never paid for is no credit. The open
    upgrade is settled first (voided); only what was paid may reach the balance."""
    subscription = active_subscription(account, owner, plan("Iron", 3100))
    iron = subscription.price_id
    gold = Price.objects.create(
        product=plan("Gold", 6200).product, currency="EUR", unit_amount=6200, interval="month"
    )
    billing_clock_advance(account=account, to=START + timedelta(days=10, hours=12))
    for _ in range(3):
        subscription, upgrade = subscription_change(
            subscription=subscription, price=gold.id, actor=Actor(user=owner)
        )
        assert upgrade.status == "open" and upgrade.total == 2050  # no credit, no card
        subscription, credited = subscription_change(
            subscription=subscription, price=iron, actor=Actor(user=owner)
        )
        assert credited is None
        upgrade.refresh_from_db()
        assert upgrade.status == "void"
        assert balance_of(account) == 0
    assert not Invoice.objects.filter(account=account, status="open").exists()


def test_a_downgrade_after_a_partly_forgiven_upgrade_credits_only_what_was_paid(
    clock, account, owner
):
    """The open upgrade absorbs the credit; what is left of the credit reaches the balance."""
    subscription = active_subscription(account, owner, plan("Iron", 3100))
    iron = Price.objects.create(
        product=plan("Tin", 1550).product, currency="EUR", unit_amount=1550, interval="month"
    )
    gold = Price.objects.create(
        product=plan("Gold", 6200).product, currency="EUR", unit_amount=6200, interval="month"
    )
    billing_clock_advance(account=account, to=START + timedelta(days=10, hours=12))
    subscription, upgrade = subscription_change(
        subscription=subscription, price=gold.id, actor=SYSTEM
    )
    assert upgrade.status == "open" and upgrade.amount_remaining == 2050
    # Down to a plan below the first: 6200 * 20.5/31 = 4100 back, 1550 * 20.5/31 = 1025 on.
    subscription, credited = subscription_change(
        subscription=subscription, price=iron.id, actor=SYSTEM
    )
    assert credited is None
    upgrade.refresh_from_db()
    assert upgrade.status == "void"
    # 3075 of credit: 2050 settle the unpaid upgrade, 1025 was paid for (the Iron period).
    assert balance_of(account) == 1025


def test_a_plans_server_cannot_be_given_more_than_its_plan_by_hand(clock, account, owner):
    """Issue 27, case 2: a 3 GB plan's server raised to 16 GB in Settings was free hosting.
    Its resources are the plan's; more comes with a plan change, which moves the bounds."""
    subscription = active_subscription(account, owner, plan("Iron", 1000))
    server = Server.objects.get(pk=subscription.server_id)
    assert server.plan["subscription"] == subscription.id
    customer = Actor(user=owner)
    for field, value in (("memory_mb", 16384), ("disk_mb", 204800), ("cpu_percent", 400)):
        with pytest.raises(PlanLimit) as refused:
            instance_update(
                instance=server, changes=InstanceChanges(resources={field: value}), actor=customer
            )
        assert refused.value.details["field"] == field
        assert refused.value.details["limit"] == getattr(server, field)
    server.refresh_from_db()
    assert (server.memory_mb, server.disk_mb, server.cpu_percent) == (3072, 20480, 150)
    # Less than the plan is the customer's choice; back up to the plan too.
    instance_update(
        instance=server, changes=InstanceChanges(resources={"memory_mb": 2048}), actor=customer
    )
    instance_update(
        instance=server, changes=InstanceChanges(resources={"memory_mb": 3072}), actor=customer
    )

    gold = Price.objects.create(
        product=Product.objects.create(
            name="Gold", kind="server", memory_mb=8192, cpu_percent=400, disk_mb=40960
        ),
        currency="EUR",
        unit_amount=1000,
        interval="month",
    )
    subscription_change(subscription=subscription, price=gold.id, actor=customer)
    server.refresh_from_db()
    assert server.plan["memory_mb"] == 8192 and server.memory_mb == 8192
    with pytest.raises(PlanLimit):
        instance_update(
            instance=server, changes=InstanceChanges(resources={"memory_mb": 16384}), actor=customer
        )


def test_staff_may_set_a_plans_server_beyond_its_plan(clock, account, owner, django_user_model):
    subscription = active_subscription(account, owner, plan("Iron", 1000))
    server = Server.objects.get(pk=subscription.server_id)
    staff = django_user_model.objects.create_user(
        email="ops@example.com", password="x" * 12, is_staff=True
    )
    instance_update(
        instance=server,
        changes=InstanceChanges(resources={"memory_mb": 4096}),
        actor=Actor(user=staff),
    )
    server.refresh_from_db()
    assert server.memory_mb == 4096

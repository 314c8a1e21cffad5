"""Coupons only through what staff published: a customer redeems a promotion code, or names a
coupon by its id only when staff marked that coupon directly redeemable; limits, expiry and
deactivation hold on every path, under concurrent orders too (issue 27, case 3)."""

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction

from accounts.actors import SYSTEM
from billing.clock import billing_clock_advance
from billing.models import Coupon, Invoice, Price, Product, PromotionCode, Subscription
from billing.services import discounts
from billing.services.catalogue import (
    coupon_archive,
    coupon_create,
    coupon_update,
    promotion_code_deactivate,
)
from billing.services.subscriptions import subscription_order, subscription_order_preview
from hosting.errors import ValidationFailed
from tests.concurrency import race
from tests.factories import AccountFactory
from tests.servers.helpers import MINECRAFT

START = datetime(2031, 1, 15, 12, 0, tzinfo=UTC)


def plan(amount=2000) -> Price:
    product = Product.objects.create(
        name="Iron", kind="server", memory_mb=3072, cpu_percent=150, disk_mb=20480
    )
    return Price.objects.create(
        product=product, currency="EUR", unit_amount=amount, interval="month"
    )


def welcome(**fields) -> Coupon:
    return Coupon.objects.create(
        name="Welcome", percent_off=Decimal(25), duration="forever", **fields
    )


def order(account, price, name="Survival SMP", **extra):
    return subscription_order(
        account=account, price=price.id, order=dict(MINECRAFT, name=name), actor=SYSTEM, **extra
    )


def refusal(call: Callable) -> dict:
    with pytest.raises(ValidationFailed) as refused:
        call()
    [field] = refused.value.details["fields"]
    return field


@pytest.fixture
def clock(account):
    billing_clock_advance(account=account, to=START)
    return account


# --- Which coupons a customer may name by id -----------------------------------------------------


@pytest.mark.django_db
def test_a_coupon_id_is_refused_unless_staff_marked_the_coupon_directly_redeemable(clock):
    coupon = welcome()
    PromotionCode.objects.create(code="WELCOME25", coupon=coupon)
    price = plan()

    assert refusal(lambda: order(clock, price, coupon=coupon.id)) == {
        "name": "coupon",
        "code": "coupon_code_required",
        "message": "This coupon is redeemed with a promotion code: type the code.",
    }
    assert not Subscription.objects.exists() and not Invoice.objects.exists()
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 0

    coupon_update(coupon=coupon, directly_redeemable=True, actor=SYSTEM)
    subscription, invoice = order(clock, price, coupon=coupon.id)
    assert (invoice.subtotal, invoice.discount, invoice.total) == (2000, 500, 1500)
    assert subscription.coupon_id == coupon.id
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "code_fields",
    [
        {"max_redemptions": 1, "times_redeemed": 1},
        {"active": False},
        {"expires_at": START - timedelta(days=1)},
    ],
    ids=["used_up", "deactivated", "expired"],
)
def test_the_coupon_of_a_code_that_stopped_cannot_be_ordered_by_its_id(clock, code_fields):
    # The case: the validation answer showed the coupon's id, and the code's limit,
    # deactivation or expiry meant nothing to an order naming that id.
    coupon = welcome()
    PromotionCode.objects.create(code="LAUNCH", coupon=coupon, **code_fields)

    assert refusal(lambda: order(clock, plan(), coupon=coupon.id))["code"] == (
        "coupon_code_required"
    )
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 0
    assert not Subscription.objects.exists()


@pytest.mark.django_db
def test_an_unpublished_coupon_id_tells_nothing_of_the_coupons_state(clock):
    # The check comes before the coupon's own state: an id of a coupon staff did not publish
    # says only that a code is needed, whatever that coupon's limits or products.
    coupon = welcome(active=False, max_redemptions=1, times_redeemed=1)
    assert refusal(lambda: order(clock, plan(), coupon=coupon.id))["code"] == (
        "coupon_code_required"
    )


@pytest.mark.django_db
def test_an_order_preview_takes_a_coupon_id_only_as_the_order_would(clock):
    price, coupon = plan(), welcome()
    PromotionCode.objects.create(code="LAUNCH", coupon=coupon, max_redemptions=1, times_redeemed=1)

    def preview(**named):
        return subscription_order_preview(account=clock, price=price.id, **named)

    assert refusal(lambda: preview(coupon=coupon.id))["code"] == "coupon_code_required"
    assert refusal(lambda: preview(promotion_code="LAUNCH"))["code"] == "coupon_used_up"
    coupon_update(coupon=coupon, directly_redeemable=True, actor=SYSTEM)
    shown = preview(coupon=coupon.id)
    assert (shown.coupon, shown.first.total) == (coupon, 1500)
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 0  # a preview redeems nothing


@pytest.mark.django_db
def test_a_directly_redeemable_coupon_keeps_its_own_limits_expiry_and_archiving(clock):
    price = plan()
    limited = welcome(directly_redeemable=True, max_redemptions=1)
    order(clock, price, coupon=limited.id)
    assert refusal(lambda: order(clock, price, name="Second", coupon=limited.id))["code"] == (
        "coupon_used_up"
    )

    expired = welcome(directly_redeemable=True, redeem_by=START - timedelta(seconds=1))
    assert refusal(lambda: order(clock, price, coupon=expired.id))["code"] == "coupon_expired"

    archived = coupon_archive(coupon=welcome(directly_redeemable=True), actor=SYSTEM)
    assert refusal(lambda: order(clock, price, coupon=archived.id))["code"] == "coupon_not_found"


@pytest.mark.django_db
def test_a_promotion_code_still_redeems_a_coupon_that_is_not_directly_redeemable(clock):
    coupon = welcome()
    code = PromotionCode.objects.create(code="WELCOME25", coupon=coupon, max_redemptions=1)

    _, invoice = order(clock, plan(), promotion_code="welcome25")

    assert invoice.discount == 500
    code.refresh_from_db()
    coupon.refresh_from_db()
    assert (code.times_redeemed, coupon.times_redeemed) == (1, 1)


@pytest.mark.django_db
def test_staff_create_and_change_whether_a_coupon_is_directly_redeemable():
    coupon = coupon_create(name="Partner", percent_off="10", duration="once", actor=SYSTEM)
    assert coupon.directly_redeemable is False
    direct = coupon_create(
        name="Newsletter",
        percent_off="5",
        duration="once",
        directly_redeemable=True,
        actor=SYSTEM,
    )
    assert direct.directly_redeemable is True

    changed = coupon_update(coupon=direct, directly_redeemable=False, actor=SYSTEM)
    direct.refresh_from_db()
    assert changed.directly_redeemable is direct.directly_redeemable is False
    assert refusal(
        lambda: coupon_update(coupon=direct, directly_redeemable="yes", actor=SYSTEM)
    ) == {
        "name": "directly_redeemable",
        "code": "invalid",
        "message": "directly_redeemable is true or false.",
    }


# --- What changes between the check and the redemption ---------------------------------------


def _staff_acts_after_the_check(monkeypatch, act: Callable[[], object]) -> None:
    """Staff's change lands after the order checked its coupon and before it counts the
    redemption: the moment a concurrent request has on PostgreSQL while it waits for the lock."""
    check = discounts.coupon_check

    def check_then_act(**kwargs):
        checked = check(**kwargs)
        act()
        return checked

    monkeypatch.setattr("billing.services.subscriptions.coupon_check", check_then_act)


@pytest.mark.django_db
def test_a_code_deactivated_while_an_order_is_checked_is_not_redeemed(clock, monkeypatch):
    coupon = welcome()
    code = PromotionCode.objects.create(code="WELCOME25", coupon=coupon)
    _staff_acts_after_the_check(
        monkeypatch, lambda: promotion_code_deactivate(promotion_code=code, actor=SYSTEM)
    )

    field = refusal(lambda: order(clock, plan(), promotion_code="WELCOME25"))

    assert (field["name"], field["code"]) == ("promotion_code", "coupon_not_found")
    code.refresh_from_db()
    assert code.times_redeemed == 0 and not Subscription.objects.exists()


@pytest.mark.django_db
def test_a_coupon_archived_while_an_order_is_checked_is_not_redeemed(clock, monkeypatch):
    coupon = welcome(directly_redeemable=True)
    _staff_acts_after_the_check(monkeypatch, lambda: coupon_archive(coupon=coupon, actor=SYSTEM))

    field = refusal(lambda: order(clock, plan(), coupon=coupon.id))

    assert (field["name"], field["code"]) == ("coupon", "coupon_not_found")
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 0 and not Subscription.objects.exists()


@pytest.mark.django_db
def test_a_coupon_unpublished_while_an_order_is_checked_is_not_redeemed(clock, monkeypatch):
    coupon = welcome(directly_redeemable=True)
    _staff_acts_after_the_check(
        monkeypatch,
        lambda: coupon_update(coupon=coupon, directly_redeemable=False, actor=SYSTEM),
    )

    field = refusal(lambda: order(clock, plan(), coupon=coupon.id))

    assert (field["name"], field["code"]) == ("coupon", "coupon_code_required")
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 0 and not Subscription.objects.exists()


# --- Concurrent orders (PostgreSQL's row locks) -------------------------------------------------

ORDERS = 4
needs_row_locks = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL's row locks"
)
concurrent = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def at_once(*calls: Callable) -> tuple[list, list[BaseException]]:
    return race(*calls)


def customers(count: int) -> list:
    """Accounts of different customers, each on the test clock at ``START``."""
    accounts = [AccountFactory() for _ in range(count)]
    for account in accounts:
        billing_clock_advance(account=account, to=START)
    return accounts


def orders_at_once(price: Price, **coupon) -> tuple[list, list[BaseException]]:
    return at_once(
        *[lambda account=account: order(account, price, **coupon) for account in customers(ORDERS)]
    )


def used_up(failures: list[BaseException]) -> list[str]:
    assert all(isinstance(failure, ValidationFailed) for failure in failures), failures
    return [failure.details["fields"][0]["code"] for failure in failures]


@concurrent
@needs_row_locks
def test_concurrent_orders_with_a_code_take_its_last_redemption_once():
    coupon = welcome()
    code = PromotionCode.objects.create(code="LAST1", coupon=coupon, max_redemptions=1)

    results, failures = orders_at_once(plan(), promotion_code="LAST1")

    assert len([result for result in results if result]) == 1
    assert used_up(failures) == ["coupon_used_up"] * (ORDERS - 1)
    code.refresh_from_db()
    coupon.refresh_from_db()
    assert (code.times_redeemed, coupon.times_redeemed) == (1, 1)
    assert Subscription.objects.filter(coupon=coupon).count() == 1


@concurrent
@needs_row_locks
def test_concurrent_orders_naming_a_direct_coupon_take_its_last_redemption_once():
    coupon = welcome(directly_redeemable=True, max_redemptions=1)

    results, failures = orders_at_once(plan(), coupon=coupon.id)

    assert len([result for result in results if result]) == 1
    assert used_up(failures) == ["coupon_used_up"] * (ORDERS - 1)
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 1
    assert Subscription.objects.filter(coupon=coupon).count() == 1


@concurrent
@needs_row_locks
def test_concurrent_orders_by_code_and_by_id_share_the_coupons_limit():
    coupon = welcome(directly_redeemable=True, max_redemptions=2)
    PromotionCode.objects.create(code="SHARED", coupon=coupon)
    price = plan()
    by_code = [
        lambda account=account: order(account, price, promotion_code="SHARED")
        for account in customers(2)
    ]
    by_id = [
        lambda account=account: order(account, price, coupon=coupon.id) for account in customers(2)
    ]

    results, failures = at_once(*by_code, *by_id)

    assert len([result for result in results if result]) == 2
    assert used_up(failures) == ["coupon_used_up"] * 2
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 2
    assert Subscription.objects.filter(coupon=coupon).count() == 2


@concurrent
@needs_row_locks
def test_an_order_waiting_on_a_code_staff_are_deactivating_is_refused():
    coupon = welcome()
    code = PromotionCode.objects.create(code="STOPPING", coupon=coupon)
    customer, price = customers(1)[0], plan()
    deactivating, resume = threading.Event(), threading.Event()

    def staff_deactivates() -> None:
        with transaction.atomic():
            promotion_code_deactivate(promotion_code=code, actor=SYSTEM)
            deactivating.set()  # the code's row is locked, its change not yet committed
            resume.wait(timeout=10)

    def customer_orders():
        deactivating.wait(timeout=10)
        return order(customer, price, promotion_code="STOPPING")

    def release_when_the_order_waits() -> None:
        deactivating.wait(timeout=10)
        waiting_for_lock()
        resume.set()

    _, failures = at_once(staff_deactivates, customer_orders, release_when_the_order_waits)

    assert used_up(failures) == ["coupon_not_found"]
    code.refresh_from_db()
    assert (code.active, code.times_redeemed) == (False, 0)
    assert not Subscription.objects.exists()


def waiting_for_lock(timeout: float = 10) -> None:
    """Until another connection of this database waits for a row lock."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no order waited for the code's lock")

"""The catalogue services: products, prices, tax rates, coupons and promotion codes, each
checked field by field, never deleted (archived), and installation-wide (no account event)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.actors import Actor
from billing.models import Coupon, Price, Product, PromotionCode, Subscription, TaxRate
from billing.services import catalogue
from billing.services.catalogue import (
    coupon_archive,
    coupon_create,
    price_archive,
    price_create,
    product_archive,
    product_create,
    product_update,
    promotion_code_create,
    promotion_code_deactivate,
    tax_rate_archive,
    tax_rate_create,
)
from events.models import Event
from hosting.errors import ApplicationError, Conflict, ValidationFailed
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SERVER_PLAN = {
    "name": "Survival 4 GB",
    "kind": "server",
    "memory_mb": 4096,
    "cpu_percent": 200,
    "disk_mb": 20480,
}
BOT_PLAN = {"name": "Bot S", "kind": "bot", "memory_mb": 512, "cpu_percent": 50, "disk_mb": 2048}


@pytest.fixture
def staff():
    return Actor(user=UserFactory(is_staff=True))


@pytest.fixture
def product(staff) -> Product:
    return product_create(**SERVER_PLAN, games=["minecraft-java"], actor=staff)


@pytest.fixture
def price(product, staff) -> Price:
    return price_create(
        product=product, currency="EUR", unit_amount=1200, interval="month", actor=staff
    )


@pytest.fixture
def coupon(staff) -> Coupon:
    return coupon_create(name="Welcome", duration="once", percent_off=10, actor=staff)


def refused(error: ApplicationError) -> tuple[str, str]:
    """The (field, code) an error names."""
    (field,) = error.details["fields"]
    return field["name"], field["code"]


def subscribe(account, price: Price) -> Subscription:
    return Subscription.objects.create(
        account=account,
        price=price,
        billing_cycle_anchor=NOW,
        current_period_start=NOW,
        current_period_end=NOW + timedelta(days=31),
    )


def test_the_catalogue_records_no_account_event(staff, product, price, coupon):
    promotion_code_create(coupon=coupon, code="welcome10", actor=staff)
    tax_rate_create(country="nl", percentage="21", actor=staff)
    product_update(product=product, changes={"name": "Survival"}, actor=staff)

    assert not Event.objects.exists()


# --- Products ----------------------------------------------------------------------------------


def test_a_product_is_created_with_what_it_provisions(staff):
    product = product_create(
        **SERVER_PLAN,
        description="  For 20 players ",
        games=["rust", "minecraft-java", "rust"],
        regions=["eu-west"],
        actor=staff,
    )

    product.refresh_from_db()
    assert product.id.startswith("prod_")
    assert (product.name, product.description, product.kind) == (
        "Survival 4 GB",
        "For 20 players",
        "server",
    )
    assert (product.memory_mb, product.cpu_percent, product.disk_mb) == (4096, 200, 20480)
    assert (product.games, product.regions, product.runtimes) == (
        ["rust", "minecraft-java"],
        ["eu-west"],
        [],
    )
    assert product.active


def test_a_product_may_have_its_own_dunning(staff):
    product = product_create(
        **SERVER_PLAN, suspend_after_days=0, terminate_after_days=14, actor=staff
    )
    product_update(product=product, changes={"terminate_after_days": None}, actor=staff)

    product.refresh_from_db()
    assert (product.suspend_after_days, product.terminate_after_days) == (0, None)


def test_a_bot_plan_lists_runtimes(staff):
    product = product_create(**BOT_PLAN, runtimes=["python-3.13", "node-22"], actor=staff)

    assert product.runtimes == ["python-3.13", "node-22"]


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"name": "  "}, "name", "required"),
        ({"name": "x" * 101}, "name", "max_length"),
        ({"description": "x" * 501}, "description", "max_length"),
        ({"description": None}, "description", "invalid"),
        ({"kind": "vps"}, "kind", "invalid_choice"),
        ({"memory_mb": 128}, "resources.memory_mb", "out_of_range"),
        ({"memory_mb": 65537}, "resources.memory_mb", "out_of_range"),
        ({"cpu_percent": True}, "resources.cpu_percent", "out_of_range"),
        ({"cpu_percent": 100.0}, "resources.cpu_percent", "out_of_range"),
        ({"disk_mb": "20480"}, "resources.disk_mb", "out_of_range"),
        ({"games": ["minecraft-java", "tetris"]}, "games", "invalid_choice"),
        ({"games": "minecraft-java"}, "games", "invalid"),
        ({"regions": ["mars-north"]}, "regions", "invalid_choice"),
        ({"runtimes": ["cobol-85"]}, "runtimes", "invalid_choice"),
        ({"runtimes": ["python-3.13"]}, "runtimes", "not_allowed"),
        ({"kind": "bot", "games": ["rust"]}, "games", "not_allowed"),
        ({"suspend_after_days": -1}, "suspend_after_days", "out_of_range"),
        ({"suspend_after_days": True}, "suspend_after_days", "out_of_range"),
        ({"terminate_after_days": 0}, "terminate_after_days", "out_of_range"),
        ({"terminate_after_days": 366}, "terminate_after_days", "out_of_range"),
        (
            {"suspend_after_days": 10, "terminate_after_days": 10},
            "terminate_after_days",
            "out_of_range",
        ),
    ],
)
def test_a_product_is_refused_field_by_field(staff, changes, field, code):
    with pytest.raises(ValidationFailed) as error:
        product_create(**{**SERVER_PLAN, **changes}, actor=staff)

    assert refused(error.value) == (field, code)
    assert not Product.objects.exists()


def test_a_product_is_updated_in_part(staff, product):
    updated = product_update(
        product=product,
        changes={
            "name": "Survival XL",
            "resources": {"memory_mb": 8192},
            "regions": ["us-east"],
            "games": [],
        },
        actor=staff,
    )

    product.refresh_from_db()
    assert updated == product
    assert (product.name, product.memory_mb, product.cpu_percent) == ("Survival XL", 8192, 200)
    assert (product.games, product.regions) == ([], ["us-east"])


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"active": False}, "active", "unknown_field"),
        ({"resources": {"memory_mb": 10}}, "resources.memory_mb", "out_of_range"),
        ({"resources": {"gpu": 1}}, "resources", "invalid"),
        ({"resources": [4096]}, "resources", "invalid"),
        ({"kind": "bot"}, "games", "not_allowed"),  # its games would never apply
        ({"games": ["tetris"]}, "games", "invalid_choice"),
        ({"kind": "vm"}, "kind", "invalid_choice"),
    ],
)
def test_a_product_update_is_refused_field_by_field(staff, product, changes, field, code):
    with pytest.raises(ValidationFailed) as error:
        product_update(product=product, changes=changes, actor=staff)

    assert refused(error.value) == (field, code)
    product.refresh_from_db()
    assert (product.kind, product.memory_mb, product.games) == ("server", 4096, ["minecraft-java"])


def test_a_product_nobody_subscribed_to_may_change_its_kind(staff, product, price):
    product_update(product=product, changes={"kind": "bot", "games": []}, actor=staff)

    product.refresh_from_db()
    assert product.kind == "bot"


def test_a_product_with_a_subscription_keeps_its_kind(staff, account, product, price):
    subscribe(account, price)

    with pytest.raises(Conflict) as error:
        product_update(product=product, changes={"kind": "bot", "games": []}, actor=staff)

    assert refused(error.value) == ("kind", "in_use")
    assert error.value.details["subscriptions"] == 1
    product.refresh_from_db()
    assert product.kind == "server"
    # The same kind again is no change at all.
    product_update(product=product, changes={"kind": "server", "name": "Renamed"}, actor=staff)


def test_archiving_a_product_archives_its_prices(staff, product, price):
    other = price_create(
        product=product, currency="USD", unit_amount=1300, interval="month", actor=staff
    )

    product_archive(product=product, actor=staff)

    product.refresh_from_db()
    assert not product.active
    assert not Price.objects.filter(pk__in=[price.pk, other.pk], active=True).exists()
    with pytest.raises(Conflict) as error:
        price_create(product=product, currency="EUR", unit_amount=1, interval="day", actor=staff)
    assert refused(error.value) == ("product", "archived")


# --- Prices ------------------------------------------------------------------------------------


def test_a_price_is_created_with_its_period(staff, product):
    price = price_create(
        product=product,
        currency="eur",
        unit_amount=0,
        interval="hour",
        interval_count=6,
        setup_fee=500,
        trial_days=365,
        actor=staff,
    )

    price.refresh_from_db()
    assert price.id.startswith("price_")
    assert (price.currency, price.unit_amount, price.interval, price.interval_count) == (
        "EUR",
        0,
        "hour",
        6,
    )
    assert (price.setup_fee, price.trial_days, price.active) == (500, 365, True)


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"currency": "XYZ"}, "currency", "unsupported_currency"),
        ({"currency": None}, "currency", "unsupported_currency"),
        ({"interval": "fortnight"}, "recurring.interval", "invalid_recurring"),
        ({"interval_count": 0}, "recurring.interval_count", "invalid_recurring"),
        (
            {"interval": "year", "interval_count": 4},
            "recurring.interval_count",
            "invalid_recurring",
        ),
        ({"interval_count": True}, "recurring.interval_count", "invalid_recurring"),
        ({"unit_amount": -1}, "unit_amount", "out_of_range"),
        ({"unit_amount": True}, "unit_amount", "out_of_range"),
        ({"unit_amount": 12.5}, "unit_amount", "out_of_range"),
        ({"unit_amount": 100_000_000}, "unit_amount", "out_of_range"),
        ({"setup_fee": -5}, "setup_fee", "out_of_range"),
        ({"setup_fee": False}, "setup_fee", "out_of_range"),
        ({"trial_days": 366}, "trial_days", "out_of_range"),
        ({"trial_days": -1}, "trial_days", "out_of_range"),
    ],
)
def test_a_price_is_refused_field_by_field(staff, product, changes, field, code):
    asked = {"currency": "EUR", "unit_amount": 1200, "interval": "month", **changes}

    with pytest.raises(ValidationFailed) as error:
        price_create(product=product, **asked, actor=staff)

    assert refused(error.value) == (field, code)
    assert not Price.objects.exists()


def test_a_price_is_archived_not_edited(staff, price):
    assert not hasattr(catalogue, "price_update")

    price_archive(price=price, actor=staff)
    price_archive(price=price, actor=staff)  # again: nothing more to do

    price.refresh_from_db()
    assert not price.active


# --- Tax rates ---------------------------------------------------------------------------------


def test_a_tax_rate_is_created_for_a_country(staff):
    rate = tax_rate_create(country=" nl ", percentage="21", inclusive=True, actor=staff)

    rate.refresh_from_db()
    assert rate.id.startswith("txr_")
    assert (rate.country, rate.region, rate.percentage, rate.display_name, rate.inclusive) == (
        "NL",
        "",
        Decimal("21"),
        "VAT",
        True,
    )


def test_a_regional_rate_is_an_iso_3166_2_subdivision(staff):
    state = tax_rate_create(
        country="US",
        region="ny",
        percentage=Decimal("8.875"),
        display_name="Sales tax",
        actor=staff,
    )
    written_whole = tax_rate_create(country="US", region="US-CA", percentage=7, actor=staff)

    assert (state.region, state.percentage) == ("US-NY", Decimal("8.875"))
    assert written_whole.region == "US-CA"


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"country": "Netherlands"}, "country", "max_length"),
        ({"country": "N1"}, "country", "invalid"),
        ({"country": "ÄÖ"}, "country", "invalid"),
        ({"country": ""}, "country", "required"),
        ({"country": None}, "country", "invalid"),
        ({"region": "DE-BY"}, "region", "invalid"),  # another country's subdivision
        ({"region": "New York"}, "region", "invalid"),
        ({"percentage": "100.5"}, "percentage", "invalid_tax_rate"),
        ({"percentage": -1}, "percentage", "invalid_tax_rate"),
        ({"percentage": 21.0}, "percentage", "invalid_tax_rate"),
        ({"percentage": "8.87501"}, "percentage", "invalid_tax_rate"),
        ({"percentage": "lots"}, "percentage", "invalid_tax_rate"),
        ({"display_name": " "}, "display_name", "required"),
        ({"display_name": "x" * 51}, "display_name", "max_length"),
        ({"inclusive": "yes"}, "inclusive", "invalid"),
    ],
)
def test_a_tax_rate_is_refused_field_by_field(staff, changes, field, code):
    with pytest.raises(ValidationFailed) as error:
        tax_rate_create(**{"country": "US", "percentage": "21", **changes}, actor=staff)

    assert refused(error.value) == (field, code)
    assert not TaxRate.objects.exists()


def test_a_place_has_one_active_rate(staff):
    first = tax_rate_create(country="NL", percentage="21", actor=staff)
    regional = tax_rate_create(country="NL", region="NL-BQ1", percentage="8", actor=staff)

    with pytest.raises(Conflict) as error:
        tax_rate_create(country="nl", percentage="9", actor=staff)

    assert error.value.status == 409
    assert refused(error.value) == ("country", "already_exists")
    assert error.value.details["tax_rate"] == first.id
    assert first.id in error.value.message
    tax_rate_archive(tax_rate=first, actor=staff)
    replacement = tax_rate_create(country="NL", percentage="9", actor=staff)
    assert list(TaxRate.objects.filter(active=True)) == [replacement, regional]


def test_a_rate_created_meanwhile_by_another_request_is_named(staff, monkeypatch):
    existing = tax_rate_create(country="BE", percentage="21", actor=staff)
    real_check = catalogue._active_tax_rate_conflict
    checks = iter([None])  # the first check ran before the other request committed
    monkeypatch.setattr(
        catalogue,
        "_active_tax_rate_conflict",
        lambda country, region: next(checks, None) or real_check(country, region),
    )

    with pytest.raises(Conflict) as error:
        tax_rate_create(country="BE", percentage="6", actor=staff)

    assert error.value.details["tax_rate"] == existing.id
    assert TaxRate.objects.count() == 1


# --- Coupons -----------------------------------------------------------------------------------


def test_a_percent_coupon_for_some_products(staff, product):
    redeem_by = timezone.now() + timedelta(days=30)

    coupon = coupon_create(
        name="Spring",
        duration="repeating",
        duration_in_months=3,
        percent_off="12.5",
        max_redemptions=100,
        redeem_by=redeem_by,
        products=[product.id],
        actor=staff,
    )

    coupon.refresh_from_db()
    assert coupon.id.startswith("cpn_")
    assert (coupon.percent_off, coupon.amount_off, coupon.currency) == (Decimal("12.50"), None, "")
    assert (coupon.duration, coupon.duration_in_months, coupon.max_redemptions) == (
        "repeating",
        3,
        100,
    )
    assert coupon.redeem_by == redeem_by
    assert list(coupon.products.all()) == [product]


def test_an_amount_coupon_has_a_currency(staff, product):
    coupon = coupon_create(
        name="Five off",
        duration="forever",
        amount_off=500,
        currency="usd",
        products=[product],
        actor=staff,
    )

    assert (coupon.amount_off, coupon.currency, coupon.percent_off) == (500, "USD", None)
    assert list(coupon.products.all()) == [product]


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"name": ""}, "name", "required"),
        ({"duration": "weekly"}, "duration", "invalid_choice"),
        ({"percent_off": None}, "percent_off", "required"),
        ({"amount_off": 100, "currency": "EUR"}, "percent_off", "required"),  # both
        ({"percent_off": 0}, "percent_off", "out_of_range"),
        ({"percent_off": "100.01"}, "percent_off", "out_of_range"),
        ({"percent_off": "-5"}, "percent_off", "out_of_range"),
        ({"percent_off": "12.345"}, "percent_off", "invalid"),
        ({"percent_off": 12.5}, "percent_off", "invalid"),
        ({"percent_off": True}, "percent_off", "invalid"),
        ({"percent_off": "a lot"}, "percent_off", "invalid"),
        ({"percent_off": "NaN"}, "percent_off", "out_of_range"),
        ({"currency": "EUR"}, "currency", "not_allowed"),
        ({"percent_off": None, "amount_off": 0, "currency": "EUR"}, "amount_off", "out_of_range"),
        ({"percent_off": None, "amount_off": 5.5, "currency": "EUR"}, "amount_off", "out_of_range"),
        (
            {"percent_off": None, "amount_off": True, "currency": "EUR"},
            "amount_off",
            "out_of_range",
        ),
        ({"percent_off": None, "amount_off": 500}, "currency", "unsupported_currency"),
        (
            {"percent_off": None, "amount_off": 500, "currency": "ABC"},
            "currency",
            "unsupported_currency",
        ),
        ({"duration": "repeating"}, "duration_in_months", "required"),
        ({"duration": "repeating", "duration_in_months": 0}, "duration_in_months", "out_of_range"),
        ({"duration": "repeating", "duration_in_months": 37}, "duration_in_months", "out_of_range"),
        ({"duration_in_months": 3}, "duration_in_months", "not_allowed"),
        ({"duration": "forever", "duration_in_months": 3}, "duration_in_months", "not_allowed"),
        ({"max_redemptions": 0}, "max_redemptions", "out_of_range"),
        ({"redeem_by": datetime(2020, 1, 1, tzinfo=UTC)}, "redeem_by", "out_of_range"),
        ({"redeem_by": datetime(2099, 1, 1)}, "redeem_by", "invalid"),  # no time zone
        ({"redeem_by": "2099-01-01"}, "redeem_by", "invalid"),
        ({"products": ["prod_missing"]}, "products", "invalid_choice"),
    ],
)
def test_a_coupon_is_refused_field_by_field(staff, changes, field, code):
    asked = {"name": "Welcome", "duration": "once", "percent_off": 10, **changes}

    with pytest.raises(ValidationFailed) as error:
        coupon_create(**asked, actor=staff)

    assert refused(error.value) == (field, code)
    assert not Coupon.objects.exists()


def test_a_coupon_for_an_unknown_product_names_it(staff, product):
    with pytest.raises(ValidationFailed) as error:
        coupon_create(
            name="Spring",
            duration="once",
            percent_off=5,
            products=[product.id, "prod_gone"],
            actor=staff,
        )

    assert "prod_gone" in error.value.message
    assert product.id not in error.value.message


def test_archiving_a_coupon_deactivates_its_codes(staff, coupon):
    code = promotion_code_create(coupon=coupon, code="SPRING", actor=staff)

    coupon_archive(coupon=coupon, actor=staff)

    coupon.refresh_from_db()
    code.refresh_from_db()
    assert (coupon.active, code.active) == (False, False)
    with pytest.raises(Conflict) as error:
        promotion_code_create(coupon=coupon, code="SUMMER", actor=staff)
    assert refused(error.value) == ("coupon", "archived")


# --- Promotion codes ---------------------------------------------------------------------------


def test_a_promotion_code_is_stored_upper_case(staff, coupon):
    expires_at = timezone.now() + timedelta(days=7)

    code = promotion_code_create(
        coupon=coupon,
        code=" welcome-10_a ",
        max_redemptions=5,
        expires_at=expires_at,
        actor=staff,
    )

    code.refresh_from_db()
    assert code.id.startswith("promo_")
    assert (code.code, code.coupon, code.max_redemptions, code.expires_at, code.active) == (
        "WELCOME-10_A",
        coupon,
        5,
        expires_at,
        True,
    )


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"code": "AB"}, "code", "invalid"),
        ({"code": "A" * 51}, "code", "invalid"),
        ({"code": "TEN OFF"}, "code", "invalid"),
        ({"code": "ÉTÉ2026"}, "code", "invalid"),
        ({"code": None}, "code", "invalid"),
        ({"max_redemptions": -1}, "max_redemptions", "out_of_range"),
        ({"max_redemptions": "5"}, "max_redemptions", "out_of_range"),
        ({"expires_at": datetime(2020, 1, 1, tzinfo=UTC)}, "expires_at", "out_of_range"),
    ],
)
def test_a_promotion_code_is_refused_field_by_field(staff, coupon, changes, field, code):
    with pytest.raises(ValidationFailed) as error:
        promotion_code_create(coupon=coupon, **{"code": "SPRING", **changes}, actor=staff)

    assert refused(error.value) == (field, code)
    assert not PromotionCode.objects.exists()


def test_a_promotion_code_is_unique_in_any_case(staff, coupon):
    promotion_code_create(coupon=coupon, code="SPRING", actor=staff)
    promotion_code_deactivate(
        promotion_code=PromotionCode.objects.get(code="SPRING"), actor=staff
    )  # even an inactive code keeps its name

    with pytest.raises(Conflict) as error:
        promotion_code_create(coupon=coupon, code="spring", actor=staff)

    assert error.value.status == 409
    assert refused(error.value) == ("code", "already_exists")
    assert "already exists" in error.value.message


def test_a_code_taken_meanwhile_by_another_request_is_a_conflict(staff, coupon, monkeypatch):
    promotion_code_create(coupon=coupon, code="SPRING", actor=staff)
    # The check ran before the other request committed; the unique index still refuses it.
    monkeypatch.setattr(catalogue, "_promotion_code_exists", lambda code: False)

    with pytest.raises(Conflict) as error:
        promotion_code_create(coupon=coupon, code="Spring", actor=staff)

    assert refused(error.value) == ("code", "already_exists")
    assert PromotionCode.objects.count() == 1


def test_a_promotion_code_is_deactivated(staff, coupon):
    code = promotion_code_create(coupon=coupon, code="SPRING", actor=staff)

    promotion_code_deactivate(promotion_code=code, actor=staff)

    code.refresh_from_db()
    assert not code.active

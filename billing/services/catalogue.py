"""The catalogue staff sell from: products and their prices, tax rates, coupons and promotion
codes.

The catalogue is installation-wide: it belongs to no account. So these services record no
account event (an event belongs to one account's log and goes to that account's webhooks, and a
new price concerns every account or none). Who changed the catalogue is recorded where staff
change it: Django admin's ``LogEntry`` (each add, change and action of ``billing/admin.py``).
What a change does to an account (a subscription's price, a redeemed coupon) is recorded by the
services that do it, as account events.

Nothing here is ever deleted: invoices and subscriptions point at products, prices, coupons and
tax rates as they were sold, so each is archived (``active=False``) instead, and a price is
never edited (``billing/models.py``): a new price is created and the old one archived.
"""

import re
from collections.abc import Collection, Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, overload

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from billing.models import (
    Coupon,
    CouponDuration,
    Price,
    Product,
    ProductKind,
    PromotionCode,
    Subscription,
    TaxRate,
)
from billing.rules.periods import MAX_INTERVAL_COUNT, Interval, InvalidRecurring, validate_recurring
from billing.rules.tax import InvalidTaxRate, is_country, validate_percentage
from hosting.errors import Conflict, ValidationFailed
from hosting.money import UnsupportedCurrency, validate_currency
from servers.models import BotRuntime
from servers.selectors import game_catalogue, region_catalogue
from servers.services.validation import clean_name, validate_resources

# The largest amount a price, a setup fee or a coupon takes, in minor units: eight digits, as
# Stripe allows (999,999.99 EUR). A mistyped amount fails here, not as a database overflow.
MAX_AMOUNT = 99_999_999
MAX_TRIAL_DAYS = 365
# A discount repeats for at most three years, as long as the longest price period
# (billing.rules.periods.MAX_INTERVAL_COUNT); anything longer is a ``forever`` coupon.
MAX_DISCOUNT_MONTHS = MAX_INTERVAL_COUNT[Interval.MONTH]
MAX_REDEMPTIONS = 1_000_000_000
PROMOTION_CODE = re.compile(r"^[A-Z0-9_-]{3,50}$")
# ISO 3166-1 alpha-2 by its shape only: no country list is installed (neither pycountry nor
# django-countries is a dependency, and python-stdnum has none), so "XX" passes; a rate for a
# country nobody is in is harmless, as no billing profile matches it.
# An ISO 3166-2 subdivision, stored whole (``US-NY``); ``NY`` is taken as the rate's country's.
SUBDIVISION = re.compile(r"^(?:(?P<country>[A-Z]{2})-)?(?P<code>[A-Z0-9]{1,3})$")
PERCENT_OFF_STEP = Decimal("0.01")

# Dunning of one plan, in days after the due date (empty: the global settings).
MAX_DUNNING_DAYS = 365
PRODUCT_CHANGES = {
    "name",
    "description",
    "kind",
    "games",
    "regions",
    "runtimes",
    "resources",
    "suspend_after_days",
    "terminate_after_days",
    "backup_limit",
    "backup_storage_mb",
    "schedule_limit",
    "database_limit",
    "allocation_limit",
}
RESOURCES = ("memory_mb", "cpu_percent", "disk_mb")
# What a plan may give in backups: a count, and MB in all.
BACKUP_LIMITS = {"backup_limit": 1000, "backup_storage_mb": 10 * 1024 * 1024}
# And in schedules and databases: a count each.
COUNT_LIMITS = {"schedule_limit": 100, "database_limit": 100, "allocation_limit": 20}


def _conflict(field: str, code: str, message: str, **details: Any) -> Conflict:
    """A 409 naming the field, in the same ``details.fields`` shape as a field error."""
    return Conflict(
        message, details={"fields": [{"name": field, "code": code, "message": message}], **details}
    )


@overload
def _whole_number(
    field: str, value: Any, *, low: int, high: int, allow_none: Literal[False] = False
) -> int: ...
@overload
def _whole_number(
    field: str, value: Any, *, low: int, high: int, allow_none: bool
) -> int | None: ...
def _whole_number(
    field: str, value: Any, *, low: int, high: int, allow_none: bool = False
) -> int | None:
    """An ``int`` (never a bool) from ``low`` to ``high``; ``None`` too when allowed."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationFailed.field(
            field,
            "out_of_range",
            # Translators: %(field)s is a field's name (unit_amount, trial_days, backup_limit...).
            _("%(field)s must be a whole number from %(low)s to %(high)s.")
            % {"field": field, "low": low, "high": high},
        )
    return value


def _text(field: str, value: Any, *, max_length: int, required: bool = False) -> str:
    if not isinstance(value, str):
        raise ValidationFailed.field(
            field,
            "invalid",
            # Translators: %(field)s is a field's name (description, country, display_name...).
            _("%(field)s must be text.") % {"field": field},
        )
    value = value.strip()
    if required and not value:
        raise ValidationFailed.field(
            field, "required", _("%(field)s is required.") % {"field": field}
        )
    if len(value) > max_length:
        raise ValidationFailed.field(
            field,
            "max_length",
            _("%(field)s has at most %(max)s characters.") % {"field": field, "max": max_length},
        )
    return value


def _currency(field: str, code: Any) -> str:
    try:
        return validate_currency(code)
    except UnsupportedCurrency as unknown:
        raise ValidationFailed.field(field, unknown.code, str(unknown)) from None


def _future(field: str, moment: Any) -> datetime | None:
    """``None``, or an aware datetime after now (installation-wide: the real clock)."""
    if moment is None:
        return None
    if not isinstance(moment, datetime) or timezone.is_naive(moment):
        raise ValidationFailed.field(
            field,
            "invalid",
            # Translators: %(field)s is a field's name (redeem_by, expires_at).
            _("%(field)s must be a date and time with a zone.") % {"field": field},
        )
    if moment <= timezone.now():
        raise ValidationFailed.field(
            field, "out_of_range", _("%(field)s must be in the future.") % {"field": field}
        )
    return moment


def _flag(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationFailed.field(
            field,
            "invalid",
            # Translators: %(field)s is a field's name (directly_redeemable).
            _("%(field)s is true or false.") % {"field": field},
        )
    return value


def _choices(
    field: str, values: Any, allowed: Collection[str], *, not_a_list: str, unknown_ones: str
) -> list[str]:
    """A list of distinct known values, in the order given. ``not_a_list``: the refusal of
    anything else; ``unknown_ones``: that of unknown values (``%(listed)s`` names them)."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ValidationFailed.field(field, "invalid", not_a_list)
    chosen = list(dict.fromkeys(values))
    unknown = [value for value in chosen if not isinstance(value, str) or value not in allowed]
    if unknown:
        listed = ", ".join(map(str, unknown))
        raise ValidationFailed.field(field, "invalid_choice", unknown_ones % {"listed": listed})
    return chosen


def _games(slugs: Any) -> list[str]:
    known = set(game_catalogue().values_list("slug", flat=True))
    return _choices(
        "games",
        slugs,
        known,
        # Translators: the first "games" is the field's name.
        not_a_list=_("games must be a list of games."),
        # Translators: %(listed)s lists the games' slugs that are not in the catalogue.
        unknown_ones=_("Unknown games: %(listed)s."),
    )


def _regions(slugs: Any) -> list[str]:
    known = set(region_catalogue().values_list("slug", flat=True))
    return _choices(
        "regions",
        slugs,
        known,
        # Translators: the first "regions" is the field's name.
        not_a_list=_("regions must be a list of regions."),
        # Translators: %(listed)s lists the regions' slugs that are not in the catalogue.
        unknown_ones=_("Unknown regions: %(listed)s."),
    )


def _runtimes(runtimes: Any) -> list[str]:
    return _choices(
        "runtimes",
        runtimes,
        BotRuntime.values,
        # Translators: "runtimes" is the field's name.
        not_a_list=_("runtimes must be a list of bot runtimes."),
        # Translators: %(listed)s lists the runtimes given that are not known.
        unknown_ones=_("Unknown bot runtimes: %(listed)s."),
    )


def _kind(kind: Any) -> str:
    if kind not in ProductKind.values:
        allowed = ", ".join(ProductKind.values)
        raise ValidationFailed.field(
            "kind", "invalid_choice", _("kind must be one of %(choices)s.") % {"choices": allowed}
        )
    return kind


def _product_fits_its_kind(product: Product) -> None:
    """A bot plan allows no games and a server plan no runtimes: neither would ever apply;
    an overdue instance is suspended before it is terminated."""
    if product.kind == ProductKind.BOT and product.games:
        raise ValidationFailed.field("games", "not_allowed", _("A bot plan allows no games."))
    if product.kind == ProductKind.SERVER and product.runtimes:
        raise ValidationFailed.field(
            "runtimes", "not_allowed", _("A game server plan allows no bot runtimes.")
        )
    suspend, terminate = product.suspend_after_days, product.terminate_after_days
    if suspend is not None and terminate is not None and terminate <= suspend:
        raise ValidationFailed.field(
            "terminate_after_days",
            "out_of_range",
            _("terminate_after_days must be after suspend_after_days."),
        )


def _dunning_days(field: str, days: Any) -> int | None:
    low = 0 if field == "suspend_after_days" else 1
    return _whole_number(field, days, low=low, high=MAX_DUNNING_DAYS, allow_none=True)


def _backup_limit(field: str, value: Any) -> int:
    # A server always holds its primary allocation, so a plan gives at least one.
    low = 1 if field == "allocation_limit" else 0
    return _whole_number(field, value, low=low, high=(BACKUP_LIMITS | COUNT_LIMITS)[field])


@transaction.atomic
def product_create(
    *,
    name: str,
    kind: str,
    memory_mb: int,
    cpu_percent: int,
    disk_mb: int,
    description: str = "",
    games: Iterable[str] = (),
    regions: Iterable[str] = (),
    runtimes: Iterable[str] = (),
    suspend_after_days: int | None = None,
    terminate_after_days: int | None = None,
    backup_limit: int = 3,
    backup_storage_mb: int = 10240,
    schedule_limit: int = 5,
    database_limit: int = 1,
    allocation_limit: int = 1,
    actor: Actor,
) -> Product:
    """A plan: what it provisions (within the limits of one server or bot), optionally the
    games, regions or bot runtimes it is limited to (empty: any), and its own dunning: the days
    after an unpaid renewal's due date its server or bot is suspended, then terminated (None:
    the ``BILLING_SUSPEND_AFTER_DAYS`` and ``BILLING_TERMINATE_AFTER_DAYS`` settings), and the
    backups its server or bot may keep (a count and MB in all), and its schedules and databases
    (a count each), and the allocations (ip:port) each server may hold, its primary one
    included."""
    resources = validate_resources(
        {"memory_mb": memory_mb, "cpu_percent": cpu_percent, "disk_mb": disk_mb}
    )
    product = Product(
        name=clean_name(name),
        kind=_kind(kind),
        description=_text("description", description, max_length=500),
        games=_games(games),
        regions=_regions(regions),
        runtimes=_runtimes(runtimes),
        **resources,
        suspend_after_days=_dunning_days("suspend_after_days", suspend_after_days),
        terminate_after_days=_dunning_days("terminate_after_days", terminate_after_days),
        backup_limit=_backup_limit("backup_limit", backup_limit),
        backup_storage_mb=_backup_limit("backup_storage_mb", backup_storage_mb),
        schedule_limit=_backup_limit("schedule_limit", schedule_limit),
        database_limit=_backup_limit("database_limit", database_limit),
        allocation_limit=_backup_limit("allocation_limit", allocation_limit),
    )
    _product_fits_its_kind(product)
    product.save()
    return product


@transaction.atomic
def product_update(*, product: Product, changes: dict[str, Any], actor: Actor) -> Product:
    """Change a plan: ``name``, ``description``, ``games``, ``regions``, ``runtimes``,
    ``resources`` (some or all of ``memory_mb``, ``cpu_percent``, ``disk_mb``),
    ``suspend_after_days``, ``terminate_after_days``, ``backup_limit``,
    ``backup_storage_mb``, ``schedule_limit``, ``database_limit``, ``allocation_limit`` and
    ``kind``, which cannot
    change once a subscription uses one of its prices (409). Servers and bots already
    provisioned keep what they were given."""
    unknown = sorted(set(changes) - PRODUCT_CHANGES)
    if unknown:
        raise ValidationFailed.field(
            unknown[0],
            "unknown_field",
            # Translators: %(field)s is the name of a field sent.
            _("%(field)s cannot be changed on a product.") % {"field": unknown[0]},
        )
    product = Product.objects.select_for_update().get(pk=product.pk)
    if "name" in changes:
        product.name = clean_name(changes["name"])
    if "description" in changes:
        product.description = _text("description", changes["description"], max_length=500)
    if "games" in changes:
        product.games = _games(changes["games"])
    if "regions" in changes:
        product.regions = _regions(changes["regions"])
    if "runtimes" in changes:
        product.runtimes = _runtimes(changes["runtimes"])
    for field in ("suspend_after_days", "terminate_after_days"):
        if field in changes:
            setattr(product, field, _dunning_days(field, changes[field]))
    for field in [*BACKUP_LIMITS, *COUNT_LIMITS]:
        if field in changes:
            setattr(product, field, _backup_limit(field, changes[field]))
    if "resources" in changes:
        resources = changes["resources"]
        if not isinstance(resources, dict) or set(resources) - set(RESOURCES):
            raise ValidationFailed.field(
                "resources", "invalid", _("resources takes memory_mb, cpu_percent and disk_mb.")
            )
        for name, value in validate_resources(resources).items():
            setattr(product, name, value)
    if "kind" in changes and _kind(changes["kind"]) != product.kind:
        subscribed = Subscription.objects.filter(price__product=product).count()
        if subscribed:
            raise _conflict(
                "kind",
                "in_use",
                _(
                    # Translators: %(kind)s is the product's kind as a code: server or bot.
                    "%(count)s subscription(s) use this product's prices, so its kind stays "
                    "%(kind)s; create a new product instead."
                )
                % {"count": subscribed, "kind": product.kind},
                subscriptions=subscribed,
            )
        product.kind = changes["kind"]
    _product_fits_its_kind(product)
    product.save()
    return product


@transaction.atomic
def product_archive(*, product: Product, actor: Actor) -> Product:
    """Stop selling a plan, and every price of it; subscriptions on it renew as before."""
    product = Product.objects.select_for_update().get(pk=product.pk)
    product.active = False
    product.save(update_fields=["active", "updated_at"])
    product.prices.filter(active=True).update(active=False)
    return product


@transaction.atomic
def price_create(
    *,
    product: Product,
    currency: str,
    unit_amount: int,
    interval: str,
    interval_count: int = 1,
    setup_fee: int = 0,
    trial_days: int = 0,
    actor: Actor,
) -> Price:
    """What ``product`` costs in ``currency`` every ``interval_count`` ``interval``s, with an
    optional one-time ``setup_fee`` and a trial of ``trial_days``. Never edited afterwards."""
    product = Product.objects.select_for_update().get(pk=product.pk)
    if not product.active:
        raise _conflict(
            "product", "archived", _("This product is archived; it takes no new prices.")
        )
    currency = _currency("currency", currency)
    try:
        unit, count = validate_recurring(interval, interval_count)
    except InvalidRecurring as refused:
        field = "recurring.interval_count" if interval in Interval else "recurring.interval"
        raise ValidationFailed.field(field, refused.code, str(refused)) from None
    return Price.objects.create(
        product=product,
        currency=currency,
        interval=unit.value,
        interval_count=count,
        unit_amount=_whole_number("unit_amount", unit_amount, low=0, high=MAX_AMOUNT),
        setup_fee=_whole_number("setup_fee", setup_fee, low=0, high=MAX_AMOUNT),
        trial_days=_whole_number("trial_days", trial_days, low=0, high=MAX_TRIAL_DAYS),
    )


@transaction.atomic
def price_archive(*, price: Price, actor: Actor) -> Price:
    """Stop offering a price to new orders; subscriptions on it renew as before."""
    price = Price.objects.select_for_update().get(pk=price.pk)
    if price.active:
        price.active = False
        price.save(update_fields=["active"])
    return price


def _tax_place(country: Any, region: Any) -> tuple[str, str]:
    """``(country, region)`` normalised: ``("NL", "")``, ``("US", "US-NY")``."""
    country = _text("country", country, max_length=2, required=True).upper()
    if not is_country(country):
        raise ValidationFailed.field(
            "country", "invalid", _("country must be a two-letter ISO 3166-1 code, like NL.")
        )
    region = _text("region", region, max_length=100).upper()
    if not region:
        return country, ""
    subdivision = SUBDIVISION.fullmatch(region)
    if subdivision is None or subdivision["country"] not in (None, country):
        raise ValidationFailed.field(
            "region",
            "invalid",
            # Translators: %(country)s is a two-letter country code (NL, US).
            _("region must be an ISO 3166-2 subdivision of %(country)s, like %(country)s-NY.")
            % {"country": country},
        )
    return country, f"{country}-{subdivision['code']}"


def _active_tax_rate_conflict(country: str, region: str) -> Conflict | None:
    existing = TaxRate.objects.filter(country=country, region=region, active=True).first()
    if existing is None:
        return None
    place = region or country
    return _conflict(
        "country",
        "already_exists",
        # Translators: %(place)s is a country or region code (NL, US-NY); %(id)s the rate's id.
        _("%(place)s already has an active tax rate (%(id)s); archive it first.")
        % {"place": place, "id": existing.id},
        tax_rate=existing.id,
    )


@transaction.atomic
def tax_rate_create(
    *,
    country: str,
    percentage: Decimal | int | str,
    region: str = "",
    display_name: str = "VAT",
    inclusive: bool = False,
    actor: Actor,
) -> TaxRate:
    """The tax of a country, or of one of its regions (ISO 3166-2, ``US-NY``); one active rate
    per place (409 naming the one there is). Prices include it when ``inclusive``."""
    country, region = _tax_place(country, region)
    try:
        percentage = validate_percentage(percentage)
    except InvalidTaxRate as refused:
        raise ValidationFailed.field("percentage", refused.code, str(refused)) from None
    if not isinstance(inclusive, bool):
        raise ValidationFailed.field("inclusive", "invalid", _("inclusive must be true or false."))
    rate = TaxRate(
        country=country,
        region=region,
        percentage=percentage,
        inclusive=inclusive,
        display_name=_text("display_name", display_name, max_length=50, required=True),
    )
    if conflict := _active_tax_rate_conflict(country, region):
        raise conflict
    try:
        with transaction.atomic():
            rate.save()
    except IntegrityError:
        # Another request created the same place's rate since the check: name it.
        raise _active_tax_rate_conflict(country, region) or Conflict() from None
    return rate


@transaction.atomic
def tax_rate_archive(*, tax_rate: TaxRate, actor: Actor) -> TaxRate:
    """Stop charging a rate on new invoices (finalized ones keep theirs); its place may then
    get a new rate."""
    tax_rate = TaxRate.objects.select_for_update().get(pk=tax_rate.pk)
    if tax_rate.active:
        tax_rate.active = False
        tax_rate.save(update_fields=["active"])
    return tax_rate


def _percent_off(value: Any) -> Decimal:
    if isinstance(value, float | bool) or not isinstance(value, Decimal | int | str):
        raise ValidationFailed.field(
            "percent_off", "invalid", _("percent_off must be a number (a Decimal, an int or text).")
        )
    try:
        percent = Decimal(value)
    except ArithmeticError:
        raise ValidationFailed.field(
            "percent_off", "invalid", _("percent_off must be a number.")
        ) from None
    if not percent.is_finite() or not 0 < percent <= 100:
        raise ValidationFailed.field(
            "percent_off", "out_of_range", _("percent_off must be above 0 and at most 100.")
        )
    if percent != percent.quantize(PERCENT_OFF_STEP):
        raise ValidationFailed.field(
            "percent_off", "invalid", _("percent_off has at most two decimal places.")
        )
    return percent.quantize(PERCENT_OFF_STEP)


def _products(products: Iterable[Product | str]) -> list[Product]:
    ids = [product.pk if isinstance(product, Product) else product for product in products]
    found = Product.objects.in_bulk([pk for pk in ids if isinstance(pk, str)])
    missing = [str(pk) for pk in dict.fromkeys(ids) if pk not in found]
    if missing:
        listed = ", ".join(missing)
        raise ValidationFailed.field(
            "products",
            "invalid_choice",
            # Translators: %(listed)s lists the products' ids that are not known.
            _("Unknown products: %(listed)s.") % {"listed": listed},
        )
    return list(found.values())


@transaction.atomic
def coupon_create(
    *,
    name: str,
    duration: str,
    percent_off: Decimal | int | str | None = None,
    amount_off: int | None = None,
    currency: str = "",
    duration_in_months: int | None = None,
    max_redemptions: int | None = None,
    redeem_by: datetime | None = None,
    products: Iterable[Product | str] = (),
    directly_redeemable: bool = False,
    actor: Actor,
) -> Coupon:
    """A discount of ``percent_off`` or ``amount_off`` (in ``currency``), for one invoice
    (``once``), ``duration_in_months`` months (``repeating``) or ``forever``; optionally only on
    ``products`` (empty: any), until ``redeem_by``, ``max_redemptions`` times. Customers redeem
    it through its promotion codes, and by its id too when ``directly_redeemable``."""
    if duration not in CouponDuration.values:
        allowed = ", ".join(CouponDuration.values)
        raise ValidationFailed.field(
            "duration",
            "invalid_choice",
            _("duration must be one of %(choices)s.") % {"choices": allowed},
        )
    if (percent_off is None) == (amount_off is None):
        raise ValidationFailed.field(
            "percent_off", "required", _("Give either percent_off or amount_off (exactly one).")
        )
    if percent_off is not None:
        if currency:
            raise ValidationFailed.field(
                "currency", "not_allowed", _("A percent_off coupon has no currency.")
            )
        percent_off = _percent_off(percent_off)
    else:
        amount_off = _whole_number("amount_off", amount_off, low=1, high=MAX_AMOUNT)
        currency = _currency("currency", currency)
    if duration == CouponDuration.REPEATING:
        if duration_in_months is None:
            raise ValidationFailed.field(
                "duration_in_months",
                "required",
                _("A repeating coupon needs duration_in_months."),
            )
        _whole_number("duration_in_months", duration_in_months, low=1, high=MAX_DISCOUNT_MONTHS)
    elif duration_in_months is not None:
        raise ValidationFailed.field(
            "duration_in_months",
            "not_allowed",
            _("Only a repeating coupon has duration_in_months."),
        )
    coupon = Coupon.objects.create(
        name=clean_name(name),
        duration=duration,
        percent_off=percent_off,
        amount_off=amount_off,
        currency=currency,
        duration_in_months=duration_in_months,
        max_redemptions=_whole_number(
            "max_redemptions", max_redemptions, low=1, high=MAX_REDEMPTIONS, allow_none=True
        ),
        redeem_by=_future("redeem_by", redeem_by),
        directly_redeemable=_flag("directly_redeemable", directly_redeemable),
    )
    coupon.products.set(_products(products))
    return coupon


@transaction.atomic
def coupon_update(*, coupon: Coupon, directly_redeemable: bool, actor: Actor) -> Coupon:
    """Let customers order with the coupon's id (``directly_redeemable``), or take that back
    so that only its promotion codes redeem it. The only change a coupon takes: what it
    discounts stays as subscriptions and invoices were sold it. An order checked before the
    change and not yet counted is checked again under the coupon's lock."""
    directly_redeemable = _flag("directly_redeemable", directly_redeemable)
    coupon = Coupon.objects.select_for_update().get(pk=coupon.pk)
    if coupon.directly_redeemable != directly_redeemable:
        coupon.directly_redeemable = directly_redeemable
        coupon.save(update_fields=["directly_redeemable"])
    return coupon


@transaction.atomic
def coupon_archive(*, coupon: Coupon, actor: Actor) -> Coupon:
    """Stop a coupon from being redeemed, and every promotion code of it; subscriptions that
    already have it keep their discount."""
    coupon = Coupon.objects.select_for_update().get(pk=coupon.pk)
    if coupon.active:
        coupon.active = False
        coupon.save(update_fields=["active"])
    coupon.promotion_codes.filter(active=True).update(active=False)
    return coupon


def _promotion_code_exists(code: str) -> bool:
    return PromotionCode.objects.filter(code__iexact=code).exists()


def _promotion_code_taken(code: str) -> Conflict:
    return _conflict(
        "code",
        "already_exists",
        _("The promotion code %(code)s already exists.") % {"code": code},
    )


@transaction.atomic
def promotion_code_create(
    *,
    coupon: Coupon,
    code: str,
    max_redemptions: int | None = None,
    expires_at: datetime | None = None,
    actor: Actor,
) -> PromotionCode:
    """A code customers type to redeem an active ``coupon``: 3 to 50 letters, digits, ``-``
    or ``_``, stored upper-case and unique in any case (409)."""
    coupon = Coupon.objects.select_for_update().get(pk=coupon.pk)
    if not coupon.active:
        raise _conflict("coupon", "archived", _("This coupon is archived; it takes no new codes."))
    code = code.strip().upper() if isinstance(code, str) else ""
    if not PROMOTION_CODE.fullmatch(code):
        raise ValidationFailed.field(
            "code", "invalid", _("A code is 3 to 50 letters, digits, '-' or '_', like WELCOME10.")
        )
    if _promotion_code_exists(code):
        raise _promotion_code_taken(code)
    promotion_code = PromotionCode(
        coupon=coupon,
        code=code,
        expires_at=_future("expires_at", expires_at),
        max_redemptions=_whole_number(
            "max_redemptions", max_redemptions, low=1, high=MAX_REDEMPTIONS, allow_none=True
        ),
    )
    try:
        with transaction.atomic():
            promotion_code.save()
    except IntegrityError:
        raise _promotion_code_taken(code) from None  # taken by a concurrent request
    return promotion_code


@transaction.atomic
def promotion_code_deactivate(*, promotion_code: PromotionCode, actor: Actor) -> PromotionCode:
    """Stop a code from being redeemed; what it discounted stays discounted."""
    promotion_code = PromotionCode.objects.select_for_update().get(pk=promotion_code.pk)
    if promotion_code.active:
        promotion_code.active = False
        promotion_code.save(update_fields=["active"])
    return promotion_code

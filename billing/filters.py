"""Query filters of the billing API lists (CONTRACT §4): products, invoices, credit notes, the
balance ledger and payments.

Lists take one value, a comma-separated list or the parameter repeated (``status=open,paid``);
an unknown value of a known parameter is 400 ``invalid_parameter``, an unknown id simply
matches nothing (ids are opaque, as on every other list). Currencies are ISO codes in any case
(``eur`` is EUR), as the services read them.
"""

import django_filters
from django.db.models import Exists, OuterRef
from django_filters.fields import ChoiceField

from billing.models import (
    BalanceTransaction,
    Coupon,
    CreditNote,
    Invoice,
    InvoiceStatus,
    Payment,
    PaymentStatus,
    Price,
    Product,
    ProductKind,
    PromotionCode,
    Subscription,
    SubscriptionStatus,
    TaxRate,
)
from hosting.api.filters import (
    BooleanParameterFilter,
    ChoiceInFilter,
    CreatedRangeFilterSet,
    StableOrderingFilter,
    UtcDateTimeFilter,
)
from hosting.money import SUPPORTED_CURRENCIES

CURRENCY_CHOICES = [(code, code) for code in sorted(SUPPORTED_CURRENCIES)]


class _CurrencyField(ChoiceField):
    """A currency code in any case, checked against the supported ones as its upper case."""

    def to_python(self, value):
        value = super().to_python(value)
        return value.upper() if isinstance(value, str) else value


class CurrencyFilter(django_filters.ChoiceFilter):
    field_class = _CurrencyField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("choices", CURRENCY_CHOICES)
        super().__init__(*args, **kwargs)


def id_filter(field_name: str, text: str) -> django_filters.CharFilter:
    """An exact id (``sub_...``, ``inv_...``): another account's or an unknown one matches
    nothing, so a filter never tells whether an id exists elsewhere."""
    return django_filters.CharFilter(field_name=field_name, help_text=text)


class ProductFilter(django_filters.FilterSet):
    """Query filters of ``GET /v1/products``."""

    kind = ChoiceInFilter(
        choices=ProductKind.choices,
        help_text="Only plans for this kind of service (`server`, `bot`), or a comma list.",
    )
    currency = CurrencyFilter(
        method="filter_currency",
        help_text="Only products with an active price in this currency (ISO 4217, any case); "
        "their `prices` still list every active price.",
    )

    class Meta:
        model = Product
        fields: list[str] = []

    def filter_currency(self, queryset, name, value):
        priced = Price.objects.filter(product=OuterRef("pk"), active=True, currency=value)
        return queryset.filter(Exists(priced))


class AdminProductFilter(ProductFilter):
    """``GET /v1/admin/products``: archived products too, unless ``active`` says."""

    active = BooleanParameterFilter(help_text="`true`: on sale; `false`: archived.")

    class Meta(ProductFilter.Meta):
        pass


class SubscriptionFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/subscriptions`` (and the dashboard's subscriptions page)."""

    status = ChoiceInFilter(
        choices=SubscriptionStatus.choices,
        help_text="Only subscriptions in this status, or in any of a comma-separated list.",
    )
    price = id_filter("price_id", "Only subscriptions on this price (`price_...`).")
    product = id_filter("price__product_id", "Only subscriptions of this product (`prod_...`).")
    server = id_filter("server_id", "Only the subscription of this server (`srv_...`).")
    bot = id_filter("bot_id", "Only the subscription of this bot (`bot_...`).")
    search = django_filters.CharFilter(
        field_name="order__name",
        lookup_expr="icontains",
        help_text="Only subscriptions whose server or bot name contains this text (any case).",
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("current_period_end", "current_period_end")),
        help_text="created_at or current_period_end, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = Subscription
        fields: list[str] = []


class AdminSubscriptionFilter(SubscriptionFilter):
    account = id_filter("account_id", "Only subscriptions of this customer account (`acct_...`).")

    class Meta(SubscriptionFilter.Meta):
        pass


class InvoiceFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/invoices`` (and the dashboard's invoices page)."""

    status = ChoiceInFilter(
        choices=InvoiceStatus.choices,
        help_text="Only invoices in this status, or in any of a comma-separated list.",
    )
    subscription = id_filter("subscription_id", "Only invoices of this subscription (`sub_...`).")
    currency = CurrencyFilter(help_text="Only invoices in this currency (ISO 4217, any case).")
    due_after = UtcDateTimeFilter(
        field_name="due_date", lookup_expr="gte", help_text="Due at or after (ISO 8601)."
    )
    due_before = UtcDateTimeFilter(
        field_name="due_date", lookup_expr="lt", help_text="Due before (ISO 8601)."
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("due_date", "due_date"), ("total", "total")),
        help_text="created_at, due_date or total, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = Invoice
        fields: list[str] = []


class AdminInvoiceFilter(InvoiceFilter):
    """``GET /v1/admin/invoices``: every account's invoices, or one account's."""

    account = id_filter("account_id", "Only invoices of this customer account (`acct_...`).")

    class Meta(InvoiceFilter.Meta):
        pass


class CreditNoteFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/credit-notes``."""

    invoice = id_filter("invoice_id", "Only credit notes of this invoice (`inv_...`).")

    class Meta:
        model = CreditNote
        fields: list[str] = []


class BalanceTransactionFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/balance-transactions``."""

    kind = ChoiceInFilter(
        choices=BalanceTransaction.Kind.choices,
        help_text="Only entries of this kind, or of any of a comma-separated list.",
    )

    class Meta:
        model = BalanceTransaction
        fields: list[str] = []


class PaymentFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/payments``."""

    status = ChoiceInFilter(
        choices=PaymentStatus.choices,
        help_text="Only payments in this status, or in any of a comma-separated list.",
    )
    invoice = id_filter("invoice_id", "Only payments of this invoice (`inv_...`).")

    class Meta:
        model = Payment
        fields: list[str] = []


class TaxRateFilter(django_filters.FilterSet):
    country = django_filters.CharFilter(
        method="filter_country", help_text="Only rates of this country (ISO 3166-1, any case)."
    )
    active = BooleanParameterFilter(help_text="`true`: in use; `false`: archived.")

    class Meta:
        model = TaxRate
        fields: list[str] = []

    def filter_country(self, queryset, name, value):
        return queryset.filter(country=value.upper())


class CouponFilter(django_filters.FilterSet):
    active = BooleanParameterFilter(help_text="`true`: redeemable; `false`: archived.")

    class Meta:
        model = Coupon
        fields: list[str] = []


class PromotionCodeFilter(django_filters.FilterSet):
    coupon = django_filters.CharFilter(
        field_name="coupon_id", help_text="Only codes of this coupon (`cpn_...`)."
    )
    active = BooleanParameterFilter(help_text="`true`: redeemable; `false`: deactivated.")

    class Meta:
        model = PromotionCode
        fields: list[str] = []

"""The staff's catalogue API: products and their prices, tax rates, coupons and promotion codes
(``/v1/admin/...``, staff keys with ``admin:*``).

Each body is read here (its fields and JSON types); what a value may be (a game that exists, a
percentage in range, a code's shape, one active rate per place) is the catalogue services'
rule (``billing.services.catalogue``), answered as 400 ``validation_failed`` naming the field or
409 ``conflict``. Nothing is deleted: products, prices, tax rates and coupons are archived, as
invoices and subscriptions keep pointing at them.
"""

import django_filters
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from billing.api.serializers import (
    COUPON_EXAMPLES,
    COUPON_LIST_EXAMPLES,
    PRICE_EXAMPLE,
    PRODUCT_EXAMPLE,
    PROMOTION_CODE_EXAMPLES,
    PROMOTION_CODE_LIST_EXAMPLES,
    TAX_RATE_EXAMPLES,
    TAX_RATE_LIST_EXAMPLES,
    CouponSerializer,
    CurrencyField,
    PriceSerializer,
    ProductSerializer,
    PromotionCodeSerializer,
    ShapeField,
    TaxRateSerializer,
)
from billing.filters import AdminProductFilter, BooleanParameterFilter
from billing.models import (
    INTERVAL_CHOICES,
    Coupon,
    CouponDuration,
    Price,
    ProductKind,
    PromotionCode,
    TaxRate,
)
from billing.periods import MAX_INTERVAL_COUNT
from billing.selectors import coupons_all, products_all, promotion_codes_all, tax_rates_all
from billing.services.catalogue import (
    MAX_AMOUNT,
    MAX_DISCOUNT_MONTHS,
    MAX_DUNNING_DAYS,
    MAX_REDEMPTIONS,
    MAX_TRIAL_DAYS,
    coupon_archive,
    coupon_create,
    coupon_update,
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
from hosting.api.schema import CONFLICT, envelope, error_doc
from hosting.api.serializers import EmptyBodySerializer, StrictInputSerializer
from hosting.api.views import (
    ApiViewSet,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    validated,
)
from hosting.errors import NotFound
from servers.api.serializers import ResourcesInputSerializer
from servers.models import RESOURCE_LIMITS

STAFF_READ, STAFF_WRITE = ["admin:read"], ["admin:write"]


# --- Request bodies ---------------------------------------------------------------------------


def _slugs(text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=64), max_length=100, required=False, help_text=text
    )


def _days(field: str, text: str) -> serializers.IntegerField:
    low = 0 if field == "suspend_after_days" else 1
    return serializers.IntegerField(
        required=False, allow_null=True, min_value=low, max_value=MAX_DUNNING_DAYS, help_text=text
    )


def _resource(name: str) -> serializers.IntegerField:
    low, high = RESOURCE_LIMITS[name]
    return serializers.IntegerField(min_value=low, max_value=high)


def _amount(low: int, text: str, **kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=low, max_value=MAX_AMOUNT, help_text=text, **kwargs)


def _max_redemptions() -> serializers.IntegerField:
    return serializers.IntegerField(required=False, min_value=1, max_value=MAX_REDEMPTIONS)


SUSPEND_DAYS = "Days overdue before suspension; null: the global setting."
TERMINATE_DAYS = "Days overdue before termination (after suspension); null: the global setting."


class ProductResourcesInputSerializer(StrictInputSerializer):
    memory_mb = _resource("memory_mb")
    cpu_percent = _resource("cpu_percent")
    disk_mb = _resource("disk_mb")


class ProductCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=ProductKind.choices)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    resources = ProductResourcesInputSerializer(
        help_text="What each server or bot of the plan gets, within the service's limits."
    )
    games = _slugs("Server plans: the games it runs (slugs of GET /v1/games); empty: any.")
    regions = _slugs("The regions it runs in (GET /v1/regions); empty: any.")
    runtimes = _slugs("Bot plans: the runtimes it allows; empty: any.")
    suspend_after_days = _days("suspend_after_days", SUSPEND_DAYS)
    terminate_after_days = _days("terminate_after_days", TERMINATE_DAYS)


class ProductUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    kind = serializers.ChoiceField(choices=ProductKind.choices, required=False)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    resources = ResourcesInputSerializer(required=False)
    games = _slugs("Games it runs; empty: any.")
    regions = _slugs("Regions it runs in; empty: any.")
    runtimes = _slugs("Bot runtimes; empty: any.")
    suspend_after_days = _days("suspend_after_days", SUSPEND_DAYS)
    terminate_after_days = _days("terminate_after_days", TERMINATE_DAYS)


class PriceCreateSerializer(StrictInputSerializer):
    currency = CurrencyField(help_text="ISO 4217, any case.")
    unit_amount = _amount(0, "Per period, in minor units (0: free).")
    interval = serializers.ChoiceField(choices=INTERVAL_CHOICES)
    interval_count = serializers.IntegerField(
        required=False,
        default=1,
        min_value=1,
        max_value=max(MAX_INTERVAL_COUNT.values()),
        help_text="Intervals per period: three years at most (36 months, 156 weeks, ...).",
    )
    setup_fee = _amount(0, "Charged once, on the first invoice.", required=False, default=0)
    trial_days = serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=MAX_TRIAL_DAYS
    )


class TaxRateCreateSerializer(StrictInputSerializer):
    country = ShapeField(r"^[A-Za-z]{2}$", help_text="ISO 3166-1 alpha-2, any case.")
    region = ShapeField(
        r"^(?:(?:[A-Za-z]{2}-)?[A-Za-z0-9]{1,3})?$",
        help_text="ISO 3166-2 subdivision of `country` (`US-NY`, or `NY`); empty: the whole "
        "country.",
        max_length=6,
        required=False,
        allow_blank=True,
        default="",
    )
    percentage = ShapeField(
        r"^(?:100(?:\.0{1,4})?|[0-9]{1,2}(?:\.[0-9]{1,4})?)$",
        help_text='From 0 to 100 as a decimal string, up to 4 places (`"19"`, `"8.875"`).',
    )
    display_name = serializers.CharField(max_length=50, required=False, default="VAT")
    inclusive = serializers.BooleanField(
        required=False, default=False, help_text="Prices include this tax (B2C EU prices)."
    )


DIRECTLY_REDEEMABLE = (
    "`true`: customers may order with the coupon's id (`coupon`) as well as with its "
    "promotion codes; `false` (the default): only with a promotion code, whose own limits, "
    "expiry and deactivation then always apply."
)


class CouponCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    duration = serializers.ChoiceField(choices=CouponDuration.choices)
    percent_off = ShapeField(
        r"^(?:100(?:\.0{1,2})?|[0-9]{1,2}(?:\.[0-9]{1,2})?)$",
        help_text='A decimal string above 0, at most 100, up to 2 places (`"10"`, `"12.5"`).',
        required=False,
    )
    amount_off = _amount(1, "In minor units of currency.", required=False)
    currency = CurrencyField(required=False, help_text="With `amount_off`.")
    duration_in_months = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DISCOUNT_MONTHS,
        help_text="With `duration: repeating`.",
    )
    max_redemptions = _max_redemptions()
    redeem_by = serializers.DateTimeField(required=False, help_text="A moment in the future.")
    applies_to = serializers.ListField(
        child=serializers.CharField(max_length=64),
        max_length=100,
        required=False,
        help_text="Product ids (`prod_...`) it discounts; empty: every product.",
    )
    directly_redeemable = serializers.BooleanField(
        required=False, default=False, help_text=DIRECTLY_REDEEMABLE
    )


class CouponUpdateSerializer(StrictInputSerializer):
    directly_redeemable = serializers.BooleanField(required=False, help_text=DIRECTLY_REDEEMABLE)


class PromotionCodeCreateSerializer(StrictInputSerializer):
    coupon = serializers.CharField(max_length=64, help_text="An active coupon (`coupon_...`).")
    code = ShapeField(
        r"^[A-Za-z0-9_-]{3,50}$", help_text="3 to 50 letters, digits, - or _; stored upper-case."
    )
    max_redemptions = _max_redemptions()
    expires_at = serializers.DateTimeField(required=False, help_text="A moment in the future.")


# --- Filters ----------------------------------------------------------------------------------


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


# --- Documentation ----------------------------------------------------------------------------

STAFF_PRODUCT_RESPONSE = envelope("product", ProductSerializer(), name="StaffProductEnvelope")
PRICE_RESPONSE = envelope("price", PriceSerializer())
TAX_RATE_RESPONSE = envelope("tax_rate", TaxRateSerializer())
COUPON_RESPONSE = envelope("coupon", CouponSerializer())
PROMOTION_CODE_RESPONSE = envelope("promotion_code", PromotionCodeSerializer())
STAFF_PRODUCT_EXAMPLES = [
    OpenApiExample("A game-server plan", value={"product": PRODUCT_EXAMPLE}, response_only=True)
]
PRICE_EXAMPLES = [OpenApiExample("Monthly", value={"price": PRICE_EXAMPLE}, response_only=True)]
NO_SUCH_COUPON = error_doc(
    404, "not_found", "`not_found`: no coupon with the id in `coupon`.", "No coupon with this id."
)
FIELD_RULES = "A value the catalogue refuses is 400 `validation_failed` naming the field."
TAGS = ["Staff: catalogue"]


def _doc(summary: str, description: str = "", **kwargs):
    return extend_schema(summary=summary, description=description, tags=TAGS, **kwargs)


PRODUCT_DOCS = dict(
    list=_doc(
        "List every product",
        "The whole catalogue, archived products too (`active=false`), newest first, each with "
        "every price (archived ones with `active: false`).",
        examples=[OpenApiExample("A plan", value=PRODUCT_EXAMPLE, response_only=True)],
    ),
    retrieve=_doc(
        "Get any product", responses=STAFF_PRODUCT_RESPONSE, examples=STAFF_PRODUCT_EXAMPLES
    ),
    create=_doc(
        "Create a product",
        f"A plan customers can order once it has a price. {FIELD_RULES}",
        request=ProductCreateSerializer,
        responses={201: STAFF_PRODUCT_RESPONSE},
        examples=[
            OpenApiExample(
                "Minecraft 4 GB",
                value={
                    "name": "Minecraft 4 GB",
                    "kind": "server",
                    "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
                    "games": ["minecraft-java"],
                },
                request_only=True,
            ),
            *STAFF_PRODUCT_EXAMPLES,
        ],
    ),
    partial_update=_doc(
        "Change a product",
        "Any of the fields. Servers and bots already provisioned keep their resources. The "
        f"`kind` of a product with subscriptions cannot change (409 `conflict`). {FIELD_RULES}",
        request=ProductUpdateSerializer,
        responses={200: STAFF_PRODUCT_RESPONSE, 409: CONFLICT},
        examples=[
            OpenApiExample("More disk", value={"resources": {"disk_mb": 30720}}, request_only=True),
            *STAFF_PRODUCT_EXAMPLES,
        ],
    ),
    archive=_doc(
        "Archive a product",
        "Takes the plan off sale; its subscriptions go on. No body.",
        request=None,
        responses=STAFF_PRODUCT_RESPONSE,
        examples=STAFF_PRODUCT_EXAMPLES,
    ),
    prices=_doc(
        "Add a price to a product",
        f"A price never changes once created: add a new one and archive the old. {FIELD_RULES}",
        request=PriceCreateSerializer,
        responses={201: PRICE_RESPONSE},
        examples=[
            OpenApiExample(
                "12 EUR a month",
                value={"currency": "EUR", "unit_amount": 1200, "interval": "month"},
                request_only=True,
            ),
            *PRICE_EXAMPLES,
        ],
    ),
)
PRICE_DOCS = dict(
    archive=_doc(
        "Archive a price",
        "Stops new orders at this price; subscriptions on it renew at it. No body.",
        request=None,
        responses=PRICE_RESPONSE,
        examples=PRICE_EXAMPLES,
    ),
)
TAX_RATE_DOCS = dict(
    list=_doc("List tax rates", "By country and region.", examples=TAX_RATE_LIST_EXAMPLES),
    create=_doc(
        "Create a tax rate",
        "One active rate per country and region (409 `conflict`: archive the old one first). "
        f"{FIELD_RULES}",
        request=TaxRateCreateSerializer,
        responses={201: TAX_RATE_RESPONSE, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "New York sales tax",
                value={
                    "country": "US",
                    "region": "NY",
                    "percentage": "8.875",
                    "display_name": "Sales tax",
                },
                request_only=True,
            ),
            *TAX_RATE_EXAMPLES,
        ],
    ),
    archive=_doc(
        "Archive a tax rate",
        "Invoices finalized from now on no longer use it. No body.",
        request=None,
        responses=TAX_RATE_RESPONSE,
        examples=TAX_RATE_EXAMPLES,
    ),
)
COUPON_DOCS = dict(
    list=_doc("List coupons", examples=COUPON_LIST_EXAMPLES),
    retrieve=_doc("Get a coupon", responses=COUPON_RESPONSE, examples=COUPON_EXAMPLES),
    create=_doc(
        "Create a coupon",
        "`percent_off` or `amount_off` with `currency`; `duration` `once`, `repeating` (with "
        f"`duration_in_months`) or `forever`. {FIELD_RULES}",
        request=CouponCreateSerializer,
        responses={201: COUPON_RESPONSE},
        examples=[
            OpenApiExample(
                "10 % for three months",
                value={
                    "name": "Welcome 10 %",
                    "percent_off": "10",
                    "duration": "repeating",
                    "duration_in_months": 3,
                    "max_redemptions": 500,
                },
                request_only=True,
            ),
            OpenApiExample(
                "A partner's coupon, ordered by its id",
                value={
                    "name": "Partner 20 %",
                    "percent_off": "20",
                    "duration": "once",
                    "directly_redeemable": True,
                },
                request_only=True,
            ),
            *COUPON_EXAMPLES,
        ],
    ),
    partial_update=_doc(
        "Change whether a coupon is redeemed by its id",
        "`directly_redeemable` is the one thing a coupon changes: `true` lets customers order "
        "(and check) with its id; `false` leaves only its promotion codes, and an order "
        "checked before the change is refused when it is counted (400 `validation_failed`, "
        f"`coupon_code_required`). What it discounts stays discounted. {FIELD_RULES}",
        request=CouponUpdateSerializer,
        responses=COUPON_RESPONSE,
        examples=[
            OpenApiExample(
                "Ordered by its id", value={"directly_redeemable": True}, request_only=True
            ),
            OpenApiExample(
                "Only through its codes", value={"directly_redeemable": False}, request_only=True
            ),
            *COUPON_EXAMPLES,
        ],
    ),
    archive=_doc(
        "Archive a coupon",
        "No new redemptions, by it or its codes; what it discounts stays discounted. No body.",
        request=None,
        responses=COUPON_RESPONSE,
        examples=COUPON_EXAMPLES,
    ),
)
PROMOTION_CODE_DOCS = dict(
    list=_doc("List promotion codes", examples=PROMOTION_CODE_LIST_EXAMPLES),
    create=_doc(
        "Create a promotion code",
        "A code customers type for an active coupon; stored upper-case, unique in any case "
        f"(409 `conflict`). {FIELD_RULES}",
        request=PromotionCodeCreateSerializer,
        responses={201: PROMOTION_CODE_RESPONSE, 404: NO_SUCH_COUPON, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "WELCOME10",
                value={"coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc", "code": "welcome10"},
                request_only=True,
            ),
            *PROMOTION_CODE_EXAMPLES,
        ],
    ),
    deactivate=_doc(
        "Deactivate a promotion code",
        "No body.",
        request=None,
        responses=PROMOTION_CODE_RESPONSE,
        examples=PROMOTION_CODE_EXAMPLES,
    ),
)


# --- Views ------------------------------------------------------------------------------------


@extend_schema_view(**PRODUCT_DOCS)
class AdminProductViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "products"
    resource_key = "product"
    serializer_class = ProductSerializer
    filterset_classes = {"list": AdminProductFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "archive": STAFF_WRITE,
        "prices": STAFF_WRITE,
    }

    def get_queryset(self):
        return products_all()

    def _answer(self, product, status: int = 200) -> Response:
        return Response(
            {"product": ProductSerializer(products_all().get(pk=product.pk)).data}, status=status
        )

    def create(self, request):
        body = dict(validated(ProductCreateSerializer, request))
        resources = body.pop("resources")
        product = product_create(**body, **resources, actor=Actor.from_request(request))
        answer = self._answer(product)
        return created(request, answer.data, f"/v1/admin/products/{product.id}")

    def partial_update(self, request, pk: str):
        product = self.get_object()
        if changes := dict(validated(ProductUpdateSerializer, request)):
            product = product_update(
                product=product, changes=changes, actor=Actor.from_request(request)
            )
        return self._answer(product)

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        product = product_archive(product=self.get_object(), actor=Actor.from_request(request))
        return self._answer(product)

    @action(detail=True, methods=["post"])
    def prices(self, request, pk: str):
        product = self.get_object()
        body = validated(PriceCreateSerializer, request)
        price = price_create(product=product, **body, actor=Actor.from_request(request))
        return created(
            request, {"price": PriceSerializer(price).data}, f"/v1/admin/products/{product.id}"
        )


@extend_schema_view(**PRICE_DOCS)
class AdminPriceViewSet(ApiViewSet):
    serializer_class = PriceSerializer
    required_scopes = {"archive": STAFF_WRITE}

    def get_queryset(self):
        return Price.objects.all()

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        price = price_archive(price=self.get_object(), actor=Actor.from_request(request))
        return Response({"price": PriceSerializer(price).data})


@extend_schema_view(**TAX_RATE_DOCS)
class AdminTaxRateViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "tax_rates"
    serializer_class = TaxRateSerializer
    filterset_classes = {"list": TaxRateFilter}
    required_scopes = {"list": STAFF_READ, "create": STAFF_WRITE, "archive": STAFF_WRITE}

    def get_queryset(self):
        return tax_rates_all()

    def create(self, request):
        body = validated(TaxRateCreateSerializer, request)
        rate = tax_rate_create(**body, actor=Actor.from_request(request))
        return created(request, {"tax_rate": TaxRateSerializer(rate).data}, "/v1/admin/tax-rates")

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        rate = tax_rate_archive(tax_rate=self.get_object(), actor=Actor.from_request(request))
        return Response({"tax_rate": TaxRateSerializer(rate).data})


@extend_schema_view(**COUPON_DOCS)
class AdminCouponViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "coupons"
    resource_key = "coupon"
    serializer_class = CouponSerializer
    filterset_classes = {"list": CouponFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "archive": STAFF_WRITE,
    }

    def get_queryset(self):
        return coupons_all()

    def _answer(self, coupon) -> dict:
        return {"coupon": CouponSerializer(coupons_all().get(pk=coupon.pk)).data}

    def create(self, request):
        body = dict(validated(CouponCreateSerializer, request))
        products = body.pop("applies_to", [])
        coupon = coupon_create(**body, products=products, actor=Actor.from_request(request))
        return created(request, self._answer(coupon), f"/v1/admin/coupons/{coupon.id}")

    def partial_update(self, request, pk: str):
        coupon = self.get_object()
        if changes := dict(validated(CouponUpdateSerializer, request)):
            coupon = coupon_update(coupon=coupon, **changes, actor=Actor.from_request(request))
        return Response(self._answer(coupon))

    @action(detail=True, methods=["post"])
    def archive(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        coupon = coupon_archive(coupon=self.get_object(), actor=Actor.from_request(request))
        return Response(self._answer(coupon))


@extend_schema_view(**PROMOTION_CODE_DOCS)
class AdminPromotionCodeViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "promotion_codes"
    serializer_class = PromotionCodeSerializer
    filterset_classes = {"list": PromotionCodeFilter}
    required_scopes = {"list": STAFF_READ, "create": STAFF_WRITE, "deactivate": STAFF_WRITE}

    def get_queryset(self):
        return promotion_codes_all()

    def create(self, request):
        body = dict(validated(PromotionCodeCreateSerializer, request))
        coupon = coupons_all().filter(pk=body.pop("coupon")).first()
        if coupon is None:
            raise NotFound("No coupon with this id.")
        code = promotion_code_create(coupon=coupon, **body, actor=Actor.from_request(request))
        return created(
            request,
            {"promotion_code": PromotionCodeSerializer(code).data},
            f"/v1/admin/coupons/{coupon.id}",
        )

    @action(detail=True, methods=["post"])
    def deactivate(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        code = promotion_code_deactivate(
            promotion_code=self.get_object(),
            actor=Actor.from_request(request),
        )
        return Response({"promotion_code": PromotionCodeSerializer(code).data})

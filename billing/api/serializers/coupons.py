"""Coupons and promotion codes: what they show, checking one against a price, and the bodies with
which staff make, change and deactivate them.
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from billing.api.serializers.fields import (
    CurrencyField,
    ExactDecimalField,
    ShapeField,
    catalogue_amount,
)
from billing.models import Coupon, CouponDuration, PromotionCode
from billing.representations import coupon_representation, promotion_code_representation
from billing.services.catalogue import MAX_DISCOUNT_MONTHS, MAX_REDEMPTIONS
from hosting.api.serializers import RepresentedBy, StrictInputSerializer


class BlankAsNullField(serializers.CharField):
    def to_representation(self, value):
        return value or None


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class ProductIdsField(serializers.Field):
    def to_representation(self, value):
        return sorted(product.id for product in value.all())


class CouponSerializer(RepresentedBy, serializers.ModelSerializer):
    """A discount: `percent_off` or `amount_off` (+ `currency`), for how long, how often."""

    represent = staticmethod(coupon_representation)

    percent_off = ExactDecimalField(
        read_only=True, allow_null=True, help_text='A decimal string (`"10"`, `"12.5"`).'
    )
    currency = BlankAsNullField(
        read_only=True, allow_null=True, help_text="Of `amount_off`; null for a percentage."
    )
    applies_to = ProductIdsField(
        source="products",
        read_only=True,
        help_text="The product ids it discounts; empty: every product.",
    )

    class Meta:
        model = Coupon
        fields = [
            "id",
            "name",
            "percent_off",
            "amount_off",
            "currency",
            "duration",
            "duration_in_months",
            "max_redemptions",
            "times_redeemed",
            "redeem_by",
            "applies_to",
            "directly_redeemable",
            "active",
            "created_at",
        ]
        read_only_fields = fields


class PromotionCodeSerializer(RepresentedBy, serializers.ModelSerializer):
    """A code customers type to redeem a coupon."""

    represent = staticmethod(promotion_code_representation)

    coupon = serializers.CharField(source="coupon_id", read_only=True)

    class Meta:
        model = PromotionCode
        fields = [
            "id",
            "code",
            "coupon",
            "active",
            "max_redemptions",
            "times_redeemed",
            "expires_at",
            "created_at",
        ]
        read_only_fields = fields


class CouponValidationSerializer(serializers.Serializer):
    """A coupon that applies to the price, and the code that named it."""

    coupon = CouponSerializer(read_only=True)
    promotion_code = PromotionCodeSerializer(
        read_only=True, allow_null=True, help_text="Null when a coupon id was given."
    )


class CouponValidateSerializer(StrictInputSerializer):
    price = serializers.CharField(max_length=64, help_text="The price to be ordered.")
    promotion_code = serializers.CharField(
        max_length=50, required=False, help_text="A code the customer typed."
    )
    coupon = serializers.CharField(
        max_length=64,
        required=False,
        help_text="Or the id of a coupon staff made `directly_redeemable`.",
    )

    def validate(self, attrs):
        if ("promotion_code" in attrs) == ("coupon" in attrs):
            raise serializers.ValidationError(
                {
                    "promotion_code": [
                        ErrorDetail("Give a promotion_code or a coupon (one of them).", "required")
                    ]
                }
            )
        return attrs


def _max_redemptions() -> serializers.IntegerField:
    return serializers.IntegerField(required=False, min_value=1, max_value=MAX_REDEMPTIONS)


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
    amount_off = catalogue_amount(1, "In minor units of currency.", required=False)
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

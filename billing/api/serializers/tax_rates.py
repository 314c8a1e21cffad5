"""Tax rates, and the body with which staff configure one (one active rate per place is the
catalogue services' rule).
"""

from rest_framework import serializers

from billing.api.serializers.fields import ExactDecimalField, ShapeField
from billing.models import TaxRate
from billing.representations import tax_rate_representation
from hosting.api.serializers import RepresentedBy, StrictInputSerializer


class TaxRateSerializer(RepresentedBy, serializers.ModelSerializer):
    """A country's (or region's) tax rate."""

    represent = staticmethod(tax_rate_representation)

    region = serializers.CharField(
        read_only=True, help_text="ISO 3166-2 subdivision (`US-NY`); empty: the whole country."
    )
    percentage = ExactDecimalField(
        read_only=True, help_text='Exact, as a decimal string (`"19"`, `"8.875"`).'
    )

    class Meta:
        model = TaxRate
        fields = [
            "id",
            "display_name",
            "country",
            "region",
            "percentage",
            "inclusive",
            "active",
            "created_at",
        ]
        read_only_fields = fields


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

"""The billing profile (who invoices are made out to), and the bodies that change it: the
customer's and the staff's, which adds what only staff set.
"""

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from billing.api.serializers.fields import ShapeField
from billing.models import BillingProfile
from billing.representations import billing_profile_representation
from billing.services.profile import STAFF_ONLY_FIELDS, VAT_ID_INPUT_LIMIT
from hosting.api.serializers import RepresentedBy, StrictInputSerializer


class BillingAddressSerializer(serializers.Serializer):
    line1 = serializers.CharField(source="address_line1", read_only=True)
    line2 = serializers.CharField(source="address_line2", read_only=True)
    postal_code = serializers.CharField(read_only=True)
    city = serializers.CharField(read_only=True)
    region = serializers.CharField(
        read_only=True,
        help_text=(
            "The ISO 3166-2 code (`US-NY`) when what was typed reads as a subdivision of the "
            "country (`NY`, `us-ny`), and regional tax rates apply; other text as typed."
        ),
    )
    country = serializers.CharField(
        read_only=True, help_text="ISO 3166-1 alpha-2 code; empty until set."
    )


class BillingProfileSerializer(RepresentedBy, serializers.ModelSerializer):
    """Who the account's invoices are made out to (copied onto each invoice at finalization)."""

    represent = staticmethod(billing_profile_representation)

    id = serializers.CharField(
        source="account_id",
        read_only=True,
        help_text="The account's id (`acct_…`): an account has one billing profile.",
    )
    email = serializers.CharField(
        read_only=True, help_text="Where invoices are sent; may be empty."
    )
    address = BillingAddressSerializer(source="*", read_only=True)
    payment_gateways = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="The gateways this account pays through, in the order they collect, when "
        'the hosting company gave it its own (say `["bank_transfer"]`: no cards); empty: '
        "the service's default. Set by staff.",
    )
    currency = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The account's billing currency, fixed by its first invoice; null until then.",
    )
    updated_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="Null until anything is set."
    )

    class Meta:
        model = BillingProfile
        fields = [
            "id",
            "legal_name",
            "email",
            "address",
            "vat_id",
            "tax_exempt",
            "payment_gateways",
            "currency",
            "updated_at",
        ]
        read_only_fields = fields


def _profile_text(limit: int, text: str = "") -> serializers.CharField:
    return serializers.CharField(
        max_length=limit, required=False, allow_blank=True, help_text=text or None
    )


class BillingProfileUpdateSerializer(StrictInputSerializer):
    """Any of these; empty text clears a field. The currency is not set here: the first
    invoice fixes it."""

    legal_name = _profile_text(200, "The company or person invoices are made out to.")
    email = serializers.EmailField(
        max_length=254, required=False, allow_blank=True, help_text="Where invoices are sent."
    )
    address_line1 = _profile_text(200)
    address_line2 = _profile_text(200)
    postal_code = _profile_text(20)
    city = _profile_text(100)
    region = _profile_text(100)
    country = ShapeField(
        r"^([A-Za-z]{2})?$",
        required=False,
        allow_blank=True,
        help_text="ISO 3166-1 alpha-2 code (`DE`), in any case.",
    )
    vat_id = _profile_text(
        VAT_ID_INPUT_LIMIT,
        "Checked offline against `country` (format and check digits) and stored normalized "
        "(`de 136.695.976` is `DE136695976`).",
    )

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as refused:
            # What only staff set is named as such, not as a field this API does not know.
            if isinstance(refused.detail, dict):
                for name in STAFF_ONLY_FIELDS & set(refused.detail):
                    refused.detail[name] = [
                        ErrorDetail("Only the hosting company's staff set this.", "staff_only")
                    ]
            raise


class StaffBillingProfileUpdateSerializer(BillingProfileUpdateSerializer):
    tax_exempt = serializers.BooleanField(
        required=False, help_text="Charge the account no tax (with a note on its invoices)."
    )
    payment_gateways = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_empty=True,
        help_text="The account's own gateways in collection order (`credit`, `stripe`, "
        "`bank_transfer`: those this service has), each once; `[]` goes back to the "
        "service's default.",
    )

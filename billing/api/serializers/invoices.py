"""Invoices, their lines and their payments, and the bodies that pay an invoice or mark it paid."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from billing.models import Invoice, InvoiceLine, Payment
from billing.representations import (
    invoice_line_representation,
    invoice_representation,
    payment_representation,
)
from hosting.api.serializers import RepresentedBy, StrictInputSerializer


class InvoiceLinePeriodSerializer(serializers.Serializer):
    start = serializers.DateTimeField(source="period_start", read_only=True, allow_null=True)
    end = serializers.DateTimeField(source="period_end", read_only=True, allow_null=True)


class InvoiceLineSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(invoice_line_representation)

    price = serializers.CharField(source="price_id", read_only=True, allow_null=True)
    period = InvoiceLinePeriodSerializer(source="*", read_only=True)

    class Meta:
        model = InvoiceLine
        fields = [
            "id",
            "description",
            "price",
            "quantity",
            "unit_amount",
            "amount",
            "discount_amount",
            "tax_amount",
            "period",
            "proration",
        ]
        read_only_fields = fields


@extend_schema_field(
    {
        "type": "object",
        "description": "Who the invoice is made out to, as the billing profile was when it was "
        "finalized; empty (`{}`) on a draft.",
        "properties": {
            "name": {"type": "string"},
            "email": {"type": "string"},
            "address_lines": {"type": "array", "items": {"type": "string"}},
            "country": {"type": "string", "description": "ISO 3166-1 alpha-2; may be empty."},
            "vat_id": {"type": "string"},
            "tax_exempt": {"type": "boolean"},
        },
    }
)
class InvoiceCustomerField(serializers.DictField):
    """The buyer snapshot (``Invoice.buyer``): a fixed shape once finalized, empty before."""


class InvoiceSerializer(RepresentedBy, serializers.ModelSerializer):
    """An invoice with its lines; amounts in minor units of ``currency``."""

    represent = staticmethod(invoice_representation)

    number = serializers.CharField(
        read_only=True, allow_null=True, help_text="Given when the invoice is finalized."
    )
    subscription = serializers.CharField(source="subscription_id", read_only=True, allow_null=True)
    lines = InvoiceLineSerializer(many=True, read_only=True)
    customer = InvoiceCustomerField(source="buyer", read_only=True)
    notes = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Printed on the invoice, such as the reverse-charge statement.",
    )

    class Meta:
        model = Invoice
        fields = [
            "id",
            "number",
            "status",
            "billing_reason",
            "subscription",
            "currency",
            "period_start",
            "period_end",
            "lines",
            "subtotal",
            "discount",
            "tax",
            "total",
            "amount_paid",
            "amount_credited",
            "amount_remaining",
            "due_date",
            "customer",
            "notes",
            "created_at",
            "finalized_at",
            "paid_at",
            "voided_at",
            "marked_uncollectible_at",
        ]
        read_only_fields = fields


class PaymentSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(payment_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True)

    class Meta:
        model = Payment
        fields = [
            "id",
            "invoice",
            "gateway",
            "status",
            "amount",
            "amount_refunded",
            "currency",
            "reference",
            "failure_message",
            "created_at",
            "succeeded_at",
            "failed_at",
            "refunded_at",
        ]
        read_only_fields = fields


class InvoicePaySerializer(StrictInputSerializer):
    source = serializers.ChoiceField(
        choices=[("credit", "Account credit"), ("card", "A saved card")],
        help_text="Where the money comes from: `credit`, the account's balance, or `card`, a "
        "saved card (when the service offers cards).",
    )
    payment_method = serializers.CharField(
        required=False,
        max_length=64,
        help_text="With `card`: which saved card (`pm_…`); the default card when left out.",
    )
    return_url = serializers.URLField(
        required=False,
        max_length=500,
        help_text="With `card`: where the bank sends the customer back after 3-D Secure; the "
        "dashboard's invoice page when left out.",
    )


class NextActionSerializer(serializers.Serializer):
    type = serializers.ChoiceField(
        choices=["redirect_to_url", "use_stripe_sdk"],
        read_only=True,
        help_text="`redirect_to_url`: send the customer to `url`; `use_stripe_sdk`: give "
        "`client_secret` to Stripe.js (`handleNextAction`).",
    )
    url = serializers.URLField(
        read_only=True, allow_null=True, help_text="With `redirect_to_url`; else null."
    )
    client_secret = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The PaymentIntent's client secret, for Stripe.js; null with `redirect_to_url`.",
    )


class InvoicePayAnswerSerializer(serializers.Serializer):
    """The answer to ``POST /v1/invoices/{id}/pay`` (documentation: the view builds it)."""

    invoice = InvoiceSerializer(read_only=True)
    payment = PaymentSerializer(read_only=True, allow_null=True)
    next_action = NextActionSerializer(read_only=True, allow_null=True)


class InvoiceMarkPaidSerializer(StrictInputSerializer):
    reference = serializers.CharField(
        max_length=200, help_text="The bank transfer's reference, to find the money again."
    )

"""API representations of the billing objects, and the request bodies of the billing API.

Each output serializer answers with its resource's representation function
(``billing/representations.py``, shared with the event log); its declared fields document that
answer for OpenAPI, held equal to it by ``tests/api/test_representations.py``.
"""

from drf_spectacular.utils import OpenApiExample, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from billing.models import (
    INTERVAL_CHOICES,
    BalanceTransaction,
    BillingProfile,
    CreditNote,
    Invoice,
    InvoiceLine,
    Payment,
    Price,
    Product,
)
from billing.money import SUPPORTED_CURRENCIES
from billing.representations import (
    balance_transaction_representation,
    billing_profile_representation,
    credit_note_representation,
    invoice_line_representation,
    invoice_representation,
    payment_representation,
    price_representation,
    product_representation,
)
from billing.services.profile import STAFF_ONLY_FIELDS, VAT_ID_INPUT_LIMIT
from hosting.api.serializers import RepresentedBy, StrictInputSerializer

# The largest amount a body may carry (ten billion in a two-decimal currency): far past any real
# adjustment, and small enough that no sum of them leaves the 64-bit columns.
AMOUNT_MAX = 10**12


class PriceRecurringSerializer(serializers.Serializer):
    interval = serializers.ChoiceField(choices=INTERVAL_CHOICES, read_only=True)
    interval_count = serializers.IntegerField(read_only=True)


class PriceSerializer(RepresentedBy, serializers.ModelSerializer):
    """What a product costs in one currency, every ``interval_count`` ``interval``s."""

    represent = staticmethod(price_representation)

    product = serializers.CharField(source="product_id", read_only=True)
    recurring = PriceRecurringSerializer(source="*", read_only=True)

    class Meta:
        model = Price
        fields = [
            "id", "product", "currency", "unit_amount", "recurring", "setup_fee", "trial_days",
            "active", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class ProductResourcesSerializer(serializers.Serializer):
    memory_mb = serializers.IntegerField(read_only=True)
    cpu_percent = serializers.IntegerField(read_only=True)
    disk_mb = serializers.IntegerField(read_only=True)


def product_for_sale_representation(product: Product) -> dict:
    """A product with its active prices (``billing.selectors.products_for_sale`` reads them)."""
    return product_representation(product, prices=product.active_prices)


class ProductSerializer(RepresentedBy, serializers.ModelSerializer):
    """A plan and what it provisions, with the prices it is sold at."""

    represent = staticmethod(product_for_sale_representation)

    resources = ProductResourcesSerializer(source="*", read_only=True)
    games = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Games allowed; empty: any."
    )
    regions = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Regions allowed; empty: any."
    )
    runtimes = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Bot runtimes; empty: any."
    )
    prices = PriceSerializer(source="active_prices", many=True, read_only=True)

    class Meta:
        model = Product
        fields = [
            "id", "name", "description", "kind", "resources", "games", "regions", "runtimes",
            "active", "created_at", "prices",
        ]  # fmt: skip
        read_only_fields = fields


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
            "id", "description", "price", "quantity", "unit_amount", "amount",
            "discount_amount", "tax_amount", "period", "proration",
        ]  # fmt: skip
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
            "id", "number", "status", "billing_reason", "subscription", "currency",
            "period_start", "period_end", "lines", "subtotal", "discount", "tax", "total",
            "amount_paid", "amount_credited", "amount_remaining", "due_date", "customer",
            "notes", "created_at", "finalized_at", "paid_at", "voided_at",
            "marked_uncollectible_at",
        ]  # fmt: skip
        read_only_fields = fields


class CreditNoteSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(credit_note_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True)

    class Meta:
        model = CreditNote
        fields = [
            "id", "number", "invoice", "currency", "amount", "reason", "memo", "refund_to",
            "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class PaymentSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(payment_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True)

    class Meta:
        model = Payment
        fields = [
            "id", "invoice", "gateway", "status", "amount", "currency", "reference",
            "failure_message", "created_at", "succeeded_at", "failed_at", "refunded_at",
        ]  # fmt: skip
        read_only_fields = fields


class BalanceTransactionSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(balance_transaction_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True, allow_null=True)
    credit_note = serializers.CharField(source="credit_note_id", read_only=True, allow_null=True)

    class Meta:
        model = BalanceTransaction
        fields = [
            "id", "kind", "amount", "currency", "ending_balance", "description", "invoice",
            "credit_note", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class BillingAddressSerializer(serializers.Serializer):
    line1 = serializers.CharField(source="address_line1", read_only=True)
    line2 = serializers.CharField(source="address_line2", read_only=True)
    postal_code = serializers.CharField(read_only=True)
    city = serializers.CharField(read_only=True)
    region = serializers.CharField(read_only=True)
    country = serializers.CharField(
        read_only=True, help_text="ISO 3166-1 alpha-2 code; empty until set."
    )


class BillingProfileSerializer(RepresentedBy, serializers.ModelSerializer):
    """Who the account's invoices are made out to (copied onto each invoice at finalization)."""

    represent = staticmethod(billing_profile_representation)

    email = serializers.CharField(
        read_only=True, help_text="Where invoices are sent; may be empty."
    )
    address = BillingAddressSerializer(source="*", read_only=True)
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
            "legal_name", "email", "address", "vat_id", "tax_exempt", "currency", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


class BalanceSerializer(serializers.Serializer):
    """The account's credit: the sum of its ledger (``GET /v1/balance-transactions``)."""

    available = serializers.IntegerField(
        read_only=True, help_text="Credit in minor units of `currency`; never negative."
    )
    currency = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The account's billing currency; null before its first invoice or credit.",
    )


# --- Request bodies ------------------------------------------------------------------------


class InvoicePaySerializer(StrictInputSerializer):
    source = serializers.ChoiceField(
        choices=[("credit", "Account credit")],
        help_text="Where the money comes from: `credit`, the account's balance.",
    )


class InvoiceMarkPaidSerializer(StrictInputSerializer):
    reference = serializers.CharField(
        max_length=200, help_text="The bank transfer's reference, to find the money again."
    )


class CreditNoteCreateSerializer(StrictInputSerializer):
    invoice = serializers.CharField(max_length=64, help_text="The finalized invoice (`in_...`).")
    amount = serializers.IntegerField(
        min_value=1, max_value=AMOUNT_MAX, help_text="In minor units of the invoice's currency."
    )
    reason = serializers.ChoiceField(choices=CreditNote.Reason.choices)
    refund_to = serializers.ChoiceField(
        choices=CreditNote.RefundTo.choices,
        help_text="`none`: forgive what is still owed; `balance`: give what was paid back as "
        "credit; `refunded`: record that what was paid went back outside (a transfer).",
    )
    memo = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class CurrencyField(serializers.ChoiceField):
    """An ISO 4217 code we bill in, in any case (``eur`` is EUR), as the services read it."""

    def __init__(self, **kwargs):
        super().__init__(choices=sorted(SUPPORTED_CURRENCIES), **kwargs)

    def to_internal_value(self, data):
        return super().to_internal_value(data.upper() if isinstance(data, str) else data)


class BalanceTransactionCreateSerializer(StrictInputSerializer):
    amount = serializers.IntegerField(
        min_value=-AMOUNT_MAX,
        max_value=AMOUNT_MAX,
        help_text="Credit to add (positive) or take away (negative), in minor units; not 0.",
    )
    currency = CurrencyField(
        help_text="The account's billing currency (set by this entry if it has none yet)."
    )
    description = serializers.CharField(max_length=500, help_text="Why: shown to the customer.")


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
    country = serializers.RegexField(
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


# --- Documentation examples ----------------------------------------------------------------


def _examples(name: str, key: str | None, value: dict) -> list[OpenApiExample]:
    """A response example: one list item (``key`` None) or one resource under ``data.<key>``."""
    return [OpenApiExample(name, value=value if key is None else {key: value}, response_only=True)]


PRICE_EXAMPLE = {
    "id": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "product": "prod_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs",
    "currency": "EUR",
    "unit_amount": 1200,
    "recurring": {"interval": "month", "interval_count": 1},
    "setup_fee": 0,
    "trial_days": 0,
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
}
PRODUCT_EXAMPLE = {
    "id": "prod_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs",
    "name": "Minecraft 4 GB",
    "description": "Up to 20 players.",
    "kind": "server",
    "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
    "games": ["minecraft-java", "minecraft-bedrock"],
    "regions": [],
    "runtimes": [],
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
    "prices": [PRICE_EXAMPLE],
}
INVOICE_EXAMPLE = {
    "id": "in_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3Kd5",
    "number": "INV-2026-000042",
    "status": "open",
    "billing_reason": "subscription_cycle",
    "subscription": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "currency": "EUR",
    "period_start": "2026-12-01T00:00:00Z",
    "period_end": "2027-01-01T00:00:00Z",
    "lines": [
        {
            "id": "il_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4",
            "description": "Minecraft 4 GB, December 2026",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "quantity": 1,
            "unit_amount": 1200,
            "amount": 1200,
            "discount_amount": 0,
            "tax_amount": 228,
            "period": {"start": "2026-12-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
            "proration": False,
        }
    ],
    "subtotal": 1200,
    "discount": 0,
    "tax": 228,
    "total": 1428,
    "amount_paid": 0,
    "amount_credited": 0,
    "amount_remaining": 1428,
    "due_date": "2026-12-01T00:00:00Z",
    "customer": {
        "name": "Blockworks GmbH",
        "email": "billing@blockworks.example",
        "address_lines": ["Hauptstraße 5", "10115 Berlin"],
        "country": "DE",
        "vat_id": "",
        "tax_exempt": False,
    },
    "notes": [],
    "created_at": "2026-11-28T00:00:00Z",
    "finalized_at": "2026-11-28T00:00:00Z",
    "paid_at": None,
    "voided_at": None,
    "marked_uncollectible_at": None,
}
PAID_INVOICE_EXAMPLE = {
    **INVOICE_EXAMPLE,
    "status": "paid",
    "amount_paid": 1428,
    "amount_remaining": 0,
    "paid_at": "2026-11-29T10:15:00Z",
}
CREDIT_NOTE_EXAMPLE = {
    "id": "cn_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "number": "CN-2026-000007",
    "invoice": "in_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3Kd5",
    "currency": "EUR",
    "amount": 500,
    "reason": "product_unsatisfactory",
    "memo": "Two days of downtime.",
    "refund_to": "balance",
    "created_at": "2026-12-03T14:00:00Z",
}
PAYMENT_EXAMPLE = {
    "id": "pay_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "invoice": "in_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3Kd5",
    "gateway": "bank_transfer",
    "status": "succeeded",
    "amount": 1428,
    "currency": "EUR",
    "reference": "SEPA 2026-11-29 BLOCKWORKS",
    "failure_message": "",
    "created_at": "2026-11-29T10:15:00Z",
    "succeeded_at": "2026-11-29T10:15:00Z",
    "failed_at": None,
    "refunded_at": None,
}
BALANCE_TRANSACTION_EXAMPLE = {
    "id": "cbtxn_9Wd4Tb6Nq2Hx8Lc1Zr5Mv3K",
    "kind": "adjustment",
    "amount": 2000,
    "currency": "EUR",
    "ending_balance": 2000,
    "description": "Goodwill credit for the outage of Dec 2",
    "invoice": None,
    "credit_note": None,
    "created_at": "2026-12-03T14:00:00Z",
}
BILLING_PROFILE_EXAMPLE = {
    "legal_name": "Blockworks GmbH",
    "email": "billing@blockworks.example",
    "address": {
        "line1": "Hauptstraße 5",
        "line2": "",
        "postal_code": "10115",
        "city": "Berlin",
        "region": "",
        "country": "DE",
    },
    "vat_id": "DE136695976",
    "tax_exempt": False,
    "currency": "EUR",
    "updated_at": "2026-11-21T15:04:05Z",
}

PRODUCT_LIST_EXAMPLES = _examples("A game-server plan", None, PRODUCT_EXAMPLE)
PRODUCT_EXAMPLES = _examples("A game-server plan", "product", PRODUCT_EXAMPLE)
INVOICE_LIST_EXAMPLES = _examples("An open renewal invoice", None, INVOICE_EXAMPLE)
INVOICE_EXAMPLES = _examples("An open renewal invoice", "invoice", INVOICE_EXAMPLE)
PAID_INVOICE_EXAMPLES = _examples("Paid", "invoice", PAID_INVOICE_EXAMPLE)
CREDIT_NOTE_LIST_EXAMPLES = _examples("Credit for downtime", None, CREDIT_NOTE_EXAMPLE)
CREDIT_NOTE_EXAMPLES = _examples("Credit for downtime", "credit_note", CREDIT_NOTE_EXAMPLE)
PAYMENT_LIST_EXAMPLES = _examples("A bank transfer", None, PAYMENT_EXAMPLE)
PAYMENT_EXAMPLES = _examples("A bank transfer", "payment", PAYMENT_EXAMPLE)
BALANCE_TRANSACTION_LIST_EXAMPLES = _examples(
    "Credit added by staff", None, BALANCE_TRANSACTION_EXAMPLE
)
BALANCE_TRANSACTION_EXAMPLES = _examples(
    "Credit added by staff", "balance_transaction", BALANCE_TRANSACTION_EXAMPLE
)
BALANCE_EXAMPLES = _examples("Credit left", "balance", {"available": 2000, "currency": "EUR"})
BILLING_PROFILE_EXAMPLES = _examples(
    "A German business", "billing_profile", BILLING_PROFILE_EXAMPLE
)

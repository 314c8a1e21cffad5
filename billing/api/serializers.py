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
    Coupon,
    CreditNote,
    Invoice,
    InvoiceLine,
    Payment,
    Price,
    Product,
    PromotionCode,
    Subscription,
    TaxRate,
)
from billing.representations import (
    balance_transaction_representation,
    billing_profile_representation,
    coupon_representation,
    credit_note_representation,
    invoice_line_representation,
    invoice_representation,
    payment_representation,
    price_representation,
    product_representation,
    promotion_code_representation,
    public_order,
    subscription_representation,
    tax_rate_representation,
)
from billing.services.profile import STAFF_ONLY_FIELDS, VAT_ID_INPUT_LIMIT
from hosting.api.schema import response_examples
from hosting.api.serializers import RepresentedBy, StrictInputSerializer
from hosting.money import SUPPORTED_CURRENCIES
from hosting.representations import timestamp
from servers.api.serializers import (
    DiscordTokenField,
    EnvironmentInputField,
    VariablesInputField,
)
from servers.models import BotRuntime

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
            "id",
            "product",
            "currency",
            "unit_amount",
            "recurring",
            "setup_fee",
            "trial_days",
            "active",
            "created_at",
        ]
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
            "id",
            "name",
            "description",
            "kind",
            "resources",
            "games",
            "regions",
            "runtimes",
            "active",
            "created_at",
            "prices",
        ]
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


class ExactDecimalField(serializers.CharField):
    """A decimal as its exact shortest string (``Decimal("12.50")`` is ``"12.5"``)."""

    def to_representation(self, value):
        return format(value.normalize(), "f")


class BlankAsNullField(serializers.CharField):
    def to_representation(self, value):
        return value or None


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class ProductIdsField(serializers.Field):
    def to_representation(self, value):
        return sorted(product.id for product in value.all())


class OrderField(serializers.DictField):
    def to_representation(self, value):
        return public_order(value)


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


class BillingClockSerializer(serializers.Serializer):
    """An account's test clock and what the billing job did while moving it."""

    customer = serializers.CharField(read_only=True, help_text="The account (`acct_...`).")
    now = serializers.DateTimeField(read_only=True, help_text="The account's billing time.")
    runs = serializers.IntegerField(
        read_only=True, help_text="How many times the billing job ran on the way (0 on a GET)."
    )
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="What those runs did, by step (`renewals`, `collection_attempts`, "
        "`suspended`, `terminated`, ...).",
    )


class SubscriptionSerializer(RepresentedBy, serializers.ModelSerializer):
    """A plan billed for one server or bot, and where it stands."""

    represent = staticmethod(subscription_representation)

    price = serializers.CharField(source="price_id", read_only=True)
    server = serializers.CharField(
        source="server_id",
        read_only=True,
        allow_null=True,
        help_text="The server it runs (`srv_...`); null until it is paid for, or for a bot.",
    )
    bot = serializers.CharField(
        source="bot_id",
        read_only=True,
        allow_null=True,
        help_text="The bot it runs (`bot_...`); null until it is paid for, or for a server.",
    )
    order = OrderField(
        read_only=True,
        help_text="What was ordered: `name`, `region` and a server's `game` and `variables` or "
        "a bot's `runtime`, `start_command` and `environment` (never its token).",
    )
    coupon = serializers.CharField(source="coupon_id", read_only=True, allow_null=True)
    discount_end = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="When the coupon stops discounting; null: never (or no coupon).",
    )
    billing_suspended = serializers.BooleanField(
        read_only=True,
        help_text="Whether billing suspended the server or bot for an unpaid invoice (it is "
        "unsuspended when paid).",
    )

    class Meta:
        model = Subscription
        fields = [
            "id",
            "status",
            "price",
            "quantity",
            "server",
            "bot",
            "order",
            "billing_cycle_anchor",
            "current_period_start",
            "current_period_end",
            "trial_end",
            "cancel_at_period_end",
            "canceled_at",
            "ended_at",
            "coupon",
            "discount_end",
            "billing_suspended",
            "created_at",
        ]
        read_only_fields = fields


class SubscriptionOrderResultSerializer(serializers.Serializer):
    """An order's answer: the subscription and its first invoice."""

    subscription = SubscriptionSerializer(read_only=True)
    invoice = InvoiceSerializer(
        read_only=True,
        help_text="The first invoice, finalized: `paid` when credit covered it or nothing was "
        "owed (the server or bot is being created), else `open` until paid.",
    )


class SubscriptionChangeResultSerializer(serializers.Serializer):
    subscription = SubscriptionSerializer(read_only=True)
    invoice = InvoiceSerializer(
        read_only=True,
        allow_null=True,
        help_text="The proration invoice of an upgrade; null when nothing was charged.",
    )


class PlanChangeLineSerializer(serializers.Serializer):
    description = serializers.CharField(read_only=True)
    price = serializers.CharField(read_only=True)
    amount = serializers.IntegerField(
        read_only=True, help_text="Negative for the credit of unused time."
    )
    discount_amount = serializers.IntegerField(read_only=True)
    tax_amount = serializers.IntegerField(read_only=True)
    period = InvoiceLinePeriodSerializer(read_only=True)
    proration = serializers.BooleanField(read_only=True)


def _priced_line(line: dict) -> dict:
    """A line priced by ``billing.services.pricing`` as an invoice will show it."""
    return {
        "description": line["description"],
        "price": line["price"].id,
        "amount": line["quantity"] * line["unit_amount"],
        "discount_amount": line["discount_amount"],
        "tax_amount": line["tax_amount"],
        "period": {
            "start": timestamp(line.get("period_start")),
            "end": timestamp(line.get("period_end")),
        },
    }


def _sums(lines: list[dict]) -> dict:
    """The invoice's sums of priced ``lines``: before discounts, the discounts, the tax."""
    return {
        "subtotal": sum(line["quantity"] * line["unit_amount"] for line in lines),
        "discount": sum(line["discount_amount"] for line in lines),
        "tax": sum(line["tax_amount"] for line in lines),
    }


def plan_change_representation(change) -> dict:
    """A plan change's amounts (``billing.services.subscriptions.PlanChange``)."""
    lines = change.priced.lines if change.priced else []
    total = change.total
    return {
        "subscription": change.subscription.id,
        "price": change.price.id,
        "at": timestamp(change.at),
        "currency": change.price.currency,
        "lines": [
            {**_priced_line(line), "proration": line.get("proration", False)} for line in lines
        ],
        **_sums(lines),
        "total": total,
        "outcome": "invoice" if total > 0 else "credit" if total < 0 else "nothing",
    }


class PlanChangeSerializer(RepresentedBy, serializers.Serializer):
    """What changing plan now comes to: charged on an invoice, or credited to the balance."""

    represent = staticmethod(plan_change_representation)

    subscription = serializers.CharField(read_only=True)
    price = serializers.CharField(read_only=True, help_text="The new price.")
    at = serializers.DateTimeField(read_only=True, help_text="The moment prorated from.")
    currency = serializers.CharField(read_only=True)
    lines = PlanChangeLineSerializer(many=True, read_only=True)
    subtotal = serializers.IntegerField(read_only=True)
    discount = serializers.IntegerField(read_only=True)
    tax = serializers.IntegerField(read_only=True, help_text="Exclusive tax added; 0 if inside.")
    total = serializers.IntegerField(
        read_only=True, help_text="Positive: invoiced now; negative: credited to the balance."
    )
    outcome = serializers.ChoiceField(
        choices=["invoice", "credit", "nothing"],
        read_only=True,
        help_text="`invoice` (the difference is charged), `credit` (added to the balance) or "
        "`nothing` (a trial, or the same amount).",
    )


def order_preview_representation(preview) -> dict:
    """An order's summary (``billing.services.subscriptions.OrderPreview``)."""
    tax = preview.first.tax
    renewal = preview.renewal
    return {
        "price": preview.price.id,
        "currency": preview.price.currency,
        "at": timestamp(preview.at),
        "coupon": preview.coupon.id if preview.coupon else None,
        "promotion_code": preview.promotion_code.code if preview.promotion_code else None,
        "tax_rate": {
            "percentage": format(tax.percentage.normalize(), "f"),
            "inclusive": tax.inclusive,
            "reverse_charge": tax.reverse_charge,
            "note": tax.note,
        },
        "lines": [_priced_line(line) for line in preview.first.lines],
        **_sums(preview.first.lines),
        "setup_fee": preview.price.setup_fee,
        "total": preview.total,
        "trial_end": timestamp(preview.trial_end),
        "credit_applied": preview.credit_applied,
        "due_today": preview.due_today,
        "renewal": {
            "at": timestamp(preview.renewal_at),
            "period": {
                "start": timestamp(preview.renewal_at),
                "end": timestamp(preview.renewal_end),
            },
            **_sums(renewal.lines),
            "total": renewal.total,
        },
    }


class OrderPreviewTaxSerializer(serializers.Serializer):
    percentage = serializers.CharField(
        read_only=True, help_text='Exact, as a string (`"21"`, `"8.875"`); `"0"` for none.'
    )
    inclusive = serializers.BooleanField(
        read_only=True, help_text="Whether the prices include the tax (then it is not added)."
    )
    reverse_charge = serializers.BooleanField(
        read_only=True,
        help_text="A business in another EU member state with a valid VAT id: no VAT charged, "
        "the buyer accounts for it.",
    )
    note = serializers.CharField(read_only=True, help_text="What the invoice will say about it.")


class OrderPreviewLineSerializer(serializers.Serializer):
    description = serializers.CharField(read_only=True)
    price = serializers.CharField(read_only=True)
    amount = serializers.IntegerField(read_only=True)
    discount_amount = serializers.IntegerField(read_only=True)
    tax_amount = serializers.IntegerField(read_only=True)
    period = InvoiceLinePeriodSerializer(read_only=True, help_text="None for the setup fee.")


class OrderPreviewRenewalSerializer(serializers.Serializer):
    at = serializers.DateTimeField(
        read_only=True,
        help_text="When the next period starts: its invoice is issued a few days ahead (the "
        "credit applied then) and due at this moment.",
    )
    period = InvoiceLinePeriodSerializer(read_only=True)
    subtotal = serializers.IntegerField(read_only=True)
    discount = serializers.IntegerField(
        read_only=True, help_text="0 once the coupon's duration is over."
    )
    tax = serializers.IntegerField(read_only=True)
    total = serializers.IntegerField(read_only=True, help_text="Every period's price from then on.")


class OrderPreviewSerializer(RepresentedBy, serializers.Serializer):
    """What ordering now would invoice, pay from the credit, and invoice at the renewal."""

    represent = staticmethod(order_preview_representation)

    price = serializers.CharField(read_only=True)
    currency = serializers.CharField(read_only=True)
    at = serializers.DateTimeField(read_only=True, help_text="The moment priced: now.")
    coupon = serializers.CharField(
        read_only=True, allow_null=True, help_text="The coupon the code or id gave."
    )
    promotion_code = serializers.CharField(read_only=True, allow_null=True)
    tax_rate = OrderPreviewTaxSerializer(
        read_only=True, help_text="From the billing profile's country and VAT status."
    )
    lines = OrderPreviewLineSerializer(
        many=True, read_only=True, help_text="The first invoice's lines, as it will show them."
    )
    subtotal = serializers.IntegerField(read_only=True, help_text="Before discounts.")
    setup_fee = serializers.IntegerField(
        read_only=True, help_text="Part of the subtotal, once, on the first invoice."
    )
    discount = serializers.IntegerField(read_only=True)
    tax = serializers.IntegerField(read_only=True, help_text="Exclusive tax added; 0 if inside.")
    total = serializers.IntegerField(read_only=True, help_text="The first invoice's total.")
    trial_end = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="A trial's end: nothing but a setup fee is charged before it.",
    )
    credit_applied = serializers.IntegerField(
        read_only=True, help_text="What the account's credit pays of the total at once."
    )
    due_today = serializers.IntegerField(
        read_only=True,
        help_text="What is left to pay now, by card or transfer, for the server or bot to be "
        "created: the total less the credit.",
    )
    renewal = OrderPreviewRenewalSerializer(
        read_only=True, help_text="The next period's invoice, at today's tax."
    )


class CreditNoteSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(credit_note_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True)

    class Meta:
        model = CreditNote
        fields = [
            "id",
            "number",
            "invoice",
            "currency",
            "amount",
            "reason",
            "memo",
            "refund_to",
            "created_at",
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


class BalanceTransactionSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(balance_transaction_representation)

    invoice = serializers.CharField(source="invoice_id", read_only=True, allow_null=True)
    credit_note = serializers.CharField(source="credit_note_id", read_only=True, allow_null=True)

    class Meta:
        model = BalanceTransaction
        fields = [
            "id",
            "kind",
            "amount",
            "currency",
            "ending_balance",
            "description",
            "invoice",
            "credit_note",
            "created_at",
        ]
        read_only_fields = fields


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


class OrderDetailsSerializer(StrictInputSerializer):
    """What to create once the plan is paid: a server's or a bot's fields (the plan decides
    which); its resources come from the plan."""

    name = serializers.CharField(max_length=100)
    region = serializers.CharField(help_text="A slug from GET /v1/regions the plan runs in.")
    game = serializers.CharField(
        required=False, help_text="Servers: a slug from GET /v1/games the plan runs."
    )
    variables = VariablesInputField(required=False, help_text="Servers: the game's variables.")
    runtime = serializers.ChoiceField(
        choices=BotRuntime.choices, required=False, help_text="Bots: one the plan allows."
    )
    start_command = serializers.CharField(max_length=500, required=False, help_text="Bots.")
    token = DiscordTokenField(write_only=True, required=False, help_text="Bots: stored encrypted.")
    environment = EnvironmentInputField(
        child=serializers.CharField(allow_blank=True), required=False, help_text="Bots."
    )


class SubscriptionOrderSerializer(StrictInputSerializer):
    price = serializers.CharField(max_length=64, help_text="An active price (`price_...`).")
    order = OrderDetailsSerializer()
    promotion_code = serializers.CharField(
        max_length=50, required=False, help_text="A code the customer typed (`WELCOME10`)."
    )
    coupon = serializers.CharField(
        max_length=64,
        required=False,
        help_text="Or the id (`cpn_...`) of a coupon staff made `directly_redeemable`.",
    )
    quantity = serializers.IntegerField(
        required=False,
        default=1,
        min_value=1,
        max_value=1,
        help_text="Always 1: a subscription runs one server or bot.",
    )

    def validate(self, attrs):
        if "promotion_code" in attrs and "coupon" in attrs:
            raise serializers.ValidationError(
                {"coupon": [ErrorDetail("Give a promotion_code or a coupon, not both.", "invalid")]}
            )
        return attrs


class SubscriptionPriceSerializer(StrictInputSerializer):
    price = serializers.CharField(max_length=64, help_text="The new price (`price_...`).")


class SubscriptionCancelSerializer(StrictInputSerializer):
    at_period_end = serializers.BooleanField(
        required=False,
        default=True,
        help_text="`true` (the default): it runs until the period ends, and can be resumed "
        "until then. `false`: now; the server or bot is deleted.",
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


class BillingClockAdvanceSerializer(StrictInputSerializer):
    to = serializers.DateTimeField(
        help_text="The account's new billing time (ISO 8601): where a new clock starts, or a "
        "later moment an existing one moves to."
    )


class InvoiceMarkPaidSerializer(StrictInputSerializer):
    reference = serializers.CharField(
        max_length=200, help_text="The bank transfer's reference, to find the money again."
    )


class CreditNoteCreateSerializer(StrictInputSerializer):
    invoice = serializers.CharField(max_length=64, help_text="The finalized invoice (`inv_...`).")
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


class ShapeField(serializers.RegexField):
    """Text of a fixed shape, checked as sent: the schema's pattern applies to it untrimmed,
    and a final newline, which Python's ``$`` lets through (JSON Schema's does not), is
    refused too."""

    def __init__(self, regex: str, **kwargs):
        super().__init__(regex, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str) and data.endswith("\n"):
            raise serializers.ValidationError(
                "This value does not match the required pattern.", code="invalid"
            )
        return super().to_internal_value(data)


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


# --- Documentation examples ----------------------------------------------------------------


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
    "id": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
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
    "invoice": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
    "currency": "EUR",
    "amount": 500,
    "reason": "product_unsatisfactory",
    "memo": "Two days of downtime.",
    "refund_to": "balance",
    "created_at": "2026-12-03T14:00:00Z",
}
PAYMENT_EXAMPLE = {
    "id": "pay_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "invoice": "inv_6Tq2Lm9Xw4Zr7Nc1Vb8Hs3K",
    "gateway": "bank_transfer",
    "status": "succeeded",
    "amount": 1428,
    "amount_refunded": 0,
    "currency": "EUR",
    "reference": "SEPA 2026-11-29 BLOCKWORKS",
    "failure_message": "",
    "created_at": "2026-11-29T10:15:00Z",
    "succeeded_at": "2026-11-29T10:15:00Z",
    "failed_at": None,
    "refunded_at": None,
}
BALANCE_TRANSACTION_EXAMPLE = {
    "id": "btx_9Wd4Tb6Nq2Hx8Lc1Zr5Mv3Kd",
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
    "id": "acct_7Kq2Xw9Lm4Tz8Rb1Nc5Vd3Hy",
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
    "payment_gateways": [],
    "currency": "EUR",
    "updated_at": "2026-11-21T15:04:05Z",
}

PRODUCT_LIST_EXAMPLES = response_examples("A game-server plan", None, PRODUCT_EXAMPLE)
PRODUCT_EXAMPLES = response_examples("A game-server plan", "product", PRODUCT_EXAMPLE)
INVOICE_LIST_EXAMPLES = response_examples("An open renewal invoice", None, INVOICE_EXAMPLE)
INVOICE_EXAMPLES = response_examples("An open renewal invoice", "invoice", INVOICE_EXAMPLE)
PAID_INVOICE_EXAMPLES = response_examples("Paid", "invoice", PAID_INVOICE_EXAMPLE)
CARD_PAYMENT_EXAMPLE = {
    **PAYMENT_EXAMPLE,
    "gateway": "stripe",
    "reference": "Visa •••• 4242 (12/2030)",
    "status": "succeeded",
}
PAID_INVOICE_PAY_EXAMPLES = [
    OpenApiExample(
        "Paid by card",
        response_only=True,
        value={
            "invoice": PAID_INVOICE_EXAMPLE,
            "payment": CARD_PAYMENT_EXAMPLE,
            "next_action": None,
        },
    ),
    OpenApiExample(
        "The bank wants the customer",
        response_only=True,
        value={
            "invoice": PAID_INVOICE_EXAMPLE | {"status": "open", "amount_paid": 0},
            "payment": CARD_PAYMENT_EXAMPLE | {"status": "processing", "succeeded_at": None},
            "next_action": {
                "type": "redirect_to_url",
                "client_secret": None,
                "url": "https://hooks.stripe.com/3d_secure_2/hosted?merchant=acct_1Qh&payment_intent=pi_3Qh",
            },
        },
    ),
]
CREDIT_NOTE_LIST_EXAMPLES = response_examples("Credit for downtime", None, CREDIT_NOTE_EXAMPLE)
CREDIT_NOTE_EXAMPLES = response_examples("Credit for downtime", "credit_note", CREDIT_NOTE_EXAMPLE)
PAYMENT_LIST_EXAMPLES = response_examples("A bank transfer", None, PAYMENT_EXAMPLE)
PAYMENT_EXAMPLES = response_examples("A bank transfer", "payment", PAYMENT_EXAMPLE)
BALANCE_TRANSACTION_LIST_EXAMPLES = response_examples(
    "Credit added by staff", None, BALANCE_TRANSACTION_EXAMPLE
)
BALANCE_TRANSACTION_EXAMPLES = response_examples(
    "Credit added by staff", "balance_transaction", BALANCE_TRANSACTION_EXAMPLE
)
BALANCE_EXAMPLES = response_examples(
    "Credit left", "balance", {"available": 2000, "currency": "EUR"}
)
BILLING_PROFILE_EXAMPLES = response_examples(
    "A German business", "billing_profile", BILLING_PROFILE_EXAMPLE
)

SUBSCRIPTION_EXAMPLE = {
    "id": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "status": "active",
    "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "quantity": 1,
    "server": "srv_7Hq2Lm9Xw4Zr1Nc8Vb3Kd5Ts6",
    "bot": None,
    "order": {
        "name": "Survival SMP",
        "region": "eu-central",
        "game": "minecraft-java",
        "variables": {"EULA": "true"},
    },
    "billing_cycle_anchor": "2026-11-01T09:00:00Z",
    "current_period_start": "2026-12-01T09:00:00Z",
    "current_period_end": "2027-01-01T09:00:00Z",
    "trial_end": None,
    "cancel_at_period_end": False,
    "canceled_at": None,
    "ended_at": None,
    "coupon": None,
    "discount_end": None,
    "billing_suspended": False,
    "created_at": "2026-11-01T09:00:00Z",
}
NEW_SUBSCRIPTION_EXAMPLE = {
    **SUBSCRIPTION_EXAMPLE,
    "status": "incomplete",
    "server": None,
    "current_period_start": "2026-11-01T09:00:00Z",
    "current_period_end": "2026-12-01T09:00:00Z",
}
FIRST_INVOICE_EXAMPLE = {
    **INVOICE_EXAMPLE,
    "billing_reason": "subscription_create",
    "period_start": "2026-11-01T09:00:00Z",
    "period_end": "2026-12-01T09:00:00Z",
    "due_date": "2026-11-08T09:00:00Z",
    "created_at": "2026-11-01T09:00:00Z",
    "finalized_at": "2026-11-01T09:00:00Z",
}
PLAN_CHANGE_EXAMPLE = {
    "subscription": "sub_4Tz2Qm7Lx4Wc9Nb1Hd6Fy5Rk8",
    "price": "price_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4",
    "at": "2026-12-16T21:00:00Z",
    "currency": "EUR",
    "lines": [
        {
            "description": "Unused time on Minecraft 4 GB after 16 Dec 2026 21:00",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "amount": -600,
            "discount_amount": 0,
            "tax_amount": -114,
            "period": {"start": "2026-12-16T21:00:00Z", "end": "2027-01-01T09:00:00Z"},
            "proration": True,
        },
        {
            "description": "Remaining time on Minecraft 8 GB after 16 Dec 2026 21:00",
            "price": "price_2Wn7Xc5Rb9Mv3HdPz1Lk8Tq4",
            "amount": 1200,
            "discount_amount": 0,
            "tax_amount": 228,
            "period": {"start": "2026-12-16T21:00:00Z", "end": "2027-01-01T09:00:00Z"},
            "proration": True,
        },
    ],
    "subtotal": 600,
    "discount": 0,
    "tax": 114,
    "total": 714,
    "outcome": "invoice",
}
ORDER_PREVIEW_EXAMPLE = {
    "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
    "currency": "EUR",
    "at": "2026-11-01T09:00:00Z",
    "coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "promotion_code": "WELCOME10",
    "tax_rate": {"percentage": "21", "inclusive": False, "reverse_charge": False, "note": ""},
    "lines": [
        {
            "description": "Minecraft 4 GB (1 Nov 2026 09:00 to 1 Dec 2026 09:00)",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "amount": 1200,
            "discount_amount": 120,
            "tax_amount": 227,
            "period": {"start": "2026-11-01T09:00:00Z", "end": "2026-12-01T09:00:00Z"},
        },
        {
            "description": "Setup fee: Minecraft 4 GB",
            "price": "price_8Lk2Tq4Wn7Xc5Rb9Mv3HdPz1",
            "amount": 500,
            "discount_amount": 50,
            "tax_amount": 94,
            "period": {"start": None, "end": None},
        },
    ],
    "subtotal": 1700,
    "setup_fee": 500,
    "discount": 170,
    "tax": 321,
    "total": 1851,
    "trial_end": None,
    "credit_applied": 1000,
    "due_today": 851,
    "renewal": {
        "at": "2026-12-01T09:00:00Z",
        "period": {"start": "2026-12-01T09:00:00Z", "end": "2027-01-01T09:00:00Z"},
        "subtotal": 1200,
        "discount": 120,
        "tax": 227,
        "total": 1307,
    },
}
REVERSE_CHARGE_PREVIEW_EXAMPLE = {
    **ORDER_PREVIEW_EXAMPLE,
    "coupon": None,
    "promotion_code": None,
    "tax_rate": {
        "percentage": "0",
        "inclusive": False,
        "reverse_charge": True,
        "note": "Reverse charge: VAT to be accounted for by the recipient (Article 196 of "
        "Directive 2006/112/EC).",
    },
    "lines": [
        {**line, "discount_amount": 0, "tax_amount": 0} for line in ORDER_PREVIEW_EXAMPLE["lines"]
    ],
    "discount": 0,
    "tax": 0,
    "total": 1700,
    "credit_applied": 0,
    "due_today": 1700,
    "renewal": {**ORDER_PREVIEW_EXAMPLE["renewal"], "discount": 0, "tax": 0, "total": 1200},
}
TAX_RATE_EXAMPLE = {
    "id": "txr_5Hd6Fy2Qm7Lx4Wc9Nb1Rk8Tz",
    "display_name": "Sales tax",
    "country": "US",
    "region": "US-NY",
    "percentage": "8.875",
    "inclusive": False,
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
}
COUPON_EXAMPLE = {
    "id": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "name": "Welcome 10 %",
    "percent_off": "10",
    "amount_off": None,
    "currency": None,
    "duration": "repeating",
    "duration_in_months": 3,
    "max_redemptions": 500,
    "times_redeemed": 42,
    "redeem_by": "2027-01-01T00:00:00Z",
    "applies_to": [],
    "directly_redeemable": False,
    "active": True,
    "created_at": "2026-11-01T09:00:00Z",
}
PROMOTION_CODE_EXAMPLE = {
    "id": "promo_1Hd6Fy5Rk8Tz2Qm7Lx4Wc9Nb",
    "code": "WELCOME10",
    "coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "active": True,
    "max_redemptions": None,
    "times_redeemed": 17,
    "expires_at": None,
    "created_at": "2026-11-01T09:00:00Z",
}
BILLING_CLOCK_EXAMPLE = {
    "customer": "acct_3Kd5Ts6Hq2Lm9Xw4Zr1Nc8Vb",
    "now": "2027-02-01T09:00:00Z",
    "runs": 31,
    "counts": {"renewals": 1, "period_started": 1, "collection_attempts": 0},
}

SUBSCRIPTION_LIST_EXAMPLES = response_examples("A monthly server plan", None, SUBSCRIPTION_EXAMPLE)
SUBSCRIPTION_EXAMPLES = response_examples(
    "A monthly server plan", "subscription", SUBSCRIPTION_EXAMPLE
)
ORDER_EXAMPLES = [
    OpenApiExample(
        "Ordered, waiting for payment",
        value={"subscription": NEW_SUBSCRIPTION_EXAMPLE, "invoice": FIRST_INVOICE_EXAMPLE},
        response_only=True,
    )
]
CHANGE_EXAMPLES = [
    OpenApiExample(
        "Upgraded: the difference invoiced",
        value={
            "subscription": {**SUBSCRIPTION_EXAMPLE, "price": PLAN_CHANGE_EXAMPLE["price"]},
            "invoice": {**INVOICE_EXAMPLE, "billing_reason": "subscription_update"},
        },
        response_only=True,
    )
]
PLAN_CHANGE_EXAMPLES = response_examples("An upgrade half-way", "plan_change", PLAN_CHANGE_EXAMPLE)
ORDER_PREVIEW_EXAMPLES = [
    *response_examples(
        "A code, a setup fee and VAT; part paid from credit",
        "order_preview",
        ORDER_PREVIEW_EXAMPLE,
    ),
    *response_examples(
        "A business in another EU country (reverse charge)",
        "order_preview",
        REVERSE_CHARGE_PREVIEW_EXAMPLE,
    ),
]
CANCELED_EXAMPLES = response_examples(
    "Set to cancel at the period's end",
    "subscription",
    {**SUBSCRIPTION_EXAMPLE, "cancel_at_period_end": True, "canceled_at": "2026-12-20T10:00:00Z"},
)
TAX_RATE_LIST_EXAMPLES = response_examples("New York sales tax", None, TAX_RATE_EXAMPLE)
TAX_RATE_EXAMPLES = response_examples("New York sales tax", "tax_rate", TAX_RATE_EXAMPLE)
COUPON_LIST_EXAMPLES = response_examples("10 % for three months", None, COUPON_EXAMPLE)
COUPON_EXAMPLES = response_examples("10 % for three months", "coupon", COUPON_EXAMPLE)
PROMOTION_CODE_LIST_EXAMPLES = response_examples("A welcome code", None, PROMOTION_CODE_EXAMPLE)
PROMOTION_CODE_EXAMPLES = response_examples(
    "A welcome code", "promotion_code", PROMOTION_CODE_EXAMPLE
)
COUPON_VALIDATION_EXAMPLES = response_examples(
    "It applies",
    "coupon_validation",
    {"coupon": COUPON_EXAMPLE, "promotion_code": PROMOTION_CODE_EXAMPLE},
)
BILLING_CLOCK_EXAMPLES = response_examples("A month later", "billing_clock", BILLING_CLOCK_EXAMPLE)

"""Subscriptions: what they show, the order and its preview, a plan change and its preview, and
the bodies that order, change and cancel.
"""

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from billing.api.serializers.invoices import InvoiceLinePeriodSerializer, InvoiceSerializer
from billing.models import Subscription
from billing.representations import public_order, subscription_representation
from hosting.api.serializers import RepresentedBy, StrictInputSerializer
from hosting.representations import timestamp
from servers.api.serializers import DiscordTokenField, EnvironmentInputField, VariablesInputField
from servers.models import BotRuntime


class OrderField(serializers.DictField):
    def to_representation(self, value):
        return public_order(value)


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
    """A line priced by ``billing.rules.pricing`` as an invoice will show it."""
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

"""Billing: what is sold (products, prices), who pays (billing profiles), what runs on it
(subscriptions), what is owed (invoices, their lines, credit notes), what was paid (payments) and
the customer's credit (a ledger).

Money is always an integer amount of the currency's minor unit (cents) beside an ISO 4217 code
(CONTRACT §money). Statuses move only along the tables of ``billing/transitions.py``, through
the services; a finalized invoice never changes (corrections are credit notes).
"""

from enum import StrEnum

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account, User
from hosting.ids import PrefixedIdField
from hosting.money import format_amount
from servers.models import Bot, Server


def _money(amount: int, currency: str) -> str:
    """Minor units as people read them in admin (``8.99 EUR``, never ``899 EUR``)."""
    try:
        return format_amount(amount, currency)
    except ValueError:  # an unsaved row with no currency yet
        return f"{amount} {currency}"


class Interval(StrEnum):
    """The unit of a recurring price's period: the one list of intervals, which the period rules
    (``billing.rules.periods``) compute with and these choices offer."""

    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


INTERVAL_CHOICES = [(interval.value, interval.value.title()) for interval in Interval]


class ProductKind(models.TextChoices):
    SERVER = "server", "Game server"
    BOT = "bot", "Discord bot"


class Product(models.Model):
    """A plan a customer orders: a game server or a bot with the resources it provisions.

    ``games``, ``regions`` and ``runtimes`` list what the plan allows (empty: any).
    """

    id = PrefixedIdField(prefix="prod")
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    kind = models.CharField(max_length=8, choices=ProductKind.choices)
    memory_mb = models.PositiveIntegerField()
    cpu_percent = models.PositiveIntegerField()
    disk_mb = models.PositiveIntegerField()
    # Backups its server or bot may keep: how many and how many MB in all (issue 30).
    backup_limit = models.PositiveIntegerField(default=3)
    backup_storage_mb = models.PositiveIntegerField(default=10240)
    # Schedules and databases each server or bot may have (issue 31).
    schedule_limit = models.PositiveIntegerField(default=5)
    database_limit = models.PositiveIntegerField(default=1)
    # Allocations (ip:port) each server may hold, its primary one included (issue 32).
    allocation_limit = models.PositiveIntegerField(default=1)
    games = models.JSONField(default=list, blank=True)
    regions = models.JSONField(default=list, blank=True)
    runtimes = models.JSONField(default=list, blank=True)
    # Dunning for this plan; empty: the BILLING_SUSPEND_AFTER_DAYS / _TERMINATE_ settings.
    suspend_after_days = models.PositiveIntegerField(null=True, blank=True)
    terminate_after_days = models.PositiveIntegerField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Price(models.Model):
    """What a product costs in one currency, every ``interval_count`` ``interval``s.

    A price never changes once used: a new price is created and the old one archived
    (``active=False``), so every subscription and invoice keeps saying what it was sold at.
    """

    id = PrefixedIdField(prefix="price")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="prices")
    currency = models.CharField(max_length=3)
    unit_amount = models.BigIntegerField()
    interval = models.CharField(max_length=8, choices=INTERVAL_CHOICES)
    interval_count = models.PositiveIntegerField(default=1)
    setup_fee = models.BigIntegerField(default=0)
    trial_days = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["product", "currency", "unit_amount", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(unit_amount__gte=0), name="price_amount_not_negative"
            ),
            models.CheckConstraint(condition=Q(setup_fee__gte=0), name="price_setup_not_negative"),
            models.CheckConstraint(condition=Q(interval_count__gte=1), name="price_count_positive"),
        ]

    def __str__(self) -> str:
        every = (
            self.interval if self.interval_count == 1 else f"{self.interval_count} {self.interval}s"
        )
        return f"{self.product.name}: {_money(self.unit_amount, self.currency)} / {every}"


class BillingProfile(models.Model):
    """Who the account's invoices are made out to; snapshotted onto each invoice at finalization.

    ``currency`` is fixed by the account's first invoice: an account is billed in one currency.
    """

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, primary_key=True, related_name="billing_profile"
    )
    legal_name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(blank=True)
    address_line1 = models.CharField(max_length=200, blank=True)
    address_line2 = models.CharField(max_length=200, blank=True)
    postal_code = models.CharField(max_length=20, blank=True)
    city = models.CharField(max_length=100, blank=True)
    region = models.CharField(max_length=100, blank=True)
    country = models.CharField(max_length=2, blank=True)
    vat_id = models.CharField(max_length=32, blank=True)
    tax_exempt = models.BooleanField(default=False)
    currency = models.CharField(max_length=3, blank=True)
    # Staff's own list of the gateways this account pays through, in collection order (names
    # of ``billing.services.gateways``); empty: the service's ``BILLING_GATEWAYS``.
    payment_gateways = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.legal_name or str(self.account_id)


class TaxRate(models.Model):
    """The tax of a country (or one of its regions), e.g. 21 % VAT in NL."""

    id = PrefixedIdField(prefix="txr")
    display_name = models.CharField(max_length=50, default="VAT")
    country = models.CharField(max_length=2)
    region = models.CharField(max_length=100, blank=True)
    # As billing.rules.tax.validate_percentage takes them: 0 to 100 with up to 4 decimals (8.875).
    percentage = models.DecimalField(max_digits=7, decimal_places=4)
    inclusive = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["country", "region", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["country", "region"], condition=Q(active=True), name="taxrate_one_active"
            ),
            models.CheckConstraint(
                condition=Q(percentage__gte=0, percentage__lte=100), name="taxrate_percentage_range"
            ),
        ]

    def __str__(self) -> str:
        where = f"{self.country}-{self.region}" if self.region else self.country
        return f"{self.display_name} {self.percentage}% ({where})"


class CouponDuration(models.TextChoices):
    ONCE = "once", "Once"
    REPEATING = "repeating", "Repeating"
    FOREVER = "forever", "Forever"


class Coupon(models.Model):
    """A discount: ``percent_off`` or ``amount_off`` (in ``currency``), for one invoice, N months,
    or for ever; optionally only for some products, until ``redeem_by``, ``max_redemptions``
    times. Customers redeem it through its promotion codes, or by its id only when staff mark
    it ``directly_redeemable``."""

    id = PrefixedIdField(prefix="cpn")
    name = models.CharField(max_length=100)
    percent_off = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    amount_off = models.BigIntegerField(null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    duration = models.CharField(max_length=12, choices=CouponDuration.choices)
    duration_in_months = models.PositiveIntegerField(null=True, blank=True)
    max_redemptions = models.PositiveIntegerField(null=True, blank=True)
    times_redeemed = models.PositiveIntegerField(default=0)
    redeem_by = models.DateTimeField(null=True, blank=True)
    products = models.ManyToManyField(Product, blank=True, related_name="+")
    # Off by default: a coupon id a customer once saw (in a code's check, on a subscription)
    # must not get round its codes' limits, expiry and deactivation.
    directly_redeemable = models.BooleanField(
        default=False,
        help_text="Customers may order with this coupon's id; otherwise only with one of its "
        "promotion codes.",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(percent_off__isnull=False, amount_off__isnull=True)
                | Q(percent_off__isnull=True, amount_off__isnull=False),
                name="coupon_percent_xor_amount",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class PromotionCode(models.Model):
    """A code customers type (``WELCOME10``) that redeems a coupon, with limits of its own."""

    id = PrefixedIdField(prefix="promo")
    code = models.CharField(max_length=50)
    coupon = models.ForeignKey(Coupon, on_delete=models.CASCADE, related_name="promotion_codes")
    active = models.BooleanField(default=True)
    max_redemptions = models.PositiveIntegerField(null=True, blank=True)
    times_redeemed = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["code"]
        constraints = [
            models.UniqueConstraint(
                models.functions.Upper("code"), name="promotioncode_code_unique_any_case"
            ),
        ]

    def __str__(self) -> str:
        return self.code


class SubscriptionStatus(models.TextChoices):
    INCOMPLETE = "incomplete", "Incomplete"  # ordered; the first invoice is not paid yet
    TRIALING = "trialing", "Trialing"
    ACTIVE = "active", "Active"
    PAST_DUE = "past_due", "Past due"
    UNPAID = "unpaid", "Unpaid"
    CANCELED = "canceled", "Canceled"


class Subscription(models.Model):
    """One plan billed for one server or bot, period after period.

    The server or bot is created through the lifecycle services once the first invoice is paid
    (at once for a trial or a free price); ``billing_suspended`` remembers that billing, not
    staff, suspended it, so a payment lifts only billing's suspension.
    """

    id = PrefixedIdField(prefix="sub")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="subscriptions")
    price = models.ForeignKey(Price, on_delete=models.PROTECT, related_name="subscriptions")
    status = models.CharField(
        max_length=12, choices=SubscriptionStatus.choices, default=SubscriptionStatus.INCOMPLETE
    )
    quantity = models.PositiveIntegerField(default=1)
    server = models.ForeignKey(
        Server, on_delete=models.SET_NULL, null=True, blank=True, related_name="subscriptions"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.SET_NULL, null=True, blank=True, related_name="subscriptions"
    )
    # What to create once paid (name, game, region, variables …), as the order asked for it.
    order = models.JSONField(default=dict, blank=True)
    billing_cycle_anchor = models.DateTimeField()
    current_period_start = models.DateTimeField()
    current_period_end = models.DateTimeField()
    trial_end = models.DateTimeField(null=True, blank=True)
    cancel_at_period_end = models.BooleanField(default=False)
    canceled_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    coupon = models.ForeignKey(
        Coupon, on_delete=models.PROTECT, null=True, blank=True, related_name="subscriptions"
    )
    discount_end = models.DateTimeField(null=True, blank=True)
    billing_suspended = models.BooleanField(default=False)
    # When the trial's end and the coming termination were announced (each once).
    trial_notified_at = models.DateTimeField(null=True, blank=True)
    termination_warned_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="sub_account_created"),
            models.Index(fields=["status", "current_period_end"], name="sub_status_period_end"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["server"],
                condition=Q(server__isnull=False) & ~Q(status="canceled"),
                name="sub_one_live_per_server",
            ),
            models.UniqueConstraint(
                fields=["bot"],
                condition=Q(bot__isnull=False) & ~Q(status="canceled"),
                name="sub_one_live_per_bot",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class InvoiceStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    OPEN = "open", "Open"
    PAID = "paid", "Paid"
    VOID = "void", "Void"
    UNCOLLECTIBLE = "uncollectible", "Uncollectible"


class BillingReason(models.TextChoices):
    SUBSCRIPTION_CREATE = "subscription_create", "Subscription created"
    SUBSCRIPTION_CYCLE = "subscription_cycle", "Renewal"
    SUBSCRIPTION_UPDATE = "subscription_update", "Plan change"
    MANUAL = "manual", "Manual"


class DocumentSequence(models.Model):
    """The next number of a series of invoices or credit notes (``INV-2026``), taken under a
    row lock in the transaction that finalizes the document: numbers have no gaps."""

    series = models.CharField(max_length=32, primary_key=True)
    next_number = models.PositiveIntegerField(default=1)

    def __str__(self) -> str:
        return f"{self.series}: next {self.next_number}"


class Invoice(models.Model):
    """What an account owes for a period: lines, totals, and once finalized, a number and the
    seller's and buyer's details as they were that day. A finalized invoice never changes."""

    id = PrefixedIdField(prefix="inv")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="invoices")
    subscription = models.ForeignKey(
        Subscription, on_delete=models.SET_NULL, null=True, blank=True, related_name="invoices"
    )
    number = models.CharField(max_length=32, null=True, blank=True, unique=True)
    status = models.CharField(
        max_length=16, choices=InvoiceStatus.choices, default=InvoiceStatus.DRAFT
    )
    billing_reason = models.CharField(max_length=24, choices=BillingReason.choices)
    currency = models.CharField(max_length=3)
    period_start = models.DateTimeField(null=True, blank=True)
    period_end = models.DateTimeField(null=True, blank=True)
    subtotal = models.BigIntegerField(default=0)
    discount = models.BigIntegerField(default=0)
    tax = models.BigIntegerField(default=0)
    # The tax applied, as decided when the invoice was drafted (``billing.rules.tax.tax_for``):
    # inclusive amounts hold their tax (the total is not raised by it); exclusive ones add it.
    tax_percentage = models.DecimalField(max_digits=7, decimal_places=4, default=0)
    tax_inclusive = models.BooleanField(default=False)
    coupon = models.ForeignKey(
        Coupon, on_delete=models.PROTECT, null=True, blank=True, related_name="invoices"
    )
    total = models.BigIntegerField(default=0)
    amount_paid = models.BigIntegerField(default=0)
    amount_credited = models.BigIntegerField(default=0)
    amount_remaining = models.BigIntegerField(default=0)
    due_date = models.DateTimeField(null=True, blank=True)
    buyer = models.JSONField(default=dict, blank=True)
    seller = models.JSONField(default=dict, blank=True)
    notes = models.JSONField(default=list, blank=True)
    attempt_count = models.PositiveIntegerField(default=0)
    next_payment_attempt = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finalized_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)
    marked_uncollectible_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="invoice_account_created"),
            models.Index(fields=["status", "next_payment_attempt"], name="invoice_collect"),
        ]
        constraints = [
            # A period of a subscription is invoiced once, however many billing runs there are
            # (a voided one, e.g. before a plan change, may be issued again).
            models.UniqueConstraint(
                fields=["subscription", "billing_reason", "period_start"],
                condition=Q(billing_reason__in=["subscription_create", "subscription_cycle"])
                & ~Q(status="void"),
                name="invoice_one_per_period",
            ),
            models.CheckConstraint(
                condition=Q(status="draft") | Q(number__isnull=False),
                name="invoice_finalized_has_number",
            ),
        ]

    def __str__(self) -> str:
        return self.number or self.id


class InvoiceLine(models.Model):
    """One line of an invoice; ``amount`` is quantity times unit amount (negative for a credit)."""

    id = PrefixedIdField(prefix="il")
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveIntegerField(default=0)
    description = models.CharField(max_length=500)
    price = models.ForeignKey(Price, on_delete=models.PROTECT, null=True, blank=True)
    quantity = models.PositiveIntegerField(default=1)
    unit_amount = models.BigIntegerField()
    amount = models.BigIntegerField()
    discount_amount = models.BigIntegerField(default=0)
    tax_amount = models.BigIntegerField(default=0)
    period_start = models.DateTimeField(null=True, blank=True)
    period_end = models.DateTimeField(null=True, blank=True)
    proration = models.BooleanField(default=False)

    class Meta:
        ordering = ["invoice", "position", "id"]

    def __str__(self) -> str:
        return self.description


class CreditNote(models.Model):
    """A correction of a finalized invoice, in full or in part, with its reason; its amount goes
    to the customer's balance or is marked refunded outside (``refund_to``)."""

    class Reason(models.TextChoices):
        DUPLICATE = "duplicate", "Duplicate"
        FRAUDULENT = "fraudulent", "Fraudulent"
        ORDER_CHANGE = "order_change", "Order change"
        PRODUCT_UNSATISFACTORY = "product_unsatisfactory", "Product unsatisfactory"
        OTHER = "other", "Other"

    class RefundTo(models.TextChoices):
        BALANCE = "balance", "Customer balance"
        REFUNDED = "refunded", "Refunded outside"
        NONE = "none", "Reduces the amount owed"

    id = PrefixedIdField(prefix="cn")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="credit_notes")
    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="credit_notes")
    number = models.CharField(max_length=32, unique=True)
    currency = models.CharField(max_length=3)
    amount = models.BigIntegerField()
    reason = models.CharField(max_length=24, choices=Reason.choices)
    memo = models.CharField(max_length=500, blank=True)
    refund_to = models.CharField(max_length=10, choices=RefundTo.choices)
    buyer = models.JSONField(default=dict, blank=True)
    seller = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="creditnote_amount_positive"),
        ]

    def __str__(self) -> str:
        return self.number


class BalanceTransaction(models.Model):
    """One entry of an account's credit ledger; the balance is the sum of the entries.

    A positive ``amount`` is credit the customer has (an adjustment by staff, an overpayment, a
    credit note); a negative one is credit used (applied to an invoice). Every entry names its
    cause, and none is ever changed or deleted.
    """

    class Kind(models.TextChoices):
        ADJUSTMENT = "adjustment", "Adjustment by staff"
        APPLIED_TO_INVOICE = "applied_to_invoice", "Applied to an invoice"
        CREDIT_NOTE = "credit_note", "Credit note"
        OVERPAYMENT = "overpayment", "Overpayment"
        PRORATION = "proration", "Unused time of a plan change"

    id = PrefixedIdField(prefix="btx")
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="balance_transactions"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    amount = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    ending_balance = models.BigIntegerField()
    description = models.CharField(max_length=500)
    invoice = models.ForeignKey(
        Invoice, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    credit_note = models.ForeignKey(
        CreditNote, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="cbtxn_account_created"),
        ]
        constraints = [
            models.CheckConstraint(condition=~Q(amount=0), name="cbtxn_amount_not_zero"),
            models.CheckConstraint(
                condition=Q(ending_balance__gte=0), name="cbtxn_balance_never_negative"
            ),
        ]

    def __str__(self) -> str:
        sign = "+" if self.amount > 0 else ""
        return f"{sign}{_money(self.amount, self.currency)} ({self.kind})"


class PaymentStatus(models.TextChoices):
    PROCESSING = "processing", "Processing"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    REFUNDED = "refunded", "Refunded"


class Payment(models.Model):
    """Money received (or tried) for an invoice through one gateway: account credit, a bank
    transfer staff recorded, or a card. Its status is its own, never inferred from the invoice."""

    id = PrefixedIdField(prefix="pay")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="payments")
    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="payments")
    gateway = models.CharField(max_length=20)
    status = models.CharField(
        max_length=12, choices=PaymentStatus.choices, default=PaymentStatus.PROCESSING
    )
    amount = models.BigIntegerField()
    # Given back so far (credit notes refunded to the card); ``refunded`` once all of it is.
    amount_refunded = models.BigIntegerField(default=0)
    currency = models.CharField(max_length=3)
    reference = models.CharField(max_length=200, blank=True)
    gateway_payment_id = models.CharField(max_length=200, blank=True)
    failure_message = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    succeeded_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    refunded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="payment_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {_money(self.amount, self.currency)} ({self.status})"


class BillingClock(models.Model):
    """A clock an account's billing reads instead of the real one (tests, staff on demo
    accounts), as Stripe's test clocks: it only moves forward."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, primary_key=True, related_name="billing_clock"
    )
    now = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.account_id} at {self.now:%Y-%m-%d %H:%M}"


class BillingRunDay(models.Model):
    """What the billing job did on one day (UTC): how many passes, the last one's time, and the
    day's totals by step (the staff home's billing panel). One row a day, added to by each full
    pass (a test clock's walk over one account is not one)."""

    day = models.DateField(primary_key=True)
    runs = models.PositiveIntegerField(default=0)
    last_run_at = models.DateTimeField()
    counts = models.JSONField(default=dict)

    class Meta:
        ordering = ["-day"]

    def __str__(self) -> str:
        return f"{self.day}: {self.runs} runs"

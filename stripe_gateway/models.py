from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account
from hosting.ids import PrefixedIdField


class StripeCustomer(models.Model):
    """The Stripe customer of an account, created the first time it is needed."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, primary_key=True, related_name="stripe_customer"
    )
    customer_id = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.customer_id


class PaymentMethod(models.Model):
    """A card saved at Stripe for an account. Only what a person needs to recognise it is kept
    here (brand, last four digits, expiry), never card data; one is the default, the one
    renewals charge."""

    id = PrefixedIdField(prefix="pm")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="payment_methods")
    stripe_id = models.CharField(max_length=255, unique=True)
    brand = models.CharField(max_length=20)
    last4 = models.CharField(max_length=4)
    exp_month = models.PositiveSmallIntegerField()
    exp_year = models.PositiveSmallIntegerField()
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="pm_account_created")
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["account"], condition=Q(is_default=True), name="pm_one_default_per_account"
            )
        ]

    def __str__(self) -> str:
        return f"{self.brand} •••• {self.last4}"

    @property
    def type(self) -> str:
        return "card"

    @property
    def card(self) -> dict:
        return {
            "brand": self.brand,
            "last4": self.last4,
            "exp_month": self.exp_month,
            "exp_year": self.exp_year,
        }

    @property
    def label(self) -> str:
        return f"{self.brand.title()} •••• {self.last4} ({self.exp_month:02d}/{self.exp_year})"


class StripeEvent(models.Model):
    """A notification Stripe sent, kept by its id so each is handled once however often it is
    delivered; ``processed_at`` once the worker has handled it."""

    id = models.CharField(max_length=255, primary_key=True)
    type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=255, blank=True)
    payload = models.JSONField()
    received_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at"]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class StripeCharge(models.Model):
    """How a card payment is made at Stripe: which saved card, on or off session, and the
    PaymentIntent once created. The PaymentIntent is created unconfirmed and its id kept here
    before it is confirmed, so a payment whose confirmation got no answer (a timeout, a crash)
    can always be looked up at Stripe: no money moves without its id being known here."""

    payment = models.OneToOneField(
        "billing.Payment", on_delete=models.CASCADE, primary_key=True, related_name="stripe_charge"
    )
    payment_method = models.CharField(max_length=255)
    off_session = models.BooleanField(default=True)
    return_url = models.URLField(max_length=500, blank=True)
    payment_intent = models.CharField(max_length=255, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.payment_intent or f"(not created) {self.payment_id}"


class StripeRefund(models.Model):
    """Money a credit note gives back to a card, sent to Stripe after the credit note commits
    (idempotency key ``refund-<id>``); ``pending`` until Stripe has it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    payment = models.ForeignKey(
        "billing.Payment", on_delete=models.PROTECT, related_name="stripe_refunds"
    )
    credit_note = models.ForeignKey(
        "billing.CreditNote", on_delete=models.PROTECT, related_name="stripe_refunds"
    )
    amount = models.BigIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    refund_id = models.CharField(max_length=255, blank=True)
    failure_message = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.amount} of {self.payment_id} ({self.status})"

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Account, User
from events.models import Event
from hosting.ids import PrefixedIdField


class WebhookEndpoint(models.Model):
    """A URL of the customer's that receives the account's events, signed with its secret.

    The secret is stored encrypted (it must be used to sign); after a rotation the previous one
    keeps signing beside the new one until ``previous_secret_expires_at``. An endpoint receives
    only the events ``created_by`` may see with their current role (``events.visibility``).
    """

    id = PrefixedIdField(prefix="whe")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=500, blank=True)
    enabled_events = models.JSONField(default=list)
    created_by = models.ForeignKey(
        User,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The endpoint receives what this user may see (whoever created it or last "
        "changed its URL); unknown or no longer a member: what a viewer may see.",
    )
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=500, blank=True)
    secret_encrypted = models.TextField(editable=False)
    previous_secret_encrypted = models.TextField(blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    failing_since = models.DateTimeField(
        null=True, blank=True, help_text="First failed attempt of the current failure streak."
    )
    failure_streak = models.PositiveIntegerField(default=0)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    last_delivery_status = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "enabled"], name="webhook_account_enabled"),
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.id})"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")


class WebhookDelivery(models.Model):
    """One event on its way to one endpoint: written in the same transaction as the event."""

    id = PrefixedIdField(prefix="whd")
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="webhook_deliveries")
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="delivery_endpoint_created"),
            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_next"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery, with what came back."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    created_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    response_excerpt = models.TextField(blank=True, help_text="The first 1 KB of the response.")
    error = models.CharField(max_length=500, blank=True)
    next_retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} at {self.created_at:%Y-%m-%d %H:%M:%S}: {self.status_code}"

from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Account, ApiKey, User
from hosting.fields import StorableJSONField
from hosting.ids import PrefixedIdField

# Whether the hosting company's staff caused an event, as SQL: the selectors annotate a page of
# events with it as ``actor_is_staff`` (one query), and ``Event.caused_by_staff`` reads it.
CAUSED_BY_STAFF = Coalesce(models.F("actor_user__is_staff"), False)


class Event(models.Model):
    """One entry of an account's event log: what changed, who did it, from where, and when.

    ``data`` holds ``{"object": <the resource as the API shows it>, "previous_attributes": {...}}``
    (CONTRACT §9), so the log doubles as the audit trail and as the source webhooks deliver from.
    Events that belong to no account (a failed login for an unknown address) have no account.
    """

    id = PrefixedIdField(prefix="evt")
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, null=True, blank=True, related_name="events"
    )
    type = models.CharField(max_length=64)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64, blank=True)
    related_id = models.CharField(
        max_length=64, blank=True, help_text="The server or bot an action event belongs to."
    )
    data = StorableJSONField(default=dict)
    actor_user = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_api_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at", "-id"], name="event_account_created"),
            models.Index(fields=["account", "type", "-created_at"], name="event_account_type"),
            models.Index(fields=["object_id"], name="event_object"),
            models.Index(fields=["related_id"], name="event_related"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.object_id} ({self.id})"

    @property
    def caused_by_staff(self) -> bool:
        """Whether the hosting company's staff caused the event: the one rule (the actor is a
        staff user) by which the API, webhooks and the pages show such an actor to customers
        only as "Hosting staff", never by address, key or IP. Read from the selectors'
        ``actor_is_staff`` annotation (``CAUSED_BY_STAFF``) when the event has it, else from
        its user."""
        annotated = self.__dict__.get("actor_is_staff")
        if annotated is not None:
            return bool(annotated)
        return self.actor_user_id is not None and self.actor_user.is_staff

    @property
    def actor_label(self) -> str:
        if self.actor_api_key_id:
            return f"API key hms_{self.actor_api_key.key_id}… ({self.actor_user or 'deleted user'})"
        if self.actor_user_id:
            return str(self.actor_user)
        return "system"

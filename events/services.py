"""The one way to write the event log: ``record_event`` inside the transaction of the change."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Account, ApiKey, User
from events.models import Event
from hosting.http import client_ip


@dataclass(frozen=True)
class Actor:
    """Who caused a change: a person in the dashboard, an API key, or the system (all None)."""

    user: User | None = None
    api_key: ApiKey | None = None
    ip: str | None = None

    @classmethod
    def from_request(cls, request) -> "Actor":
        """The actor of a dashboard request (session user) or an API request (key principal)."""
        principal = getattr(request, "auth", None)
        api_key = getattr(principal, "api_key", None)
        user = getattr(request, "user", None)
        return cls(
            user=user if user is not None and user.is_authenticated else None,
            api_key=api_key,
            ip=client_ip(request),
        )


SYSTEM = Actor()


def changed_attributes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The previous values of every attribute that differs between two representations."""
    return {key: before.get(key) for key in after if before.get(key) != after[key]}


def record_event(
    *,
    type: str,
    account: Account | None,
    object_type: str,
    obj: dict[str, Any],
    actor: Actor = SYSTEM,
    previous_attributes: dict[str, Any] | None = None,
    related_id: str = "",
) -> Event:
    """Append an event; call it inside the same transaction as the change it describes.

    The webhook deliveries the event needs are queued in that same transaction (the outbox).
    """
    from webhooks.services import deliveries_for_event

    event = Event.objects.create(
        account=account,
        type=type,
        object_type=object_type,
        object_id=str(obj.get("id", "")),
        related_id=related_id,
        data={"object": obj, "previous_attributes": previous_attributes or {}},
        actor_user=actor.user,
        actor_api_key=actor.api_key,
        actor_ip=actor.ip,
    )
    deliveries_for_event(event)
    return event


def events_prune(*, older_than_days: int, now: datetime | None = None, batch: int = 1000) -> int:
    """Delete events older than the retention, with their webhook deliveries and attempts
    (cascade), in batches so that no single statement locks the whole log; return how many."""
    cutoff = (now or timezone.now()) - timedelta(days=older_than_days)
    deleted = 0
    while True:
        ids = list(Event.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[:batch])
        if not ids:
            return deleted
        with transaction.atomic():
            Event.objects.filter(pk__in=ids).delete()
        deleted += len(ids)

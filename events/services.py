"""The one way to write the event log: ``record_event`` inside the transaction of the change."""

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.models import Account
from events.models import Event

# What must happen to every event in the transaction that records it (the outbox). Apps above the
# event log subscribe here from their AppConfig.ready (webhooks queues its deliveries), so the
# event log depends on none of them and a consumer that fails rolls the change back with it.
_consumers: list[Callable[[Event], Any]] = []


def event_consumer_add(consumer: Callable[[Event], Any]) -> None:
    """Call ``consumer(event)`` for every event, inside the transaction that records it."""
    if consumer not in _consumers:
        _consumers.append(consumer)


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

    Every consumer (``event_consumer_add``) runs in that same transaction: the webhook
    deliveries the event needs are queued with it (the outbox).
    """
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
    for consumer in _consumers:
        consumer(event)
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

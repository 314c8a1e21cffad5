"""The one way to write the event log: ``record_event`` inside the transaction of the change."""

from collections.abc import Callable
from dataclasses import dataclass
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
# A consumer's way of taking many events at once (``record_events``), when it has one.
_batch_consumers: dict[Callable[[Event], Any], Callable[[list[Event]], Any]] = {}


def event_consumer_add(
    consumer: Callable[[Event], Any], many: Callable[[list[Event]], Any] | None = None
) -> None:
    """Call ``consumer(event)`` for every event, inside the transaction that records it;
    ``many(events)``, when given, takes the events ``record_events`` writes together."""
    if consumer not in _consumers:
        _consumers.append(consumer)
    if many is not None:
        _batch_consumers[consumer] = many


def changed_attributes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The previous values of every attribute that differs between two representations."""
    return {key: before.get(key) for key in after if before.get(key) != after[key]}


@dataclass(frozen=True)
class EventDraft:
    """One event for ``record_events``: the arguments ``record_event`` takes."""

    type: str
    account_id: str | None
    object_type: str
    obj: dict[str, Any]
    actor: Actor = SYSTEM
    previous_attributes: dict[str, Any] | None = None
    related_id: str = ""

    def event(self) -> Event:
        return Event(
            account_id=self.account_id,
            type=self.type,
            object_type=self.object_type,
            object_id=str(self.obj.get("id", "")),
            related_id=self.related_id,
            data={"object": self.obj, "previous_attributes": self.previous_attributes or {}},
            actor_user=self.actor.user,
            actor_api_key=self.actor.api_key,
            actor_ip=self.actor.ip,
        )


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
    event = EventDraft(
        type=type,
        account_id=account.pk if account is not None else None,
        object_type=object_type,
        obj=obj,
        actor=actor,
        previous_attributes=previous_attributes,
        related_id=related_id,
    ).event()
    event.save(force_insert=True)
    for consumer in _consumers:
        consumer(event)
    return event


def record_events(drafts: list[EventDraft]) -> list[Event]:
    """Append many events in one statement (a batch job's), in the caller's transaction, in
    order; each consumer takes them together when it can (``event_consumer_add``'s
    ``many``), else one by one. Otherwise what ``record_event`` does."""
    if not drafts:
        return []
    events = [draft.event() for draft in drafts]
    # Stamped a microsecond apart, so that the log's order (newest first, by time) is the
    # order they were recorded in, as it is for events recorded one by one.
    start = timezone.now()
    for offset, event in enumerate(events):
        event.created_at = start + timedelta(microseconds=offset)
    events = Event.objects.bulk_create(events)
    for consumer in _consumers:
        many = _batch_consumers.get(consumer)
        if many is not None:
            many(events)
        else:
            for event in events:
                consumer(event)
    return events


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

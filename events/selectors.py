"""Read-side queries for the event log."""

from collections.abc import Iterable

from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from events.models import CAUSED_BY_STAFF, Event
from events.visibility import visible_events_q


def events_of_object(*, account_id: str, object_id: str) -> QuerySet[Event]:
    """An object's own events and those of its actions, newest first, within one account."""
    return (
        Event.objects.filter(account_id=account_id)
        .filter(Q(object_id=object_id) | Q(related_id=object_id))
        .annotate(actor_is_staff=CAUSED_BY_STAFF)
    )


def events_of_account(*, account_id: str) -> QuerySet[Event]:
    """Every event of the account with its actor, newest first: what staff read of a
    customer's history (no role of the account narrows it)."""
    return (
        Event.objects.filter(account_id=account_id)
        .select_related("actor_user", "actor_api_key")
        .order_by("-created_at", "-id")
    )


def events_visible_to(
    *, account_id: str, role: str | None, user_id: str | None, scopes: Iterable[str]
) -> QuerySet[Event]:
    """The account's events that this role, user and scopes may see (``events.visibility``)."""
    return (
        Event.objects.filter(account_id=account_id)
        .filter(visible_events_q(role=role, user_id=user_id, scopes=scopes))
        .annotate(actor_is_staff=CAUSED_BY_STAFF)
    )


def newest_events(
    objects: set[tuple[str, str]], *, account_id: str
) -> dict[tuple[str, str], Event]:
    """The newest event of each ``(object_type, object_id)`` of the account, in one query."""
    ids = {object_id for _, object_id in objects if object_id}
    ranked = (
        Event.objects.filter(account_id=account_id, object_id__in=ids)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=["object_type", "object_id"],
                order_by=[F("created_at").desc(), F("id").desc()],
            )
        )
        .filter(rank=1)
        .only("object_type", "object_id", "type", "data")
    )
    return {(event.object_type, event.object_id): event for event in ranked}


LIFECYCLE_EVENTS = ("status_changed", "crashed")


def lifecycle_events(*, account_id: str, object_ids: Iterable[str]) -> QuerySet[Event]:
    """The status changes and crashes of these servers and bots, oldest first: what their
    uptime is worked out from (``analytics.selectors.uptime``)."""
    return (
        Event.objects.filter(
            account_id=account_id,
            object_id__in=list(object_ids),
            type__in=[
                "server.status_changed",
                "server.crashed",
                "bot.status_changed",
                "bot.crashed",
            ],
        )
        .order_by("created_at", "id")
        .only("object_id", "type", "data", "created_at", "actor_user_id", "actor_api_key_id")
    )

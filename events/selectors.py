"""Read-side queries for the event log."""

from collections.abc import Iterable

from django.db.models import Q, QuerySet

from events.models import Event
from events.visibility import visible_events_q


def events_of_object(*, account_id: str, object_id: str) -> QuerySet[Event]:
    """An object's own events and those of its actions, newest first, within one account."""
    return Event.objects.filter(account_id=account_id).filter(
        Q(object_id=object_id) | Q(related_id=object_id)
    )


def events_visible_to(
    *, account_id: str, role: str | None, user_id: str | None, scopes: Iterable[str]
) -> QuerySet[Event]:
    """The account's events that this role, user and scopes may see (``events.visibility``)."""
    return Event.objects.filter(account_id=account_id).filter(
        visible_events_q(role=role, user_id=user_id, scopes=scopes)
    )

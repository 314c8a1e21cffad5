"""Read-side queries for the event log."""

from django.db.models import Q, QuerySet

from events.models import Event


def events_of_object(*, account_id: str, object_id: str) -> QuerySet[Event]:
    """An object's own events and those of its actions, newest first, within one account."""
    return Event.objects.filter(account_id=account_id).filter(
        Q(object_id=object_id) | Q(related_id=object_id)
    )

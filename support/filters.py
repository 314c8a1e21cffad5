"""Query filters of the ticket lists (CONTRACT §4)."""

import django_filters
from django.db.models import Q

from hosting.api.filters import ChoiceInFilter, CreatedRangeFilterSet
from support.models import Priority, Ticket, TicketStatus


def _search(queryset, name, value):
    """A ticket's number (``1042`` or ``#1042``), its id, or words of its subject."""
    value = value.strip()
    if not value:
        return queryset
    if value.startswith("tkt_"):
        return queryset.filter(id=value)
    digits = value.removeprefix("#")
    if digits.isdigit():
        return queryset.filter(Q(number=int(digits)) | Q(subject__icontains=value))
    return queryset.filter(subject__icontains=value)


class TicketFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/tickets``."""

    status = ChoiceInFilter(
        choices=TicketStatus.choices,
        help_text="Only tickets in this status, or in any of a comma-separated list.",
    )
    priority = ChoiceInFilter(
        choices=Priority.choices, help_text="Only tickets of this priority (or a list of them)."
    )
    department = django_filters.CharFilter(
        field_name="department_id", help_text="Only tickets of this department (`dept_…`)."
    )
    server = django_filters.CharFilter(
        field_name="server_id", help_text="Only tickets about this server (`srv_…`)."
    )
    search = django_filters.CharFilter(
        method=_search, help_text="A ticket number (`1042`), an id, or words of the subject."
    )

    class Meta:
        model = Ticket
        fields: list[str] = []

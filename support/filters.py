"""Query filters of the ticket lists (CONTRACT §4)."""

import django_filters
from django.db.models import Q

from hosting.api.filters import (
    BooleanParameterFilter,
    ChoiceInFilter,
    CreatedRangeFilterSet,
    StableOrderingFilter,
)
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


class StaffTicketFilter(TicketFilter):
    """Query filters of ``GET /v1/admin/tickets``: a customer's list's, and the desk's own."""

    account = django_filters.CharFilter(
        field_name="account_id", help_text="Only tickets of this account (`acct_…`)."
    )
    assignee = django_filters.CharFilter(
        method="_assignee", help_text="A staff member (`usr_…`), or `none` for unassigned ones."
    )
    breached = BooleanParameterFilter(
        method="_breached",
        help_text="`true`: only tickets past a first-response or resolution target.",
    )
    ordering = StableOrderingFilter(
        fields=(
            ("created_at", "created_at"),
            ("resolution_due_at", "resolution_due_at"),
            ("updated_at", "updated_at"),
        ),
        help_text="created_at, resolution_due_at (the desk's queue order) or updated_at, '-' "
        "for descending. Default: -created_at.",
    )

    def _assignee(self, queryset, name, value):
        if value == "none":
            return queryset.filter(assignee__isnull=True)
        return queryset.filter(assignee_id=value)

    def _breached(self, queryset, name, value):
        breached = Q(first_response_breached=True) | Q(resolution_breached=True)
        return queryset.filter(breached) if value else queryset.exclude(breached)

"""Query filters of the ticket lists (CONTRACT §4), and the menus of the dashboard's lists (the
customers' tickets, the desk's queue): the API's filters narrowed to what a menu offers, one
value each, chosen from a list. Searching is the list's own ``?q=`` and sorting its ``?sort=``,
so the API's ``search`` and date range are left out."""

import django_filters
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from hosting.api.filters import (
    BooleanParameterFilter,
    ChoiceInFilter,
    CreatedRangeFilterSet,
    StableOrderingFilter,
)
from support import transitions
from support.models import Priority, Ticket, TicketStatus
from support.representations import staff_member_name
from support.selectors import departments_for_customers, departments_of_staff, staff_of_departments

# The desk's queue without a status: the tickets neither resolved nor closed; "all": any status.
UNFINISHED = ~Q(status__in=transitions.FINISHED)
ANY_STATUS = "all"


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


# --- The dashboard's menus (hosting/dashboard/lists.py) ---------------------------------------


class TicketListFilter(TicketFilter):
    """The tickets page: by status, priority and department."""

    status = django_filters.ChoiceFilter(
        choices=TicketStatus.choices, label=_("Status"), empty_label=_("Any status")
    )
    priority = django_filters.ChoiceFilter(
        choices=Priority.choices, label=_("Priority"), empty_label=_("Any priority")
    )
    department = django_filters.ModelChoiceFilter(
        queryset=departments_for_customers(),
        label=_("Department"),
        empty_label=_("Any department"),
    )
    created_after = created_before = server = search = None


class DeskTicketFilter(StaffTicketFilter):
    """The queue's menus: the staff API's filters, one value each. Without a status the queue
    holds the unfinished tickets (neither resolved nor closed); "Any status" shows them all."""

    status = django_filters.ChoiceFilter(
        choices=[(ANY_STATUS, _("Any status")), *TicketStatus.choices],
        label=_("Status"),
        empty_label=_("Unfinished"),
        method="_status",
    )
    priority = django_filters.ChoiceFilter(
        choices=Priority.choices, label=_("Priority"), empty_label=_("Any priority")
    )
    department = django_filters.ModelChoiceFilter(
        queryset=lambda request: departments_of_staff(request.user).order_by("name"),
        label=_("Department"),
        empty_label=_("All my departments"),
    )
    assignee = django_filters.ChoiceFilter(
        label=_("Assignee"), empty_label=_("Anyone"), method="_assignee_choice"
    )
    breached = django_filters.ChoiceFilter(
        choices=[("true", _("Target missed")), ("false", _("Within targets"))],
        label="SLA",
        empty_label=_("Any SLA"),
        method="_breached_choice",
    )
    created_after = created_before = server = search = account = ordering = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user = self.request.user
        teammates = staff_of_departments(departments_of_staff(user)).exclude(pk=user.pk)
        self.filters["assignee"].extra["choices"] = [
            ("me", _("Me")),
            ("none", _("Nobody")),
            *((member.pk, staff_member_name(member)) for member in teammates),
        ]

    def _status(self, queryset, name, value):
        return queryset if value == ANY_STATUS else queryset.filter(status=value)

    def _assignee_choice(self, queryset, name, value):
        if value == "me":
            return queryset.filter(assignee=self.request.user)
        return self._assignee(queryset, name, value)

    def _breached_choice(self, queryset, name, value):
        return self._breached(queryset, name, value == "true")

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.filter(UNFINISHED)
        return queryset

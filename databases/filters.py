"""Query filters of the staff's list of database hosts (``GET /v1/admin/database-hosts``)."""

import django_filters
from django.db.models import Q

from databases.models import DatabaseEngine, DatabaseHost
from hosting.api.filters import BooleanParameterFilter, CreatedRangeFilterSet, StableOrderingFilter
from servers.models import Region


class DatabaseHostFilter(CreatedRangeFilterSet):
    engine = django_filters.ChoiceFilter(
        choices=DatabaseEngine.choices, help_text="Only hosts of this engine."
    )
    active = BooleanParameterFilter(help_text="`true`: takes new databases; `false`: does not.")
    region = django_filters.ModelChoiceFilter(
        queryset=Region.objects.all(),
        to_field_name="slug",
        help_text="Only hosts of this region (hosts of every region are not listed).",
    )
    search = django_filters.CharFilter(
        method="filter_search",
        help_text="Case-insensitive match on the name or either address, or an exact id.",
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("name", "name")),
        help_text="created_at or name, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = DatabaseHost
        fields: list[str] = []

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        if value.startswith("dbh_"):
            return queryset.filter(id=value)
        return queryset.filter(
            Q(name__icontains=value) | Q(host__icontains=value) | Q(public_host__icontains=value)
        )

import django_filters

from hosting.api.filters import ChoiceInFilter, StableOrderingFilter
from servers.models import Game, Server, ServerStatus


class ServerFilter(django_filters.FilterSet):
    """Query filters of ``GET /v1/servers`` (CONTRACT §4)."""

    status = ChoiceInFilter(
        choices=ServerStatus.choices,
        help_text="Only servers in this status, or in any of a comma-separated list.",
    )
    game = django_filters.ModelChoiceFilter(
        queryset=Game.objects.all(),
        to_field_name="slug",
        help_text="Only servers of this game (a slug from GET /v1/games).",
    )
    search = django_filters.CharFilter(
        method="filter_search", help_text="Case-insensitive match on the name, or an exact id."
    )
    created_after = django_filters.IsoDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="Created at or after (ISO 8601)."
    )
    created_before = django_filters.IsoDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="Created before (ISO 8601)."
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("name", "name"), ("status", "status")),
        help_text="created_at, name or status, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = Server
        fields: list[str] = []

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        if value.startswith("srv_"):
            return queryset.filter(id=value)
        return queryset.filter(name__icontains=value)

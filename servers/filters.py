import django_filters

from hosting.api.filters import ChoiceInFilter, CreatedRangeFilterSet, StableOrderingFilter
from servers.models import Bot, BotRuntime, Game, Server, ServerStatus


class ServerFilter(CreatedRangeFilterSet):
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


class BotFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/bots``."""

    status = ChoiceInFilter(
        choices=ServerStatus.choices,
        help_text="Only bots in this status, or in any of a comma-separated list.",
    )
    runtime = django_filters.ChoiceFilter(choices=BotRuntime.choices)
    search = django_filters.CharFilter(
        method="filter_search", help_text="Case-insensitive match on the name, or an exact id."
    )
    ordering = StableOrderingFilter(
        fields=(("created_at", "created_at"), ("name", "name"), ("status", "status")),
        help_text="created_at, name or status, '-' for descending. Default: -created_at.",
    )

    class Meta:
        model = Bot
        fields: list[str] = []

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        if value.startswith("bot_"):
            return queryset.filter(id=value)
        return queryset.filter(name__icontains=value)

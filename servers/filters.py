import django_filters
from django.db.models import Q
from django.utils.translation import gettext_lazy

from events.filters import EventTypeChoiceFilter
from hosting.api.filters import (
    BooleanParameterFilter,
    ChoiceInFilter,
    CreatedRangeFilterSet,
    StableOrderingFilter,
)
from servers.models import Bot, BotRuntime, Game, Region, Server, ServerStatus


# What the servers' and the bots' API lists share, as functions rather than a base FilterSet: a
# base's filters would come first, and a 400 names the invalid parameters in the filters' order.
def name_or_id_search(id_prefix: str) -> django_filters.CharFilter:
    """``search`` of a list of servers or bots: an id (it starts with ``id_prefix``) matches
    only that one, anything else a part of the name, whatever its case."""

    def search(queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        if value.startswith(id_prefix):
            return queryset.filter(id=value)
        return queryset.filter(name__icontains=value)

    return django_filters.CharFilter(
        method=search, help_text="Case-insensitive match on the name, or an exact id."
    )


def instance_ordering() -> StableOrderingFilter:
    """``ordering`` of a list of servers or bots."""
    return StableOrderingFilter(
        fields=(("created_at", "created_at"), ("name", "name"), ("status", "status")),
        help_text="created_at, name or status, '-' for descending. Default: -created_at.",
    )


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
    search = name_or_id_search("srv_")
    ordering = instance_ordering()

    class Meta:
        model = Server
        fields: list[str] = []


class BotFilter(CreatedRangeFilterSet):
    """Query filters of ``GET /v1/bots``."""

    status = ChoiceInFilter(
        choices=ServerStatus.choices,
        help_text="Only bots in this status, or in any of a comma-separated list.",
    )
    runtime = django_filters.ChoiceFilter(choices=BotRuntime.choices)
    search = name_or_id_search("bot_")
    ordering = instance_ordering()

    class Meta:
        model = Bot
        fields: list[str] = []


# --- Dashboard lists (hosting/dashboard/lists.py): one value each, chosen from a menu ---------


class InstanceListFilter(django_filters.FilterSet):
    """What the servers page and the bots page both filter by: the status, first."""

    status = django_filters.ChoiceFilter(
        choices=ServerStatus.choices,
        label=gettext_lazy("Status"),
        empty_label=gettext_lazy("Any status"),
    )


class ServerListFilter(InstanceListFilter):
    """The servers page (the home page): by status, game and region."""

    game = django_filters.ModelChoiceFilter(
        queryset=Game.objects.only("slug", "name"),
        to_field_name="slug",
        label=gettext_lazy("Game"),
        empty_label=gettext_lazy("Any game"),
    )
    region = django_filters.ModelChoiceFilter(
        queryset=Region.objects.only("slug", "name"),
        to_field_name="slug",
        label=gettext_lazy("Region"),
        empty_label=gettext_lazy("Any region"),
    )

    class Meta:
        model = Server
        fields: list[str] = []


class BotListFilter(InstanceListFilter):
    """The bots page: by status and runtime."""

    runtime = django_filters.ChoiceFilter(
        choices=BotRuntime.choices,
        label=gettext_lazy("Runtime"),
        empty_label=gettext_lazy("Any runtime"),
    )

    class Meta:
        model = Bot
        fields: list[str] = []


class ServerEventFilter(django_filters.FilterSet):
    """A server's activity page: its own events' types and its actions'."""

    type = EventTypeChoiceFilter(groups=["Servers", "Actions"])


class BotEventFilter(django_filters.FilterSet):
    """A bot's activity page: its own events' types and its actions'."""

    type = EventTypeChoiceFilter(groups=["Bots", "Actions"])


class GameOrderingFilter(StableOrderingFilter):
    """A game has no creation time: its slug (its id) breaks ties."""

    tie_breakers = ("slug",)


class StaffGameFilter(django_filters.FilterSet):
    """The staff's list of games (``GET /v1/admin/games``)."""

    search = django_filters.CharFilter(
        method="filter_search", help_text="Case-insensitive match on the name or the slug."
    )
    imported = BooleanParameterFilter(
        method="filter_imported",
        help_text="`true`: only games imported from an egg; `false`: only the others.",
    )
    ordering = GameOrderingFilter(
        fields=(("name", "name"), ("slug", "slug"), ("default_port", "default_port")),
        help_text="name, slug or default_port, '-' for descending. Default: name.",
    )

    class Meta:
        model = Game
        fields: list[str] = []

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(name__icontains=value) | Q(slug__icontains=value))

    def filter_imported(self, queryset, name, value):
        imported = ~Q(origin={})
        return queryset.filter(imported if value else ~imported)

"""Query filters of ``GET /v1/events`` (CONTRACT §4), and of the dashboard's Activity page."""

import operator
from collections.abc import Iterable
from functools import reduce

import django_filters
from django.utils.functional import lazy
from django.utils.translation import gettext, gettext_lazy

from events.catalogue import EVENT_PATTERNS, EVENT_TYPES, pattern_q
from events.models import Event
from hosting.api.filters import ChoiceInFilter, CreatedRangeFilterSet


class EventTypeFilter(ChoiceInFilter):
    """Event types, ``area.*`` wildcards or ``*``, one or a comma-separated list."""

    def __init__(self, *args, **kwargs):
        super().__init__(
            *args, choices=[(pattern, pattern) for pattern in EVENT_PATTERNS], **kwargs
        )

    def filter(self, qs, value):
        if not value or "*" in value:
            return qs
        return qs.filter(reduce(operator.or_, (pattern_q(pattern) for pattern in value)))


class EventFilter(CreatedRangeFilterSet):
    """``type``, ``object_id``, ``created_after`` and ``created_before``."""

    type = EventTypeFilter(
        help_text="An event type (`server.status_changed`), every type of an area (`server.*`), "
        "or several of these separated by commas. An unknown type is 400 `invalid_parameter`."
    )
    object_id = django_filters.CharFilter(
        help_text="Only events about this object (`srv_...`, `whe_...`, ...)."
    )

    class Meta:
        model = Event
        fields: list[str] = []


# --- Dashboard lists (hosting/dashboard/lists.py): one value, chosen from a menu --------------


# The menu is built when the filter classes are defined: its words are read in the page's language
# when it is drawn. A group's name is the catalogue's (marked where the webhooks' picker names it).
_lazy_gettext = lazy(gettext, str)
_every = lazy(lambda area: gettext("Every %(area)s event") % {"area": area}, str)


def event_type_choices(groups: Iterable[str] | None = None) -> list:
    """The event catalogue as a grouped menu: per group, "every … event" for each of its areas
    (``server.*``), then each type. ``groups`` keeps only those groups ("Servers", "Actions")."""
    menu = []
    for group, types in EVENT_TYPES.items():
        if groups is not None and group not in groups:
            continue
        areas = dict.fromkeys(event_type.split(".")[0] for event_type in types)
        wildcards = [(f"{area}.*", _every(area.replace("_", " "))) for area in areas]
        menu.append(
            (
                _lazy_gettext(group),
                [*wildcards, *((event_type, event_type) for event_type in types)],
            )
        )
    return menu


class EventTypeChoiceFilter(django_filters.ChoiceFilter):
    """One event type, or every type of an area (``server.*``), as ``GET /v1/events`` reads
    them (``events.catalogue.pattern_q``)."""

    def __init__(self, *args, groups: Iterable[str] | None = None, **kwargs):
        kwargs.setdefault("label", gettext_lazy("Event type"))
        kwargs.setdefault("empty_label", gettext_lazy("All events"))
        super().__init__(*args, choices=event_type_choices(groups), **kwargs)

    def filter(self, qs, value):
        return qs.filter(pattern_q(value)) if value else qs


class ActivityFilter(django_filters.FilterSet):
    """The Activity page: events of one type, or of one kind of object (``server.*``)."""

    type = EventTypeChoiceFilter()

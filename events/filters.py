"""Query filters of ``GET /v1/events`` (CONTRACT §4)."""

import operator
from functools import reduce

import django_filters

from events.catalogue import EVENT_PATTERNS, pattern_q
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

"""Query filters of ``GET /v1/events`` (CONTRACT §4)."""

import django_filters
from django.db.models import Q

from events.models import Event
from hosting.api.filters import ChoiceInFilter, CreatedRangeFilterSet
from webhooks.services import ALL_EVENT_TYPES

EVENT_AREAS = sorted({event_type.split(".")[0] for event_type in ALL_EVENT_TYPES})
# What ``type=`` takes: a type, every type of an area, or everything.
TYPE_PATTERNS = ["*", *(f"{area}.*" for area in EVENT_AREAS), *sorted(ALL_EVENT_TYPES)]


class EventTypeFilter(ChoiceInFilter):
    """Event types, ``area.*`` wildcards or ``*``, one or a comma-separated list."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, choices=[(pattern, pattern) for pattern in TYPE_PATTERNS], **kwargs)

    def filter(self, qs, value):
        if not value or "*" in value:
            return qs
        matches = Q()
        for pattern in value:
            if pattern.endswith(".*"):
                matches |= Q(type__startswith=pattern[:-1])
            else:
                matches |= Q(type=pattern)
        return qs.filter(matches)


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

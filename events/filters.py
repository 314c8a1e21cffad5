"""Query filters of ``GET /v1/events`` (CONTRACT §4)."""

import django_filters
from django import forms
from django.db.models import Q

from events.models import Event
from hosting.api.filters import CreatedRangeFilterSet
from webhooks.services import ALL_EVENT_TYPES

EVENT_AREAS = frozenset(event_type.split(".")[0] for event_type in ALL_EVENT_TYPES)


class EventTypeField(forms.CharField):
    """A comma-separated list of event types, ``area.*`` wildcards or ``*``; unknown ones fail."""

    def to_python(self, value) -> list[str]:
        patterns = [part.strip() for part in (super().to_python(value) or "").split(",")]
        patterns = [pattern for pattern in patterns if pattern]
        for pattern in patterns:
            known = (
                pattern == "*"
                or pattern in ALL_EVENT_TYPES
                or (pattern.endswith(".*") and pattern[:-2] in EVENT_AREAS)
            )
            if not known:
                raise forms.ValidationError(
                    f"Unknown event type {pattern!r}.", code="invalid_choice"
                )
        return patterns


class EventTypeFilter(django_filters.Filter):
    field_class = EventTypeField

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

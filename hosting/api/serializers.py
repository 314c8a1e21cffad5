"""Serializer plumbing shared by every app's API."""

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings


class StrictInputSerializer(serializers.Serializer):
    """A request body that refuses keys it does not declare, instead of silently ignoring them.

    A customer sending ``max_api_keys`` must learn that it was not applied.
    """

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields)) if isinstance(data, Mapping) else []
        errors = {
            name: [ErrorDetail("This field is not accepted here.", code="unknown_field")]
            for name in unknown
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **errors}) from None
            raise
        if errors:
            raise serializers.ValidationError(errors)
        return value


# --- Fast lists of plain rows ----------------------------------------------------------------

_UTC = datetime.UTC


def _contract_datetime(value: datetime.datetime) -> str:
    """``2026-11-21T19:50:00Z``: DRF's ``DATETIME_FORMAT`` here, without strftime's cost."""
    if value.utcoffset():
        value = value.astimezone(_UTC)
    return value.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def _converter(field: serializers.Field) -> Callable[[Any], Any] | None:
    """How to show a column's value for a field, or None when only the field itself knows."""
    if isinstance(field, serializers.DateTimeField):
        wanted = getattr(field, "format", api_settings.DATETIME_FORMAT)  # as DRF reads it
        return _contract_datetime if wanted == "%Y-%m-%dT%H:%M:%SZ" else None
    if isinstance(field, serializers.ChoiceField):
        return _identity if all(isinstance(key, str) for key in field.choices) else None
    if type(field) is serializers.CharField:
        return str
    if type(field) is serializers.IntegerField:
        return int
    if type(field) is serializers.BooleanField:
        return bool
    return None


def _identity(value):
    return value


class RowListSerializer(serializers.ListSerializer):
    """Lists of plain rows (``QuerySet.values()``) shown as the child serializer shows one.

    DRF walks every field of every item through several calls; for a page of rows this costs
    more than the queries that fetched it. The child's fields are read once per serializer
    class into a plan (output name, column, converter) and each row becomes a dict in one pass.
    The output is the child's own (a test compares both for every field kind used): model
    instances, and fields that need the whole object (``source="*"``), go through the child.
    """

    _plans: dict[type, list[tuple[str, str, Callable[[Any], Any]]] | None] = {}

    def _plan(self):
        child_class = type(self.child)
        if child_class not in self._plans:
            plan = []
            for name, field in self.child.fields.items():
                if field.write_only:
                    continue
                convert = _converter(field)
                if convert is None or field.source == "*" or "." in field.source:
                    plan = None
                    break
                plan.append((name, field.source, convert))
            self._plans[child_class] = plan
        return self._plans[child_class]

    def to_representation(self, data):
        rows = data if isinstance(data, list) else list(data)
        plan = self._plan() if rows and isinstance(rows[0], Mapping) else None
        if plan is None:
            return super().to_representation(rows)
        return [
            {
                name: None if (value := row[column]) is None else convert(value)
                for name, column, convert in plan
            }
            for row in rows
        ]

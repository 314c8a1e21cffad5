"""Serializer plumbing shared by every app's API."""

from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings

from hosting.representations import timestamp


def _type_error(field: serializers.Field, value: Any) -> Any:
    """The errors of ``value`` for ``field`` when its JSON type is not the field's, or None.

    DRF converts where it can (``0`` to ``"0"``, ``"5"`` to 5, ``"yes"`` to True); a request
    body of the wrong type is refused instead, as its schema says."""
    if value is None:
        return None  # the field's own allow_null decides
    if isinstance(field, serializers.ListField):
        if not isinstance(value, list):
            return None  # the field's own "not a list"
        nested = {
            index: error
            for index, item in enumerate(value)
            if (error := _type_error(field.child, item)) is not None
        }
        return nested or None
    if isinstance(field, serializers.DictField):
        if not isinstance(value, Mapping):
            return None
        nested = {
            key: error
            for key, item in value.items()
            if (error := _type_error(field.child, item)) is not None
        }
        return nested or None
    if isinstance(field, serializers.Serializer):
        if not isinstance(value, Mapping):
            return None
        nested = {
            name: error
            for name, child in field.fields.items()
            if name in value and (error := _type_error(child, value[name])) is not None
        }
        return nested or None
    for kind, wanted, sentence in _JSON_TYPES:
        if isinstance(field, kind) and not wanted(value):
            return [ErrorDetail(sentence, code="invalid")]
    limit = getattr(field, "max_length", None)
    if isinstance(field, serializers.CharField) and limit is not None and len(value) > limit:
        # Counted as sent, as the schema's maxLength counts it (DRF would count after trimming).
        return [
            ErrorDetail(f"Ensure this field has no more than {limit} characters.", "max_length")
        ]
    return None


def _is_string(value) -> bool:
    return isinstance(value, str)


def _is_integer(value) -> bool:
    # JSON has one number type: 3.0 is an integer (as JSON Schema says), 3.5 is not.
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_boolean(value) -> bool:
    return isinstance(value, bool)


_JSON_TYPES = [
    (serializers.BooleanField, _is_boolean, "Must be true or false."),
    (serializers.IntegerField, _is_integer, "Must be an integer."),
    (serializers.FloatField, _is_number, "Must be a number."),
    (serializers.DecimalField, _is_number, "Must be a number."),
    (serializers.CharField, _is_string, "Must be a string."),
    (serializers.ChoiceField, _is_string, "Must be a string."),
    (serializers.DateTimeField, _is_string, "Must be an ISO 8601 date-time string."),
]


class StrictInputSerializer(serializers.Serializer):
    """A request body that refuses keys it does not declare, instead of silently ignoring them,
    and values of another JSON type than its schema says, instead of converting them.

    A customer sending ``max_api_keys`` must learn that it was not applied, and one sending
    ``{"name": 0}`` that a name is a string.
    """

    def to_internal_value(self, data):
        errors = {}
        if isinstance(data, Mapping):
            errors = {
                name: [ErrorDetail("This field is not accepted here.", code="unknown_field")]
                for name in sorted(set(data) - set(self.fields))
            }
            errors |= {
                name: error
                for name, field in self.fields.items()
                if name in data and (error := _type_error(field, data[name])) is not None
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


class EmptyBodySerializer(StrictInputSerializer):
    """For actions without parameters: any key sent is refused."""


class DeletedSerializer(serializers.Serializer):
    """What a ``DELETE`` that removed the object at once answers."""

    id = serializers.CharField(read_only=True)
    deleted = serializers.BooleanField(read_only=True)


# --- Representations ---------------------------------------------------------------------------


# An output serializer whose answer is its resource's representation function (beside the model,
# shared with the event log); its declared fields only document that answer in the OpenAPI schema.
# tests/api/test_representations.py holds the two to the same output. (A comment, not a
# docstring: drf-spectacular would give every such schema component this text as description.)
class RepresentedBy:
    represent: Callable[[Any], dict[str, Any]]

    def to_representation(self, instance):
        return type(self).represent(instance)


# --- Fast lists of plain rows ----------------------------------------------------------------


def _converter(field: serializers.Field) -> Callable[[Any], Any] | None:
    """How to show a column's value for a field, or None when only the field itself knows."""
    if isinstance(field, serializers.DateTimeField):
        wanted = getattr(field, "format", api_settings.DATETIME_FORMAT)  # as DRF reads it
        return timestamp if wanted == "%Y-%m-%dT%H:%M:%SZ" else None
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


_plans: dict[type, list[tuple[str, str, Callable[[Any], Any]]] | None] = {}


def row_plan(serializer_class: type) -> list[tuple[str, str, Callable[[Any], Any]]] | None:
    """How ``serializer_class`` shows a plain row (``QuerySet.values()``): (output name, column,
    converter) per field, read once per class; None when a field needs the serializer itself
    (no known converter, ``source="*"``, a dotted source)."""
    if serializer_class not in _plans:
        plan: list | None = []
        for name, field in serializer_class().fields.items():
            if field.write_only:
                continue
            convert = _converter(field)
            if convert is None or field.source == "*" or "." in field.source:
                plan = None
                break
            plan.append((name, field.source, convert))
        _plans[serializer_class] = plan
    return _plans[serializer_class]


def rows_by_plan(plan: list[tuple[str, str, Callable[[Any], Any]]], rows: list) -> list[dict]:
    """Each of ``rows`` (mappings) shown by ``plan`` (``row_plan``), in one pass."""
    return [
        {
            name: None if (value := row[column]) is None else convert(value)
            for name, column, convert in plan
        }
        for row in rows
    ]


def shown_as_rows(serializer_class: type, rows: list) -> list[dict] | None:
    """A page as ``serializer_class`` shows it, without building a serializer: the same answer
    as ``serializer_class(rows, many=True).data``. Plain rows of a serializer whose list
    serializer is ``RowListSerializer`` by its plan; anything of a ``RepresentedBy`` serializer
    with DRF's own list serializer by its representation function, row by row, as that list
    serializer would call it. None when it cannot (model instances of other serializers, a
    serializer that reads more than columns): the caller serializes as usual."""
    meta = getattr(serializer_class, "Meta", None)
    list_serializer = getattr(meta, "list_serializer_class", None)
    if (
        list_serializer is None
        and issubclass(serializer_class, RepresentedBy)
        and serializer_class.to_representation is RepresentedBy.to_representation
        and getattr(serializer_class.many_init, "__func__", None)
        is serializers.BaseSerializer.many_init.__func__
    ):
        represent = serializer_class.represent
        return [represent(row) for row in rows]
    if list_serializer is not RowListSerializer:
        return None
    if not rows:
        return []
    if not isinstance(rows[0], Mapping) or (plan := row_plan(serializer_class)) is None:
        return None
    return rows_by_plan(plan, rows)


class RowListSerializer(serializers.ListSerializer):
    """Lists of plain rows (``QuerySet.values()``) shown as the child serializer shows one.

    DRF walks every field of every item through several calls; for a page of rows this costs
    more than the queries that fetched it. The child's fields are read once per serializer
    class into a plan (output name, column, converter, ``row_plan``) and each row becomes a
    dict in one pass. The output is the child's own (a test compares both for every field kind
    used): model instances, and fields that need the whole object (``source="*"``), go through
    the child. A list view skips even this serializer for a page of rows (``shown_as_rows``).
    """

    def to_representation(self, data):
        rows = data if isinstance(data, list) else list(data)
        plan = row_plan(type(self.child)) if rows and isinstance(rows[0], Mapping) else None
        if plan is None:
            return super().to_representation(rows)
        return rows_by_plan(plan, rows)

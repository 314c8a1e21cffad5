"""Model fields shared by the apps, and how a JSON column is read."""

import json
import re
from typing import Any

import orjson
from django.db import models
from django.db.models.fields.json import KeyTransform

from hosting.text import storable_data

# What ``json.dumps`` writes for a NUL or a UTF-16 surrogate; emoji are written as surrogate
# pairs too, so a match only says the value is worth a closer look.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|d[89a-f])", re.IGNORECASE)
# Digits enough for an integer past 64 bits, which orjson would read as a float.
_LONG_NUMBER = re.compile(r"[0-9]{19}")


class StorableJSONField(models.JSONField):
    """A JSONField for what customers write, read back safe to show.

    New values cannot hold an unpaired surrogate or a NUL (hosting/text.py refuses them at the
    API's door), but SQLite kept such values before that rule, and every read of them then
    failed. A value read with either gets U+FFFD in its place, so the row can be shown (and
    repaired by the migrations that introduced this field).
    """

    def from_db_value(self, value, expression, connection):
        data = json_from_db(self, value, expression)
        if isinstance(value, str) and _SUSPECT_ESCAPE.search(value):
            return storable_data(data)
        return data


def repair_json_column(model, field: str) -> int:
    """Rewrite the rows of ``model`` whose ``field`` holds unstorable text; return how many.

    A data migration's step, run on the historical model while the field is still a plain
    JSONField (which reads the bad text as it is). Only SQLite can hold such values, so the
    migrations call it there only.
    """
    repaired = 0
    for pk, value in model.objects.values_list("pk", field).iterator():
        clean = storable_data(value)
        if clean != value:
            model.objects.filter(pk=pk).update(**{field: clean})
            repaired += 1
    return repaired


def json_from_db(field: models.JSONField, value: Any, expression: Any) -> Any:
    """What Django's ``JSONField.from_db_value`` answers for ``value``, parsed by orjson where
    it can (3 to 5 times faster than ``json.loads`` for a small object, which a list reads once
    per row and JSON column: bench/README.md, "Thirteenth run").

    orjson is strict where Python's ``json`` is lenient: it refuses ``NaN`` and ``Infinity``, a
    number past a float's range and a string that is not UTF-8 (an unpaired surrogate SQLite
    kept), and it reads an integer past 64 bits as a float. For those (any run of 19 digits
    or more is left to ``json``), and for a field with a decoder of its own, ``json.loads``
    reads the value as Django would; what both read, they read alike (a test compares them
    over every kind of value)."""
    if value is None:
        return value
    # Some backends (SQLite at least) extract non-string values in their SQL datatypes.
    if isinstance(expression, KeyTransform) and not isinstance(value, str):
        return value
    if field.decoder is None and isinstance(value, str) and not _LONG_NUMBER.search(value):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(value, cls=field.decoder)
    except json.JSONDecodeError:
        return value

"""Model fields shared by the apps, and how a JSON column is read."""

import re
from typing import Any

import orjson
from django.db import models

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
        data = json_read(value) if self.decoder is None else NOT_READ
        if data is NOT_READ:
            data = super().from_db_value(value, expression, connection)
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


# What ``json_read`` answers for a text it leaves to Python's ``json``.
NOT_READ = object()


def json_read(text: Any) -> Any:
    """A JSON column's text as orjson reads it, 3 to 5 times faster than ``json.loads`` for a
    small object (a list reads one per row and JSON column: bench/README.md, "Thirteenth
    run"); ``NOT_READ`` for anything but a ``str`` and for what orjson would read otherwise
    than Python's ``json``, which the caller then reads as Django does.

    orjson is strict where ``json`` is lenient: it refuses ``NaN`` and ``Infinity``, a number
    past a float's range and a string that is not UTF-8 (an unpaired surrogate SQLite kept),
    and it reads an integer past 64 bits as a float (so a text with a run of 19 digits or more
    is left to ``json``). What both read, they read alike (a test compares them over every
    kind of value)."""
    if type(text) is str and not _LONG_NUMBER.search(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return NOT_READ

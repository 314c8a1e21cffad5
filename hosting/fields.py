"""Model fields shared by the apps."""

import re

from django.db import models

from hosting.text import storable_data

# What ``json.dumps`` writes for a NUL or a UTF-16 surrogate; emoji are written as surrogate
# pairs too, so a match only says the value is worth a closer look.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|d[89a-f])", re.IGNORECASE)


class StorableJSONField(models.JSONField):
    """A JSONField for what customers write, read back safe to show.

    New values cannot hold an unpaired surrogate or a NUL (hosting/text.py refuses them at the
    API's door), but SQLite kept such values before that rule, and every read of them then
    failed. A value read with either gets U+FFFD in its place, so the row can be shown (and
    repaired by the migrations that introduced this field).
    """

    def from_db_value(self, value, expression, connection):
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

"""How values look in a resource's public representation (CONTRACT §2, §9).

A resource's representation is one plain function beside its model (``accounts/representations
.py``, ``servers/representations.py``, …): the API answers with it and events carry it, so an
event shows a resource exactly as ``GET`` on it would, and services never need the API layer.
The API's serializers only document it (a test holds both to the same fields and values).
JSON columns are deep-copied into a representation (``json_copy``), so a "before" snapshot taken
by a service cannot change with the model it was taken from.
"""

import datetime
from copy import deepcopy
from typing import Any

_UTC = datetime.UTC


def timestamp(value: datetime.datetime | None) -> str | None:
    """``2026-11-21T19:50:00Z``: a time in UTC to the second, as the contract writes times."""
    if value is None:
        return None
    if value.utcoffset():
        value = value.astimezone(_UTC)
    return value.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def json_copy(value: Any) -> Any:
    """A copy of JSON-shaped data (what a JSON column holds: dicts, lists, strings, numbers,
    booleans, None) that shares nothing mutable with ``value``, as ``copy.deepcopy`` makes it,
    at a fraction of its cost; anything else in it is copied by ``deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return deepcopy(value)

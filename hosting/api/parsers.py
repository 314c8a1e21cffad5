"""Request bodies: JSON only, parsed once, and refused whole when a database could not keep them.

Every string of a body (keys included) passes ``hosting.text``; numbers must fit 64 bits (what
PostgreSQL, SQLite and the JSON encoder hold) and be finite; nesting stops at ``MAX_DEPTH``
levels. A problem in a field is 400 ``validation_failed`` naming the field by its path
(``variables.MOTD``); a body that is not JSON, or nested past the limit, is 400 ``invalid_json``.
"""

import json
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from hosting.errors import InvalidJson, ValidationFailed
from hosting.text import text_problem

MAX_DEPTH = 32
_INT64 = range(-(2**63), 2**63)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _problems(value: Any, path: str, depth: int, found: list[dict[str, str]]) -> None:
    """Collect the problems of ``value``, found ``depth`` objects and arrays deep."""
    if isinstance(value, dict | list) and depth >= MAX_DEPTH:
        raise InvalidJson(f"The request body is nested more than {MAX_DEPTH} levels deep.")
    name = path or "body"
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            code, sentence = problem
            found.append({"name": name, "code": code, "message": f"{name} {sentence}"})
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int):
        if value not in _INT64:
            found.append(
                {"name": name, "code": "out_of_range", "message": f"{name} must fit in 64 bits."}
            )
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            found.append(
                {"name": name, "code": "out_of_range", "message": f"{name} is out of range."}
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key)
            if problem is not None:
                code, sentence = problem
                found.append({"name": name, "code": code, "message": f"A key of {name} {sentence}"})
                continue
            _problems(item, f"{path}.{key}" if path else key, depth + 1, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _problems(item, f"{path}.{index}" if path else str(index), depth + 1, found)


def check_body(data: Any) -> Any:
    """``data`` if every value in it can be stored; raise the contract's error otherwise."""
    found: list[dict[str, str]] = []
    _problems(data, "", 0, found)
    if found:
        message = found[0]["message"] if len(found) == 1 else f"{len(found)} fields are invalid."
        raise ValidationFailed(message, details={"fields": found})
    return data


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with the checks above, and none of Python's extensions to JSON
    (``NaN``, ``Infinity``)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding)
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise InvalidJson(
                f"The request body is nested more than {MAX_DEPTH} levels deep."
            ) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidJson(f"The request body is not valid JSON: {_describe(exc)}") from None
        return check_body(data)


def _describe(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})."
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8."
    return "it holds a number that is too large or not a number."

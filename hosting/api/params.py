"""Reading query parameters: one parser for integers and one for comma lists (CONTRACT §4).

Every refusal is 400 ``invalid_parameter`` naming the parameter in ``details.parameters``.
A known parameter may appear once, except lists: ``status=running,stopped`` and
``status=running&status=stopped`` (what generated clients send) are the same list.
"""

import datetime
import re

from django.http import QueryDict

from hosting.errors import InvalidParameter
from hosting.text import text_problem

# Plain ASCII digits: int() alone would also take "+3", " 3", "3_000" and "٣" (Arabic three).
_DIGITS = re.compile(r"[0-9]+", re.ASCII)


def invalid_parameter(name: str, code: str, message: str) -> InvalidParameter:
    return InvalidParameter.named(name, code, message)


def _checked(name: str, value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        code, sentence = problem
        raise invalid_parameter(name, code, f"Query parameter '{name}' {sentence}")
    if value == "":
        raise invalid_parameter(name, "blank", f"Query parameter '{name}' must not be empty.")
    return value


def single_value(params: QueryDict, name: str) -> str | None:
    """The one value of ``name`` (None when absent); empty or repeated is refused."""
    values = params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise invalid_parameter(
            name, "multiple_values", f"Query parameter '{name}' may be given only once."
        )
    return _checked(name, values[0])


def list_value(params: QueryDict, name: str) -> list[str] | None:
    """Every item of ``name``, from comma lists and repeated keys alike (None when absent)."""
    values = params.getlist(name)
    if not values:
        return None
    items = []
    for value in values:
        for item in _checked(name, value).split(","):
            item = item.strip()
            if not item:
                raise invalid_parameter(
                    name,
                    "blank",
                    f"Query parameter '{name}' has an empty item; separate values with single "
                    "commas.",
                )
            items.append(item)
    return items


def integer_value(params: QueryDict, name: str, *, default: int, minimum: int, maximum: int) -> int:
    """An integer from ``minimum`` to ``maximum`` written in ASCII digits, or ``default``."""
    raw = single_value(params, name)
    if raw is None:
        return default
    if not _DIGITS.fullmatch(raw):
        if raw.startswith("-") and _DIGITS.fullmatch(raw[1:]):
            raise invalid_parameter(
                name, "min_value", f"Query parameter '{name}' must be at least {minimum}."
            )
        raise invalid_parameter(name, "invalid", f"Query parameter '{name}' must be an integer.")
    # Compare the digits before converting: a number of 5,000 digits is refused, not parsed.
    digits = raw.lstrip("0") or "0"
    if len(digits) > len(str(maximum)) or int(digits) > maximum:
        raise invalid_parameter(
            name, "max_value", f"Query parameter '{name}' must be at most {maximum}."
        )
    value = int(digits)
    if value < minimum:
        raise invalid_parameter(
            name, "min_value", f"Query parameter '{name}' must be at least {minimum}."
        )
    return value


def datetime_value(params: QueryDict, name: str) -> datetime.datetime | None:
    """An ISO 8601 time (``2026-11-21T15:04:05Z``; without an offset it is UTC), in UTC."""
    raw = single_value(params, name)
    if raw is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(raw)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        return moment.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        raise invalid_parameter(
            name, "invalid", f"Query parameter '{name}' must be an ISO 8601 time."
        ) from None

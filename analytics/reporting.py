"""What every report is: a name, the parameters it was made with, typed columns and rows.

One shape for all of them, so that one CSV writer and one dashboard chart serve any report.
Money columns hold integers in minor units beside a ``currency`` column of the same row (a report
never adds up two currencies); a ``percent`` is a fraction of 1 with at most 4 decimals
(``0.0525`` is 5.25 %); ``seconds``, ``count`` and ``bytes`` are whole numbers, ``number``
one with at most 2 decimals (CPU as a percentage of one core); a ``month`` is
``YYYY-MM``, a ``date`` ``YYYY-MM-DD`` and a ``time`` ``YYYY-MM-DDTHH:MM:SSZ`` (UTC). A
figure that cannot be worked out (a rate over nothing, a percentile of no tickets) is None.

Months are UTC calendar months; a range of months is ``[first, last]``, both included.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

COLUMN_TYPES = (
    "month",
    "date",
    "time",
    "string",
    "integer",
    "number",
    "bytes",
    "money",
    "percent",
    "seconds",
    "count",
)
_FOUR_DECIMALS = Decimal("0.0001")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    label: str

    def __post_init__(self) -> None:
        if self.type not in COLUMN_TYPES:
            raise ValueError(f"unknown column type {self.type!r}")


@dataclass(frozen=True)
class Report:
    """A report's answer: ``rows`` are dicts keyed by the columns' names, in their order."""

    name: str
    parameters: dict[str, Any]
    columns: Sequence[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)


def month_start(moment: date) -> date:
    """The first day of ``moment``'s month (a datetime is taken in UTC)."""
    if isinstance(moment, datetime):
        moment = moment.astimezone(UTC).date()
    return moment.replace(day=1)


def month_after(month: date) -> date:
    """The first day of the month after ``month``'s."""
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def months(first: date, last: date) -> list[date]:
    """The first days of the months from ``first``'s to ``last``'s, both included."""
    found, month = [], month_start(first)
    while month <= last:
        found.append(month)
        month = month_after(month)
    return found


def midnight(day: date) -> datetime:
    """The moment ``day`` starts, in UTC."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def month_label(month: date) -> str:
    return f"{month:%Y-%m}"


def time_label(moment: datetime | None) -> str | None:
    """A ``time`` cell: ``2026-11-21T15:04:05Z`` (UTC), None for none."""
    return None if moment is None else f"{moment.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def share(part: int, whole: int) -> float | None:
    """``part / whole`` as a report's ``percent``: 4 decimals, half up; None over nothing."""
    if whole == 0:
        return None
    exact = Decimal(part) / Decimal(whole)
    return float(exact.quantize(_FOUR_DECIMALS, rounding=ROUND_HALF_UP))


def nearest_rank(values: Sequence[int], percentile: int) -> int | None:
    """The ``percentile``-th percentile by the nearest-rank method: the value at rank
    ``ceil(percentile / 100 * n)`` of the ``n`` values sorted ascending; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = -(-percentile * len(ordered) // 100)  # the ceiling, in integers
    return ordered[max(rank, 1) - 1]

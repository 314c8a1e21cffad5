"""Billing periods of a recurring price: ``{interval: hour|day|week|month|year, interval_count}``.

All datetimes are aware and computed in UTC, so a period never gains or loses an hour to a
daylight-saving change; an aware datetime in another zone is converted to UTC first, and the
calendar day of an anchor is its UTC day.

Months and years follow Stripe's billing-cycle anchor: a period ending on a day the month lacks
ends on the month's last day (31 January + 1 month = 28 or 29 February), and later periods go
back to the anchor's day (31 March, 30 April, 31 May). That needs the anchor, so renewals use
``nth_period_end(anchor, …, n)``; chaining ``period_end`` from each period's end would drift
(31 January → 28 February → 28 March).
"""

import calendar
from datetime import UTC, datetime, time, timedelta

from django.utils.formats import date_format

from billing.models import Interval


class InvalidRecurring(ValueError):
    """A recurring price's interval or interval count is not one we bill by."""

    code = "invalid_recurring"


# The longest period a price may have, three years as Stripe allows, so that a mistyped count
# cannot create a subscription that renews in a century.
MAX_INTERVAL_COUNT: dict[Interval, int] = {
    Interval.HOUR: 3 * 365 * 24,
    Interval.DAY: 3 * 365,
    Interval.WEEK: 3 * 52,
    Interval.MONTH: 3 * 12,
    Interval.YEAR: 3,
}

_FIXED_LENGTH = {
    Interval.HOUR: timedelta(hours=1),
    Interval.DAY: timedelta(days=1),
    Interval.WEEK: timedelta(weeks=1),
}


def validate_recurring(interval: str, interval_count: int) -> tuple[Interval, int]:
    """``(interval, interval_count)`` checked: a known interval and a whole count from 1 to the
    three-year maximum; ``InvalidRecurring`` otherwise."""
    try:
        unit = Interval(interval)
    except ValueError:
        allowed = ", ".join(Interval)
        raise InvalidRecurring(f"The interval must be one of {allowed}.") from None
    if isinstance(interval_count, bool) or not isinstance(interval_count, int):
        raise InvalidRecurring("The interval count must be a whole number.")
    if not 1 <= interval_count <= MAX_INTERVAL_COUNT[unit]:
        raise InvalidRecurring(
            f"The interval count must be between 1 and {MAX_INTERVAL_COUNT[unit]} for "
            f"the interval {unit} (three years at most)."
        )
    return unit, interval_count


def period_end(start: datetime, interval: str, interval_count: int) -> datetime:
    """The end of the period that begins at ``start``: ``interval_count`` intervals later, in UTC.

    The same as ``nth_period_end(start, interval, interval_count, 1)``.
    """
    return nth_period_end(start, interval, interval_count, 1)


def nth_period_end(anchor: datetime, interval: str, interval_count: int, n: int) -> datetime:
    """The boundary ``n`` periods after ``anchor``, counted from the anchor so periods never drift.

    ``n == 0`` is the anchor itself; period ``k`` (from 0) runs from ``nth_period_end(…, k)`` to
    ``nth_period_end(…, k + 1)``. Months and years keep the anchor's day and time of day, on
    the month's last day when the month is shorter (29 February → 28 February in other years).
    """
    anchor = _utc(anchor)
    unit, count = validate_recurring(interval, interval_count)
    if n < 0:
        raise ValueError("n must not be negative.")
    steps = count * n
    if unit in _FIXED_LENGTH:
        return anchor + steps * _FIXED_LENGTH[unit]
    months = steps * 12 if unit is Interval.YEAR else steps
    return _add_months(anchor, months)


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("Billing datetimes must be timezone-aware.")
    return moment.astimezone(UTC)


def _add_months(moment: datetime, months: int) -> datetime:
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def day_label(moment: datetime) -> str:
    """A moment as invoice lines name it: ``15 Jan 2031 12:00``."""
    return date_format(moment, "j M Y H:i")


def moment_text(moment: datetime) -> str:
    """A period's end as the Billing pages show it: the day, with the time only when not
    midnight (monthly periods read as days, hourly ones need the hour)."""
    moment = moment.astimezone(UTC)
    if moment.time() == time.min:
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def period_text(start: datetime | None, end: datetime | None) -> str:
    """A period as the Billing pages show it, its two ends joined by an en dash; empty
    without one."""
    if start is None or end is None:
        return ""
    return f"{moment_text(start)} \N{EN DASH} {moment_text(end)}"

"""Business-hours clocks for SLAs: "N minutes of business time after X" and "how much business
time lies between X and Y".

The model, and why:

* A calendar is a set of weekly intervals in *local wall-clock time* of one IANA zone, because
  that is how a help desk states its hours ("Mon-Fri 09:00-17:00 Berlin time") and it must keep
  meaning that across daylight-saving changes.
* Business time is *real elapsed time* (UTC seconds) spent inside those local intervals. A
  00:00-24:00 day on which the clocks go forward therefore holds 23 hours, and one on which they
  go back holds 25: an SLA measures how long the customer actually waited.
* Local times that do not exist (the hour skipped when the clocks go forward) are mapped to the
  instant of the jump, i.e. to the first moment the wall clock shows that time or later; a desk
  "opening at 02:30" on that night opens when the clock jumps to 03:00. Local times that occur
  twice (the hour repeated when the clocks go back) take their first occurrence (``fold=0``).
  Both choices keep the local-to-UTC mapping monotonic, so intervals that do not overlap on the
  wall clock never overlap in real time and no second is counted twice. Put another way: an
  instant is business time when the latest wall-clock time shown so far lies in the hours.
* Work proceeds a local week at a time: a week's open intervals are computed once and a whole
  week the clock passes through is consumed by its total, so the cost grows with the number of
  weeks spanned, never with the number of minutes. A week is not simply 7 days of the nominal
  weekly total because a DST change inside an open interval lengthens or shortens it, and
  ``zoneinfo`` does not expose the transitions that would allow jumping over many weeks at once.

Everything here is plain standard library, so it can be used (and tested) without Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["BusinessCalendar", "add_business_time", "business_seconds_between"]

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_TITLES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MIDNIGHT = time(0, 0)
_MINUTES_PER_DAY = 24 * 60
_ZERO = timedelta(0)
_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)
_WEEK = timedelta(weeks=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CLOCK = re.compile(r"([0-9]{2}):([0-9]{2})")


@dataclass(frozen=True)
class BusinessCalendar:
    """Weekly business hours in one time zone.

    ``hours`` holds ``(weekday, start, end)`` with weekday 0 (Monday) to 6 (Sunday) and naive,
    whole-minute local times; ``end == time(0, 0)`` means midnight at the *end* of that day
    (24:00), so ``(0, time(0, 0), time(0, 0))`` is all of Monday. An interval cannot cross
    midnight: split it into the two days it covers. Intervals of a day may be several but must
    not overlap (touching, like 09:00-12:00 and 12:00-13:00, is fine). The constructor validates
    and stores the intervals sorted, so equal calendars compare equal whatever the input order.
    """

    time_zone: str
    hours: tuple[tuple[int, time, time], ...]
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)
    _by_day: tuple[tuple[tuple[time, time], ...], ...] = field(
        init=False, repr=False, compare=False
    )
    _always: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        zone = _load_zone(self.time_zone)
        entries = sorted(_checked_entry(entry) for entry in self.hours)
        if not entries:
            raise ValueError(
                "The business hours have no open time in the week; give at least one interval."
            )
        for previous, current in pairwise(entries):
            if previous[0] == current[0] and _end_minute(previous[2]) > _minute(current[1]):
                raise ValueError(
                    f"The intervals {_span(previous)} and {_span(current)} on "
                    f"{_DAY_TITLES[current[0]]} overlap."
                )
        by_day = tuple(
            tuple((start, end) for weekday, start, end in entries if weekday == day)
            for day in range(7)
        )
        object.__setattr__(self, "hours", tuple(entries))
        object.__setattr__(self, "_zone", zone)
        object.__setattr__(self, "_by_day", by_day)
        object.__setattr__(self, "_always", all(day == ((_MIDNIGHT, _MIDNIGHT),) for day in by_day))

    @classmethod
    def always(cls, time_zone: str = "UTC") -> BusinessCalendar:
        """Around the clock: every second counts. The zone matters only for ``to_json``, since
        seven full days cover all real time whatever the zone's offsets do."""
        return cls(
            time_zone=time_zone, hours=tuple((day, _MIDNIGHT, _MIDNIGHT) for day in range(7))
        )

    @property
    def is_always(self) -> bool:
        """Open around the clock, so business time is plain elapsed time."""
        return self._always

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BusinessCalendar:
        """The calendar from its stored JSON form::

            {"time_zone": "Europe/Berlin",
             "hours": {"mon": [["09:00", "12:00"], ["13:00", "17:00"]], "tue": [...]}}

        Days are ``mon`` to ``sun``; a missing day (or an empty list) is closed. Times are
        ``"HH:MM"``; ``"24:00"`` may end an interval (midnight at the end of the day), and
        ``"00:00"`` can only start one. Input comes from staff editing a policy, so every
        mistake raises ``ValueError`` with a sentence that says what to fix.
        """
        if not isinstance(data, Mapping):
            raise ValueError(
                'A business calendar must be a JSON object with "time_zone" and "hours".'
            )
        unknown = sorted(str(key) for key in data if key not in ("time_zone", "hours"))
        if unknown:
            raise ValueError(
                f"Unknown key {unknown[0]!r} in the business calendar; "
                'only "time_zone" and "hours" are allowed.'
            )
        time_zone = data.get("time_zone")
        if not isinstance(time_zone, str):
            raise ValueError(
                'The business calendar needs a "time_zone" string such as "Europe/Berlin".'
            )
        hours = data.get("hours")
        if not isinstance(hours, Mapping):
            raise ValueError(
                'The business calendar needs an "hours" object mapping days '
                '("mon" to "sun") to lists of ["HH:MM", "HH:MM"] intervals.'
            )
        entries: list[tuple[int, time, time]] = []
        for name, intervals in hours.items():
            if name not in DAY_NAMES:
                raise ValueError(
                    f"Unknown day {name!r} in the business hours; "
                    "use mon, tue, wed, thu, fri, sat or sun."
                )
            weekday = DAY_NAMES.index(name)
            title = _DAY_TITLES[weekday]
            if not isinstance(intervals, list | tuple):
                raise ValueError(
                    f'The hours of {title} must be a list of ["HH:MM", "HH:MM"] intervals.'
                )
            for interval in intervals:
                if not isinstance(interval, list | tuple) or len(interval) != 2:
                    raise ValueError(
                        f'Each interval on {title} must be a pair ["HH:MM", "HH:MM"], '
                        f"not {interval!r}."
                    )
                start, end = (_parse_clock(text, title) for text in interval)
                if start == _MINUTES_PER_DAY:
                    raise ValueError(
                        f"An interval on {title} starts at 24:00; 24:00 can only end an interval."
                    )
                if start >= end:
                    raise ValueError(
                        f"The interval {interval[0]}-{interval[1]} on {title} does not end after "
                        "it starts; write 24:00 for midnight at the end of the day."
                    )
                entries.append((weekday, _clock_time(start), _clock_time(end)))
        return cls(time_zone=time_zone, hours=tuple(entries))

    def to_json(self) -> dict[str, Any]:
        """The JSON form ``from_json`` reads: days in week order, only open days, intervals
        sorted, midnight at the end of a day written ``"24:00"``."""
        hours: dict[str, list[list[str]]] = {}
        for weekday, start, end in self.hours:
            hours.setdefault(DAY_NAMES[weekday], []).append(
                [_format_clock(_minute(start)), _format_clock(_end_minute(end))]
            )
        return {"time_zone": self.time_zone, "hours": hours}


def add_business_time(calendar: BusinessCalendar, start: datetime, minutes: int) -> datetime:
    """The UTC instant at which ``minutes`` of business time have elapsed since ``start``.

    A clock started while closed starts at the next opening. The answer is the *earliest*
    such instant, so a target that runs out exactly at closing time is due at closing time,
    not at the next opening. ``minutes == 0`` gives ``start`` itself when open, else the next
    opening: the moment the clock would start to run.
    """
    _require_aware(start, "start")
    if isinstance(minutes, bool) or not isinstance(minutes, int):
        raise TypeError(f"minutes must be an int, not {type(minutes).__name__}.")
    if minutes < 0:
        raise ValueError(f"minutes must not be negative, got {minutes}.")
    position = start.astimezone(UTC)
    remaining = timedelta(minutes=minutes)
    if calendar.is_always:
        return position + remaining
    for week in _weeks(calendar, position):
        if week.start >= position and week.total < remaining:
            remaining -= week.total
            continue
        for opens, closes in week.intervals:
            if closes <= position:
                continue
            opens = max(opens, position)
            if closes - opens >= remaining:
                return opens + remaining
            remaining -= closes - opens
    raise AssertionError("unreachable: the weeks never end")  # pragma: no cover


def business_seconds_between(calendar: BusinessCalendar, start: datetime, end: datetime) -> int:
    """Whole seconds of business time in ``[start, end)``; 0 when ``end <= start``.

    Seconds rather than minutes because an SLA clock that pauses and resumes banks partial
    minutes; fractions of a second are dropped (floor), which only matters for inputs that carry
    microseconds.
    """
    _require_aware(start, "start")
    _require_aware(end, "end")
    begin, finish = start.astimezone(UTC), end.astimezone(UTC)
    if finish <= begin:
        return 0
    if calendar.is_always:
        return (finish - begin) // _SECOND
    total = _ZERO
    for week in _weeks(calendar, begin):
        if week.start >= finish:
            break
        if begin <= week.start and week.end <= finish:
            total += week.total
            continue
        for opens, closes in week.intervals:
            overlap = min(closes, finish) - max(opens, begin)
            if overlap > _ZERO:
                total += overlap
    return total // _SECOND


class _Week(NamedTuple):
    """One local week, Monday 00:00 to Monday 00:00, as real (UTC) instants."""

    start: datetime
    end: datetime
    intervals: tuple[tuple[datetime, datetime], ...]
    total: timedelta


def _weeks(calendar: BusinessCalendar, instant: datetime) -> Iterator[_Week]:
    """The local weeks from the one holding ``instant`` onwards, endlessly.

    Since local-to-UTC is monotonic, the week whose local dates hold ``instant`` starts no later
    than ``instant``, and every interval of earlier weeks ends no later than that start.
    """
    zone = calendar._zone
    local_day = instant.astimezone(zone).date()
    monday = local_day - timedelta(days=local_day.weekday())
    week_start = _local_to_utc(datetime.combine(monday, _MIDNIGHT), zone)
    while True:
        next_monday = monday + _WEEK
        week_end = _local_to_utc(datetime.combine(next_monday, _MIDNIGHT), zone)
        intervals = tuple(
            interval
            for offset in range(7)
            for interval in _day_intervals(calendar, monday + timedelta(days=offset))
        )
        total = sum((closes - opens for opens, closes in intervals), _ZERO)
        yield _Week(week_start, week_end, intervals, total)
        monday, week_start = next_monday, week_end


def _day_intervals(calendar: BusinessCalendar, day: date) -> list[tuple[datetime, datetime]]:
    """The open intervals of one local date as UTC instants; an interval that falls wholly in
    a DST gap never happens on that date and is left out."""
    zone = calendar._zone
    intervals = []
    for start, end in calendar._by_day[day.weekday()]:
        opens = _local_to_utc(datetime.combine(day, start), zone)
        end_day = day + _DAY if end == _MIDNIGHT else day
        closes = _local_to_utc(datetime.combine(end_day, end), zone)
        if closes > opens:
            intervals.append((opens, closes))
    return intervals


def _local_to_utc(local: datetime, zone: ZoneInfo) -> datetime:
    """The real instant of a naive local wall time: its first occurrence when the clocks go
    back, the instant of the jump when the clocks go forward over it.

    ``fold=0`` alone would put a skipped time *after* the jump (02:30 becomes 03:30), so a time
    just after the gap (03:10) would map to an earlier instant than one inside it, and
    intervals could overlap in real time. Bisecting to the jump keeps the mapping monotonic.
    """
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == local:
        return first
    # A skipped time: the two folds straddle the jump. Transitions fall on whole seconds.
    second = local.replace(tzinfo=zone, fold=1).astimezone(UTC)
    before, after = sorted((first, second))
    low, high = (before - _EPOCH) // _SECOND, (after - _EPOCH) // _SECOND
    while high - low > 1:
        middle = (low + high) // 2
        shown = (_EPOCH + timedelta(seconds=middle)).astimezone(zone).replace(tzinfo=None)
        if shown > local:
            high = middle
        else:
            low = middle
    return _EPOCH + timedelta(seconds=high)


def _load_zone(name: object) -> ZoneInfo:
    if not isinstance(name, str):
        raise ValueError(
            f"The time zone must be an IANA name such as 'Europe/Berlin', not {name!r}."
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"Unknown time zone {name!r}; use an IANA name such as 'Europe/Berlin'."
        ) from None


def _checked_entry(entry: object) -> tuple[int, time, time]:
    if not isinstance(entry, tuple | list) or len(entry) != 3:
        raise ValueError(f"Each business-hours entry is (weekday, start, end), not {entry!r}.")
    weekday, start, end = entry
    if isinstance(weekday, bool) or not isinstance(weekday, int) or not 0 <= weekday <= 6:
        raise ValueError(f"The weekday must be 0 (Monday) to 6 (Sunday), not {weekday!r}.")
    for moment in (start, end):
        if (
            not isinstance(moment, time)
            or moment.tzinfo is not None
            or moment.second
            or moment.microsecond
        ):
            raise ValueError(
                f"Business hours are naive whole-minute times, not {moment!r}; "
                "the calendar's time_zone gives them their zone."
            )
    if _minute(start) >= _end_minute(end):
        raise ValueError(
            f"The interval {_span((weekday, start, end))} on {_DAY_TITLES[weekday]} does not "
            "end after it starts; end at time(0, 0) for midnight at the end of the day."
        )
    return (weekday, start.replace(fold=0), end.replace(fold=0))


def _require_aware(moment: datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime; a naive one has no real instant.")


def _minute(moment: time) -> int:
    return moment.hour * 60 + moment.minute


def _end_minute(moment: time) -> int:
    """An interval's end in minutes of the day, midnight counting as the end of the day."""
    return _minute(moment) or _MINUTES_PER_DAY


def _span(entry: tuple[int, time, time]) -> str:
    return f"{_format_clock(_minute(entry[1]))}-{_format_clock(_end_minute(entry[2]))}"


def _format_clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _clock_time(minute: int) -> time:
    return time((minute // 60) % 24, minute % 60)


def _parse_clock(text: object, title: str) -> int:
    """Minutes since midnight of ``"HH:MM"`` (00:00 to 24:00)."""
    match = _CLOCK.fullmatch(text) if isinstance(text, str) else None
    if match is not None:
        hour, minute = int(match[1]), int(match[2])
        if (hour < 24 and minute < 60) or (hour, minute) == (24, 0):
            return hour * 60 + minute
    raise ValueError(f'Invalid time {text!r} on {title}; write "HH:MM" between 00:00 and 24:00.')

"""Billing periods: interval arithmetic in UTC with Stripe's month-end anchoring."""

import calendar
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.rules.periods import (
    MAX_INTERVAL_COUNT,
    Interval,
    InvalidRecurring,
    nth_period_end,
    period_end,
    validate_recurring,
)

anchors = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 12, 31), timezones=st.just(UTC)
)
intervals = st.sampled_from(list(Interval))


@st.composite
def recurrings(draw):
    interval = draw(intervals)
    count = draw(st.integers(min_value=1, max_value=MAX_INTERVAL_COUNT[interval]))
    return interval, count


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "interval", "count", "end"),
    [
        (utc(2026, 3, 1, 12), "hour", 1, utc(2026, 3, 1, 13)),
        (utc(2026, 3, 1, 12), "hour", 36, utc(2026, 3, 3, 0)),
        (utc(2026, 3, 1), "day", 1, utc(2026, 3, 2)),
        (utc(2026, 3, 1), "week", 2, utc(2026, 3, 15)),
        (utc(2026, 1, 15, 9, 30), "month", 1, utc(2026, 2, 15, 9, 30)),
        (utc(2026, 11, 30), "month", 3, utc(2027, 2, 28)),
        (utc(2023, 1, 31), "month", 1, utc(2023, 2, 28)),
        (utc(2024, 1, 31), "month", 1, utc(2024, 2, 29)),
        (utc(2026, 5, 31), "month", 1, utc(2026, 6, 30)),
        (utc(2026, 12, 31), "month", 1, utc(2027, 1, 31)),
        (utc(2026, 4, 7), "year", 1, utc(2027, 4, 7)),
        (utc(2024, 2, 29), "year", 1, utc(2025, 2, 28)),
    ],
)
def test_a_period_ends_interval_count_intervals_after_its_start(start, interval, count, end):
    assert period_end(start, interval, count) == end


def test_a_month_end_anchor_keeps_its_day_in_later_periods():
    anchor = utc(2024, 1, 31, 10)
    ends = [nth_period_end(anchor, "month", 1, n) for n in range(1, 7)]
    assert ends == [
        utc(2024, 2, 29, 10),
        utc(2024, 3, 31, 10),
        utc(2024, 4, 30, 10),
        utc(2024, 5, 31, 10),
        utc(2024, 6, 30, 10),
        utc(2024, 7, 31, 10),
    ]


def test_chaining_period_end_would_drift_where_the_anchor_does_not():
    anchor = utc(2023, 1, 31)
    chained = period_end(period_end(anchor, "month", 1), "month", 1)
    assert chained == utc(2023, 3, 28)
    assert nth_period_end(anchor, "month", 1, 2) == utc(2023, 3, 31)


def test_a_leap_day_anchor_comes_back_in_leap_years():
    anchor = utc(2024, 2, 29)
    assert nth_period_end(anchor, "year", 1, 1) == utc(2025, 2, 28)
    assert nth_period_end(anchor, "year", 1, 4) == utc(2028, 2, 29)


def test_the_zeroth_boundary_is_the_anchor():
    anchor = utc(2026, 1, 31, 23, 59, 59)
    assert nth_period_end(anchor, "month", 1, 0) == anchor


def test_it_refuses_a_negative_period_number():
    with pytest.raises(ValueError, match="must not be negative"):
        nth_period_end(utc(2026, 1, 1), "month", 1, -1)


def test_it_refuses_a_naive_datetime():
    with pytest.raises(ValueError, match="timezone-aware"):
        period_end(datetime(2026, 1, 1), "day", 1)


def test_it_computes_in_utc_across_a_daylight_saving_change():
    # 28 March 2026, 12:00 in Paris is 11:00 UTC; clocks go forward that night.
    start = datetime(2026, 3, 28, 12, tzinfo=ZoneInfo("Europe/Paris"))
    end = period_end(start, "day", 1)
    assert end == utc(2026, 3, 29, 11)
    assert end.tzinfo is UTC
    assert end - start == timedelta(hours=24)


def test_the_calendar_day_of_an_anchor_is_its_utc_day():
    # 1 February 00:30 in Paris is still 31 January in UTC.
    anchor = datetime(2026, 2, 1, 0, 30, tzinfo=ZoneInfo("Europe/Paris"))
    assert period_end(anchor, "month", 1) == utc(2026, 2, 28, 23, 30)


@pytest.mark.parametrize(
    ("interval", "count"),
    [
        ("minute", 1),
        ("months", 1),
        ("", 1),
        ("month", 0),
        ("month", -1),
        ("month", 37),
        ("year", 4),
        ("hour", 26281),
        ("day", 1.5),
        ("day", True),
        ("day", "1"),
    ],
)
def test_it_refuses_a_recurring_it_does_not_bill_by(interval, count):
    with pytest.raises(InvalidRecurring):
        validate_recurring(interval, count)


def test_it_accepts_up_to_three_years():
    assert validate_recurring("month", 36) == (Interval.MONTH, 36)
    assert validate_recurring("year", 3) == (Interval.YEAR, 3)
    assert validate_recurring("hour", 1) == (Interval.HOUR, 1)


def test_an_invalid_recurring_is_a_value_error_with_a_code():
    with pytest.raises(ValueError) as raised:
        period_end(utc(2026, 1, 1), "fortnight", 1)
    assert raised.value.code == "invalid_recurring"


@given(anchor=anchors, recurring=recurrings(), n=st.integers(min_value=0, max_value=40))
def test_periods_are_contiguous_and_strictly_increasing(anchor, recurring, n):
    interval, count = recurring
    periods = [
        (nth_period_end(anchor, interval, count, k), nth_period_end(anchor, interval, count, k + 1))
        for k in range(n, n + 4)
    ]
    for (start, end), (next_start, _) in pairwise(periods):
        assert start < end == next_start
        assert start.tzinfo is UTC and end.tzinfo is UTC


@given(anchor=anchors, recurring=recurrings())
def test_the_first_period_end_is_the_first_boundary(anchor, recurring):
    interval, count = recurring
    assert period_end(anchor, interval, count) == nth_period_end(anchor, interval, count, 1)


@given(
    anchor=anchors,
    interval=st.sampled_from([Interval.HOUR, Interval.DAY, Interval.WEEK]),
    count=st.integers(min_value=1, max_value=156),
    n=st.integers(min_value=0, max_value=100),
)
def test_fixed_intervals_have_exactly_their_length(anchor, interval, count, n):
    length = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
    start = nth_period_end(anchor, interval, count, n)
    assert nth_period_end(anchor, interval, count, n + 1) - start == count * length[interval]


@given(anchor=anchors, count=st.integers(min_value=1, max_value=36))
def test_month_periods_keep_the_anchor_time_and_last_between_28_and_31_days_a_month(anchor, count):
    ends = [nth_period_end(anchor, "month", count, k) for k in range(6)]
    for start, end in pairwise(ends):
        assert end.time() == anchor.time()
        assert 28 * count - 3 <= (end - start).days <= 31 * count + 3


@given(anchor=anchors)
def test_a_year_of_monthly_periods_returns_to_the_anchor_day_whenever_the_month_has_it(anchor):
    for k in range(13):
        end = nth_period_end(anchor, "month", 1, k)
        month_index = anchor.month - 1 + k
        assert (end.year, end.month) == (anchor.year + month_index // 12, month_index % 12 + 1)
        days_in_month = calendar.monthrange(end.year, end.month)[1]
        assert end.day == min(anchor.day, days_in_month)
        assert end.time() == anchor.time()
    year_later = nth_period_end(anchor, "month", 1, 12)
    if not (anchor.month == 2 and anchor.day == 29):
        assert year_later == anchor.replace(year=anchor.year + 1)


@given(anchor=anchors, count=st.integers(min_value=1, max_value=3), n=st.integers(0, 20))
def test_years_are_twelve_months_and_counts_multiply(anchor, count, n):
    assert nth_period_end(anchor, "year", count, n) == nth_period_end(
        anchor, "month", 1, 12 * count * n
    )
    assert nth_period_end(anchor, "month", count, n) == nth_period_end(
        anchor, "month", 1, count * n
    )

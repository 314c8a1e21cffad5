"""Proration of a plan change: to the second, in integers, rounded half to even."""

from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.rules.proration import ProrationKind, ProrationLine, proration_lines, unused_amount

START = datetime(2026, 4, 1, tzinfo=UTC)
END = datetime(2026, 5, 1, tzinfo=UTC)  # 30 days
DAY = timedelta(days=1)

amounts = st.integers(min_value=0, max_value=10**10)


@st.composite
def periods_and_moment(draw):
    """A period (from one second up to about three years) and a moment within it."""
    start = draw(
        st.datetimes(
            min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
        )
    )
    length = timedelta(seconds=draw(st.integers(min_value=1, max_value=3 * 366 * 86400)))
    offset = draw(st.integers(min_value=0, max_value=length // timedelta(microseconds=1)))
    return start, start + length, start + timedelta(microseconds=offset)


def test_the_unused_part_is_proportional_to_the_seconds_left():
    assert unused_amount(3000, START, END, START + 10 * DAY) == 2000
    assert unused_amount(3000, START, END, START + 29 * DAY) == 100


def test_the_whole_amount_is_unused_at_the_start_and_nothing_at_the_end():
    assert unused_amount(1999, START, END, START) == 1999
    assert unused_amount(1999, START, END, END) == 0


def test_it_rounds_half_to_even():
    two_seconds_end = START + timedelta(seconds=2)
    middle = START + timedelta(seconds=1)
    assert unused_amount(1, START, two_seconds_end, middle) == 0  # 0.5
    assert unused_amount(3, START, two_seconds_end, middle) == 2  # 1.5
    assert unused_amount(5, START, two_seconds_end, middle) == 2  # 2.5


def test_it_counts_only_whole_seconds_left():
    almost_a_second_in = START + timedelta(microseconds=999_999)
    two_seconds_end = START + timedelta(seconds=2)
    # 1.000001 seconds left of 2 counts as 1: half of 4.
    assert unused_amount(4, START, two_seconds_end, almost_a_second_in) == 2


@pytest.mark.parametrize("at", [START - timedelta(seconds=1), END + timedelta(seconds=1)])
def test_it_refuses_a_change_outside_the_period(at):
    with pytest.raises(ValueError, match="within the period"):
        unused_amount(1000, START, END, at)


def test_it_refuses_a_period_that_does_not_end_after_it_starts():
    with pytest.raises(ValueError, match="end after it starts"):
        unused_amount(1000, START, START, START)


def lines(**overrides):
    arguments = {
        "old_amount": 1000,
        "new_amount": 2000,
        "quantity_old": 1,
        "quantity_new": 1,
        "period_start": START,
        "period_end": END,
        "at": START + 15 * DAY,
    } | overrides
    return proration_lines(**arguments)


def test_an_upgrade_credits_the_unused_old_price_and_charges_the_rest_of_the_new():
    assert lines() == [
        ProrationLine(ProrationKind.UNUSED_TIME, -500),
        ProrationLine(ProrationKind.REMAINING_TIME, 1000),
    ]


def test_a_downgrade_credits_more_than_it_charges():
    result = lines(old_amount=2000, new_amount=1000, at=START + 20 * DAY)
    assert result == [("unused_time", -667), ("remaining_time", 333)]
    assert sum(line.amount for line in result) == -334


def test_a_quantity_change_prorates_the_whole_line_rounded_once():
    # 3 units of 1 for half the period: 1.5, rounded to 2; rounding per unit would give 3 * 0.
    assert lines(
        old_amount=333, new_amount=333, quantity_old=1, quantity_new=3, at=END - 10 * DAY
    ) == [
        ("unused_time", -111),
        ("remaining_time", 333),
    ]
    assert lines(old_amount=0, new_amount=1, quantity_new=3, at=START + 15 * DAY) == [
        ("remaining_time", 2),
    ]


def test_zero_lines_are_left_out():
    assert lines(old_amount=0) == [("remaining_time", 1000)]
    assert lines(at=END) == []


@pytest.mark.parametrize("name", ["old_amount", "new_amount", "quantity_old", "quantity_new"])
def test_it_refuses_negative_amounts_and_quantities(name):
    with pytest.raises(ValueError, match=f"{name} must not be negative"):
        lines(**{name: -1})


@given(amount=amounts, period=periods_and_moment())
def test_the_credit_never_exceeds_what_was_paid(amount, period):
    start, end, at = period
    assert 0 <= unused_amount(amount, start, end, at) <= amount


@given(amount=amounts, period=periods_and_moment())
def test_the_unused_amount_is_within_half_a_unit_of_the_exact_share(amount, period):
    start, end, at = period
    remaining = (end - at) // timedelta(seconds=1)
    exact = Fraction(amount * remaining, (end - start) // timedelta(seconds=1))
    assert abs(unused_amount(amount, start, end, at) - exact) <= Fraction(1, 2)


@given(amount=amounts, period=periods_and_moment())
def test_the_full_amount_at_the_start_and_zero_at_the_end(amount, period):
    start, end, _ = period
    assert unused_amount(amount, start, end, start) == amount
    assert unused_amount(amount, start, end, end) == 0


@given(amount=amounts, period=periods_and_moment(), later=st.integers(min_value=0))
def test_the_unused_amount_never_grows_as_time_passes(amount, period, later):
    start, end, at = period
    left = (end - at) // timedelta(microseconds=1)
    later_at = at + timedelta(microseconds=later % (left + 1))
    assert unused_amount(amount, start, end, later_at) <= unused_amount(amount, start, end, at)


@given(
    old=amounts,
    new=amounts,
    quantity_old=st.integers(min_value=0, max_value=100),
    quantity_new=st.integers(min_value=0, max_value=100),
    period=periods_and_moment(),
)
def test_lines_are_a_credit_then_a_charge_and_never_zero(
    old, new, quantity_old, quantity_new, period
):
    start, end, at = period
    result = proration_lines(
        old_amount=old,
        new_amount=new,
        quantity_old=quantity_old,
        quantity_new=quantity_new,
        period_start=start,
        period_end=end,
        at=at,
    )
    kinds = [line.kind for line in result]
    assert kinds == sorted(
        kinds, key=[ProrationKind.UNUSED_TIME, ProrationKind.REMAINING_TIME].index
    )
    for line in result:
        assert line.amount != 0
        paid = old * quantity_old if line.kind == ProrationKind.UNUSED_TIME else new * quantity_new
        expected = unused_amount(paid, start, end, at)
        assert line.amount == (-expected if line.kind == ProrationKind.UNUSED_TIME else expected)

"""Business-hours SLA clocks: hand-computed cases (DST weekends included), the JSON form and
its error messages, and properties checked against a minute-by-minute reference model."""

import functools
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.business_hours import (
    BusinessCalendar,
    add_business_time,
    business_seconds_between,
)

BERLIN = ZoneInfo("Europe/Berlin")
EASTERN = ZoneInfo("US/Eastern")
NINE_TO_FIVE = {
    "time_zone": "Europe/Berlin",
    "hours": {d: [["09:00", "17:00"]] for d in "mon tue wed thu fri".split()},
}


def calendar(time_zone: str, **days: list[list[str]]) -> BusinessCalendar:
    return BusinessCalendar.from_json({"time_zone": time_zone, "hours": days})


def local(zone: ZoneInfo, *args: int) -> datetime:
    return datetime(*args, tzinfo=zone)


def office() -> BusinessCalendar:
    return BusinessCalendar.from_json(NINE_TO_FIVE)


# Hand-computed cases ------------------------------------------------------------------------


def test_friday_afternoon_plus_two_hours_is_monday_ten():
    due = add_business_time(office(), local(BERLIN, 2026, 5, 8, 16), 120)
    assert due == local(BERLIN, 2026, 5, 11, 10)
    assert due.tzinfo is UTC


def test_a_target_running_out_at_closing_time_is_due_at_closing_time():
    friday = local(BERLIN, 2026, 5, 8, 16)
    assert add_business_time(office(), friday, 60) == local(BERLIN, 2026, 5, 8, 17)
    assert add_business_time(office(), friday, 61) == local(BERLIN, 2026, 5, 11, 9, 1)


def test_a_clock_started_on_saturday_starts_on_monday_morning():
    saturday = local(BERLIN, 2026, 5, 9, 11, 30)
    assert add_business_time(office(), saturday, 0) == local(BERLIN, 2026, 5, 11, 9)
    assert add_business_time(office(), saturday, 30) == local(BERLIN, 2026, 5, 11, 9, 30)
    assert business_seconds_between(office(), saturday, local(BERLIN, 2026, 5, 11, 9)) == 0


def test_zero_minutes_while_open_is_the_start_itself():
    start = local(BERLIN, 2026, 5, 11, 10, 15, 30, 250)
    assert add_business_time(office(), start, 0) == start


def test_the_start_may_be_in_any_zone():
    in_new_york = local(EASTERN, 2026, 5, 8, 10)  # 16:00 in Berlin
    assert add_business_time(office(), in_new_york, 120) == local(BERLIN, 2026, 5, 11, 10)


def test_a_day_split_by_lunch_skips_the_lunch_hour():
    split = calendar("Europe/Berlin", mon=[["09:00", "12:00"], ["13:00", "17:00"]])
    monday = date(2026, 5, 11)
    at = functools.partial(local, BERLIN, monday.year, monday.month, monday.day)
    assert add_business_time(split, at(11), 120) == at(14)
    assert add_business_time(split, at(12, 30), 0) == at(13)
    assert add_business_time(split, at(9), 180) == at(12)
    assert add_business_time(split, at(9), 181) == at(13, 1)
    assert business_seconds_between(split, at(11, 30), at(13, 30)) == 3600
    assert business_seconds_between(split, at(8), at(18)) == 7 * 3600


def test_around_the_clock_business_time_is_elapsed_time():
    always = BusinessCalendar.always()
    start = local(BERLIN, 2026, 3, 28, 23)
    # Three real hours, across the jump: 22:00 UTC + 3 h (02:00 on Berlin's wall clock never was).
    assert add_business_time(always, start, 180) == datetime(2026, 3, 29, 1, tzinfo=UTC)
    # Ten days on Berlin's wall clock (zone-aware arithmetic) hold 239 real hours in spring.
    assert business_seconds_between(always, start, start + timedelta(days=10)) == 239 * 3600


def test_berlin_days_open_around_the_clock_hold_real_hours_over_dst_weekends():
    weekend = calendar("Europe/Berlin", sat=[["00:00", "24:00"]], sun=[["00:00", "24:00"]])
    spring = business_seconds_between(
        weekend, local(BERLIN, 2026, 3, 28), local(BERLIN, 2026, 3, 30)
    )
    autumn = business_seconds_between(
        weekend, local(BERLIN, 2026, 10, 24), local(BERLIN, 2026, 10, 26)
    )
    assert (spring, autumn) == (47 * 3600, 49 * 3600)
    # Saturday 23:00 CET plus three real hours is 03:00 CEST, not 02:00.
    due = add_business_time(weekend, local(BERLIN, 2026, 3, 28, 23), 180)
    assert due == local(BERLIN, 2026, 3, 29, 3)


def test_office_hours_are_wall_clock_hours_across_the_berlin_dst_weekend():
    due = add_business_time(office(), local(BERLIN, 2026, 3, 27, 16), 120)
    assert due == local(BERLIN, 2026, 3, 30, 10)
    assert due == datetime(2026, 3, 30, 8, tzinfo=UTC)  # CEST now, CET on the Friday
    assert (
        business_seconds_between(office(), local(BERLIN, 2026, 3, 23), local(BERLIN, 2026, 4, 6))
        == 80 * 3600
    )


def test_us_eastern_sundays_last_23_and_25_hours():
    sundays = calendar("US/Eastern", sun=[["00:00", "24:00"]])
    assert (
        business_seconds_between(sundays, local(EASTERN, 2026, 3, 8), local(EASTERN, 2026, 3, 9))
        == 23 * 3600
    )
    assert (
        business_seconds_between(sundays, local(EASTERN, 2026, 11, 1), local(EASTERN, 2026, 11, 2))
        == 25 * 3600
    )
    # Opens at Sunday 00:00 EST (05:00 UTC); three real hours later it is 04:00 EDT.
    due = add_business_time(sundays, local(EASTERN, 2026, 3, 7, 12), 180)
    assert due == local(EASTERN, 2026, 3, 8, 4) == datetime(2026, 3, 8, 8, tzinfo=UTC)


def test_an_opening_inside_the_skipped_hour_opens_at_the_jump():
    sundays = calendar("Europe/Berlin", sun=[["02:30", "04:00"]])
    spring = local(BERLIN, 2026, 3, 29)
    # The clocks jump from 02:00 CET to 03:00 CEST (01:00 UTC): open 03:00-04:00 CEST.
    assert add_business_time(sundays, spring, 0) == datetime(2026, 3, 29, 1, tzinfo=UTC)
    assert business_seconds_between(sundays, spring, spring + timedelta(days=1)) == 3600


def test_an_interval_wholly_inside_the_skipped_hour_does_not_happen_that_day():
    sundays = calendar("Europe/Berlin", sun=[["02:15", "02:45"]])
    spring, ordinary = local(BERLIN, 2026, 3, 29), local(BERLIN, 2026, 4, 5)
    assert business_seconds_between(sundays, spring, spring + timedelta(days=1)) == 0
    assert business_seconds_between(sundays, ordinary, ordinary + timedelta(days=1)) == 1800
    assert add_business_time(sundays, spring, 10) == local(BERLIN, 2026, 4, 5, 2, 25)


def test_hours_around_the_skipped_hour_neither_overlap_nor_leave_a_hole():
    sundays = calendar("Europe/Berlin", sun=[["00:00", "02:30"], ["03:00", "05:00"]])
    spring = local(BERLIN, 2026, 3, 29)
    # 00:00 CET to 05:00 CEST is four real hours, and 02:30-03:00 never shows on the clock.
    assert business_seconds_between(sundays, spring, spring + timedelta(days=1)) == 4 * 3600


def test_a_repeated_hour_counts_from_the_first_time_the_clock_shows_the_opening():
    sundays = calendar("Europe/Berlin", sun=[["02:30", "03:00"]])
    autumn = local(BERLIN, 2026, 10, 25)
    # From 02:30 CEST (00:30 UTC) to 03:00 CET (02:00 UTC), through the repeated 02:00-03:00.
    assert business_seconds_between(sundays, autumn, autumn + timedelta(days=1)) == 5400
    assert add_business_time(sundays, autumn, 0) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


def test_a_sunday_only_calendar_waits_for_sundays():
    tokyo = ZoneInfo("Asia/Tokyo")
    sundays = calendar("Asia/Tokyo", sun=[["10:00", "14:00"]])
    assert add_business_time(sundays, local(tokyo, 2026, 5, 11, 9), 0) == local(
        tokyo, 2026, 5, 17, 10
    )
    # 4 h on each of May 10, 17 and 24, then the last hour on May 31.
    due = add_business_time(sundays, local(tokyo, 2026, 5, 10, 10), 13 * 60)
    assert due == local(tokyo, 2026, 5, 31, 11)
    assert business_seconds_between(sundays, local(tokyo, 2026, 5, 10, 10), due) == 13 * 3600


def test_business_seconds_are_zero_for_an_empty_or_reversed_range():
    start = local(BERLIN, 2026, 5, 11, 10)
    assert business_seconds_between(office(), start, start) == 0
    assert business_seconds_between(office(), start, start - timedelta(hours=1)) == 0


def test_business_seconds_drop_fractions_of_a_second():
    start = local(BERLIN, 2026, 5, 11, 10)
    end = start + timedelta(seconds=90, microseconds=999_999)
    assert business_seconds_between(office(), start, end) == 90


def test_a_200000_minute_target_is_found_by_whole_weeks():
    # 200,000 minutes = 83 weeks of 40 hours (2,400 minutes each) + 800 minutes: 8 hours on
    # Monday and 5 h 20 on Tuesday, the week count arithmetic being exact since the DST
    # changes in between all fall on Sunday nights, when the office is closed.
    monday = date(2026, 5, 4)
    start = datetime.combine(monday, time(9), BERLIN)
    due = add_business_time(office(), start, 200_000)
    expected_day = monday + timedelta(weeks=83, days=1)
    assert due == datetime.combine(expected_day, time(14, 20), BERLIN)
    assert business_seconds_between(office(), start, due) == 200_000 * 60


def test_naive_datetimes_and_negative_minutes_are_refused():
    naive = datetime(2026, 5, 11, 10)
    with pytest.raises(ValueError, match="aware"):
        add_business_time(office(), naive, 10)
    with pytest.raises(ValueError, match="aware"):
        business_seconds_between(office(), local(BERLIN, 2026, 5, 11), naive)
    with pytest.raises(ValueError, match="negative"):
        add_business_time(office(), local(BERLIN, 2026, 5, 11), -1)


# The JSON form -------------------------------------------------------------------------------


def test_the_json_form_round_trips():
    data = {
        "time_zone": "Europe/Berlin",
        "hours": {
            "mon": [["09:00", "12:00"], ["13:00", "17:00"]],
            "wed": [["00:00", "24:00"]],
            "sun": [["22:30", "24:00"]],
        },
    }
    parsed = BusinessCalendar.from_json(data)
    assert parsed.to_json() == data
    assert BusinessCalendar.from_json(parsed.to_json()) == parsed
    assert parsed.hours == (
        (0, time(9), time(12)),
        (0, time(13), time(17)),
        (2, time(0), time(0)),
        (6, time(22, 30), time(0)),
    )


def test_the_json_form_is_normalised_to_week_order_and_sorted_intervals():
    messy = {
        "time_zone": "UTC",
        "hours": {
            "fri": [["13:00", "17:00"], ["09:00", "12:00"]],
            "mon": [],
            "tue": [["08:00", "09:00"]],
        },
    }
    assert BusinessCalendar.from_json(messy).to_json() == {
        "time_zone": "UTC",
        "hours": {"tue": [["08:00", "09:00"]], "fri": [["09:00", "12:00"], ["13:00", "17:00"]]},
    }


def test_around_the_clock_in_json():
    always = BusinessCalendar.always()
    assert always.is_always
    assert always.to_json() == {
        "time_zone": "UTC",
        "hours": {day: [["00:00", "24:00"]] for day in "mon tue wed thu fri sat sun".split()},
    }
    assert BusinessCalendar.from_json(always.to_json()) == always
    assert not office().is_always


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], 'must be a JSON object with "time_zone" and "hours"'),
        ({"time_zone": "UTC", "hours": {}, "holidays": []}, "Unknown key 'holidays'"),
        ({"hours": {"mon": [["09:00", "17:00"]]}}, 'needs a "time_zone" string'),
        ({"time_zone": "UTC"}, 'needs an "hours" object'),
        ({"time_zone": "UTC", "hours": [["09:00", "17:00"]]}, 'needs an "hours" object'),
        ({"time_zone": "Mars/Olympus_Mons", "hours": {}}, "Unknown time zone 'Mars/Olympus_Mons'"),
        ({"time_zone": "Europe", "hours": {}}, "Unknown time zone 'Europe'"),
        ({"time_zone": "../etc/passwd", "hours": {}}, "Unknown time zone"),
        ({"time_zone": "UTC", "hours": {"monday": []}}, "Unknown day 'monday'"),
        ({"time_zone": "UTC", "hours": {"mon": "09:00-17:00"}}, "hours of Monday must be a list"),
        ({"time_zone": "UTC", "hours": {"mon": [["09:00"]]}}, "on Monday must be a pair"),
        ({"time_zone": "UTC", "hours": {"mon": ["09:00"]}}, "on Monday must be a pair"),
        (
            {"time_zone": "UTC", "hours": {"tue": [["9:00", "17:00"]]}},
            "Invalid time '9:00' on Tuesday",
        ),
        ({"time_zone": "UTC", "hours": {"tue": [["09:00", "25:00"]]}}, "Invalid time '25:00'"),
        ({"time_zone": "UTC", "hours": {"tue": [["09:60", "17:00"]]}}, "Invalid time '09:60'"),
        ({"time_zone": "UTC", "hours": {"tue": [["09:00", "24:30"]]}}, "Invalid time '24:30'"),
        ({"time_zone": "UTC", "hours": {"tue": [[900, "17:00"]]}}, "Invalid time 900"),
        ({"time_zone": "UTC", "hours": {"tue": [["09:00:00", "17:00"]]}}, "Invalid time"),
        ({"time_zone": "UTC", "hours": {"wed": [["24:00", "24:00"]]}}, "starts at 24:00"),
        (
            {"time_zone": "UTC", "hours": {"thu": [["17:00", "09:00"]]}},
            "interval 17:00-09:00 on Thursday does not end after it starts",
        ),
        ({"time_zone": "UTC", "hours": {"thu": [["09:00", "09:00"]]}}, "does not end after"),
        ({"time_zone": "UTC", "hours": {"thu": [["22:00", "00:00"]]}}, "write 24:00 for midnight"),
        (
            {"time_zone": "UTC", "hours": {"fri": [["09:00", "12:00"], ["11:00", "13:00"]]}},
            "intervals 09:00-12:00 and 11:00-13:00 on Friday overlap",
        ),
        (
            {"time_zone": "UTC", "hours": {"fri": [["09:00", "17:00"], ["09:00", "10:00"]]}},
            "on Friday overlap",
        ),
        ({"time_zone": "UTC", "hours": {}}, "no open time in the week"),
        ({"time_zone": "UTC", "hours": {"sat": [], "sun": []}}, "no open time in the week"),
    ],
)
def test_bad_json_is_refused_with_a_sentence_saying_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as caught:
        BusinessCalendar.from_json(data)
    text = str(caught.value)
    assert text[0].isupper() and text.endswith(".")


def test_touching_intervals_are_not_an_overlap():
    touching = calendar(
        "UTC", mon=[["09:00", "12:00"], ["12:00", "13:00"]], tue=[["00:00", "01:00"]]
    )
    monday = datetime(2026, 5, 11, 11, tzinfo=UTC)
    assert add_business_time(touching, monday, 120) == datetime(2026, 5, 11, 13, tzinfo=UTC)


@pytest.mark.parametrize(
    ("hours", "message"),
    [
        (((7, time(9), time(17)),), "weekday must be 0 \\(Monday\\) to 6"),
        (((True, time(9), time(17)),), "weekday must be 0"),
        (((0, time(9, 0, 30), time(17)),), "whole-minute"),
        (((0, time(9, tzinfo=UTC), time(17)),), "naive whole-minute"),
        (((0, "09:00", "17:00"),), "naive whole-minute"),
        (((0, time(17), time(9)),), "end at time\\(0, 0\\) for midnight"),
        (((0, time(9)),), "is \\(weekday, start, end\\)"),
        (((2, time(9), time(0)), (2, time(23), time(0))), "on Wednesday overlap"),
    ],
)
def test_the_constructor_validates_too(hours, message):
    with pytest.raises(ValueError, match=message):
        BusinessCalendar(time_zone="UTC", hours=hours)


def test_the_constructor_sorts_the_intervals():
    backwards = BusinessCalendar("UTC", ((4, time(13), time(17)), (0, time(9), time(12))))
    forwards = BusinessCalendar("UTC", ((0, time(9), time(12)), (4, time(13), time(17))))
    assert backwards == forwards
    assert hash(backwards) == hash(forwards)


# Properties ----------------------------------------------------------------------------------

# Zones chosen for awkward transitions: a 30-minute DST shift (Lord Howe), changes at local
# midnight (Havana, Santiago), negative DST (Dublin), a 45-minute offset (Chatham), a whole
# skipped day (Apia, 29 to 31 December 2011), and none at all (UTC, Kolkata).
ZONES = {
    "UTC": (2026, 2027),
    "Europe/Berlin": (2026, 2027),
    "US/Eastern": (2026, 2027),
    "Australia/Lord_Howe": (2026, 2027),
    "America/Havana": (2026, 2027),
    "America/Santiago": (2026, 2027),
    "Europe/Dublin": (2026, 2027),
    "Pacific/Chatham": (2026, 2027),
    "Pacific/Apia": (2011, 2012),
    "Asia/Kolkata": (2026, 2027),
}


@functools.cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """Instants (to the hour) around which the zone's UTC offset changes."""
    zone = ZoneInfo(zone_name)
    first, last = ZONES[zone_name]
    moment = datetime(first, 1, 1, tzinfo=UTC)
    offset = moment.astimezone(zone).utcoffset()
    found = []
    while moment.year < last:
        moment += timedelta(hours=1)
        if (now := moment.astimezone(zone).utcoffset()) != offset:
            found.append(moment)
            offset = now
    return tuple(found) or (datetime(first, 6, 1, tzinfo=UTC),)


def as_time(minute: int) -> time:
    return time(minute // 60 % 24, minute % 60)


# Interval edges biased toward the hours the clocks change at.
edges = st.one_of(st.integers(0, 1440), st.sampled_from([0, 60, 90, 120, 150, 180, 1380, 1440]))


@st.composite
def calendars(draw) -> BusinessCalendar:
    zone = draw(st.sampled_from(sorted(ZONES)))
    if draw(st.integers(0, 9)) == 0:
        return BusinessCalendar.always(zone)
    hours = []
    for day in range(7):
        points = sorted(draw(st.sets(edges, max_size=6)))
        hours += [
            (day, as_time(s), as_time(e)) for s, e in zip(points[::2], points[1::2], strict=False)
        ]
    if not hours:
        hours.append((draw(st.integers(0, 6)), time(9), time(17)))
    return BusinessCalendar(zone, tuple(hours))


def weekly_minutes(cal: BusinessCalendar) -> int:
    return sum(((e.hour * 60 + e.minute) or 1440) - s.hour * 60 - s.minute for _, s, e in cal.hours)


@st.composite
def starts(draw, cal: BusinessCalendar, *, whole_seconds: bool = False) -> datetime:
    """Mostly near one of the zone's offset changes, sometimes anywhere in 2000-2040, in an
    arbitrary zone (it must not matter) and with seconds and microseconds."""
    if draw(st.booleans()):
        anchor = draw(st.sampled_from(transitions(cal.time_zone)))
        moment = anchor + timedelta(seconds=draw(st.integers(-4 * 86400, 4 * 86400)))
    else:
        naive = draw(st.datetimes(datetime(2000, 1, 1), datetime(2040, 1, 1)))
        moment = naive.replace(tzinfo=UTC)
    if whole_seconds:
        moment = moment.replace(microsecond=0)
    else:
        moment += timedelta(microseconds=draw(st.integers(0, 999_999)))
    return moment.astimezone(ZoneInfo(draw(st.sampled_from(sorted(ZONES)))))


@st.composite
def clocks(draw) -> tuple[BusinessCalendar, datetime, int]:
    cal = draw(calendars())
    # Bounded by a few weeks' worth so tiny calendars do not span thousands of weeks.
    limit = min(weekly_minutes(cal) * 4, 60_000)
    return cal, draw(starts(cal)), draw(st.integers(0, limit))


@settings(deadline=None)
@given(clocks())
def test_the_business_time_up_to_the_due_time_is_the_target(clock):
    cal, start, minutes = clock
    due = add_business_time(cal, start, minutes)
    assert due.tzinfo is UTC
    assert business_seconds_between(cal, start, due) == minutes * 60
    if minutes:
        # And it is the earliest such instant.
        assert business_seconds_between(cal, start, due - timedelta(seconds=1)) < minutes * 60


@settings(deadline=None)
@given(clocks(), st.integers(0, 3000))
def test_more_minutes_are_due_strictly_later(clock, more):
    cal, start, minutes = clock
    earlier, later = (add_business_time(cal, start, m) for m in (minutes, minutes + more))
    assert earlier <= later
    assert (earlier < later) == (more > 0)
    assert add_business_time(cal, start, 0) >= start


@settings(deadline=None)
@given(st.data())
def test_business_time_adds_up_over_consecutive_ranges(data):
    cal = data.draw(calendars())
    # Arithmetic in UTC: adding to a zone-aware datetime moves its wall clock, not real time.
    a = data.draw(starts(cal, whole_seconds=True)).astimezone(UTC)
    b = a + timedelta(seconds=data.draw(st.integers(0, 20 * 86400)))
    c = b + timedelta(seconds=data.draw(st.integers(0, 20 * 86400)))
    assert business_seconds_between(cal, a, b) + business_seconds_between(
        cal, b, c
    ) == business_seconds_between(cal, a, c)


def reference_seconds(cal: BusinessCalendar, start: datetime, end: datetime) -> int:
    """Minute by minute, independently of the module: an instant is business time when the
    latest wall-clock time shown so far falls in the business hours. (The latest so far: in a
    repeated hour the clock has already shown those times, so the hours keep the state of the
    moment before it went back; a skipped hour is never shown and so never counts.)"""
    zone = ZoneInfo(cal.time_zone)
    spans = {(d, s.hour * 60 + s.minute, (e.hour * 60 + e.minute) or 1440) for d, s, e in cal.hours}
    moment, latest, counted = start - timedelta(days=1), datetime.min, 0
    while moment < end:
        latest = max(latest, moment.astimezone(zone).replace(tzinfo=None))
        minute = latest.hour * 60 + latest.minute
        if moment >= start and any(d == latest.weekday() and s <= minute < e for d, s, e in spans):
            counted += 60
        moment += timedelta(minutes=1)
    return counted


@settings(deadline=None, max_examples=60)
@given(st.data())
def test_business_time_matches_a_minute_by_minute_model_around_offset_changes(data):
    cal = data.draw(calendars())
    anchor = data.draw(st.sampled_from(transitions(cal.time_zone)))
    start = anchor + timedelta(minutes=data.draw(st.integers(-2 * 1440, 1440)))
    end = start + timedelta(minutes=data.draw(st.integers(0, 2 * 1440)))
    assert business_seconds_between(cal, start, end) == reference_seconds(cal, start, end)

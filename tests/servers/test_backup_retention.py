"""Retention as a pure function (``retention_keeps``): which completed backups the rules keep,
grandfather-father-son in UTC, over many dates (keep-last, daily, ISO weeks, months, a gap in
the backups, a year's turn, time zones, ties)."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from servers.services.backups import Retention, retention_keeps


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def backups(*moments: str) -> list[tuple[str, datetime]]:
    return [(f"bkp_{index}", at(moment)) for index, moment in enumerate(moments)]


def kept(found: list[tuple[str, datetime]], **rules) -> list[str]:
    ids = retention_keeps(found, Retention(**rules))
    return sorted((moment for name, moment in found if name in ids), reverse=True)


def iso(moments: list[datetime]) -> list[str]:
    return [moment.strftime("%Y-%m-%dT%H:%M") for moment in moments]


def hourly(start: str, hours: int) -> list[tuple[str, datetime]]:
    first = at(start)
    return [(f"bkp_{n}", first + timedelta(hours=n)) for n in range(hours)]


def test_no_rule_keeps_everything():
    found = backups("2026-11-01T00:00", "2026-11-02T00:00")
    assert retention_keeps(found, Retention()) == {"bkp_0", "bkp_1"}


def test_no_backups_keep_nothing():
    assert retention_keeps([], Retention(keep_last=3, daily=7)) == set()


@pytest.mark.parametrize("count,expected", [(1, 1), (3, 3), (10, 5)])
def test_keep_last_keeps_the_newest(count, expected):
    found = backups(*(f"2026-11-0{day}T12:00" for day in range(1, 6)))
    result = kept(found, keep_last=count)
    assert len(result) == expected
    assert result[0] == at("2026-11-05T12:00")


def test_daily_keeps_the_newest_of_each_day():
    found = hourly("2026-11-01T00:00", 24 * 4)  # four days, every hour
    assert iso(kept(found, daily=3)) == ["2026-11-04T23:00", "2026-11-03T23:00", "2026-11-02T23:00"]


def test_days_are_utc_days():
    found = [
        ("bkp_late", datetime(2026, 11, 2, 0, 30, tzinfo=timezone(timedelta(hours=2)))),  # 1st UTC
        ("bkp_early", at("2026-11-01T10:00")),
    ]
    assert retention_keeps(found, Retention(daily=2)) == {"bkp_late"}


def test_a_gap_in_backups_never_makes_the_older_ones_go():
    found = backups("2026-01-05T03:00", "2026-01-06T03:00", "2026-06-01T03:00")
    assert iso(kept(found, daily=3)) == ["2026-06-01T03:00", "2026-01-06T03:00", "2026-01-05T03:00"]


def test_weekly_uses_iso_weeks_across_the_years_turn():
    # 2026-12-28 (Mon) to 2027-01-03 (Sun) is ISO week 2026-W53; 2027-01-04 starts 2027-W01.
    found = backups(
        "2026-12-20T12:00",  # W51
        "2026-12-27T12:00",  # W52 (Sunday)
        "2026-12-28T12:00",  # W53
        "2027-01-03T12:00",  # W53 (Sunday), newest of W53
        "2027-01-04T12:00",  # 2027-W01
    )
    assert iso(kept(found, weekly=3)) == [
        "2027-01-04T12:00",
        "2027-01-03T12:00",
        "2026-12-27T12:00",
    ]


def test_monthly_keeps_the_newest_of_each_month():
    found = [
        (f"bkp_{month}_{day}", at(f"2026-{month:02d}-{day:02d}T08:00"))
        for month in range(1, 13)
        for day in (1, 15, 28)
    ]
    assert iso(kept(found, monthly=4)) == [
        "2026-12-28T08:00",
        "2026-11-28T08:00",
        "2026-10-28T08:00",
        "2026-09-28T08:00",
    ]


def test_the_rules_add_up_grandfather_father_son():
    # A backup every 6 hours for 100 days from 2026-01-01.
    first = at("2026-01-01T00:00")
    found = [(f"bkp_{n}", first + timedelta(hours=6 * n)) for n in range(400)]
    result = kept(found, keep_last=2, daily=7, weekly=4, monthly=3)
    newest = first + timedelta(hours=6 * 399)  # 2026-04-10T18:00
    assert newest == at("2026-04-10T18:00")
    expected = {newest, newest - timedelta(hours=6)}  # keep_last
    expected |= {at(f"2026-04-{day:02d}T18:00") for day in range(4, 11)}  # seven days
    # ISO weeks: W15 (6-12 Apr, newest 10th), W14 (30 Mar-5 Apr), W13, W12: their Sundays.
    expected |= {at("2026-04-05T18:00"), at("2026-03-29T18:00"), at("2026-03-22T18:00")}
    expected |= {at("2026-03-31T18:00"), at("2026-02-28T18:00")}  # months: Apr, Mar, Feb
    assert set(result) == expected
    # Overlaps count once: the 10th and 5th April are days and weeks, the 10th a month too.
    assert len(result) == 12


def test_one_backup_may_be_kept_by_several_rules():
    found = backups("2026-11-03T10:00")
    assert kept(found, keep_last=1, daily=1, weekly=1, monthly=1) == [at("2026-11-03T10:00")]


def test_ties_are_broken_by_id_so_the_answer_is_stable():
    found = [("bkp_a", at("2026-11-01T00:00")), ("bkp_b", at("2026-11-01T00:00"))]
    assert retention_keeps(found, Retention(keep_last=1)) == {"bkp_b"}
    assert retention_keeps(list(reversed(found)), Retention(keep_last=1)) == {"bkp_b"}


@pytest.mark.parametrize("days", range(1, 15))
def test_daily_over_two_weeks_keeps_exactly_that_many(days):
    found = hourly("2026-02-20T00:00", 24 * 14)  # across the end of February
    result = kept(found, daily=days)
    assert len(result) == days
    assert all(moment.hour == 23 for moment in result)
    assert result[-1].date() == (at("2026-03-05T00:00") - timedelta(days=days - 1)).date()

"""Expiring usage history: raw samples after 3 days, minute rows after 30, hour rows after 397,
day rows never; on PostgreSQL a whole partition at a time."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from analytics import partitions
from analytics.models import UsageDay, UsageHour, UsageMinute, UsageSample
from analytics.services.usage import Measurement, usage_expire, usage_record

pytestmark = pytest.mark.django_db
TODAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
MEASURED = TODAY - timedelta(days=10)


def _sample(at: datetime, instance_id: str = "srv_aaaaaaaaaaaa") -> Measurement:
    return Measurement(
        instance_id=instance_id,
        at=at,
        cpu_percent=5,
        memory_bytes=1,
        disk_bytes=1,
        uptime_seconds=60,
    )


def _counts() -> tuple[int, int, int, int]:
    return tuple(m.objects.count() for m in (UsageSample, UsageMinute, UsageHour, UsageDay))


def test_each_level_expires_after_its_retention():
    # Sent ten days ago, when it was recent.
    usage_record(measurements=[_sample(MEASURED)], now=MEASURED + timedelta(minutes=1))
    assert _counts() == (1, 1, 1, 1)
    usage_expire(now=TODAY)
    assert _counts() == (0, 1, 1, 1)  # raw samples: 3 days
    usage_expire(now=MEASURED + timedelta(days=32))
    assert _counts() == (0, 0, 1, 1)  # minute rows: 30 days
    usage_expire(now=MEASURED + timedelta(days=430))
    assert _counts() == (0, 0, 0, 1)  # hour rows: 397 days; day rows stay


def test_samples_older_than_the_raw_retention_or_from_the_future_are_refused():
    recorded = usage_record(
        measurements=[
            _sample(TODAY - timedelta(days=4)),
            _sample(TODAY + timedelta(hours=1)),
            _sample(TODAY - timedelta(minutes=1)),
        ],
        now=TODAY,
    )
    assert (recorded.stored, recorded.out_of_range) == (1, 2)
    assert _counts() == (1, 1, 1, 1)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="partitions are PostgreSQL's")
def test_housekeeping_creates_a_week_of_partitions_ahead_and_drops_whole_ones():
    usage_expire(now=TODAY)
    days = {start.date() for _, start, _ in partitions.partitions_list("analytics_usage_sample")}
    assert {(TODAY + timedelta(days=n)).date() for n in range(8)} <= days
    months = {start for _, start, _ in partitions.partitions_list("analytics_usage_hour")}
    assert TODAY.replace(day=1, hour=0) in months
    # Ten days ago's samples sit in their own day's partition, which goes as a whole.
    usage_record(measurements=[_sample(MEASURED)], now=MEASURED)
    name = partitions.partition_name("analytics_usage_sample", MEASURED.replace(hour=0))
    assert name in {n for n, _, _ in partitions.partitions_list("analytics_usage_sample")}
    report = usage_expire(now=TODAY)
    assert report["analytics_usage_sample partitions dropped"] >= 1
    assert name not in {n for n, _, _ in partitions.partitions_list("analytics_usage_sample")}
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [name])
        assert cursor.fetchone()[0] is None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="partitions are PostgreSQL's")
def test_a_sample_for_a_day_without_its_partition_creates_it():
    partitions.forget_known()
    at = TODAY - timedelta(days=2)
    name = partitions.partition_name("analytics_usage_sample", at.replace(hour=0))
    with connection.cursor() as cursor:
        cursor.execute(f'DROP TABLE IF EXISTS "{name}"')
    assert usage_record(measurements=[_sample(at)], now=TODAY).stored == 1
    assert UsageSample.objects.filter(at=at).exists()

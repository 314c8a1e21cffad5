"""Recording each day's uptime while the event log still covers it (``UptimeDay``)."""

from datetime import UTC, date, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from analytics.models import UptimeDay, UptimeRecordedDay
from analytics.selectors.instances import instances_during
from analytics.selectors.uptime import instances_uptime, log_start


def uptime_day_record(*, day: date, now: datetime | None = None) -> UptimeRecordedDay:
    """Record the uptime on ``day`` (a finished UTC day the event log covers) of every server
    and bot that existed that day, deleted since or not, replacing what was recorded for it:
    a row per instance meant to run that day."""
    now = now or timezone.now()
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    end = start + timedelta(days=1)
    instances = instances_during(start=start, end=end)
    figures = instances_uptime(instances, start=start, end=end, now=now)
    rows = [
        UptimeDay(
            instance_id=instance_id,
            day=day,
            up_seconds=round(uptime.up_seconds),
            down_seconds=round(uptime.down_seconds),
            incidents=sum(d.incidents for d in uptime.days),
        )
        for instance_id, uptime in figures.items()
        if uptime.up_seconds or uptime.down_seconds
    ]
    with transaction.atomic():
        UptimeDay.objects.filter(day=day).delete()
        UptimeDay.objects.bulk_create(rows, batch_size=1000)
        recorded, _ = UptimeRecordedDay.objects.update_or_create(
            day=day, defaults={"recorded_at": now, "instances": len(rows)}
        )
    return recorded


def uptime_days_record(*, now: datetime | None = None) -> int:
    """Housekeeping: record the finished days the event log covers whole and that are not
    recorded yet (yesterday, once a day; more after a pause); how many were recorded."""
    now = now or timezone.now()
    first = log_start(now).date()
    yesterday = now.astimezone(UTC).date() - timedelta(days=1)
    done = set(
        UptimeRecordedDay.objects.filter(day__gte=first, day__lte=yesterday).values_list(
            "day", flat=True
        )
    )
    count, day = 0, first
    while day <= yesterday:
        if day not in done:
            uptime_day_record(day=day, now=now)
            count += 1
        day += timedelta(days=1)
    return count

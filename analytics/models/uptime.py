"""Uptime per UTC day, kept beyond the event log it is worked out from.

The event log keeps ``EVENT_RETENTION_DAYS`` (30); housekeeping records each finished day while
the log still covers it whole (``analytics.services.uptime``), so uptime reaches back as far as
usage does. A recorded day without a row for an instance: it was never meant to run that day.
"""

from django.db import models


class UptimeRecordedDay(models.Model):
    """A UTC day whose uptime was recorded, so "not recorded" differs from "never meant to
    run"."""

    day = models.DateField(primary_key=True)
    recorded_at = models.DateTimeField()
    instances = models.PositiveIntegerField(default=0, help_text="Rows recorded that day.")

    class Meta:
        ordering = ["-day"]

    def __str__(self) -> str:
        return f"Uptime of {self.day:%Y-%m-%d}"


class UptimeDay(models.Model):
    """One server's or bot's uptime on one UTC day (only days it was meant to run):
    seconds up, seconds down, and the incidents that began that day."""

    pk = models.CompositePrimaryKey("instance_id", "day")
    instance_id = models.CharField(max_length=64)
    day = models.DateField()
    up_seconds = models.PositiveIntegerField()
    down_seconds = models.PositiveIntegerField()
    incidents = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "analytics_uptime_day"

    def __str__(self) -> str:
        return f"{self.instance_id} {self.day:%Y-%m-%d}"

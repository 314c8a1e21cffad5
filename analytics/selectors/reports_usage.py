"""The customer's usage and uptime reports, per month and per server or bot.

A server or bot deleted since stays in the months it existed, under its last name, with its
``deleted_at`` (``analytics.selectors.instances``); only the kinds the caller may read
(``kinds``) are listed. Usage comes from the day rollups (kept for ever): a month's row for a
server adds up its day rows. Uptime comes from the event log where it reaches and from the
recorded days before (``analytics.selectors.uptime``); a month none of whose days is known has
no figures (null).
"""

from collections.abc import Iterable
from datetime import date

from django.db.models import Max, Sum
from django.utils import timezone
from django.utils.translation import gettext_noop

from analytics.models import UsageDay
from analytics.reporting import (
    Column,
    Report,
    midnight,
    month_after,
    month_label,
    months,
    share,
    time_label,
)
from analytics.selectors.instances import instances_ever
from analytics.selectors.uptime import instances_uptime

INSTANCE_COLUMNS = (
    Column("month", "month", gettext_noop("Month")),
    Column("kind", "string", gettext_noop("Server or bot")),
    Column("instance_id", "string", gettext_noop("Id")),
    Column("name", "string", gettext_noop("Name")),
)
USAGE_COLUMNS = (
    *INSTANCE_COLUMNS,
    Column("samples", "count", gettext_noop("Samples")),
    # xgettext:no-python-format
    Column("cpu_percent_avg", "number", gettext_noop("CPU, % of one core (average)")),
    # xgettext:no-python-format
    Column("cpu_percent_max", "number", gettext_noop("CPU, % of one core (peak)")),
    Column("memory_bytes_avg", "bytes", gettext_noop("Memory (average)")),
    Column("memory_bytes_max", "bytes", gettext_noop("Memory (peak)")),
    Column("disk_bytes_max", "bytes", gettext_noop("Disk (most used)")),
    Column("players_max", "count", gettext_noop("Players (peak)")),
    Column("network_rx_bytes", "bytes", gettext_noop("Received")),
    Column("network_tx_bytes", "bytes", gettext_noop("Sent")),
    Column("deleted_at", "time", gettext_noop("Deleted")),
)
UPTIME_COLUMNS = (
    *INSTANCE_COLUMNS,
    Column("uptime", "percent", gettext_noop("Uptime")),
    Column("up_seconds", "seconds", gettext_noop("Running")),
    Column("down_seconds", "seconds", gettext_noop("Meant to run, not running")),
    Column("incidents", "count", gettext_noop("Incidents (crashes)")),
    Column("deleted_at", "time", gettext_noop("Deleted")),
)


def usage_report(*, account_id: str, first: date, last: date, kinds: Iterable[str]) -> Report:
    """Per month and server or bot of ``kinds`` that reported (deleted since or not): its
    samples, average and peak CPU and memory, the most disk, the peak of players (games that
    answer a query, agent/query.py), bytes received and sent; months
    in order, then by name."""
    instances = {
        instance.pk: instance for instance in instances_ever(account_id=account_id, kinds=kinds)
    }
    rows = []
    for month in months(first, last):
        sums = (
            UsageDay.objects.filter(
                instance_id__in=list(instances),
                bucket__gte=midnight(month),
                bucket__lt=midnight(month_after(month)),
            )
            .values("instance_id")
            .annotate(
                n=Sum("samples"),
                cpu=Sum("cpu_percent_sum"),
                cpu_max=Max("cpu_percent_max"),
                memory=Sum("memory_bytes_sum"),
                memory_max=Max("memory_bytes_max"),
                disk=Max("disk_bytes_max"),
                players=Max("players_max"),
                rx=Sum("network_rx_bytes"),
                tx=Sum("network_tx_bytes"),
            )
            .order_by()
        )
        found = []
        for row in sums:
            instance = instances[row["instance_id"]]
            found.append(
                {
                    "month": month_label(month),
                    "kind": instance.kind,
                    "instance_id": instance.pk,
                    "name": instance.name,
                    "samples": row["n"],
                    "cpu_percent_avg": round(row["cpu"] / row["n"], 2),
                    "cpu_percent_max": round(row["cpu_max"], 2),
                    "memory_bytes_avg": round(row["memory"] / row["n"]),
                    "memory_bytes_max": row["memory_max"],
                    "disk_bytes_max": row["disk"],
                    "players_max": row["players"],  # null: its game answers no query
                    "network_rx_bytes": row["rx"],
                    "network_tx_bytes": row["tx"],
                    "deleted_at": time_label(instance.deleted_at),
                }
            )
        rows += sorted(found, key=lambda r: (r["name"].lower(), r["instance_id"]))
    return Report(
        "usage",
        {"start_month": month_label(first), "end_month": month_label(last)},
        USAGE_COLUMNS,
        rows,
    )


def uptime_report(*, account_id: str, first: date, last: date, kinds: Iterable[str]) -> Report:
    """Per month and server or bot of ``kinds`` that existed in it (deleted since or not):
    uptime, time up and down, and incidents that began in the month; a month none of whose
    days is known (before the event log, not recorded) is null."""
    instances = instances_ever(account_id=account_id, kinds=kinds)
    now = timezone.now()
    rows = []
    for month in months(first, last):
        start, end = midnight(month), min(midnight(month_after(month)), now)
        existing = [
            instance
            for instance in instances
            if instance.created_at < end
            and (instance.deleted_at is None or instance.deleted_at >= start)
        ]
        figures = instances_uptime(existing, start=start, end=end, now=now) if start < end else {}
        for instance in sorted(existing, key=lambda i: (i.name.lower(), i.pk)):
            uptime = figures.get(instance.pk)
            known = uptime is not None and uptime.known
            up = round(uptime.up_seconds) if known else None
            down = round(uptime.down_seconds) if known else None
            rows.append(
                {
                    "month": month_label(month),
                    "kind": instance.kind,
                    "instance_id": instance.pk,
                    "name": instance.name,
                    "uptime": share(up, up + down) if known else None,
                    "up_seconds": up,
                    "down_seconds": down,
                    "incidents": sum(day.incidents for day in uptime.days if day.known)
                    if known
                    else None,
                    "deleted_at": time_label(instance.deleted_at),
                }
            )
    return Report(
        "uptime",
        {"start_month": month_label(first), "end_month": month_label(last)},
        UPTIME_COLUMNS,
        rows,
    )

"""The customer's usage and uptime reports, per month and per server or bot.

Usage comes from the day rollups (kept for ever): a month's row for a server adds up its day
rows. Uptime comes from the event log where it reaches and from the recorded days before
(``analytics.selectors.uptime``); a month none of whose days is known has no figures (null).
"""

from datetime import date

from django.db.models import Max, Sum
from django.utils import timezone

from analytics.models import UsageDay
from analytics.reporting import (
    Column,
    Report,
    midnight,
    month_after,
    month_label,
    months,
    share,
)
from analytics.selectors.uptime import instances_uptime
from servers.selectors import bots_of_account, servers_of_account

INSTANCE_COLUMNS = (
    Column("month", "month", "Month"),
    Column("kind", "string", "Server or bot"),
    Column("instance_id", "string", "Id"),
    Column("name", "string", "Name"),
)
USAGE_COLUMNS = (
    *INSTANCE_COLUMNS,
    Column("samples", "count", "Samples"),
    Column("cpu_percent_avg", "number", "CPU, % of one core (average)"),
    Column("cpu_percent_max", "number", "CPU, % of one core (peak)"),
    Column("memory_bytes_avg", "bytes", "Memory (average)"),
    Column("memory_bytes_max", "bytes", "Memory (peak)"),
    Column("disk_bytes_max", "bytes", "Disk (most used)"),
    Column("network_rx_bytes", "bytes", "Received"),
    Column("network_tx_bytes", "bytes", "Sent"),
)
UPTIME_COLUMNS = (
    *INSTANCE_COLUMNS,
    Column("uptime", "percent", "Uptime"),
    Column("up_seconds", "seconds", "Running"),
    Column("down_seconds", "seconds", "Meant to run, not running"),
    Column("incidents", "count", "Incidents (crashes)"),
)


def _instances(account_id: str) -> list:
    return [*servers_of_account(account_id=account_id), *bots_of_account(account_id=account_id)]


def usage_report(*, account_id: str, first: date, last: date) -> Report:
    """Per month and server or bot that reported: its samples, average and peak CPU and
    memory, the most disk, bytes received and sent; months in order, then by name."""
    instances = {instance.pk: instance for instance in _instances(account_id)}
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
                n=Sum("samples"), cpu=Sum("cpu_percent_sum"), cpu_max=Max("cpu_percent_max"),
                memory=Sum("memory_bytes_sum"), memory_max=Max("memory_bytes_max"),
                disk=Max("disk_bytes_max"), rx=Sum("network_rx_bytes"),
                tx=Sum("network_tx_bytes"),
            )
            .order_by()
        )  # fmt: skip
        found = []
        for row in sums:
            instance = instances[row["instance_id"]]
            found.append(
                {
                    "month": month_label(month), "kind": instance.kind,
                    "instance_id": instance.pk, "name": instance.name, "samples": row["n"],
                    "cpu_percent_avg": round(row["cpu"] / row["n"], 2),
                    "cpu_percent_max": round(row["cpu_max"], 2),
                    "memory_bytes_avg": round(row["memory"] / row["n"]),
                    "memory_bytes_max": row["memory_max"], "disk_bytes_max": row["disk"],
                    "network_rx_bytes": row["rx"], "network_tx_bytes": row["tx"],
                }
            )  # fmt: skip
        rows += sorted(found, key=lambda r: (r["name"].lower(), r["instance_id"]))
    return Report(
        "usage", {"start_month": month_label(first), "end_month": month_label(last)},
        USAGE_COLUMNS, rows,
    )  # fmt: skip


def uptime_report(*, account_id: str, first: date, last: date) -> Report:
    """Per month and server or bot: uptime, time up and down, and incidents that began in
    the month; a month none of whose days is known (before the event log, not recorded) is
    null."""
    instances = _instances(account_id)
    now = timezone.now()
    rows = []
    for month in months(first, last):
        start, end = midnight(month), min(midnight(month_after(month)), now)
        figures = instances_uptime(instances, start=start, end=end, now=now) if start < end else {}
        for instance in sorted(instances, key=lambda i: (i.name.lower(), i.pk)):
            if instance.created_at >= end:
                continue
            uptime = figures.get(instance.pk)
            known = uptime is not None and uptime.known
            up = round(uptime.up_seconds) if known else None
            down = round(uptime.down_seconds) if known else None
            rows.append(
                {
                    "month": month_label(month), "kind": instance.kind,
                    "instance_id": instance.pk, "name": instance.name,
                    "uptime": share(up, up + down) if known else None,
                    "up_seconds": up, "down_seconds": down,
                    "incidents": sum(day.incidents for day in uptime.days if day.known)
                    if known else None,
                }
            )  # fmt: skip
    return Report(
        "uptime", {"start_month": month_label(first), "end_month": month_label(last)},
        UPTIME_COLUMNS, rows,
    )  # fmt: skip

"""The public shapes of analytics answers, built once here for the API and the dashboard."""

from collections.abc import Mapping, Set
from datetime import datetime
from typing import Any

from django.http import HttpResponse
from django.template.defaultfilters import filesizeformat
from django.utils.formats import number_format
from django.utils.translation import gettext

from analytics.reporting import Report
from hosting.csv_export import csv_response, csv_text
from hosting.money import format_amount

WHOLE_UNITS = frozenset({"bytes", "seconds"})


def timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def figure(value: float | int, unit: str) -> float | int:
    """Bytes and seconds as whole numbers; percentages and counts to two decimals."""
    return round(value) if unit in WHOLE_UNITS else round(value, 2)


def metrics_representation(plan: Any, series: list[Any]) -> dict[str, Any]:
    """A ``metrics_plan`` and its ``metrics_series``, as the API shows them (each bucket's
    time written once, however many series share it)."""
    times: dict[datetime, str] = {}
    for one in series:
        for moment, _ in one.points:
            if moment not in times:
                times[moment] = timestamp(moment)
    return {
        "start": timestamp(plan.start),
        "end": timestamp(plan.end),
        "step": plan.step,
        "series": [
            {
                "metric": one.metric,
                "unit": one.unit,
                "aggregate": one.aggregate,
                "points": [[times[t], figure(v, one.unit)] for t, v in one.points],
            }
            for one in series
        ],
    }


def uptime_percent(up: float, down: float) -> float | None:
    """Up time as a percentage of the time meant to run, to 3 decimals; None when it was
    never meant to run."""
    return None if up + down == 0 else round(up / (up + down) * 100, 3)


def uptime_representation(uptime: Any) -> dict[str, Any]:
    """An ``analytics.selectors.uptime.Uptime`` as the API shows it."""
    return {
        "start": timestamp(uptime.start),
        "end": timestamp(uptime.end),
        "uptime_percent": uptime_percent(uptime.up_seconds, uptime.down_seconds),
        "up_seconds": round(uptime.up_seconds),
        "down_seconds": round(uptime.down_seconds),
        "days": [
            {
                "date": day.date.strftime("%Y-%m-%d"),
                "uptime_percent": uptime_percent(day.up_seconds, day.down_seconds)
                if day.known
                else None,
                "up_seconds": round(day.up_seconds) if day.known else None,
                "down_seconds": round(day.down_seconds) if day.known else None,
                "incidents": day.incidents if day.known else None,
            }
            for day in uptime.days
        ],
        "incidents": [
            {
                "started_at": timestamp(incident.started_at),
                "ended_at": None if incident.ended_at is None else timestamp(incident.ended_at),
                "duration_seconds": None
                if incident.ended_at is None
                else round((incident.ended_at - incident.started_at).total_seconds()),
                "reason": incident.reason,
            }
            for incident in uptime.incidents
        ],
    }


def _total(values: list) -> int | None:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def account_usage_representation(
    *,
    start,
    end,
    level,
    consumers: list[Any],
    names: dict[str, tuple[str, str]],
    top: str,
    limit: int,
    listed: Set[str] | None = None,
    deleted: Mapping[str, datetime] | None = None,
) -> dict[str, Any]:
    """An account's usage over a range: totals of every consumer, and the ``limit`` largest
    consumers of ``top`` among those ``listed`` (default: all; a caller sees by name only
    the kinds it may read). ``names``: instance id → (kind, name); ``deleted``: instance id →
    when it was deleted (history keeps deleted instances, marked)."""
    deleted = deleted or {}
    shown = [c for c in consumers if listed is None or c.instance_id in listed]
    ranked = sorted(shown, key=lambda c: (getattr(c, top) or 0, c.instance_id), reverse=True)[
        :limit
    ]
    return {
        "start": timestamp(start),
        "end": timestamp(end),
        "resolution": level.name,
        "totals": {
            "instances": len(consumers),
            "cpu_percent": round(sum(c.cpu_percent for c in consumers), 2),
            "memory_bytes": round(sum(c.memory_bytes for c in consumers)),
            "disk_bytes": sum(c.disk_bytes for c in consumers),
            "network_rx_bytes": _total([c.network_rx_bytes for c in consumers]),
            "network_tx_bytes": _total([c.network_tx_bytes for c in consumers]),
        },
        "top": top,
        "consumers": [
            {
                "id": c.instance_id,
                "kind": names[c.instance_id][0],
                "name": names[c.instance_id][1],
                "samples": c.samples,
                "cpu_percent": round(c.cpu_percent, 2),
                "cpu_percent_max": round(c.cpu_percent_max, 2),
                "memory_bytes": round(c.memory_bytes),
                "memory_bytes_max": c.memory_bytes_max,
                "disk_bytes": c.disk_bytes,
                "network_rx_bytes": c.network_rx_bytes,
                "network_tx_bytes": c.network_tx_bytes,
                "deleted_at": (
                    timestamp(deleted[c.instance_id]) if c.instance_id in deleted else None
                ),
            }
            for c in ranked
        ],
    }


# -- reports (analytics.reporting): in the envelope, or as a CSV download of the same rows --


def report_labels(report: Report) -> dict[str, str]:
    """The report's columns' labels in the active language, by column name (for a page)."""
    return {column.name: gettext(column.label) for column in report.columns}


def report_representation(report: Report) -> dict[str, Any]:
    """``{"name", "parameters", "columns", "rows"}``; a money column names the row's column
    that holds its currency (``"currency": "currency"``)."""
    return {
        "name": report.name,
        "parameters": report.parameters,
        "columns": [
            {"name": column.name, "type": column.type, "label": column.label}
            | ({"currency": "currency"} if column.type == "money" else {})
            for column in report.columns
        ],
        "rows": report.rows,
    }


def _table(report: Report) -> tuple[list[str], list[list[Any]]]:
    names = [column.name for column in report.columns]
    return names, [[row[name] for name in names] for row in report.rows]


def report_csv(report: Report) -> str:
    """The report's rows as CSV text, a header row of the column names first."""
    return csv_text(*_table(report))


def report_csv_response(report: Report) -> HttpResponse:
    """The CSV download, named after the report and its parameters
    (``mrr-2026-01-2026-10-EUR.csv``)."""
    values = [str(value) for value in report.parameters.values() if value is not None]
    header, rows = _table(report)
    return csv_response(
        filename="-".join([report.name, *values]) + ".csv", header=header, rows=rows
    )


def duration_label(seconds: int) -> str:
    """A duration for people: ``45 s``, ``12 min 05 s``, ``3 h 20 min``, ``2 d 4 h``."""
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return gettext("%(days)s d %(hours)s h") % {"days": days, "hours": hours}
    if hours:
        return gettext("%(hours)s h %(minutes)s min") % {
            "hours": hours,
            "minutes": f"{minutes:02d}",
        }
    if minutes:
        return gettext("%(minutes)s min %(seconds)s s") % {
            "minutes": minutes,
            "seconds": f"{seconds:02d}",
        }
    return gettext("%(seconds)s s") % {"seconds": seconds}


def _cell(
    value: Any, column_type: str, row: dict[str, Any], names: Mapping[str, str] | None = None
) -> str:
    if value is None:
        return "\u2013"  # an en dash: no figure
    if names is not None and value in names:
        return names[value]
    if column_type == "money":
        return format_amount(value, row["currency"])
    if column_type == "percent":
        return f"{number_format(value * 100, 2)} %"
    if column_type == "seconds":
        return duration_label(value)
    if column_type == "bytes":
        return filesizeformat(value)
    if column_type in ("count", "integer"):
        return number_format(value, force_grouping=True)
    return str(value)


def report_table(
    report: Report, values: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, Any]:
    """A report as a page's table: the columns' labels, and each row's cells written for
    people (money with its currency, percentages, durations, sizes). ``values``: a column's
    name → its values' names (``{"status": {"install_failed": "Install failed"}}``). An id
    column followed by its name column (``department_id``, ``department_name``) shows only
    the name, under the id column's label: people read names, the CSV keeps both. The labels
    are in the active language (the API's report shape keeps them in English)."""
    values = values or {}
    by_name = {column.name: column for column in report.columns}
    shown, labels = [], []
    for column in report.columns:
        stem = column.name.removesuffix("_id")
        if column.name != stem and f"{stem}_name" in by_name:
            continue  # its name column stands for it
        id_column = by_name.get(column.name.removesuffix("_name") + "_id")
        shown.append(column)
        labels.append(
            gettext(
                id_column.label if column.name.endswith("_name") and id_column else column.label
            )
        )
    return {
        "labels": labels,
        "rows": [
            [_cell(row[column.name], column.type, row, values.get(column.name)) for column in shown]
            for row in report.rows
        ],
    }

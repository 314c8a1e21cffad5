"""A report as the API answers it: in the envelope (``data.report``), or as a CSV download of
the same rows, one column per column of the report, in its order."""

from typing import Any

from django.http import HttpResponse

from analytics.selectors.reports import Report
from hosting.api.csv_export import csv_response, csv_text


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

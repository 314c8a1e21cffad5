"""OpenAPI documentation of the analytics endpoints that their views and serializers cannot say.

``type_metric_points`` (a postprocessing hook, SPECTACULAR_SETTINGS): a metric series' points
are ``[time, value]`` pairs, which DRF's nested ``ListField`` documents as arrays of anything
(generated clients: ``list[list[Any]]``, ``unknown[][]``). The hook gives each pair its shape, a
date-time then a number (``prefixItems``): ``[string, number][]`` in TypeScript,
``list[list[datetime | float]]`` in Python.
"""

from typing import Any

POINT = {
    "type": "array",
    "prefixItems": [
        {"type": "string", "format": "date-time", "description": "The bucket's start (UTC)."},
        {
            "type": "number",
            "description": "The bucket's value in the series' unit: its samples by `aggregate` "
            "(gauges), their sum (counters).",
        },
    ],
    "minItems": 2,
    "maxItems": 2,
}


def type_metric_points(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    series = result.get("components", {}).get("schemas", {}).get("Series")
    if series and "points" in series.get("properties", {}):
        series["properties"]["points"]["items"] = POINT
    return result


CSV = "text/csv"


def split_csv_downloads(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """Each report's CSV is the operation ``GET <report>.csv`` (analytics/api/report_downloads.py),
    declared with that one media type; the report itself is declared as JSON only, without
    ``format``. Both views share the report's documentation, which describes the two answers: this
    hook gives each operation its own."""
    paths = result.get("paths", {})
    for csv_path, item in paths.items():
        report_path = csv_path.removesuffix(".csv")
        if csv_path == report_path or report_path not in paths:
            continue
        report, download = paths[report_path]["get"], item["get"]
        for operation, media in ((report, "application/json"), (download, CSV)):
            content = operation["responses"]["200"]["content"]
            for other in [each for each in content if each != media]:
                del content[other]
            operation["parameters"] = [
                each for each in operation.get("parameters", []) if each["name"] != "format"
            ]
        download["operationId"] = report["operationId"].removesuffix("_retrieve") + "_csv"
        download["summary"] = f"{report.get('summary', 'Report')} (CSV)"
        download["description"] = (
            f"The rows of `GET {report_path}` as a CSV download (`{CSV}; charset=utf-8`), a "
            "header row of the column names first; same parameters and scopes. Errors are the "
            f"JSON error envelope.\n\n{report.get('description', '')}"
        ).strip()
        report["description"] = (
            f"{report.get('description', '')}\n\nThe same rows as CSV: `GET {csv_path}`."
        ).strip()
    return result

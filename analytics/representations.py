"""The public shapes of analytics answers, built once here for the API and the dashboard."""

from datetime import datetime
from typing import Any

WHOLE_UNITS = frozenset({"bytes", "seconds"})


def timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def figure(value: float | int, unit: str) -> float | int:
    """Bytes and seconds as whole numbers; percentages and counts to two decimals."""
    return round(value) if unit in WHOLE_UNITS else round(value, 2)


def metrics_representation(plan: Any, series: list[Any]) -> dict[str, Any]:
    """A ``metrics_plan`` and its ``metrics_series``, as the API shows them."""
    return {
        "start": timestamp(plan.start),
        "end": timestamp(plan.end),
        "step": plan.step,
        "series": [
            {
                "metric": one.metric,
                "unit": one.unit,
                "aggregate": one.aggregate,
                "points": [[timestamp(t), figure(v, one.unit)] for t, v in one.points],
            }
            for one in series
        ],
    }

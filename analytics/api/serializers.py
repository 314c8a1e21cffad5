"""What the analytics API shows, for the OpenAPI schema (the answers are built as plain dicts
by ``analytics.representations``), and the examples the schema shows."""

from rest_framework import serializers

from analytics import rollups
from hosting.api.schema import response_examples


class SeriesSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(choices=rollups.METRICS)
    unit = serializers.ChoiceField(choices=sorted(set(rollups.UNITS.values())))
    aggregate = serializers.ChoiceField(
        choices=[*rollups.AGGREGATES, "sum"],
        help_text="How a bucket's samples became its value: gauges by the `aggregate` asked "
        "for, counters (network bytes) always `sum`: the bytes moved in the bucket.",
    )
    points = serializers.ListField(
        child=serializers.ListField(min_length=2, max_length=2),
        help_text="`[time, value]` pairs, oldest first; a bucket without samples has no point.",
    )


class MetricsSerializer(serializers.Serializer):
    start = serializers.DateTimeField(help_text="The first bucket's start (aligned on `step`).")
    end = serializers.DateTimeField(help_text="The end of the last bucket (exclusive).")
    step = serializers.IntegerField(help_text="Seconds per bucket; at most 500 buckets.")
    series = SeriesSerializer(many=True)


METRICS_EXAMPLE = {
    "start": "2026-11-23T12:00:00Z",
    "end": "2026-11-23T13:00:00Z",
    "step": 10,
    "series": [
        {
            "metric": "cpu_percent",
            "unit": "percent",
            "aggregate": "avg",
            "points": [["2026-11-23T12:00:00Z", 12.5], ["2026-11-23T12:00:10Z", 14.02]],
        },
        {
            "metric": "memory_bytes",
            "unit": "bytes",
            "aggregate": "avg",
            "points": [["2026-11-23T12:00:00Z", 1073741824], ["2026-11-23T12:00:10Z", 1090519040]],
        },
        {
            "metric": "network_tx_bytes",
            "unit": "bytes",
            "aggregate": "sum",
            "points": [["2026-11-23T12:00:00Z", 52133], ["2026-11-23T12:00:10Z", 48870]],
        },
    ],
}
METRICS_EXAMPLES = response_examples("The last hour, every 10 seconds", "metrics", METRICS_EXAMPLE)


class UptimeDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    uptime_percent = serializers.FloatField(
        allow_null=True, help_text="Null on a day it was never meant to run."
    )
    up_seconds = serializers.IntegerField()
    down_seconds = serializers.IntegerField()


class IncidentSerializer(serializers.Serializer):
    started_at = serializers.DateTimeField(help_text="When it crashed.")
    ended_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When it ran again or was stopped on purpose; null while it lasts.",
    )
    duration_seconds = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class UptimeSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    uptime_percent = serializers.FloatField(
        allow_null=True,
        help_text="Running time as a percentage of the time it was meant to run (3 decimals); "
        "null when it was never meant to run in the range.",
    )
    up_seconds = serializers.IntegerField()
    down_seconds = serializers.IntegerField(
        help_text="Meant to run and not running: from a crash until it runs again or is "
        "stopped on purpose."
    )
    days = UptimeDaySerializer(many=True, help_text="UTC days, oldest first.")
    incidents = IncidentSerializer(many=True)


UPTIME_EXAMPLE = {
    "start": "2026-11-22T00:00:00Z",
    "end": "2026-11-24T00:00:00Z",
    "uptime_percent": 99.306,
    "up_seconds": 171600,
    "down_seconds": 1200,
    "days": [
        {"date": "2026-11-22", "uptime_percent": 100.0, "up_seconds": 86400, "down_seconds": 0},
        {"date": "2026-11-23", "uptime_percent": 98.611, "up_seconds": 85200, "down_seconds": 1200},
    ],
    "incidents": [
        {
            "started_at": "2026-11-23T03:10:00Z",
            "ended_at": "2026-11-23T03:30:00Z",
            "duration_seconds": 1200,
            "reason": "Crashed: exited with status 137 (out of memory)",
        }
    ],
}
UPTIME_EXAMPLES = response_examples("A crash last night", "uptime", UPTIME_EXAMPLE)

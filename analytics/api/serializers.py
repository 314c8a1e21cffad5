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

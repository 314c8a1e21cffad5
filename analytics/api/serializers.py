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
        allow_null=True,
        help_text="Null on a day it was never meant to run, or that is not known (before the "
        "event log, and not recorded).",
    )
    up_seconds = serializers.IntegerField(allow_null=True, help_text="Null: not known.")
    down_seconds = serializers.IntegerField(allow_null=True, help_text="Null: not known.")
    incidents = serializers.IntegerField(
        allow_null=True, help_text="Incidents (crashes) that began that day; null: not known."
    )


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
        {
            "date": "2026-11-22",
            "uptime_percent": 100.0,
            "up_seconds": 86400,
            "down_seconds": 0,
            "incidents": 0,
        },
        {
            "date": "2026-11-23",
            "uptime_percent": 98.611,
            "up_seconds": 85200,
            "down_seconds": 1200,
            "incidents": 1,
        },
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


class UsageTotalsSerializer(serializers.Serializer):
    instances = serializers.IntegerField(help_text="Servers and bots that reported in the range.")
    cpu_percent = serializers.FloatField(help_text="The sum of their average CPU use.")
    memory_bytes = serializers.IntegerField(help_text="The sum of their average memory use.")
    disk_bytes = serializers.IntegerField(help_text="The sum of the most disk each used.")
    network_rx_bytes = serializers.IntegerField(allow_null=True, help_text="Bytes received.")
    network_tx_bytes = serializers.IntegerField(allow_null=True, help_text="Bytes sent.")


class ConsumerSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["server", "bot"])
    name = serializers.CharField()
    samples = serializers.IntegerField()
    cpu_percent = serializers.FloatField(help_text="Average over its samples.")
    cpu_percent_max = serializers.FloatField()
    memory_bytes = serializers.IntegerField(help_text="Average over its samples.")
    memory_bytes_max = serializers.IntegerField()
    disk_bytes = serializers.IntegerField(help_text="The most it used in the range.")
    network_rx_bytes = serializers.IntegerField(allow_null=True)
    network_tx_bytes = serializers.IntegerField(allow_null=True)
    deleted_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When it was deleted; null while it exists. History keeps deleted servers "
        "and bots, under their last name.",
    )


class AccountUsageSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    resolution = serializers.ChoiceField(
        choices=["day", "hour", "minute"],
        help_text="The rollup read; the range is widened to whole rows of it.",
    )
    totals = UsageTotalsSerializer()
    top = serializers.ChoiceField(
        choices=[
            "cpu_percent",
            "memory_bytes",
            "disk_bytes",
            "network_rx_bytes",
            "network_tx_bytes",
        ]
    )
    consumers = ConsumerSerializer(
        many=True,
        help_text="The largest consumers of `top` among the servers (with `servers:read`) "
        "and bots (with `bots:read`) the key may read; `totals` count every one.",
    )


ACCOUNT_USAGE_EXAMPLE = {
    "start": "2026-10-25T00:00:00Z",
    "end": "2026-11-24T00:00:00Z",
    "resolution": "day",
    "totals": {
        "instances": 2,
        "cpu_percent": 61.5,
        "memory_bytes": 5368709120,
        "disk_bytes": 26843545600,
        "network_rx_bytes": 91268055040,
        "network_tx_bytes": 412316860416,
    },
    "top": "network_tx_bytes",
    "consumers": [
        {
            "id": "srv_7Hq2Lm9Xw4Zr1Nc8Vb3Kd5Ts6",
            "kind": "server",
            "name": "Survival SMP",
            "samples": 259200,
            "cpu_percent": 58.25,
            "cpu_percent_max": 187.5,
            "memory_bytes": 5100273664,
            "memory_bytes_max": 6442450944,
            "disk_bytes": 21474836480,
            "network_rx_bytes": 90194313216,
            "network_tx_bytes": 410169376768,
            "deleted_at": None,
        },
        {
            "id": "bot_2Kd8Wq5Nz1Xc7Lm4Rb9Ht3Py6",
            "kind": "bot",
            "name": "Moderation bot",
            "samples": 259200,
            "cpu_percent": 3.25,
            "cpu_percent_max": 41.0,
            "memory_bytes": 268435456,
            "memory_bytes_max": 402653184,
            "disk_bytes": 5368709120,
            "network_rx_bytes": 1073741824,
            "network_tx_bytes": 2147483648,
            "deleted_at": "2026-11-20T09:15:00Z",
        },
    ],
}
ACCOUNT_USAGE_EXAMPLES = response_examples("The last 30 days", "usage", ACCOUNT_USAGE_EXAMPLE)

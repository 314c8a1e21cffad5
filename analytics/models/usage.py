"""Usage history: what the node agents measured, raw and rolled up.

Rows are keyed by the instance's id (``srv_…`` or ``bot_…``), not by a foreign key: history
outlives the instance, and the raw table is partitioned on PostgreSQL, where a foreign key into
it would cost on every insert. Every table's primary key is ``(instance_id, time)``: the one
index a per-resource range query needs, and on PostgreSQL it includes the partition key as a
partitioned table's key must (``analytics/partitions.py``).
"""

from django.db import models

# Gauges are rolled up as min, sum (with the row's ``samples``: the average), max and last;
# counters (bytes since the process started) as the sum of their increases (deltas).
GAUGES = ("cpu_percent", "memory_bytes", "disk_bytes", "players", "uptime_seconds")
COUNTERS = ("network_rx_bytes", "network_tx_bytes")
NULLABLE = frozenset({"players", "network_rx_bytes", "network_tx_bytes"})


class Figures(models.Model):
    """What a node measures of a server or bot at one moment. Null where the node cannot
    attribute traffic to one process, or a game reports no player count."""

    at = models.DateTimeField()
    cpu_percent = models.FloatField()
    memory_bytes = models.BigIntegerField()
    disk_bytes = models.BigIntegerField()
    players = models.IntegerField(null=True)
    uptime_seconds = models.BigIntegerField()
    network_rx_bytes = models.BigIntegerField(null=True)
    network_tx_bytes = models.BigIntegerField(null=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.instance_id} at {self.at:%Y-%m-%d %H:%M:%S}"


class UsageSample(Figures):
    """One measurement of one server or bot, as its node sent it; kept a few days.

    ``network_*_bytes`` are the counters as reported (since the process started);
    ``network_*_delta`` what they grew since this instance's previous sample, worked out at
    ingest (``analytics.services.usage``).
    """

    pk = models.CompositePrimaryKey("instance_id", "at")
    instance_id = models.CharField(max_length=64)
    network_rx_delta = models.BigIntegerField(null=True)
    network_tx_delta = models.BigIntegerField(null=True)

    class Meta:
        db_table = "analytics_usage_sample"


class UsageRollup(models.Model):
    """The samples of one instance within one bucket (a minute, an hour or a day), merged.

    Kept exact under merging: ``samples`` counts them, ``*_sum / samples`` is the average,
    ``*_last`` belongs to the sample at ``last_at``; ``network_*_bytes`` are the sums of the
    samples' deltas. ``players_samples`` counts the samples that reported players.
    """

    pk = models.CompositePrimaryKey("instance_id", "bucket")
    instance_id = models.CharField(max_length=64)
    bucket = models.DateTimeField()
    samples = models.IntegerField()
    last_at = models.DateTimeField()
    cpu_percent_min = models.FloatField()
    cpu_percent_sum = models.FloatField()
    cpu_percent_max = models.FloatField()
    cpu_percent_last = models.FloatField()
    memory_bytes_min = models.BigIntegerField()
    memory_bytes_sum = models.BigIntegerField()
    memory_bytes_max = models.BigIntegerField()
    memory_bytes_last = models.BigIntegerField()
    disk_bytes_min = models.BigIntegerField()
    disk_bytes_sum = models.BigIntegerField()
    disk_bytes_max = models.BigIntegerField()
    disk_bytes_last = models.BigIntegerField()
    players_samples = models.IntegerField(default=0)
    players_min = models.IntegerField(null=True)
    players_sum = models.BigIntegerField(null=True)
    players_max = models.IntegerField(null=True)
    players_last = models.IntegerField(null=True)
    uptime_seconds_min = models.BigIntegerField()
    uptime_seconds_sum = models.BigIntegerField()
    uptime_seconds_max = models.BigIntegerField()
    uptime_seconds_last = models.BigIntegerField()
    network_rx_bytes = models.BigIntegerField(null=True)
    network_tx_bytes = models.BigIntegerField(null=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.instance_id} {self.bucket:%Y-%m-%d %H:%M}"


class UsageMinute(UsageRollup):
    """Minute rows; kept ``USAGE_MINUTE_RETENTION_DAYS`` (30), partitioned by day."""

    class Meta:
        db_table = "analytics_usage_minute"


class UsageHour(UsageRollup):
    """Hour rows; kept ``USAGE_HOUR_RETENTION_DAYS`` (about 13 months), partitioned by month."""

    class Meta:
        db_table = "analytics_usage_hour"


class UsageDay(UsageRollup):
    """Day rows (UTC days); kept for ever, one plain table."""

    class Meta:
        db_table = "analytics_usage_day"


class UsageLatest(Figures):
    """The newest sample of each instance: the live figures on its page, and the counters the
    next sample's deltas are measured from. Of a game that answers a query (``agent/query.py``)
    also what it said beside its players, kept here only: the page's "12 / 20 players", its
    version and MOTD, and whether it still answers (null: the game has no query)."""

    instance_id = models.CharField(max_length=64, primary_key=True)
    max_players = models.IntegerField(null=True)
    game_version = models.CharField(max_length=100, blank=True, default="")
    motd = models.CharField(max_length=200, blank=True, default="")
    responding = models.BooleanField(null=True)

    class Meta:
        db_table = "analytics_usage_latest"

"""Usage samples node agents send (``POST /v1/agent/usage``): checked, then stored for the
live servers and bots of the sending node only (``usage_record``)."""

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from analytics.services.usage import Measurement, usage_record
from hosting.errors import ValidationFailed
from servers.models import Node
from servers.services.agent_reports import live_instance_ids, report_time

MAX_SAMPLES_PER_BATCH = 5000
MAX_PLAYERS = 1_000_000
# A sample's time outside these is a broken clock: the sample is rejected (counted) before any
# arithmetic on it (a retention subtracted from year 1 overflows).
EARLIEST_SAMPLE = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_SAMPLE = datetime(9000, 1, 1, tzinfo=UTC)


def _number(value: Any, where: str, *, nullable: bool = False, integer: bool = True) -> Any:
    if value is None and nullable:
        return None
    if integer and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON's 7.0 is the integer 7 (JSON Schema's "integer" says so too)
    kinds = (int,) if integer else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or value != value  # NaN
        or not 0 <= value <= (MAX_PLAYERS if where.endswith("players") else 2**62)
    ):
        raise ValidationFailed.field(where, "invalid", "A number of 0 or more.")
    return value


def _text(value: Any, where: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise ValidationFailed.field(where, "invalid", f"Text of at most {limit} characters.")
    return value


def _flag(value: Any, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValidationFailed.field(where, "invalid", "true, false or null.")
    return value


def usage_ingest(*, node: Node, samples: Any) -> tuple[int, int]:
    """Store a batch of samples (``analytics.services.usage``); returns ``(accepted,
    rejected)``: rejected are samples of instances not on this node and samples too old or
    from the future. A sample sent again is accepted and stored once."""
    if not isinstance(samples, list) or not 0 < len(samples) <= MAX_SAMPLES_PER_BATCH:
        raise ValidationFailed.field(
            "samples", "invalid", f"1 to {MAX_SAMPLES_PER_BATCH} samples in a batch."
        )
    measurements = []
    for index, sample in enumerate(samples):
        where = f"samples[{index}]"
        if not isinstance(sample, dict) or not isinstance(sample.get("instance_id"), str):
            raise ValidationFailed.field(where, "invalid", "Each sample names its instance_id.")
        measurements.append(
            Measurement(
                instance_id=sample["instance_id"][:64],
                at=report_time(sample.get("at"), f"{where}.at"),
                cpu_percent=float(
                    _number(sample.get("cpu_percent"), f"{where}.cpu_percent", integer=False)
                ),
                memory_bytes=_number(sample.get("memory_bytes"), f"{where}.memory_bytes"),
                disk_bytes=_number(sample.get("disk_bytes"), f"{where}.disk_bytes"),
                players=_number(sample.get("players"), f"{where}.players", nullable=True),
                network_rx_bytes=_number(
                    sample.get("network_rx_bytes"), f"{where}.network_rx_bytes", nullable=True
                ),
                network_tx_bytes=_number(
                    sample.get("network_tx_bytes"), f"{where}.network_tx_bytes", nullable=True
                ),
                uptime_seconds=int(
                    _number(sample.get("uptime_seconds"), f"{where}.uptime_seconds", integer=False)
                ),
                max_players=_number(
                    sample.get("max_players"), f"{where}.max_players", nullable=True
                ),
                game_version=_text(sample.get("game_version"), f"{where}.game_version", 100),
                motd=_text(sample.get("motd"), f"{where}.motd", 200),
                responding=_flag(sample.get("responding"), f"{where}.responding"),
            )
        )
    live = live_instance_ids(node, {m.instance_id for m in measurements})
    recorded = usage_record(
        measurements=[
            m
            for m in measurements
            if m.instance_id in live and EARLIEST_SAMPLE <= m.at < LATEST_SAMPLE
        ]
    )
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now())  # it is alive
    accepted = recorded.stored + recorded.duplicates
    return accepted, len(measurements) - accepted

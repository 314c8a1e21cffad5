"""Usage samples and their rollups: the minute, hour and day rows are exactly what the raw
samples say, whatever the batches, their order and their repetitions; series read from any
rollup equal series read from the raw samples."""

import math
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from analytics import rollups
from analytics.models import UsageDay, UsageHour, UsageLatest, UsageMinute, UsageSample
from analytics.selectors.usage import LEVELS, Plan, metrics_plan, metrics_series
from analytics.services.usage import Measurement, usage_record

pytestmark = pytest.mark.django_db
# Recent enough for the raw retention (3 days), far enough back to span a day's end.
BASE = (datetime.now(UTC) - timedelta(days=1)).replace(hour=22, minute=0, second=0, microsecond=0)
NOW = BASE + timedelta(hours=66)  # after the longest history drawn
INSTANCES = ("srv_aaaaaaaaaaaa", "srv_bbbbbbbbbbbb")


def _clear():
    for model in (UsageSample, UsageMinute, UsageHour, UsageDay, UsageLatest):
        model.objects.all().delete()


@st.composite
def histories(draw):
    """Per instance, a run of samples every few seconds over up to four hours, with processes
    that restart now and then (their uptime and network counters start again from zero)."""
    measurements = []
    for instance_id in INSTANCES[: draw(st.integers(1, 2))]:
        at = BASE + timedelta(seconds=draw(st.integers(0, 3600)))
        started = at - timedelta(seconds=draw(st.integers(0, 500)))
        rx = tx = 0
        with_network = draw(st.booleans())  # some nodes cannot attribute traffic
        for _ in range(draw(st.integers(1, 60))):
            at += timedelta(seconds=draw(st.sampled_from([1, 5, 10, 59, 61, 600, 3600])))
            if draw(st.integers(0, 15)) == 0:  # a restart
                started, rx, tx = at - timedelta(seconds=draw(st.integers(0, 3))), 0, 0
            rx += draw(st.integers(0, 10**6))
            tx += draw(st.integers(0, 10**6))
            measurements.append(
                Measurement(
                    instance_id=instance_id,
                    at=at,
                    cpu_percent=draw(st.floats(0, 800, allow_nan=False)),
                    memory_bytes=draw(st.integers(0, 2**36)),
                    disk_bytes=draw(st.integers(0, 2**40)),
                    players=draw(st.none() | st.integers(0, 200)),
                    uptime_seconds=int((at - started).total_seconds()),
                    network_rx_bytes=rx if with_network else None,
                    network_tx_bytes=tx,
                )
            )
    return measurements


def _in_batches(measurements, seed: int, *, in_order: bool = True):
    """Cut into batches, with some samples sent again later (what retries look like). In
    order: each sample first arrives after the earlier ones of its instance, as an agent sends
    them; else shuffled."""
    rng = random.Random(seed)
    sent = list(measurements)
    if in_order:
        rng.shuffle(sent)  # the instances interleave; each instance's own order is kept
        order = {id(m): i for i, m in enumerate(sorted(measurements, key=lambda m: m.at))}
        by_instance = defaultdict(list)
        for m in sorted(measurements, key=lambda m: order[id(m)]):
            by_instance[m.instance_id].append(m)
        sent = [by_instance[m.instance_id].pop(0) for m in sent]
    else:
        rng.shuffle(sent)
    for again in rng.sample(measurements, k=len(measurements) // 4):
        first = sent.index(again)
        sent.insert(rng.randint(first + 1, len(sent)), again)
    cuts = sorted(rng.sample(range(1, len(sent)), k=min(len(sent) - 1, rng.randint(0, 5))))
    return [sent[a:b] for a, b in zip([0, *cuts], [*cuts, len(sent)], strict=True)]


def _reference(model, floor) -> dict[tuple[str, datetime], rollups.Partial]:
    """The rollup of the stored raw samples, computed naively."""
    expected: dict[tuple[str, datetime], rollups.Partial] = {}
    rows = sorted(UsageSample.objects.values(), key=lambda row: (row["instance_id"], row["at"]))
    grouped = defaultdict(list)
    for row in rows:
        grouped[(row["instance_id"], floor(row["at"]))].append(row)
    for key, group in grouped.items():
        last = group[-1]
        partial = {"samples": len(group), "last_at": last["at"]}
        for gauge in ("cpu_percent", "memory_bytes", "disk_bytes", "uptime_seconds", "players"):
            values = [row[gauge] for row in group if row[gauge] is not None]
            partial[f"{gauge}_min"] = min(values, default=None)
            partial[f"{gauge}_sum"] = sum(values) if values else None
            partial[f"{gauge}_max"] = max(values, default=None)
            partial[f"{gauge}_last"] = last[gauge]
        partial["players_samples"] = sum(1 for row in group if row["players"] is not None)
        for counter in ("network_rx_bytes", "network_tx_bytes"):
            delta = counter.replace("_bytes", "_delta")
            deltas = [row[delta] for row in group if row[delta] is not None]
            partial[counter] = sum(deltas) if deltas else None
        expected[key] = partial
    return expected


def _stored(model) -> dict[tuple[str, datetime], rollups.Partial]:
    return {
        (row["instance_id"], row["bucket"]): {column: row[column] for column in rollups.COLUMNS}
        for row in model.objects.values()
    }


def _same(stored: rollups.Partial, expected: rollups.Partial) -> bool:
    for column in rollups.COLUMNS:
        a, b = stored[column], expected[column]
        if isinstance(a, float) or isinstance(b, float):
            if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6):
                return False
        elif a != b:
            return False
    return True


FLOORS = {
    UsageMinute: lambda at: at.replace(second=0, microsecond=0),
    UsageHour: lambda at: at.replace(minute=0, second=0, microsecond=0),
    UsageDay: lambda at: at.replace(hour=0, minute=0, second=0, microsecond=0),
}


def _total_traffic_in_order(measurements, counter: str) -> dict[str, int]:
    """What each instance moved, from its samples in time order: increases within a process,
    and a new process's whole count."""
    totals: dict[str, int] = defaultdict(int)
    previous: dict[str, Measurement] = {}
    for m in sorted(set(measurements), key=lambda m: (m.instance_id, m.at)):
        before = previous.get(m.instance_id)
        value = getattr(m, counter)
        if value is None:
            continue
        new_process = before is None or (m.at - timedelta(seconds=m.uptime_seconds)) - (
            before.at - timedelta(seconds=before.uptime_seconds)
        ) > timedelta(seconds=rollups.SAME_PROCESS_SECONDS)
        before_value = None if before is None else getattr(before, counter)
        if before is None and m.uptime_seconds > rollups.FIRST_SAMPLE_SECONDS:
            totals[m.instance_id] += 0  # found running: what it counted before is not ours
        elif new_process or before_value is None or value < before_value:
            totals[m.instance_id] += value
        else:
            totals[m.instance_id] += value - before_value
        previous[m.instance_id] = m
    return dict(totals)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(measurements=histories(), seed=st.integers(0, 2**32), in_order=st.booleans())
def test_rollups_equal_the_raw_samples_whatever_the_batches(measurements, seed, in_order):
    _clear()
    note(repr(measurements))
    stored = duplicates = 0
    for batch in _in_batches(measurements, seed, in_order=in_order):
        recorded = usage_record(measurements=batch, now=NOW)
        stored += recorded.stored
        duplicates += recorded.duplicates
        assert recorded.out_of_range == 0
    distinct = len({(m.instance_id, m.at) for m in measurements})
    assert stored == distinct == UsageSample.objects.count()
    sent = sum(len(b) for b in _in_batches(measurements, seed, in_order=in_order))
    assert duplicates == sent - distinct
    for model, floor in FLOORS.items():
        expected, found = _reference(model, floor), _stored(model)
        assert found.keys() == expected.keys(), model.__name__
        for key in expected:
            assert _same(found[key], expected[key]), (model.__name__, key)
    # The deltas add up to the traffic the counters show, when each instance's samples first
    # arrive in time order, as an agent sends them (README: a late sample counts no traffic).
    if not in_order:
        return
    for counter in ("network_rx_bytes", "network_tx_bytes"):
        day_totals = defaultdict(int)
        for row in UsageDay.objects.values("instance_id", counter):
            if row[counter] is not None:
                day_totals[row["instance_id"]] += row[counter]
        assert dict(day_totals) == _total_traffic_in_order(measurements, counter)
    newest = {}
    for m in measurements:
        if m.instance_id not in newest or m.at > newest[m.instance_id].at:
            newest[m.instance_id] = m
    for instance_id, m in newest.items():
        latest = UsageLatest.objects.get(instance_id=instance_id)
        assert (latest.at, latest.memory_bytes) == (m.at, m.memory_bytes)


def _raw_plan(plan: Plan) -> Plan:
    return Plan(plan.start, plan.end, plan.step, LEVELS[-1])


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    measurements=histories(),
    step=st.sampled_from([60, 120, 300, 900, 3600, 7200, 86400]),
    aggregate=st.sampled_from(rollups.AGGREGATES),
)
def test_a_series_from_a_rollup_equals_the_series_from_raw_samples(measurements, step, aggregate):
    _clear()
    usage_record(measurements=measurements, now=NOW)
    plan = metrics_plan(start=BASE, end=BASE + timedelta(hours=6), step=step, now=NOW)
    assert plan.step == step and plan.level.seconds == max(
        level.seconds for level in LEVELS if step % level.seconds == 0
    )
    for instance_id in INSTANCES:
        from_rollup = metrics_series(
            instance_id=instance_id, metrics=rollups.METRICS, aggregate=aggregate, plan=plan
        )
        from_raw = metrics_series(
            instance_id=instance_id,
            metrics=rollups.METRICS,
            aggregate=aggregate,
            plan=_raw_plan(plan),
        )
        for a, b in zip(from_rollup, from_raw, strict=True):
            assert [t for t, _ in a.points] == [t for t, _ in b.points], a.metric
            assert [v for _, v in a.points] == pytest.approx([v for _, v in b.points]), a.metric

"""10,000 schedules due in the same minute, two workers: all started within 60 s, none twice
(issue 31), on PostgreSQL (not a test).

    .venv/bin/python bench/schedules.py [--schedules 10000] [--workers 2]
                                        [--postgres URL] [--database NAME] [--redis URL]

1. **Dataset**: the database ``--database`` made afresh and migrated; one account with
   ``--schedules`` servers (running, on no node) and one schedule each, all with the cron line of
   the same minute ``T`` (the next whole minute at least 25 s away, in UTC), each with one task:
   a console command. The servers are on no node, so the command fails in the control plane at
   once (with its ``schedule.run_failed`` event and the webhooks' consumer): the bench measures
   the scheduling, not an agent.
2. **Load**: ``--workers`` pairs of processes, each a dispatcher (``manage.py schedules_dispatch
   --every 60``: it wakes a second into each minute) and a task worker (``manage.py db_worker``),
   started before ``T``; they run until every run's task has ended (or 180 s after ``T``).
3. **Checks and figures**: one run per schedule and tick (and so none twice), every run's task
   started within 60 s of ``T``; when the dispatchers had recorded the runs (the last run's
   row after ``T``), and the spread of the tasks' start times (median, 95th percentile, last).

Prints the figures and PASS/FAIL; exit status 1 when the goal is missed.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import (  # noqa: E402 - the path above makes the project importable
    bench_environment,
    database_url,
    migrate,
    recreate_database,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="hosting_bench_schedules")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--wait", type=int, default=300, help="Seconds after the minute.")
    return parser.parse_args()


def the_minute() -> datetime:
    """The next whole minute at least 25 s away (the dataset is made meanwhile)."""
    now = datetime.now(UTC)
    minute = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return minute if (minute - now).total_seconds() >= 25 else minute + timedelta(minutes=1)


def build(count: int, due: datetime) -> None:
    """The servers and their schedules, through bulk inserts (the services would take longer
    than the minute; what they write is the same rows)."""
    from accounts.models import Account
    from servers.models import Schedule, ScheduleTask, Server, ServerStatus

    account = Account.objects.create(name="Bench schedules")
    servers = Server.objects.bulk_create(
        Server(
            account=account,
            name=f"bench {number}",
            game_id="minecraft-java",
            region_id="eu-central",
            status=ServerStatus.RUNNING,
        )
        for number in range(count)
    )
    schedules = Schedule.objects.bulk_create(
        Schedule(
            account=account,
            server=server,
            name="Same minute",
            cron=f"{due.minute} {due.hour} * * *",
            time_zone="UTC",
            next_run_at=due,
        )
        for server in servers
    )
    ScheduleTask.objects.bulk_create(
        ScheduleTask(schedule=schedule, position=0, action="command", payload="say hi")
        for schedule in schedules
    )


def wait_for_runs(count: int, due: datetime, deadline: datetime) -> None:
    from servers.models import ScheduleRun

    while datetime.now(UTC) < deadline:
        ended = ScheduleRun.objects.exclude(status="running").count()
        print(f"  {datetime.now(UTC):%H:%M:%S} runs ended: {ended:,} of {count:,}", flush=True)
        if ended >= count:
            return
        time.sleep(5)


def main() -> int:
    args = parse_args()
    url = database_url(args.postgres, args.database)
    env = bench_environment(url) | {"REDIS_URL": args.redis, "DEBUG": "false"}
    recreate_database(args.postgres, args.database)
    migrate(env)
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connection

    from servers.models import ScheduleRun

    due = the_minute()
    started = time.monotonic()
    build(args.schedules, due)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE servers_schedule")
    print(
        f"{args.schedules:,} schedules due at {due:%H:%M:%S} UTC, made in "
        f"{time.monotonic() - started:.1f} s",
        flush=True,
    )
    processes = []
    for number in range(args.workers):
        for command in (
            ["schedules_dispatch", "--every", "60"],
            ["db_worker", "--no-reload", "--interval", "0.2", "--worker-id", f"bench-{number}"],
        ):
            processes.append(
                subprocess.Popen(
                    [sys.executable, "manage.py", *command],
                    cwd=ROOT,
                    env=env,
                    # Not a pipe: a worker logs every task, and a full pipe would stop it.
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    try:
        wait_for_runs(args.schedules, due, due + timedelta(seconds=args.wait))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()

    runs = list(ScheduleRun.objects.values("schedule_id", "tick", "started_at", "tasks"))
    per_schedule = {}
    for run in runs:
        per_schedule[run["schedule_id"]] = per_schedule.get(run["schedule_id"], 0) + 1
    twice = sum(1 for seen in per_schedule.values() if seen > 1)
    recorded = max((run["started_at"] - due).total_seconds() for run in runs) if runs else None
    starts = sorted(
        (
            datetime.fromisoformat(run["tasks"][0]["started_at"].replace("Z", "+00:00")) - due
        ).total_seconds()
        for run in runs
        if run["tasks"] and run["tasks"][0].get("started_at")
    )
    print()
    print(f"runs recorded: {len(runs):,} for {len(per_schedule):,} schedules; twice: {twice}")
    if recorded is not None:
        print(f"the last run recorded {recorded:.1f} s after the minute")
    if starts:
        p95 = starts[int(len(starts) * 0.95) - 1]
        print(
            f"tasks started: {len(starts):,}; after the minute: median "
            f"{statistics.median(starts):.1f} s, 95th percentile {p95:.1f} s, last "
            f"{starts[-1]:.1f} s"
        )
    if len(starts) > 1:
        span = starts[-1] - starts[0]
        print(f"tasks carried out: {len(starts) / max(span, 1):.0f} a second by the workers")
    ok = (
        len(runs) == args.schedules
        and len(per_schedule) == args.schedules
        and twice == 0
        and recorded is not None
        and recorded < 60
    )
    print(f"{'PASS' if ok else 'FAIL'}: {args.schedules:,} runs started within 60 s, none twice")
    tasks_ok = len(starts) == args.schedules and starts[-1] < 60
    print(f"{'PASS' if tasks_ok else 'FAIL'}: every run's first task begun within 60 s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Webhook delivery throughput and latency, measured end to end (not a test).

    .venv/bin/python bench/webhooks.py [--events 10000] [--workers 1] [--batch 100]
                                       [--rate EVENTS_PER_S] [--timeout 900]

An account with 3 endpoints, all pointing at a threaded receiver on 127.0.0.1 that verifies
every signature; ``--workers`` real ``manage.py db_worker`` processes are started, then the
events are recorded in batches (each event fans out to 3 deliveries in its own transaction, the
outbox), and the run waits until every delivery has settled or the timeout passes. It reports
deliveries per second (in all and per worker process) and the end-to-end latency from the
event's ``created_at`` to the receiver's arrival time (p50, p99). Recorded as fast as possible,
the events build a backlog and the latency mostly measures the queue; ``--rate`` below the
workers' capacity measures the pipeline itself.

The database is a scratch SQLite file (removed first) unless ``DATABASE_URL`` is set; then it
must be a scratch database of its own, since the bench migrates it and its workers run every
queued task they find there.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _environment(args) -> dict[str, str]:
    env = dict(os.environ)
    if not env.get("DATABASE_URL"):
        path = Path(tempfile.gettempdir()) / "hosting-bench-webhooks.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        env["DATABASE_URL"] = f"sqlite:///{path}"
    env.setdefault("DEBUG", "true")  # the development defaults for keys and secrets
    env["WEBHOOKS_ALLOW_HTTP"] = "true"
    env["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = "true"
    env.setdefault("RATE_LIMIT_SQLITE_PATH", str(Path(tempfile.gettempdir()) / "bench-rl.sqlite3"))
    env["DJANGO_SETTINGS_MODULE"] = "hosting.settings"
    return env


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=1, help="db_worker processes")
    parser.add_argument("--batch", type=int, default=100, help="events per transaction")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait at most")
    parser.add_argument(
        "--rate",
        type=float,
        default=0,
        help="events per second to record (0: as fast as possible, which measures a backlog)",
    )
    args = parser.parse_args()

    env = _environment(args)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.actors import SYSTEM
    from accounts.models import Account
    from events.models import Event
    from events.services import record_event
    from tests.webhooks.receiver import Receiver
    from webhooks.models import DeliveryStatus, WebhookDelivery
    from webhooks.services import endpoint_create

    call_command("migrate", verbosity=0)
    database = connection.vendor
    account = Account.objects.create(name=f"Webhook bench {timezone.now():%H:%M:%S}")

    with Receiver(record_bodies=False) as receiver:
        for n in range(1, 4):
            _, secret = endpoint_create(
                account=account,
                url=receiver.url(f"/e{n}"),
                enabled_events=["server.*"],
                actor=SYSTEM,
            )
            receiver.set_secret(secret, f"/e{n}")
        expected = args.events * 3

        workers = [
            subprocess.Popen(
                [sys.executable, "manage.py", "db_worker", "--no-reload", "--interval", "0.05"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(args.workers)
        ]
        try:
            time.sleep(2)  # let the workers start (imports, checks) before the clock runs
            started = time.monotonic()
            recorded = 0
            while recorded < args.events:
                with transaction.atomic():
                    for i in range(recorded, min(recorded + args.batch, args.events)):
                        record_event(
                            type="server.updated",
                            account=account,
                            object_type="server",
                            obj={"id": f"srv_bench{i:06d}", "name": f"Server {i}"},
                            previous_attributes={"name": f"Old {i}"},
                        )
                recorded = min(recorded + args.batch, args.events)
                if args.rate:
                    time.sleep(max(0.0, started + recorded / args.rate - time.monotonic()))
            recording = time.monotonic() - started
            deadline = started + args.timeout
            pending = expected
            while time.monotonic() < deadline:
                pending = WebhookDelivery.objects.filter(
                    endpoint__account=account, status=DeliveryStatus.PENDING
                ).count()
                if pending == 0:
                    break
                time.sleep(0.2)
            elapsed = time.monotonic() - started
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGINT)
            for worker in workers:
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()

        created = dict(Event.objects.filter(account=account).values_list("id", "created_at"))
        latencies = [
            (r.arrived_at - created[r.webhook_id]).total_seconds()
            for r in receiver.requests
            if r.webhook_id in created
        ]
        succeeded = WebhookDelivery.objects.filter(
            endpoint__account=account, status=DeliveryStatus.SUCCEEDED
        ).count()
        unverified = sum(1 for r in receiver.requests if not r.verified)
        arrivals = [r.arrived_at for r in receiver.requests]

    drain = (max(arrivals) - min(arrivals)).total_seconds() if len(arrivals) > 1 else 0.0
    rate = succeeded / elapsed if elapsed else 0.0
    print(f"database            {database}, {args.workers} db_worker process(es)")
    print(f"events              {args.events} in batches of {args.batch}, {recording:.1f} s")
    print(f"deliveries          {succeeded}/{expected} succeeded, {pending} pending at the end")
    print(f"requests received   {len(receiver.requests)} ({unverified} failed verification)")
    print(f"wall time           {elapsed:.1f} s (first to last arrival {drain:.1f} s)")
    print(f"throughput          {rate:.0f} deliveries/s, {rate / args.workers:.0f} per worker")
    if latencies:
        print(
            f"latency             p50 {statistics.median(latencies) * 1000:.0f} ms, "
            f"p99 {_percentile(latencies, 0.99) * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms (event created_at → receiver)"
        )
    return 0 if succeeded == expected and not unverified else 1


if __name__ == "__main__":
    sys.exit(main())

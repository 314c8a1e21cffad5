import time

from django.conf import settings
from django.core.management.base import BaseCommand

from events.services import api_keys_expiring_notify, events_prune
from idempotency.services import idempotency_prune
from servers.counts import instance_counts_compact
from servers.services import actions_recover_stale
from webhooks.services import deliveries_recover_stale


class Command(BaseCommand):
    help = (
        "Periodic upkeep: settle actions a killed worker left behind, queue lost webhook "
        "deliveries again, delete events older than EVENT_RETENTION_DAYS (with their "
        "deliveries), record api_key.expiring for keys expiring within 7 days, and delete "
        "expired idempotency records, and fold the server and bot count rows. Run once, or "
        "keep running with --every SECONDS beside the workers (one such process per deployment)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=int, default=0, help="Repeat every N seconds.")

    def handle(self, *args, every, **options):
        while True:
            actions = actions_recover_stale()
            report = {
                "actions failed": actions["failed"],
                "actions resumed": actions["resumed"],
                "actions requeued": actions["requeued"],
                "deliveries requeued": deliveries_recover_stale(),
                "events pruned": events_prune(older_than_days=settings.EVENT_RETENTION_DAYS),
                "expiring keys notified": api_keys_expiring_notify(),
                "idempotency records pruned": idempotency_prune(),
                "server count rows folded": instance_counts_compact(),
            }
            if any(report.values()) or not every:
                self.stdout.write(", ".join(f"{name} {count}" for name, count in report.items()))
            if not every:
                return
            time.sleep(every)

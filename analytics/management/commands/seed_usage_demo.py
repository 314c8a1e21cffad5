"""Demo usage history: two days of one-minute samples for the demo account's running servers,
so a newcomer's charts have something to show before a node has reported anything."""

import math
import random
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from accounts.models import User
from accounts.selectors import accounts_of_user
from analytics.services.usage import Measurement, usage_record
from servers.models import ServerStatus
from servers.selectors import servers_of_account

HOURS = 48
BATCH = 1000


class Command(BaseCommand):
    help = (
        "Record 48 hours of synthetic one-minute usage samples for the running servers of the "
        "demo owner's accounts (at most 10), through the real ingest. Run again, it adds "
        "nothing already there."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", default="demo@example.com")

    def handle(self, *args, email, **options):
        now = timezone.now().replace(second=0, microsecond=0)
        first = now - timedelta(hours=HOURS)
        stored = 0
        user = User.objects.filter(email__iexact=email).first()
        accounts = accounts_of_user(user=user) if user is not None else []
        for account in accounts:
            servers = servers_of_account(account_id=account.id).filter(status=ServerStatus.RUNNING)[
                :10
            ]
            for server in servers:
                rng = random.Random(server.id)  # noqa: S311 - demo data only
                base_cpu, base_memory = rng.uniform(5, 60), rng.uniform(0.3, 0.8)
                samples, rx, tx = [], 0, 0
                minutes = HOURS * 60
                for minute in range(minutes):
                    at = first + timedelta(minutes=minute)
                    daily = 1 + 0.6 * math.sin((at.hour - 6) / 24 * 2 * math.pi)  # evenings
                    rx += int(rng.uniform(2e5, 6e5) * daily)
                    tx += int(rng.uniform(1e6, 4e6) * daily)
                    samples.append(
                        Measurement(
                            instance_id=server.id,
                            at=at,
                            cpu_percent=round(max(0.5, base_cpu * daily + rng.gauss(0, 4)), 2),
                            memory_bytes=int(
                                server.memory_mb
                                * 2**20
                                * min(0.95, base_memory * (0.9 + 0.1 * daily))
                            ),
                            disk_bytes=int(server.disk_mb * 2**20 * 0.2) + minute * 4096,
                            players=max(0, int(8 * daily + rng.gauss(0, 2))),
                            uptime_seconds=minute * 60 + 30,
                            network_rx_bytes=rx,
                            network_tx_bytes=tx,
                        )
                    )
                for start in range(0, len(samples), BATCH):
                    stored += usage_record(measurements=samples[start : start + BATCH]).stored
        self.stdout.write(f"{stored} usage samples recorded.")

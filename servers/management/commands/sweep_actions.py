import time

from django.core.management.base import BaseCommand

from servers.services import actions_recover_stale


class Command(BaseCommand):
    help = (
        "Settle actions that a stopped or killed worker left behind: fail (or, for deletions, "
        "resume) running ones without a recent heartbeat and queue old pending ones again. "
        "Run once, or keep running with --every SECONDS beside the workers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=int, default=0, help="Repeat every N seconds.")

    def handle(self, *args, every, **options):
        while True:
            counts = actions_recover_stale()
            if any(counts.values()) or not every:
                self.stdout.write(
                    f"failed {counts['failed']}, resumed {counts['resumed']}, "
                    f"requeued {counts['requeued']}"
                )
            if not every:
                return
            time.sleep(every)

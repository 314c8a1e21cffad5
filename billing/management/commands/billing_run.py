import time

from django.core.management.base import BaseCommand, CommandError

from billing.services.job.renewals import billing_run


class Command(BaseCommand):
    help = (
        "The billing job alone: renewals, collection, dunning, suspension and termination that "
        "are due (housekeeping runs it too). Run once, or keep running with --every SECONDS. "
        "Several may run at once: each takes the subscriptions no other run holds; --shard I/N "
        "splits the work between N processes up front."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=int, default=0, help="Repeat every N seconds.")
        parser.add_argument("--shard", default="", help="I/N: take only the I-th of N shares.")

    def handle(self, *args, every, shard, **options):
        split = None
        if shard:
            try:
                index, count = (int(part) for part in shard.split("/"))
            except ValueError:
                raise CommandError("--shard is I/N, e.g. 0/4.") from None
            if not 0 <= index < count:
                raise CommandError("--shard I/N needs 0 <= I < N.")
            split = (index, count)
        while True:
            report = billing_run(shard=split)
            if report.counts or not every:
                self.stdout.write(str(report))
            if not every:
                return
            time.sleep(every)

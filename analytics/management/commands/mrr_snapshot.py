from datetime import date

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from analytics.services.snapshots import mrr_snapshot_take

EARLIEST = date(1970, 1, 1)


class Command(BaseCommand):
    help = (
        "Take the MRR snapshot of a day now (housekeeping takes today's by itself), replacing "
        "what the day held. The snapshot records the subscriptions as they are when it is "
        "taken, whatever --day says: use it to start the history on a month's first day, or to "
        "fill a day housekeeping missed, not to rebuild the past."
    )

    def add_arguments(self, parser):
        parser.add_argument("--day", default="", help="YYYY-MM-DD (UTC); default today.")

    def handle(self, *args, day, **options):
        today = timezone.now().date()
        try:
            chosen = date.fromisoformat(day) if day else today
        except ValueError:
            raise CommandError("--day is a date written YYYY-MM-DD.") from None
        if chosen > today:
            raise CommandError("--day cannot be in the future.")
        if chosen < EARLIEST:
            # The reports start in 1970: a snapshot before would be read as every later month's
            # starting point, and walked day by day from there.
            raise CommandError("--day is 1970-01-01 or later.")
        taken = mrr_snapshot_take(day=chosen)
        self.stdout.write(f"MRR of {taken.day:%Y-%m-%d}: {taken.accounts} paying accounts")

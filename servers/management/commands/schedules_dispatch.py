import time

from django.core.management.base import BaseCommand
from django.utils import timezone

from servers.services.schedules import schedule_steps_recover, schedules_dispatch


class Command(BaseCommand):
    help = (
        "Start the runs of the schedules that are due (servers/services/schedules.py). Run once, "
        "or keep running with --every 60: it then wakes a second into each minute, when the "
        "minute's ticks are due. Any number may run at once (they share the due schedules, and "
        "a tick never runs twice); housekeeping dispatches too. Each pass also fails the steps "
        "whose worker was lost (SCHEDULE_STEP_TIMEOUT_SECONDS) and carries their runs on."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=int, default=0, help="Repeat every N seconds.")

    def handle(self, *args, every, **options):
        while True:
            counts = schedules_dispatch()
            counts["steps timed out"] = schedule_steps_recover()
            if any(counts.values()) or not every:
                self.stdout.write(", ".join(f"{name} {count}" for name, count in counts.items()))
            if not every:
                return
            now = timezone.now().timestamp()
            # The next multiple of ``every`` seconds, one second in: ticks fall on the minute.
            time.sleep(every - now % every + 1)

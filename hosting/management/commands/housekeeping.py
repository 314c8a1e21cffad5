import time

from django.core.management.base import BaseCommand

from hosting.housekeeping import upkeep_run


class Command(BaseCommand):
    help = (
        "Periodic upkeep: runs every app's upkeep.py (settling what a killed worker left behind, "
        "pruning old rows, notices that fall due; each app's module says what it does). Run "
        "once, or keep running with --every SECONDS beside the workers (one such process per "
        "deployment)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=int, default=0, help="Repeat every N seconds.")

    def handle(self, *args, every, **options):
        while True:
            report = upkeep_run()
            if any(report.values()) or not every:
                self.stdout.write(", ".join(f"{name} {count}" for name, count in report.items()))
            if not every:
                return
            time.sleep(every)

from django.core.management.base import BaseCommand, CommandError

from servers.catalogue import ManifestError
from servers.services.catalogue import catalogue_sync


class Command(BaseCommand):
    help = (
        "Bring the game catalogue (servers/catalogue/<slug>/game.toml and its scripts) into the "
        "database: create the games that are missing, update those that changed, delete none. "
        "Idempotent; run after each migrate. Name slugs to sync only those (the test workload "
        "is synced only when named)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="only these games")
        parser.add_argument(
            "--check",
            action="store_true",
            help="a dry run: say what would change, change nothing; exit 1 if anything would",
        )

    def handle(self, *args, slugs, check, **options):
        try:
            report = catalogue_sync(slugs=slugs or None, dry_run=check)
        except ManifestError as error:
            raise CommandError(f"The catalogue does not load:\n{error}") from None
        except KeyError as error:
            raise CommandError(f"No such game in the catalogue: {error.args[0]}") from None
        prefix = "would be " if check else ""
        for line in report.lines():
            self.stdout.write(prefix + line if not line[0].isdigit() else line)
        if check and (report.created or report.updated):
            raise SystemExit(1)

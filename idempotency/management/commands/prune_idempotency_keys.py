from django.core.management.base import BaseCommand

from idempotency.services import idempotency_prune


class Command(BaseCommand):
    help = "Delete idempotency records older than 24 hours (they are no longer replayed)."

    def handle(self, *args, **options):
        self.stdout.write(f"deleted {idempotency_prune()} expired idempotency records")

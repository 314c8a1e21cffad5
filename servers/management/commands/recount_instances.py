from django.core.management.base import BaseCommand

from servers.counts import instance_counts_rebuild
from servers.models import InstanceCount


class Command(BaseCommand):
    help = (
        "Recount every account's live servers and bots from the tables (the counts behind list "
        "totals). Needed only after writing servers_server or servers_bot with the counting "
        "triggers disabled, such as a bulk import; the triggers keep the counts otherwise."
    )

    def handle(self, *args, **options):
        instance_counts_rebuild()
        self.stdout.write(f"recounted: {InstanceCount.objects.count()} count rows")

from django.core.management.base import BaseCommand, CommandError

from hosting.errors import NotFound
from servers.models import Bot, Server
from servers.services import instance_crash


class Command(BaseCommand):
    help = (
        "Report that a running server or bot crashed, as a node agent would: it is stopped with "
        "the reason, and restarted when auto_restart is on (crash-loop guard included)."
    )

    def add_arguments(self, parser):
        parser.add_argument("id", help="srv_... or bot_...")
        parser.add_argument("--reason", default="The process exited with code 137 (simulated).")

    def handle(self, *args, id, reason, **options):
        model = Server if id.startswith("srv_") else Bot if id.startswith("bot_") else None
        instance = model.objects.filter(pk=id, deleted_at=None).first() if model else None
        if instance is None:
            raise CommandError(f"No server or bot {id}.")
        if instance.status != "running":
            raise CommandError(f"{id} is {instance.status}; only a running process can crash.")
        try:
            restart = instance_crash(instance=instance, reason=reason)
        except NotFound:
            raise CommandError(f"No server or bot {id}.") from None
        self.stdout.write(
            f"{id} crashed and stopped; "
            + (f"restarting with action {restart.id}." if restart else "not restarted.")
        )

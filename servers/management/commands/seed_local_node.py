"""Make this machine a node of a region, for a local agent (``LOCAL_AGENT=1 ./scripts/run``)."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.actors import SYSTEM
from servers.models import Node, Region
from servers.services.catalogue import catalogue_sync
from servers.services.nodes import (
    NodeChanges,
    node_allocations_add,
    node_create,
    node_token_rotate,
    node_update,
)

TEST_GAME = "test-workload"


class Command(BaseCommand):
    help = (
        "Create (or refresh) the node NAME in a region for an agent on this machine, add the "
        "test workload to the game catalogue, and print 'node_id token' (a new token each run)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", default="local")
        parser.add_argument("--region", default="eu-central")
        parser.add_argument("--agent-url", default="http://127.0.0.1:8443")
        parser.add_argument("--ip", default="127.0.0.1")
        parser.add_argument("--ports", default="25565-25575, 27960-27999")
        parser.add_argument("--memory-mb", type=int, default=16384)
        parser.add_argument("--disk-mb", type=int, default=102400)

    @transaction.atomic
    def handle(self, *args, name, region, agent_url, ip, ports, memory_mb, disk_mb, **options):
        if not Region.objects.filter(slug=region).exists():
            raise CommandError(f"No region {region}.")
        catalogue_sync(slugs=[TEST_GAME])
        node = Node.objects.filter(name=name).first()
        if node is None:
            node, token = node_create(
                name=name,
                region=region,
                agent_url=agent_url,
                memory_mb=memory_mb,
                disk_mb=disk_mb,
                cpu_percent=100 * 4,
                actor=SYSTEM,
            )
        else:
            if node.region_id != region:
                raise CommandError(f"The node {name} is in {node.region_id}, not {region}.")
            changes = NodeChanges(
                agent_url=agent_url, memory_mb=memory_mb, disk_mb=disk_mb, maintenance=False
            )
            node = node_update(node=node, changes=changes, actor=SYSTEM)
            node, token = node_token_rotate(node=node, actor=SYSTEM)
        node_allocations_add(node=node, ip=ip, ports=ports, actor=SYSTEM)
        self.stdout.write(f"{node.id} {token}")

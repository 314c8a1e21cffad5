import itertools
import random
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from accounts.models import Account, ApiKey
from accounts.roles import SCOPES, Role
from accounts.services import account_create, api_key_create, api_key_revoke
from servers.drivers.simulated import free_address
from servers.models import Game, Region, Server, ServerStatus
from servers.services import validate_variables

# Settled states only, like a real fleet at rest: nothing here waits for a worker to move it.
STATUS_MIX = (
    [ServerStatus.RUNNING] * 5
    + [ServerStatus.STOPPED] * 3
    + [
        ServerStatus.SUSPENDED,
        ServerStatus.INSTALL_FAILED,
    ]
)
# What a server in each status carries besides its address (every demo server was created, so
# every one has one): install_failed says why, suspended says what the provider wrote.
STATUS_DETAILS = {
    ServerStatus.INSTALL_FAILED: {"status_reason": "The installation failed (simulated failure)."},
    ServerStatus.SUSPENDED: {"suspended_reason": "Invoice overdue (demo data)."},
}
DEMO_KEY_NAME = "Demo key (seed_demo)"
NAMES = ["Survival", "Creative", "Hardcore", "Modded", "Vanilla", "PvP Arena", "Community", "Test"]


def demo_variables(game: Game) -> dict:
    """What a person would type for the required variables: accept the EULA, pick a password."""
    values = {}
    for definition in game.variables:
        if "must_be" in definition:
            values[definition["key"]] = definition["must_be"]
        elif definition.get("required") and definition["type"] == "string":
            values[definition["key"]] = "demo-password"
    return values


class Command(BaseCommand):
    help = (
        "Create (or reuse) the demo account of an e-mail address with N servers, revoke the demo "
        "key of the previous run and print a fresh full-access API key as the last line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", default="demo@example.com")
        parser.add_argument(
            "--servers", type=int, default=30, help="Servers the account should have."
        )
        parser.add_argument("--password", default=None, help="Password for a newly created user.")

    def handle(self, *args, email, servers, password, **options):
        if servers < 0:
            raise CommandError("--servers must be zero or more.")
        with transaction.atomic():
            account = Account.objects.filter(
                memberships__user__email__iexact=email, memberships__role=Role.OWNER
            ).first()
            if account is None:
                account = account_create(
                    name="Demo Hosting Co.", owner_email=email, owner_password=password
                )
                self.stdout.write(f"Created account {account.id} owned by {email}.")
            else:
                self.stdout.write(f"Reusing account {account.id} owned by {email}.")
            existing = account.servers.count()
            missing = servers - existing
            if missing > 0:
                self._add_servers(account, start=existing, count=missing)
                self.stdout.write(f"Added {missing} servers (now {servers}).")
            # Room to try creating servers and bots on top of the demo fleet.
            account.max_servers = max(account.max_servers, servers + 20)
            account.max_memory_mb = max(account.max_memory_mb, (servers + 30) * 2048)
            # The demo's servers run without a plan, as a host billing elsewhere would give
            # them; room for a few more, so "New server" works as well as ordering a plan.
            account.unbilled_instances = max(account.unbilled_instances, servers + 5)
            account.unbilled_memory_mb = max(account.unbilled_memory_mb, (servers + 5) * 4096)
            account.unbilled_cpu_percent = max(account.unbilled_cpu_percent, (servers + 5) * 400)
            account.unbilled_disk_mb = max(account.unbilled_disk_mb, (servers + 5) * 40960)
            account.save(
                update_fields=[
                    "max_servers",
                    "max_memory_mb",
                    "unbilled_instances",
                    "unbilled_memory_mb",
                    "unbilled_cpu_percent",
                    "unbilled_disk_mb",
                    "updated_at",
                ]
            )
            owner = account.memberships.get(user__email__iexact=email).user
            # One live demo key at a time, or every run would take one more of the account's
            # key quota until seeding (and so ./scripts/run) fails.
            previous = ApiKey.objects.filter(
                account=account, user=owner, name=DEMO_KEY_NAME, revoked_at=None
            )
            for api_key in previous:
                api_key_revoke(api_key=api_key)
            _, token = api_key_create(
                account=account, user=owner, name=DEMO_KEY_NAME, scopes=list(SCOPES)
            )
        self.stdout.write(token)

    def _add_servers(self, account: Account, *, start: int, count: int) -> None:
        games = list(Game.objects.order_by("slug"))
        regions = list(Region.objects.order_by("slug"))
        if not games or not regions:
            raise CommandError("The game and region catalogues are empty; run migrate first.")
        now = timezone.now().replace(microsecond=0)
        rng = random.Random(account.id)  # noqa: S311 - demo data only
        statuses = itertools.cycle(STATUS_MIX)
        taken = set(
            Server.objects.filter(deleted_at=None)
            .exclude(address="")
            .values_list("address", flat=True)
        )
        servers = []
        for index in range(start, start + count):
            game, region = games[index % len(games)], regions[index % len(regions)]
            address = free_address(region, game.default_port, taken)
            if address is None:
                raise CommandError(f"The region {region.name} has no free address left.")
            taken.add(address)
            status = next(statuses)
            servers.append(
                Server(
                    account=account,
                    name=f"{rng.choice(NAMES)} {game.name} #{index + 1}",
                    game=game,
                    region=region,
                    variables=validate_variables(game, demo_variables(game)),
                    status=status,
                    address=address,
                    created_at=now - timedelta(hours=index * 7, minutes=rng.randint(0, 59)),
                    **STATUS_DETAILS.get(status, {}),
                )
            )
        Server.objects.bulk_create(servers)

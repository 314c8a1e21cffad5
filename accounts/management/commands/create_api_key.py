from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.models import Membership
from accounts.services import api_key_create
from hosting.errors import ApplicationError


class Command(BaseCommand):
    help = "Create an API key for a user and print only its token."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="The key's user.")
        parser.add_argument("--scopes", required=True, help="Comma-separated, e.g. servers:read")
        parser.add_argument("--name", default="Command-line key")
        parser.add_argument("--expires-in-days", type=int, default=None)
        parser.add_argument("--account", default=None, help="Account id, if the user has several.")

    def handle(self, *args, email, scopes, name, expires_in_days, account, **options):
        memberships = Membership.objects.filter(user__email__iexact=email).select_related(
            "account", "user"
        )
        if account:
            memberships = memberships.filter(account_id=account)
        memberships = list(memberships[:2])
        if not memberships:
            raise CommandError(f"No account membership found for {email}.")
        if len(memberships) > 1:
            raise CommandError(f"{email} belongs to several accounts; choose one with --account.")
        if expires_in_days is not None and expires_in_days < 1:
            raise CommandError("--expires-in-days must be at least 1.")
        membership = memberships[0]
        try:
            _, token = api_key_create(
                account=membership.account,
                user=membership.user,
                name=name,
                scopes=[scope.strip() for scope in scopes.split(",") if scope.strip()],
                expires_at=(
                    timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
                ),
            )
        except ApplicationError as error:
            fields = (error.details or {}).get("fields", [])
            raise CommandError("; ".join(f["message"] for f in fields) or error.message) from None
        self.stdout.write(token)

"""``manage.py seed_support_demo``: the desk's departments and SLA policy, a staff member who
works them (staff role billing: the desk and the billing back office), macros, and a few
tickets of the demo account (run after ``seed_demo``, as ``./scripts/run`` does).

Everything goes through the support services, as staff and the customer would make it. Running
it again creates nothing twice: policies, departments and macros are found by name, the staff
member by address, and the tickets only come when the demo account has none.
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.actors import SYSTEM, Actor
from accounts.models import Account, Membership, User
from accounts.roles import Role, StaffRole
from support.models import Department, Macro, SlaPolicy, Ticket
from support.services.departments import department_save, sla_policy_save
from support.services.macros import macro_create
from support.services.tickets import Requester, ticket_assign, ticket_open, ticket_reply

STAFF_EMAIL = "staff@example.com"
WEEKDAYS = {day: [["08:00", "20:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
CALENDAR = {"time_zone": "Europe/Berlin", "hours": {**WEEKDAYS, "sat": [["10:00", "16:00"]]}}
TARGETS = {
    "urgent": {"first_response_minutes": 30, "resolution_minutes": 240},
    "high": {"first_response_minutes": 60, "resolution_minutes": 480},
    "normal": {"first_response_minutes": 240, "resolution_minutes": 1440},
    "low": {"first_response_minutes": 480},
}
# name, address's local part, default priority, customers may pick it
DEPARTMENTS = [
    ("Technical", "support", "normal", True),
    ("Billing", "billing", "normal", True),
    ("Sales", "sales", "low", True),
    ("Abuse", "abuse", "high", False),
]
MACROS = [
    (
        "Restart from the panel",
        "Technical",
        "pending_customer",
        "Please restart the server from its page (Restart) and tell us whether the problem "
        "comes back. If it does, attach the latest log file to your reply.",
    ),
    (
        "Refund issued",
        "Billing",
        "resolved",
        "We have refunded the payment; it reaches your card within 5-10 business days.",
    ),
    ("Thanks, closing", None, "resolved", "Thank you! We are marking this ticket as solved."),
]


class Command(BaseCommand):
    help = "Create the desk's demo departments, staff member, macros and tickets."

    def add_arguments(self, parser):
        parser.add_argument("--email", default="demo@example.com", help="The demo account's owner.")
        parser.add_argument("--password", default=None, help="Password for a new staff member.")

    def handle(self, *args, email, password, **options):
        membership = (
            Membership.objects.select_related("user", "account")
            .filter(user__email__iexact=email, role=Role.OWNER)
            .first()
        )
        if membership is None:
            raise CommandError(f"No account owned by {email}; run seed_demo first.")
        with transaction.atomic():
            staff = self._staff(password)
            policy = SlaPolicy.objects.filter(name="Standard").first() or sla_policy_save(
                policy=None, name="Standard", targets=TARGETS, calendar=CALENDAR, actor=SYSTEM
            )
            departments = {}
            for name, local, priority, visible in DEPARTMENTS:
                departments[name] = Department.objects.filter(name=name).first() or department_save(
                    department=None,
                    name=name,
                    email=f"{local}@localhost",
                    default_priority=priority,
                    sla_policy=policy,
                    customer_visible=visible,
                    active=True,
                    members=[staff],
                    actor=SYSTEM,
                )
            for name, department, status, body in MACROS:
                place = departments[department] if department else None
                if not Macro.objects.filter(name=name, department=place).exists():
                    macro_create(
                        name=name,
                        body=body,
                        department=place,
                        set_status=status,
                        actor=Actor(user=staff),
                    )
            made = self._tickets(membership.user, membership.account, staff, departments)
        self.stdout.write(
            f"Desk: {len(departments)} departments worked by {STAFF_EMAIL}; {made} new tickets."
        )
        # Staff reach the desk and admin only with a second factor (STAFF_REQUIRE_SECOND_FACTOR):
        # the demo's staff member has an authenticator app set up; its key is the last line.
        self.stdout.write(f"Staff authenticator key: {self._authenticator_key(staff)}")

    def _staff(self, password: str | None) -> User:
        # Billing staff: the desk (every department, Billing's included) and the billing back
        # office in admin, as a demo shows both (accounts/roles.py).
        staff = User.objects.filter(email__iexact=STAFF_EMAIL).first()
        if staff is None:
            staff = User.objects.create_user(
                email=STAFF_EMAIL,
                password=password,
                name="Sam (Support)",
                is_staff=True,
                staff_role=StaffRole.BILLING,
            )
        elif staff.is_staff and not staff.staff_role:
            staff.staff_role = StaffRole.BILLING
            staff.save(update_fields=["staff_role"])
        return staff

    def _authenticator_key(self, staff: User) -> str:
        """The demo staff member's TOTP secret (set up once, the same on every run after)."""
        from allauth.mfa.adapter import get_adapter
        from allauth.mfa.models import Authenticator
        from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret

        existing = Authenticator.objects.filter(user=staff, type=Authenticator.Type.TOTP).first()
        if existing is not None:
            return get_adapter().decrypt(existing.data["secret"])
        secret = generate_totp_secret()
        TOTP.activate(staff, secret)
        return secret

    def _tickets(self, owner: User, account: Account, staff: User, departments: dict) -> int:
        if Ticket.objects.filter(account=account).exists():
            return 0
        requester = Requester(email=owner.email, name=owner.name, user=owner, account=account)
        server = account.servers.filter(deleted_at=None).order_by("created_at").first()
        answered, _ = ticket_open(
            requester=requester,
            subject="Server stops at 'Loading world'",
            body="Since this morning's update the server stops while loading the world.",
            department=departments["Technical"],
            channel="web",
            actor=Actor(user=owner),
            priority="high",
            links={"server": server.id if server else None},
        )
        ticket_assign(ticket=answered, assignee=staff, actor=Actor(user=staff))
        ticket_reply(
            ticket=answered,
            body="World file is 9 GB; the plan has 10 GB of disk.",
            actor=Actor(user=staff),
            by_staff=True,
            channel="web",
            internal=True,
        )
        ticket_reply(
            ticket=answered,
            actor=Actor(user=staff),
            by_staff=True,
            channel="web",
            body="The disk is almost full, so the world cannot be saved. Could you remove old "
            "backups from the server's files, or move to a plan with more disk?",
        )
        ticket_open(
            requester=requester,
            subject="VAT id on my invoices",
            body="Please add our VAT id to the invoices from now on.",
            department=departments["Billing"],
            channel="web",
            actor=Actor(user=owner),
        )
        return 2

"""Reads of the help desk: what a customer sees (their account's tickets, never an internal
note) and what a staff member sees (the tickets of their departments; all of them for
superusers)."""

from datetime import datetime, timedelta

from django.db.models import Case, Count, F, Q, QuerySet, When
from django.db.models.functions import Coalesce, Least

from accounts.models import User, desk_staff_q
from support.models import Attachment, Department, Macro, Message, MessageKind, Ticket
from support.representations import PUBLIC_KINDS
from support.transitions import FINISHED

# When a ticket next needs staff: its first response while none was given (or the resolution,
# should that come first), then its resolution. Tickets without a target sort last.
NEXT_DUE = Case(
    When(
        first_response_at__isnull=True,
        then=Least(
            Coalesce("first_response_due_at", "resolution_due_at"),
            Coalesce("resolution_due_at", "first_response_due_at"),
        ),
    ),
    default=F("resolution_due_at"),
)


def tickets_of_account(*, account_id: str) -> QuerySet[Ticket]:
    return Ticket.objects.filter(account_id=account_id).order_by("-created_at", "-id")


def departments_for_customers() -> QuerySet[Department]:
    return Department.objects.filter(active=True, customer_visible=True)


def departments_of_staff(user: User) -> QuerySet[Department]:
    """The departments whose tickets ``user`` works: theirs, or all for a superuser."""
    if user.is_superuser:
        return Department.objects.all()
    return Department.objects.filter(members=user)


def staff_of_departments(departments: QuerySet[Department]) -> QuerySet[User]:
    """The active staff members of ``departments``: who tickets there may be given to."""
    return (
        User.objects.filter(desk_staff_q(), support_departments__in=departments)
        .distinct()
        .order_by("email")
    )


def tickets_for_staff(user: User) -> QuerySet[Ticket]:
    """Every ticket of the staff member's departments, and those assigned to them."""
    if user.is_superuser:
        return Ticket.objects.all()
    # The departments as a list read first, not a join (duplicate rows, a DISTINCT over every
    # column) nor a subquery (the planner cannot tell how many tickets it keeps, and sorts all
    # of them for a deep page): with the ids written out, a page is read from the
    # ``ticket_recent`` index alone (bench/support.py).
    departments = list(Department.objects.filter(members=user).values_list("pk", flat=True))
    return Ticket.objects.filter(Q(department__in=departments) | Q(assignee=user))


def messages_visible(ticket: Ticket, *, staff: bool) -> QuerySet[Message]:
    """The conversation as its reader may see it: customers never get internal notes, nor
    the system entries that name staff (``staff_only``: who the ticket is assigned to)."""
    messages = (
        Message.objects.filter(ticket=ticket)
        .select_related("author")
        .prefetch_related("attachments")
    )
    if not staff:
        messages = messages.filter(kind__in=PUBLIC_KINDS, staff_only=False)
    return messages.order_by("created_at", "id")


def attachment_for_customer(*, attachment_id: str, account_id: str) -> Attachment | None:
    """A file of a public message of one of the account's tickets; None otherwise (the same
    answer for a file of another account and for one of an internal note)."""
    return (
        Attachment.objects.select_related("message__ticket")
        .filter(
            pk=attachment_id,
            message__ticket__account_id=account_id,
            message__kind=MessageKind.PUBLIC,
        )
        .first()
    )


def attachment_for_staff(*, attachment_id: str, user: User) -> Attachment | None:
    """A file of a ticket the staff member may see."""
    return (
        Attachment.objects.select_related("message__ticket")
        .filter(pk=attachment_id, message__ticket__in=tickets_for_staff(user))
        .first()
    )


def macros_for_ticket(ticket: Ticket) -> QuerySet[Macro]:
    """The macros offered on ``ticket``: its department's and those of every department."""
    return Macro.objects.filter(
        Q(department_id=ticket.department_id) | Q(department__isnull=True)
    ).order_by("name", "id")


def desk_summary(user: User, *, now: datetime, soonest: int = 5) -> dict:
    """The staff home's desk panel: the unfinished tickets of ``user``'s departments and their
    own, counted (all, mine, unassigned, breached, due within the hour), and the few due
    soonest. One aggregate and one short list."""
    unfinished = tickets_for_staff(user).exclude(status__in=FINISHED).annotate(next_due_at=NEXT_DUE)
    breached = Q(first_response_breached=True) | Q(resolution_breached=True)
    counted = unfinished.aggregate(
        open=Count("pk"),
        mine=Count("pk", filter=Q(assignee=user)),
        unassigned=Count("pk", filter=Q(assignee__isnull=True)),
        breached=Count("pk", filter=breached),
        due_soon=Count(
            "pk", filter=Q(next_due_at__gte=now, next_due_at__lt=now + timedelta(hours=1))
        ),
    )
    due = list(
        unfinished.filter(next_due_at__isnull=False)
        .select_related("department", "assignee")
        .order_by("next_due_at", "number")[:soonest]
    )
    return {**counted, "due": due}

"""The help desk: departments and their SLA policies, tickets, their messages and attachments,
and the staff's canned responses (macros).

A ticket belongs to an account when its requester is a user of one; a guest ticket (mail from
someone without an account) has only the requester's address until staff link it. What a ticket
may become is ``support/transitions.py``; every change goes through ``support.services``.
"""

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Account, User
from billing.models import Invoice
from hosting.ids import PrefixedIdField
from servers.models import Bot, Server


class Priority(models.TextChoices):
    LOW = "low", _("Low")
    NORMAL = "normal", _("Normal")
    HIGH = "high", _("High")
    URGENT = "urgent", _("Urgent")


class TicketStatus(models.TextChoices):
    OPEN = "open", _("Open")
    PENDING_CUSTOMER = "pending_customer", _("Answered")  # waits on the customer
    PENDING_STAFF = "pending_staff", _("Customer replied")  # waits on staff
    ON_HOLD = "on_hold", _("On hold")
    RESOLVED = "resolved", _("Resolved")
    CLOSED = "closed", _("Closed")


class Channel(models.TextChoices):
    WEB = "web", _("Web")
    API = "api", _("API")
    EMAIL = "email", _("E-mail")


class SlaPolicy(models.Model):
    """First-response and resolution targets per priority, counted in business hours.

    ``targets``: ``{"urgent": {"first_response_minutes": 60, "resolution_minutes": 480}, …}``;
    a priority left out has no target. ``calendar``: the weekly business hours with their time
    zone (``support.business_hours.BusinessCalendar.from_json``); empty: around the clock.
    """

    id = PrefixedIdField(prefix="sla")
    name = models.CharField(max_length=100, unique=True)
    targets = models.JSONField(default=dict, blank=True)
    calendar = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name = "SLA policy"
        verbose_name_plural = "SLA policies"

    def __str__(self) -> str:
        return self.name


class Department(models.Model):
    """Where a ticket is handled (Technical, Billing, Sales, Abuse): its address for mail in,
    its default priority and SLA policy, the staff who work it, and whether customers may
    choose it when they open a ticket."""

    id = PrefixedIdField(prefix="dept")
    name = models.CharField(max_length=100, unique=True)
    email = models.EmailField(blank=True)
    default_priority = models.CharField(
        max_length=10, choices=Priority.choices, default=Priority.NORMAL
    )
    sla_policy = models.ForeignKey(
        SlaPolicy, on_delete=models.PROTECT, null=True, blank=True, related_name="departments"
    )
    customer_visible = models.BooleanField(
        default=True, help_text="Customers may pick it when opening a ticket."
    )
    members = models.ManyToManyField(User, blank=True, related_name="support_departments")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["email"], condition=~Q(email=""), name="department_email_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name


class TicketCounter(models.Model):
    """The installation's next ticket number (one row): numbers are short and never reused."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    next_number = models.BigIntegerField(default=1000)

    def __str__(self) -> str:
        return f"next ticket #{self.next_number}"


class Ticket(models.Model):
    """A support request: who asked (a user of ``account``, or a guest's address), where it is
    handled, its status and SLA clock, and what of the account it is about."""

    id = PrefixedIdField(prefix="tkt")
    number = models.BigIntegerField(unique=True)
    subject = models.CharField(max_length=200)
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, null=True, blank=True, related_name="tickets"
    )
    requester = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets"
    )
    requester_email = models.EmailField()
    requester_name = models.CharField(max_length=200, blank=True)
    cc = models.JSONField(default=list, blank=True)  # addresses of teammates copied on replies
    department = models.ForeignKey(Department, on_delete=models.PROTECT, related_name="tickets")
    priority = models.CharField(max_length=10, choices=Priority.choices, default=Priority.NORMAL)
    status = models.CharField(
        max_length=20, choices=TicketStatus.choices, default=TicketStatus.OPEN
    )
    assignee = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="assigned_tickets"
    )
    tags = models.JSONField(default=list, blank=True)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    server = models.ForeignKey(
        Server, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets"
    )
    bot = models.ForeignKey(
        Bot, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets"
    )
    invoice = models.ForeignKey(
        Invoice, on_delete=models.SET_NULL, null=True, blank=True, related_name="tickets"
    )
    merged_into = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="merged"
    )
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    rating_comment = models.CharField(max_length=1000, blank=True)
    # The SLA clock: business seconds used so far toward resolution, and since when it runs
    # (null while it is paused: waiting on the customer, on hold, resolved or closed).
    sla_seconds_used = models.BigIntegerField(default=0)
    sla_running_since = models.DateTimeField(null=True, blank=True)
    first_response_due_at = models.DateTimeField(null=True, blank=True)
    resolution_due_at = models.DateTimeField(null=True, blank=True)
    first_response_breached = models.BooleanField(default=False)
    resolution_breached = models.BooleanField(default=False)
    first_response_at = models.DateTimeField(null=True, blank=True)
    last_customer_message_at = models.DateTimeField(null=True, blank=True)
    last_staff_message_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at"], name="ticket_account_recent"),
            models.Index(fields=["department", "status"], name="ticket_queue"),
            models.Index(fields=["assignee", "status"], name="ticket_assignee_queue"),
            models.Index(fields=["status", "resolution_due_at"], name="ticket_sla_due"),
            # The staff list's newest-first pages: the department and assignee included, so
            # a deep page's rows are chosen from the index alone (bench/support.py).
            models.Index(
                fields=["-created_at", "-id"],
                name="ticket_recent",
                include=["department", "assignee"],
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | Q(rating__gte=1, rating__lte=5),
                name="ticket_rating_range",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.number} {self.subject}"


class MessageKind(models.TextChoices):
    PUBLIC = "public", _("Reply")
    INTERNAL = "internal", _("Internal note")
    SYSTEM = "system", _("System entry")


class Message(models.Model):
    """One entry of a ticket's conversation: a public reply (customer or staff), an internal
    note (staff only: never shown to customers anywhere), or a system entry (a status or
    assignment change; ``staff_only`` for those naming a staff member, such as who the ticket
    is assigned to, which customers never see)."""

    id = PrefixedIdField(prefix="msg")
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages")
    kind = models.CharField(max_length=10, choices=MessageKind.choices)
    author = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    author_email = models.EmailField(blank=True)
    from_staff = models.BooleanField(default=False)
    staff_only = models.BooleanField(default=False)
    body = models.TextField()
    channel = models.CharField(max_length=10, choices=Channel.choices)
    # The Message-ID of the e-mail it came in as, or went out as: one message per mail.
    email_message_id = models.CharField(max_length=255, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["ticket", "created_at"], name="message_ticket_order")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.ticket_id}"


def attachment_path(attachment: "Attachment", filename: str) -> str:
    # The stored name is the id: what the sender called the file never reaches the disk.
    return f"support/{attachment.created_at:%Y/%m}/{attachment.id}"


class Attachment(models.Model):
    """A file of a message, kept through Django's storage API and served only through a view
    that checks who asks."""

    id = PrefixedIdField(prefix="att")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    file = models.FileField(upload_to=attachment_path, max_length=255)
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=100)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.filename


class Macro(models.Model):
    """A canned response for staff: its text, and optionally the status it sets."""

    id = PrefixedIdField(prefix="mac")
    name = models.CharField(max_length=100)
    body = models.TextField()
    department = models.ForeignKey(
        Department, on_delete=models.CASCADE, null=True, blank=True, related_name="macros"
    )
    set_status = models.CharField(max_length=20, choices=TicketStatus.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

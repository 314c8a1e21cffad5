"""Tickets: opening, the conversation (public replies, internal notes, system entries), status
changes along ``support/transitions.py``, assignment, rating, merging and the automation that
closes resolved tickets.

Who may do what is decided here once, by ``by_staff``: a customer (the requester or a teammate
of the account, through the dashboard, the API or mail) or the hosting company's staff. Every
change records its event in the same transaction; public replies and status changes are
``ticket.replied`` / ``ticket.status_changed``, internal notes record none (they are never
shown to customers, and webhooks belong to the customer's account).

Events belong to the customer's account, so they hold only what customers see
(``support.representations``): the customer's view of the ticket, previous values of that view
only (a change of tags alone records nothing; an assignment says no more than that it
happened), and no staff member as their actor (staff's changes are recorded as the system's;
the desk's conversation keeps who did what).
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from accounts.actors import SYSTEM, Actor
from accounts.models import Account, User, desk_staff_q
from billing.models import Invoice
from events.services import changed_attributes, record_event
from hosting.errors import (
    Conflict,
    InvalidState,
    PermissionDenied,
    ValidationFailed,
)
from servers.models import Bot, Server
from support import transitions
from support.models import (
    Channel,
    Department,
    Message,
    MessageKind,
    Priority,
    Ticket,
    TicketCounter,
    TicketStatus,
)
from support.representations import ticket_representation
from support.services.attachments import Upload, attachments_add, safe_filename
from support.services.notifications import assignment_mail_queue, message_mail_queue
from support.services.sla import sla_follow, sla_retarget, sla_start

SUBJECT_LIMIT = 200
BODY_LIMIT = 50_000
TAG_LIMIT, TAGS_PER_TICKET = 40, 20
CC_LIMIT = 20


@dataclass(frozen=True)
class Requester:
    """Who opens a ticket: a user of ``account``, or a guest known by address only."""

    email: str
    name: str = ""
    user: User | None = None
    account: Account | None = None


def teammates(account: Account | None, addresses: list[str] | None) -> list[str]:
    """Of ``addresses``, those of the account's members (lower-cased, once each, sorted)."""
    wanted = {each.strip().lower() for each in addresses or [] if isinstance(each, str)}
    if account is None or not wanted:
        return []
    members = User.objects.filter(
        memberships__account=account, is_active=True, email__in=wanted
    ).values_list("email", flat=True)
    return sorted({each.lower() for each in members})


def _cc(account: Account | None, addresses: list[str] | None) -> list[str]:
    """Who is copied on a ticket: members of its account only, since every public reply is
    mailed to them (a stranger's address would make the desk mail anyone it is given)."""
    if not addresses:
        return []
    if not isinstance(addresses, list) or len(addresses) > CC_LIMIT:
        raise ValidationFailed.field(
            "cc",
            "invalid",
            _("A list of at most %(limit)s e-mail addresses.") % {"limit": CC_LIMIT},
        )
    kept = teammates(account, addresses)
    strangers = sorted(
        {each.strip().lower() for each in addresses if isinstance(each, str)} - set(kept)
    )
    if strangers:
        raise ValidationFailed.field(
            "cc",
            "not_a_member",
            _("Only members of the account can be copied; not: %(addresses)s.")
            % {"addresses": ", ".join(strangers)},
        )
    return kept


def _ticket_number() -> int:
    """The next number of the installation (one ``UPDATE … RETURNING``-like step under the
    counter row's lock), in the caller's transaction."""
    TicketCounter.objects.get_or_create(pk=1)
    counter = TicketCounter.objects.select_for_update().get(pk=1)
    number = counter.next_number
    TicketCounter.objects.filter(pk=1).update(next_number=F("next_number") + 1)
    return number


def required_text(name: str, value: Any, limit: int) -> str:
    """``value`` stripped, refused (naming ``name``) when empty, not text or over ``limit``."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed.field(name, "required", _("This field is required."))
    value = value.strip()
    if len(value) > limit:
        raise ValidationFailed.field(
            name,
            "max_length",
            _("Ensure this field has no more than %(limit)s characters.") % {"limit": limit},
        )
    return value


def _linked(account: Account | None, links: dict[str, str | None]) -> dict[str, Any]:
    """The server, bot and invoice a ticket is about: each of ``account`` (else 404, as any
    other account's object is)."""
    found: dict[str, Any] = {}
    for name, model in (("server", Server), ("bot", Bot), ("invoice", Invoice)):
        wanted = links.get(name)
        if not wanted:
            found[name] = None
            continue
        obj = (
            model.objects.filter(pk=wanted, account=account).first()
            if account is not None
            else None
        )
        if obj is None:
            missing = {
                "server": _("No server %(id)s in this account."),
                "bot": _("No bot %(id)s in this account."),
                "invoice": _("No invoice %(id)s in this account."),
            }[name]
            raise ValidationFailed.field(name, "not_found", missing % {"id": wanted})
        found[name] = obj
    return found


def _record(
    ticket: Ticket, type: str, actor: Actor, previous: dict | None = None, *, by_staff: bool
) -> None:
    """Record the ticket's event, as its account may read it: a staff member's change has no
    person, key or address as its actor (customers see staff as the team only)."""
    record_event(
        type=type,
        account=ticket.account,
        object_type="ticket",
        obj=ticket_representation(ticket),
        actor=SYSTEM if by_staff else actor,
        previous_attributes=previous,
    )


def _system_entry(
    ticket: Ticket, text: str, actor: Actor, now: datetime, *, staff_only: bool = False
) -> None:
    Message.objects.create(
        ticket=ticket,
        kind=MessageKind.SYSTEM,
        author=actor.user,
        body=text,
        channel=Channel.WEB,
        from_staff=bool(actor.user and actor.user.is_staff),
        created_at=now,
        staff_only=staff_only,
    )


def _next_assignee(department: Department) -> User | None:
    """Round robin over the department's staff: the one whose last assignment here is
    oldest (never assigned first)."""
    members = list(department.members.filter(desk_staff_q()).order_by("id"))
    if not members:
        return None
    latest: dict[str, datetime] = {}
    for assignee_id, created_at in (
        Ticket.objects.filter(department=department, assignee__in=members)
        .order_by("assignee_id", "-created_at")
        .values_list("assignee_id", "created_at")
    ):
        latest.setdefault(assignee_id, created_at)
    epoch = datetime.min.replace(tzinfo=UTC)
    return min(members, key=lambda member: (latest.get(member.id, epoch), member.id))


@transaction.atomic
def ticket_open(
    *,
    requester: Requester,
    subject: str,
    body: str,
    department: Department,
    channel: str,
    actor: Actor,
    priority: str | None = None,
    by_staff: bool = False,
    links: dict[str, str | None] | None = None,
    cc: list[str] | None = None,
    email_message_id: str | None = None,
    uploads: list[Upload] | None = None,
) -> tuple[Ticket, Message]:
    """Open a ticket with its first message, in an active department (the pages and the API
    offer customers those shown to them: ``departments_for_customers``; mail reaches any
    department by its address). Links (``server``, ``bot``, ``invoice``) must be of the
    requester's account. ``uploads``: files of the first message (``attachments_add``: a
    refused one refuses the ticket, and none is stored)."""
    subject = required_text("subject", subject, SUBJECT_LIMIT)
    body = required_text("body", body, BODY_LIMIT)
    if not department.active:
        raise ValidationFailed.field("department", "not_found", _("No such department."))
    priority = priority or department.default_priority
    if priority not in Priority.values:
        raise ValidationFailed.field("priority", "invalid", _("Not a priority."))
    found = _linked(requester.account, links or {})
    cc = _cc(requester.account, cc)
    now = timezone.now()
    ticket = Ticket(
        number=_ticket_number(),
        subject=subject,
        account=requester.account,
        requester=requester.user,
        requester_email=requester.email.lower(),
        requester_name=requester.name[:200],
        department=department,
        cc=[each for each in cc if each != requester.email.lower()],
        priority=priority,
        channel=channel,
        created_at=now,
        updated_at=now,
        last_customer_message_at=None if by_staff else now,
        **found,
    )
    sla_start(ticket, now)
    if settings.SUPPORT_AUTO_ASSIGN:
        ticket.assignee = _next_assignee(department)
    ticket.save(force_insert=True)
    author = actor.user if by_staff else requester.user
    message = Message.objects.create(
        ticket=ticket,
        kind=MessageKind.PUBLIC,
        author=author,
        author_email="" if by_staff else requester.email.lower(),
        from_staff=by_staff,
        body=body,
        channel=channel,
        email_message_id=email_message_id,
        created_at=now,
    )
    attachments_add(message=message, uploads=uploads or [])
    _record(ticket, "ticket.created", actor, by_staff=by_staff)
    message_mail_queue(message)
    return ticket, message


def _locked(ticket: Ticket) -> Ticket:
    return (
        Ticket.objects.select_for_update(of=("self",))
        .select_related("department__sla_policy", "account")
        .get(pk=ticket.pk)
    )


def _move(ticket: Ticket, status: str, now: datetime, *, verb: str) -> dict[str, Any] | None:
    """``ticket`` to ``status`` along the table, its clocks and dates following; the
    previous values for the event, or None when it already was there."""
    if ticket.status == status:
        return None
    transitions.check(ticket.status, status, verb=verb)
    before = ticket.status
    ticket.status = status
    if status == TicketStatus.RESOLVED:
        ticket.resolved_at = now
    elif status == TicketStatus.CLOSED:
        ticket.closed_at = now
    elif before == TicketStatus.RESOLVED:
        ticket.resolved_at = None
    sla_follow(ticket, before, now)
    return {"status": before}


@transaction.atomic
def ticket_reply(
    *,
    ticket: Ticket,
    body: str,
    actor: Actor,
    by_staff: bool,
    channel: str,
    internal: bool = False,
    author_email: str = "",
    email_message_id: str | None = None,
    set_status: str | None = None,
    uploads: list[Upload] | None = None,
) -> Message:
    """Add to the conversation. A public staff reply answers the ticket (``pending_customer``,
    the first response stamped); a customer's reply hands it back to staff (``pending_staff``;
    a resolved ticket reopens). An internal note (staff only) changes nothing else. A closed
    ticket takes no reply (409). ``set_status``: staff's status after the reply (a macro's).
    ``uploads``: files it carries (``attachments_add``); with files, the text may be empty."""
    ticket = _locked(ticket)
    if uploads and not (isinstance(body, str) and body.strip()):
        body = "Attached: " + ", ".join(safe_filename(each.filename) for each in uploads)
    body = required_text("body", body, BODY_LIMIT)
    if internal and not by_staff:
        raise PermissionDenied(_("Only staff write internal notes."))
    if ticket.status == TicketStatus.CLOSED:
        raise transitions.refusal(ticket.status, "reply")
    if email_message_id and Message.objects.filter(email_message_id=email_message_id).exists():
        raise Conflict(_("This e-mail is already on a ticket."))
    now = timezone.now()
    message = Message.objects.create(
        ticket=ticket,
        kind=MessageKind.INTERNAL if internal else MessageKind.PUBLIC,
        author=actor.user,
        author_email=author_email.lower(),
        from_staff=by_staff,
        body=body,
        channel=channel,
        email_message_id=email_message_id,
        created_at=now,
    )
    if internal:
        Ticket.objects.filter(pk=ticket.pk).update(updated_at=now)
        attachments_add(message=message, uploads=uploads or [])
        return message
    previous = None
    if by_staff:
        ticket.last_staff_message_at = now
        if ticket.first_response_at is None:
            ticket.first_response_at = now
        target = set_status or (
            TicketStatus.PENDING_CUSTOMER if ticket.status not in transitions.FINISHED else None
        )
        if target:
            previous = _move(ticket, target, now, verb="answer it")
    else:
        ticket.last_customer_message_at = now
        if ticket.status != TicketStatus.OPEN:
            previous = _move(ticket, TicketStatus.PENDING_STAFF, now, verb="reply")
    ticket.updated_at = now
    ticket.save()
    # Last: the files are written only once nothing else can refuse the reply.
    attachments_add(message=message, uploads=uploads or [])
    _record(ticket, "ticket.replied", actor, by_staff=by_staff)
    message_mail_queue(message)
    if previous:
        _record(ticket, "ticket.status_changed", actor, previous, by_staff=by_staff)
    return message


@transaction.atomic
def ticket_status_change(*, ticket: Ticket, status: str, actor: Actor, by_staff: bool) -> Ticket:
    """Move the ticket along the table. Customers only close, resolve or reopen their own
    (``ticket_close`` and ``ticket_reopen`` say it in words); staff move it anywhere allowed.
    A system entry notes the change in the conversation."""
    if status not in TicketStatus.values:
        raise ValidationFailed.field("status", "invalid", _("Not a ticket status."))
    ticket = _locked(ticket)
    if not by_staff and status not in (TicketStatus.CLOSED, TicketStatus.OPEN):
        raise PermissionDenied(_("Customers may only close or reopen a ticket."))
    if not by_staff and status == TicketStatus.OPEN and ticket.status != TicketStatus.RESOLVED:
        raise transitions.refusal(ticket.status, "reopen it")
    now = timezone.now()
    previous = _move(ticket, status, now, verb=f"move it to {status}")
    if previous is None:
        return ticket
    ticket.updated_at = now
    ticket.save()
    with translation.override(None):  # the conversation's record, in English like the others
        entry = f"Status: {TicketStatus(status).label}."
    _system_entry(ticket, entry, actor, now)
    _record(ticket, "ticket.status_changed", actor, previous, by_staff=by_staff)
    return ticket


def ticket_close(*, ticket: Ticket, actor: Actor, by_staff: bool = False) -> Ticket:
    return ticket_status_change(
        ticket=ticket, status=TicketStatus.CLOSED, actor=actor, by_staff=by_staff
    )


def ticket_reopen(*, ticket: Ticket, actor: Actor, by_staff: bool = False) -> Ticket:
    return ticket_status_change(
        ticket=ticket, status=TicketStatus.OPEN, actor=actor, by_staff=by_staff
    )


@transaction.atomic
def ticket_assign(*, ticket: Ticket, assignee: User | None, actor: Actor) -> Ticket:
    """Give the ticket to a staff member of its department (or to nobody)."""
    ticket = _locked(ticket)
    if assignee is not None and not (
        assignee.works_desk and ticket.department.members.filter(pk=assignee.pk).exists()
    ):
        raise ValidationFailed.field(
            "assignee",
            "not_in_department",
            _("Assign to a staff member of the ticket's department."),
        )
    if ticket.assignee_id == (assignee.pk if assignee else None):
        return ticket
    now = timezone.now()
    ticket.assignee = assignee
    ticket.updated_at = now
    ticket.save()
    who = (assignee.name or assignee.email) if assignee else "nobody"
    # Who works the ticket is the desk's business: staff see the entry, customers do not.
    _system_entry(ticket, f"Assigned to {who}.", actor, now, staff_only=True)
    if assignee is not None and assignee != actor.user:
        assignment_mail_queue(ticket)
    # That it was assigned, not to whom: the customer's view has no assignee.
    _record(ticket, "ticket.assigned", actor, by_staff=True)
    return ticket


@transaction.atomic
def ticket_update(*, ticket: Ticket, changes: dict[str, Any], actor: Actor) -> Ticket:
    """Staff change the department, priority, tags or links; the SLA due times follow."""
    ticket = _locked(ticket)
    before, before_for_staff = (
        ticket_representation(ticket),
        ticket_representation(ticket, staff=True),
    )
    unknown = sorted(set(changes) - {"department", "priority", "tags", "server", "bot", "invoice"})
    if unknown:
        raise ValidationFailed.field(unknown[0], "unknown_field", _("This field is not accepted."))
    if "department" in changes:
        department = Department.objects.filter(pk=changes["department"], active=True).first()
        if department is None:
            raise ValidationFailed.field("department", "not_found", _("No such department."))
        ticket.department = department
        if ticket.assignee_id and not department.members.filter(pk=ticket.assignee_id).exists():
            ticket.assignee = None
    if "priority" in changes:
        if changes["priority"] not in Priority.values:
            raise ValidationFailed.field("priority", "invalid", _("Not a priority."))
        ticket.priority = changes["priority"]
    if "tags" in changes:
        ticket.tags = _tags(changes["tags"])
    links: dict[str, Any] = {
        name: changes[name] for name in ("server", "bot", "invoice") if name in changes
    }
    for name, obj in _linked(ticket.account, links).items():
        if name in links:
            setattr(ticket, name, obj)
    now = timezone.now()
    if {"department", "priority"} & set(changes):
        sla_retarget(ticket, now)
    if before_for_staff == ticket_representation(ticket, staff=True):
        return ticket
    previous = changed_attributes(before, ticket_representation(ticket))
    ticket.updated_at = now
    ticket.save()
    if previous:  # a change customers do not see (tags) records no event of their account
        _record(ticket, "ticket.updated", actor, previous, by_staff=True)
    return ticket


def _tags(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise ValidationFailed.field("tags", "invalid", _("Must be a list of words."))
    tags = sorted({tag.strip().lower() for tag in value if tag.strip()})
    if len(tags) > TAGS_PER_TICKET or any(len(tag) > TAG_LIMIT for tag in tags):
        raise ValidationFailed.field(
            "tags",
            "invalid",
            _("At most %(tags)s tags of %(limit)s characters.")
            % {"tags": TAGS_PER_TICKET, "limit": TAG_LIMIT},
        )
    return tags


@transaction.atomic
def ticket_rate(*, ticket: Ticket, rating: Any, comment: str = "", actor: Actor) -> Ticket:
    """The customer's satisfaction (1 to 5) once the ticket is resolved or closed."""
    ticket = _locked(ticket)
    if ticket.status not in transitions.FINISHED:
        raise transitions.refusal(ticket.status, "rate it before it is resolved")
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        raise ValidationFailed.field("rating", "invalid", _("A rating is a whole number, 1 to 5."))
    if not isinstance(comment, str) or len(comment) > 1000:
        raise ValidationFailed.field("comment", "invalid", _("At most 1000 characters of text."))
    previous = {"rating": ticket.rating, "rating_comment": ticket.rating_comment}
    ticket.rating, ticket.rating_comment = rating, comment.strip()
    ticket.updated_at = timezone.now()
    ticket.save()
    _record(ticket, "ticket.updated", actor, previous, by_staff=False)
    return ticket


@transaction.atomic
def ticket_merge(*, source: Ticket, target: Ticket, actor: Actor) -> Ticket:
    """Staff fold a duplicate into ``target``: its messages move there, it is closed with
    ``merged_into`` set. Both must be of the same account (or the same guest address)."""
    if source.pk == target.pk:
        raise ValidationFailed.field("into", "invalid", _("A ticket cannot be merged into itself."))
    first, second = sorted([source.pk, target.pk])
    locked = {each.pk: each for each in (_locked(Ticket(pk=first)), _locked(Ticket(pk=second)))}
    source, target = locked[source.pk], locked[target.pk]
    same_owner = (
        source.account_id == target.account_id
        if source.account_id or target.account_id
        else source.requester_email == target.requester_email
    )
    if not same_owner:
        raise ValidationFailed.field(
            "into", "other_requester", _("Only tickets of the same customer are merged.")
        )
    if target.status == TicketStatus.CLOSED:
        raise transitions.refusal(target.status, "merge into it")
    now = timezone.now()
    Message.objects.filter(ticket=source).update(ticket=target)
    previous: dict[str, Any] = {"status": source.status, "merged_into": None}
    source.merged_into = target
    if source.status != TicketStatus.CLOSED:
        source.status = TicketStatus.CLOSED
        source.closed_at = now
        sla_follow(source, previous["status"], now)
    source.updated_at = now
    source.save()
    _system_entry(target, f"Ticket #{source.number} was merged into this one.", actor, now)
    _record(source, "ticket.status_changed", actor, previous, by_staff=True)
    return target


def tickets_autoclose(*, now: datetime | None = None) -> int:
    """Close tickets resolved ``SUPPORT_AUTOCLOSE_DAYS`` ago without a reply since."""
    now = now or timezone.now()
    before = now - timedelta(days=settings.SUPPORT_AUTOCLOSE_DAYS)
    closed = 0
    for ticket in Ticket.objects.filter(status=TicketStatus.RESOLVED, resolved_at__lte=before):
        try:
            ticket_status_change(
                ticket=ticket, status=TicketStatus.CLOSED, actor=SYSTEM, by_staff=True
            )
        except InvalidState:
            continue  # a reply reopened it meanwhile
        closed += 1
    return closed

"""The desk's mail out: public replies to the ticket's customers, notices to staff.

- **Customers.** Every public message on a ticket is mailed to its requester and the teammates
  CC'd on it, except to whoever wrote it. The mail's Reply-To is the ticket's signed address
  (``reply_address``), so an answer threads back whatever the mail client does with headers;
  its Message-ID is ``<message id>@<the reply address's domain>`` and its ``In-Reply-To`` /
  ``References`` name the ticket's first message, so clients thread the conversation too and
  ``support.services.mail`` recognises a reply to it. Internal notes and system entries are
  mailed to nobody.
- **Staff.** A new ticket and a customer's reply notify the ticket's assignee, or the
  department's staff while nobody is assigned; an assignment notifies the new assignee. They
  are marked ``Auto-Submitted: auto-generated`` (a notice, not a person's answer) and also carry
  the signed Reply-To; staff may answer from their mail where the desk can authenticate it
  (``SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS``, see ``support.services.mail``), and the notice only
  says so then.
- **Who is named.** Customers' mail names staff as ``author_shown`` does on every other page
  (the team's name by default), never a staff member's address.
- **Language.** Each recipient reads the mail in the language of their Profile
  (``hosting.i18n.in_language_of``); an address no user has (a customer who wrote in by mail)
  reads it in English. Recipients of different languages get one mail per language.

Nothing is sent in the request: the service that wrote the message queues one task in its own
transaction (the task table is in the same database, so a rollback queues nothing), and the
worker sends it through Django's mail backend (console, SMTP or django-anymail). What the mail
says is read when it is sent: a message deleted by a merge meanwhile is skipped.
"""

from email.utils import formataddr

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import Q
from django.tasks import task
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.crypto import salted_hmac

from accounts.models import User, desk_staff_q
from hosting.i18n import in_language_of, language_of
from support.models import Message, MessageKind, Ticket
from support.representations import author_shown

SALT = "support.reply-token"


def reply_token(ticket: Ticket) -> str:
    """``<number>-<20 hex>``: the ticket, and proof the desk minted it for that ticket."""
    digest = salted_hmac(SALT, ticket.id, algorithm="sha256").hexdigest()[:20]
    return f"{ticket.number}-{digest}"


def reply_address(ticket: Ticket) -> str:
    """The Reply-To of the desk's mail about ``ticket``: ``support+<token>@desk.example``."""
    local, _, domain = settings.SUPPORT_REPLY_ADDRESS.partition("@")
    return f"{local}+{reply_token(ticket)}@{domain}"


def _id_suffix() -> str:
    """Outgoing Message-IDs end in the reply address's domain: ``<msg_…@desk.example>``."""
    return "@" + settings.SUPPORT_REPLY_ADDRESS.partition("@")[2]


def message_id_header(message: Message) -> str:
    """The Message-ID the desk gives its mail about ``message``."""
    return f"<{message.id}{_id_suffix()}>"


def message_of_header(value: str) -> str | None:
    """The id of the desk's message named by a Message-ID (``<msg_…@domain>``), if it is one."""
    value, suffix = value.strip().strip("<>"), _id_suffix()
    if not value.endswith(suffix):
        return None
    return value.removesuffix(suffix) or None


def _thread_root(ticket: Ticket) -> str | None:
    """The Message-ID that starts the ticket's thread in the customers' mailboxes."""
    first = ticket.messages.filter(kind=MessageKind.PUBLIC).order_by("created_at", "id").first()
    if first is None:
        return None
    return f"<{first.email_message_id}>" if first.email_message_id else message_id_header(first)


def customer_recipients(ticket: Ticket, *, author_email: str) -> list[str]:
    """Who among the ticket's customers receives a public message: the requester and the CC'd
    teammates, never its author."""
    everyone = [ticket.requester_email, *ticket.cc]
    author = author_email.lower()
    return list(dict.fromkeys(each for each in everyone if each and each.lower() != author))


def staff_recipients(ticket: Ticket) -> list[str]:
    """Who among staff hears of the ticket: its assignee, else its department's staff."""
    if ticket.assignee_id is not None:
        users = User.objects.filter(pk=ticket.assignee_id, is_active=True)
    else:
        users = ticket.department.members.filter(desk_staff_q())
    return list(users.order_by("id").values_list("email", flat=True))


def _subject(ticket: Ticket) -> str:
    return f"[#{ticket.number}] {ticket.subject}"


def _by_language(addresses: list[str]) -> list[tuple[User | None, list[str]]]:
    """``addresses`` grouped by the language their users read, each group with one of its users
    (``in_language_of`` takes a user) or None (English: no user has the address), in order."""
    query = Q()
    for address in addresses:
        query |= Q(email__iexact=address)
    users = {user.email.lower(): user for user in User.objects.filter(query)} if addresses else {}
    groups: dict[str, tuple[User | None, list[str]]] = {}
    for address in addresses:
        user = users.get(address.lower())
        language = language_of(user) or settings.LANGUAGE_CODE
        groups.setdefault(language, (user if language_of(user) else None, []))[1].append(address)
    return list(groups.values())


def _send(
    ticket: Ticket, *, to: list[str], template: str, context: dict, headers: dict[str, str]
) -> int:
    """Mail ``to``, each in their own language: returns how many mails were sent."""
    sender = formataddr((ticket.department.name, settings.SUPPORT_REPLY_ADDRESS))
    sent = 0
    for reader, addresses in _by_language(to):
        with in_language_of(reader):
            body = render_to_string(
                f"support/email/{template}.txt",
                {"ticket": ticket, "ticket_url": _page_url("support_ticket", ticket), **context},
            )
            subject = _subject(ticket)
        EmailMessage(
            subject=subject,
            body=body,
            from_email=sender,
            to=addresses,
            reply_to=[reply_address(ticket)],
            headers=headers,
        ).send()
        sent += 1
    return sent


@task
def ticket_message_mail_send(message_id: str) -> int:
    """The worker's side of a new message: mail it to the customers (public messages) and
    notify staff (a customer's message). Returns how many mails were sent."""
    message = (
        Message.objects.select_related("ticket__department", "ticket__account", "author")
        .filter(pk=message_id)
        .first()
    )
    if message is None or message.kind != MessageKind.PUBLIC:
        return 0
    ticket = message.ticket
    author_email = message.author.email if message.author else message.author_email
    sent = 0
    own_id = (
        f"<{message.email_message_id}>" if message.email_message_id else message_id_header(message)
    )
    root = _thread_root(ticket)
    threading = {"In-Reply-To": root, "References": root} if root and root != own_id else {}
    to = customer_recipients(ticket, author_email=author_email)
    if to:
        sent += _send(
            ticket,
            to=to,
            template="reply",
            context={"message": message, "author": author_shown(message)},
            headers={"Message-ID": message_id_header(message), **threading},
        )
    if not message.from_staff:
        staff = [each for each in staff_recipients(ticket) if each.lower() != author_email.lower()]
        if staff:
            opened = root == own_id or root is None
            sent += _send(
                ticket,
                to=staff,
                template="staff_new" if opened else "staff_reply",
                context={
                    "message": message,
                    "desk_url": _page_url("desk_ticket", ticket),
                    "staff_mail_replies": bool(settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS),
                },
                headers={"Auto-Submitted": "auto-generated", **threading},
            )
    return sent


@task
def ticket_assigned_mail_send(ticket_id: str, assignee_id: str) -> int:
    """The worker's side of an assignment: tell the assignee, if the ticket is still theirs."""
    ticket = Ticket.objects.select_related("department", "assignee").filter(pk=ticket_id).first()
    assignee = ticket.assignee if ticket is not None else None
    if ticket is None or assignee is None or ticket.assignee_id != assignee_id:
        return 0
    if not assignee.is_active:
        return 0
    return _send(
        ticket,
        to=[assignee.email],
        template="staff_assigned",
        context={"desk_url": _page_url("desk_ticket", ticket)},
        headers={"Auto-Submitted": "auto-generated"},
    )


def _page_url(name: str, ticket: Ticket) -> str:
    return settings.SITE_URL.rstrip("/") + reverse(name, args=[ticket.id])


def message_mail_queue(message: Message) -> None:
    """Queue the mail about a new public message, in the caller's transaction."""
    if message.kind == MessageKind.PUBLIC:
        ticket_message_mail_send.enqueue(message.id)


def assignment_mail_queue(ticket: Ticket) -> None:
    """Queue the notice of ``ticket``'s new assignee, in the caller's transaction."""
    if ticket.assignee_id is not None:
        ticket_assigned_mail_send.enqueue(ticket.id, ticket.assignee_id)

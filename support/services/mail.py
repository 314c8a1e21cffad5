"""Mail into the desk: one RFC 822 message becomes a reply on its ticket, a new ticket, or
nothing (with the reason).

- **Threading.** A reply finds its ticket by the signed token in the address it was sent to
  (``support+<token>@…``, the Reply-To of every mail the desk sends: ``reply_address``), else
  by ``In-Reply-To`` / ``References`` naming a message of the ticket. Only what the sender
  wrote is kept (quoted history stripped by ``support.mail_in``).
- **Who wrote it.** A From header is only a claim. Mail acts as a user (a customer of an
  account, or staff) only when it is authenticated: a trusted mail server
  (``SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS``) says DMARC passed for the From domain
  (``support.mail_in.sender_authenticated``). Otherwise it is a message from that address
  and nothing more: never staff's, never a user's.
- **Replies.** Staff answer by mail only when authenticated (the reply is then staff's and is
  mailed to the customers). Anyone else may reply when their address is the ticket's requester
  or copied on it (as the desk's mail reached them there); a member of the account whose
  address is not on the ticket only when authenticated. Unauthenticated mail claiming a staff
  address is treated as the stranger it then is: refused, unless that address is a customer of
  the ticket.
- **New tickets.** A message to a department's address opens a ticket there: in the sender's
  account, as that user, when the mail is authenticated and a user has the address; else a
  guest ticket known by the address alone (which staff may link to an account).
- **Refused** (nothing written): a message over ``SUPPORT_MAIL_MAX_BYTES``, auto-replies and
  bounces, a sender past
  ``SUPPORT_MAIL_PER_SENDER_PER_HOUR``, a message already taken (same Message-ID), a reply to a
  ticket from someone who is not part of it, mail for no department.
- A reply to a closed ticket opens a follow-up ticket in the same department.

Everything of one message (the ticket, the message, its attachments) is written in one
transaction: a message that fails halfway leaves nothing.
"""

import hmac
import logging
from dataclasses import dataclass
from datetime import timedelta

from anymail.signals import AnymailInboundEvent
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.models import User
from hosting.errors import ValidationFailed
from support.mail_in import InboundMail, MalformedMessage, parse_message, reply_token_from
from support.models import Channel, Department, Message, Ticket, TicketStatus
from support.services.attachments import ALLOWED_TYPES, Upload, check_upload
from support.services.notifications import message_of_header, reply_token
from support.services.tickets import (
    BODY_LIMIT,
    Requester,
    teammates,
    ticket_open,
    ticket_reply,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MailOutcome:
    """What became of a message: ``replied``, ``opened``, or ``refused`` with ``reason``."""

    result: str
    ticket: Ticket | None = None
    message: Message | None = None
    reason: str = ""


def _ticket_of_token(token: str) -> Ticket | None:
    number = token.partition("-")[0]
    if not number.isdigit():
        return None
    ticket = Ticket.objects.filter(number=int(number)).first()
    if ticket is None or not hmac.compare_digest(reply_token(ticket), token):
        return None
    return ticket


def _thread(mail: InboundMail) -> Ticket | None:
    local_part = settings.SUPPORT_REPLY_ADDRESS.partition("@")[0]
    token = reply_token_from((*mail.to, *mail.cc), local_part=local_part)
    if token:
        ticket = _ticket_of_token(token)
        if ticket is not None:
            return ticket
    named = [each for each in (mail.in_reply_to, *mail.references) if each]
    if named:
        # A message that came in by mail, or one the desk sent (its own Message-IDs).
        ours = [found for found in map(message_of_header, named) if found]
        known = Message.objects.filter(
            Q(email_message_id__in=named) | Q(pk__in=ours)
        ).select_related("ticket")
        found = known.order_by("-created_at").first()
        if found is not None:
            return found.ticket
    return None


def _user_of(mail: InboundMail) -> User | None:
    """The user the mail comes from: only when it is authenticated, else nobody (the From
    header alone is anyone's to write)."""
    if not mail.sender_authenticated:
        return None
    return User.objects.filter(email__iexact=mail.sender, is_active=True).first()


def _participant(ticket: Ticket, mail: InboundMail) -> tuple[bool, User | None, bool]:
    """Whether the mail's sender may reply on ``ticket``: (may, the user, as staff)."""
    user, sender = _user_of(mail), mail.sender
    if (
        user is not None
        and user.is_staff
        and (user.is_superuser or ticket.department.members.filter(pk=user.pk).exists())
    ):
        return True, user, True
    if sender == ticket.requester_email or sender in ticket.cc:
        return True, user, False
    if (
        user is not None
        and ticket.account_id
        and (user.memberships.filter(account_id=ticket.account_id).exists())
    ):
        return True, user, False
    return False, user, False


def _uploads(mail: InboundMail) -> tuple[list[Upload], list[tuple[str, str]]]:
    """The files to keep, and those refused with the reason: a message is never lost for a
    bad attachment; the refusal is noted on it instead."""
    kept: list[Upload] = []
    refused = list(mail.refused_attachments)
    for each in mail.attachments:
        upload = Upload(filename=each.filename, content=each.content)
        if len(kept) == settings.SUPPORT_ATTACHMENTS_PER_MESSAGE:
            refused.append((each.filename, "too many files in one message"))
            continue
        try:
            check_upload(upload)
        except ValidationFailed as refusal:
            assert refusal.details is not None  # a field's refusal names the field
            refused.append((each.filename, refusal.details["fields"][0]["message"]))
        else:
            kept.append(upload)
    return kept, refused


def _fitted(text: str, refused: list[tuple[str, str]]) -> str:
    """The message's text with the note of refused files, cut to what a message holds
    (``BODY_LIMIT``) with a note saying so: a long mail is kept, not refused."""
    note = _refusal_note(refused)
    if len(text) + len(note) <= BODY_LIMIT:
        return text + note
    cut = f"\n\n[Shortened: the mail's text was {len(text)} characters long]"
    return text[: BODY_LIMIT - len(cut) - len(note)] + cut + note


def _refusal_note(refused: list[tuple[str, str]]) -> str:
    if not refused:
        return ""
    lines = [f"- {name}: {reason}" for name, reason in refused]
    return "\n\n[Attachments not kept]\n" + "\n".join(lines)


def anymail_inbound_received(
    sender: object, event: AnymailInboundEvent, esp_name: str, **kwargs: object
) -> None:
    """The second door: django-anymail's inbound webhook hands over one message (from the
    provider configured), which is taken exactly as the pipe command takes one. A post that is
    no message is dropped with the reason (answered 200, so the provider does not retry it)."""
    try:
        outcome = mail_receive(event.message.as_bytes())
    except MalformedMessage as error:
        logger.info("Inbound mail through %s: dropped, not a message (%s)", esp_name, error)
        return
    logger.info(
        "Inbound mail through %s: %s %s",
        esp_name,
        outcome.result,
        outcome.ticket.number if outcome.ticket else outcome.reason,
    )


def mail_receive(raw: bytes) -> MailOutcome:
    """Take one message (bytes as received); see the module's docstring."""
    if len(raw) > settings.SUPPORT_MAIL_MAX_BYTES:
        return MailOutcome("refused", reason="the message is too large")
    mail = parse_message(
        raw,
        max_attachment_bytes=settings.SUPPORT_ATTACHMENT_MAX_BYTES,
        allowed_types=ALLOWED_TYPES,
        trusted_authserv_ids=settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS,
    )
    if mail.is_auto_generated:
        return MailOutcome("refused", reason=f"automatic mail ({mail.auto_reason})")
    if Message.objects.filter(email_message_id=mail.message_id).exists():
        return MailOutcome("refused", reason="already received")
    hour_ago = timezone.now() - timedelta(hours=1)
    recent = Message.objects.filter(
        author_email=mail.sender, channel=Channel.EMAIL, created_at__gte=hour_ago
    ).count()
    if recent >= settings.SUPPORT_MAIL_PER_SENDER_PER_HOUR:
        return MailOutcome("refused", reason="too many messages from this sender this hour")
    try:
        with transaction.atomic():
            return _take(mail)
    except IntegrityError:
        # The same message, taken by a delivery running at the same time.
        return MailOutcome("refused", reason="already received")


def _take(mail: InboundMail) -> MailOutcome:
    uploads, refused = _uploads(mail)
    body = _fitted((mail.reply_text or mail.text).strip() or "(no text)", refused)
    ticket = _thread(mail)
    if ticket is not None:
        may, user, staff = _participant(ticket, mail)
        if not may:
            return MailOutcome("refused", ticket, reason="the sender is not part of this ticket")
        if ticket.status != TicketStatus.CLOSED:
            message = ticket_reply(
                ticket=ticket,
                body=body,
                actor=Actor(user=user),
                by_staff=staff,
                channel=Channel.EMAIL,
                author_email=mail.sender,
                email_message_id=mail.message_id,
                uploads=uploads,
            )
            return MailOutcome("replied", ticket, message)
        department = ticket.department
    else:
        recipients = {address.lower() for address in (*mail.to, *mail.cc)}
        addressed = Department.objects.filter(
            active=True, email__in=[each for each in recipients if each]
        ).first()
        if addressed is None:
            return MailOutcome("refused", reason="no department takes mail at this address")
        department = addressed
    user = _user_of(mail)
    membership = user.memberships.select_related("account").first() if user else None
    requester = Requester(
        email=mail.sender,
        name=mail.sender_name,
        user=user,
        account=membership.account if membership else None,
    )
    opened, message = ticket_open(
        requester=requester,
        subject=(mail.subject or "(no subject)")[:200],
        body=_fitted(mail.text.strip() or "(no text)", refused),
        department=department,
        channel=Channel.EMAIL,
        actor=Actor(user=user) if user else SYSTEM,
        by_staff=False,
        email_message_id=mail.message_id,
        # Teammates the sender copied, as the desk copies them on its replies; anyone else
        # copied on the mail is left out (the desk mails only people of the account).
        cc=teammates(requester.account, [*mail.to, *mail.cc]),
        uploads=uploads,
    )
    return MailOutcome("opened", opened, message)

"""The public representations of the help desk: what the API shows and events carry.

A ticket's representation has two audiences. Customers see the conversation without internal
notes and without staff-only fields (assignee, tags, SLA breach flags); staff see everything
(``staff=True``). Events carry the customer's view, so a webhook of the customer's account can
never hold an internal note.

What customers see of staff is one rule, ``staff_shown``: the team's name
(``SUPPORT_TEAM_NAME``), or with ``SUPPORT_STAFF_SHOWN_AS=first_name`` a staff member's first
name beside it; never their address, their user id, or who the ticket is assigned to.
"""

from typing import Any

from django.conf import settings

from accounts.models import User
from hosting.representations import timestamp
from support.models import Attachment, Department, Message, MessageKind, SlaPolicy, Ticket


def department_representation(department: Department) -> dict[str, Any]:
    """A department customers may pick (its address for mail too)."""
    return {
        "id": department.id,
        "name": department.name,
        "email": department.email or None,
        "default_priority": department.default_priority,
    }


def sla_policy_representation(policy: SlaPolicy) -> dict[str, Any]:
    return {
        "id": policy.id,
        "name": policy.name,
        "targets": policy.targets,
        "calendar": policy.calendar or None,
        "created_at": timestamp(policy.created_at),
    }


def ticket_representation(ticket: Ticket, *, staff: bool = False) -> dict[str, Any]:
    """A ticket; ``staff`` adds what only the hosting company's staff see."""
    shown: dict[str, Any] = {
        "id": ticket.id,
        "number": ticket.number,
        "subject": ticket.subject,
        "account": ticket.account_id,
        "requester": {
            "user": ticket.requester_id,
            "email": ticket.requester_email,
            "name": ticket.requester_name,
        },
        "cc": list(ticket.cc),
        "department": ticket.department_id,
        "priority": ticket.priority,
        "status": ticket.status,
        "channel": ticket.channel,
        "server": ticket.server_id,
        "bot": ticket.bot_id,
        "invoice": ticket.invoice_id,
        "merged_into": ticket.merged_into_id,
        "rating": ticket.rating,
        "rating_comment": ticket.rating_comment,
        "first_response_at": timestamp(ticket.first_response_at),
        "resolved_at": timestamp(ticket.resolved_at),
        "closed_at": timestamp(ticket.closed_at),
        "created_at": timestamp(ticket.created_at),
        "updated_at": timestamp(ticket.updated_at),
    }
    if staff:
        shown |= {
            "assignee": ticket.assignee_id,
            "tags": list(ticket.tags),
            "sla": {
                "first_response_due_at": timestamp(ticket.first_response_due_at),
                "resolution_due_at": timestamp(ticket.resolution_due_at),
                "first_response_breached": ticket.first_response_breached,
                "resolution_breached": ticket.resolution_breached,
                "paused": ticket.sla_running_since is None,
            },
        }
    return shown


def attachment_representation(attachment: Attachment) -> dict[str, Any]:
    """A file of a message: its name, type and size; the content only through its download
    endpoint, which checks who asks."""
    return {
        "id": attachment.id,
        "filename": attachment.filename,
        "content_type": attachment.content_type,
        "size": attachment.size,
        "created_at": timestamp(attachment.created_at),
    }


def staff_shown(user: User | None) -> str:
    """A staff member as customers see them (``SUPPORT_STAFF_SHOWN_AS``)."""
    team = settings.SUPPORT_TEAM_NAME
    first_name = (user.name.split() or [""])[0] if user is not None else ""
    if settings.SUPPORT_STAFF_SHOWN_AS == "first_name" and first_name:
        return f"{first_name} ({team})"
    return team


def staff_member_name(user: User) -> str:
    """A staff member as the desk names them to colleagues (menus, messages): their name, else
    their address. Customers never see it (``staff_shown``)."""
    return user.name or user.email


def author_shown(message: Message) -> str:
    """Who wrote an entry, as customers see it (dashboard, API, mail): staff by
    ``staff_shown``, people of the account by their name or address."""
    if message.from_staff:
        return staff_shown(message.author)
    if message.author is not None:
        return message.author.name or message.author.email
    return message.author_email or "Someone"


def message_representation(message: Message, *, staff: bool = False) -> dict[str, Any]:
    """One entry of the conversation. Callers never hand an internal note or a staff-only
    entry to a customer's view (``support.selectors.messages_visible``); ``kind`` says what
    it is for staff. Customers see a staff author by name only (``author_shown``)."""
    return {
        "id": message.id,
        "ticket": message.ticket_id,
        "kind": message.kind,
        "author": {
            "user": message.author_id if staff or not message.from_staff else None,
            "email": (message.author_email or None) if staff or not message.from_staff else None,
            "staff": message.from_staff,
            "name": author_shown(message),
        },
        "body": message.body,
        "channel": message.channel,
        "attachments": [attachment_representation(each) for each in message.attachments.all()],
        "created_at": timestamp(message.created_at),
    }


PUBLIC_KINDS = frozenset({MessageKind.PUBLIC, MessageKind.SYSTEM})

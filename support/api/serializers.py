"""Bodies and answers of the tickets API (the customer's view: no internal note, no staff
field)."""

from functools import partial

from rest_framework import serializers

from hosting.api.schema import response_examples
from hosting.api.serializers import RepresentedBy, StrictInputSerializer
from support.models import Channel, Message, MessageKind, Priority, Ticket, TicketStatus
from support.representations import (
    department_representation,
    message_representation,
    ticket_representation,
)
from support.services.tickets import BODY_LIMIT, CC_LIMIT, SUBJECT_LIMIT


class RequesterSerializer(serializers.Serializer):
    user = serializers.CharField(
        read_only=True, allow_null=True, help_text="The user (`usr_…`); null for a guest."
    )
    email = serializers.EmailField(read_only=True)
    name = serializers.CharField(read_only=True)


class TicketSerializer(RepresentedBy, serializers.ModelSerializer):
    """A support ticket as its account sees it."""

    represent = staticmethod(ticket_representation)

    number = serializers.IntegerField(read_only=True, help_text="Short and unique: `#1042`.")
    account = serializers.CharField(read_only=True, allow_null=True)
    requester = RequesterSerializer(read_only=True)
    cc = serializers.ListField(
        child=serializers.EmailField(), read_only=True, help_text="Also sent every reply."
    )
    department = serializers.CharField(read_only=True, help_text="`dept_…`")
    priority = serializers.ChoiceField(choices=Priority.choices, read_only=True)
    status = serializers.ChoiceField(
        choices=TicketStatus.choices,
        read_only=True,
        help_text="`open` → `pending_customer` (answered) ↔ `pending_staff` (you replied) → "
        "`on_hold` → `resolved` → `closed`.",
    )
    channel = serializers.ChoiceField(choices=Channel.choices, read_only=True)
    server = serializers.CharField(read_only=True, allow_null=True)
    bot = serializers.CharField(read_only=True, allow_null=True)
    invoice = serializers.CharField(read_only=True, allow_null=True)
    merged_into = serializers.CharField(
        read_only=True, allow_null=True, help_text="The ticket this duplicate was merged into."
    )
    rating = serializers.IntegerField(read_only=True, allow_null=True, help_text="1 to 5.")
    first_response_at = serializers.DateTimeField(read_only=True, allow_null=True)
    resolved_at = serializers.DateTimeField(read_only=True, allow_null=True)
    closed_at = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta:
        model = Ticket
        fields = [
            "id",
            "number",
            "subject",
            "account",
            "requester",
            "cc",
            "department",
            "priority",
            "status",
            "channel",
            "server",
            "bot",
            "invoice",
            "merged_into",
            "rating",
            "rating_comment",
            "first_response_at",
            "resolved_at",
            "closed_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class SlaSerializer(serializers.Serializer):
    first_response_due_at = serializers.DateTimeField(read_only=True, allow_null=True)
    resolution_due_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="Moves while the clock is paused."
    )
    first_response_breached = serializers.BooleanField(read_only=True)
    resolution_breached = serializers.BooleanField(read_only=True)
    paused = serializers.BooleanField(
        read_only=True, help_text="Waiting on the customer, on hold, resolved or closed."
    )


class StaffTicketSerializer(TicketSerializer):
    """A ticket as the hosting company's staff see it: with its assignee, tags and SLA."""

    represent = staticmethod(partial(ticket_representation, staff=True))

    assignee = serializers.CharField(read_only=True, allow_null=True, help_text="`usr_…`")
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)
    sla = SlaSerializer(read_only=True)

    class Meta(TicketSerializer.Meta):
        fields = [*TicketSerializer.Meta.fields, "assignee", "tags", "sla"]
        read_only_fields = fields


class AttachmentSerializer(serializers.Serializer):
    id = serializers.CharField(read_only=True, help_text="`att_…`")
    filename = serializers.CharField(read_only=True)
    content_type = serializers.CharField(read_only=True)
    size = serializers.IntegerField(read_only=True, help_text="Bytes.")
    created_at = serializers.DateTimeField(read_only=True)


class AuthorSerializer(serializers.Serializer):
    user = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="null for staff (and for mail not "
        "authenticated as a user) in the customers' API.",
    )
    email = serializers.EmailField(
        read_only=True, allow_null=True, help_text="null for staff in the customers' API."
    )
    staff = serializers.BooleanField(read_only=True, help_text="Written by the hosting company.")
    name = serializers.CharField(
        read_only=True,
        help_text="Who wrote it, as customers see it: staff by the team's name "
        "(`SUPPORT_TEAM_NAME`; with `SUPPORT_STAFF_SHOWN_AS=first_name` also a first name).",
    )


class MessageSerializer(RepresentedBy, serializers.ModelSerializer):
    """One entry of the conversation: a reply, or a system entry (a status change)."""

    represent = staticmethod(message_representation)

    ticket = serializers.CharField(read_only=True)
    kind = serializers.ChoiceField(
        choices=[c for c in MessageKind.choices if c[0] != MessageKind.INTERNAL], read_only=True
    )
    author = AuthorSerializer(read_only=True)
    channel = serializers.ChoiceField(choices=Channel.choices, read_only=True)
    attachments = AttachmentSerializer(many=True, read_only=True)

    class Meta:
        model = Message
        fields = ["id", "ticket", "kind", "author", "body", "channel", "attachments", "created_at"]
        read_only_fields = fields


class StaffMessageSerializer(MessageSerializer):
    """One entry of the conversation, internal notes included, staff authors by their id."""

    represent = staticmethod(partial(message_representation, staff=True))

    kind = serializers.ChoiceField(choices=MessageKind.choices, read_only=True)


class DepartmentSerializer(RepresentedBy, serializers.Serializer):
    represent = staticmethod(department_representation)

    id = serializers.CharField(read_only=True, help_text="`dept_…`")
    name = serializers.CharField(read_only=True)
    email = serializers.EmailField(read_only=True, allow_null=True)
    default_priority = serializers.ChoiceField(choices=Priority.choices, read_only=True)


class TicketCreateSerializer(StrictInputSerializer):
    subject = serializers.CharField(max_length=SUBJECT_LIMIT)
    body = serializers.CharField(max_length=BODY_LIMIT, help_text="The first message.")
    department = serializers.CharField(help_text="A department (`dept_…`) of GET /v1/departments.")
    priority = serializers.ChoiceField(
        choices=Priority.choices, required=False, help_text="Default: the department's."
    )
    server = serializers.CharField(required=False, help_text="A server of the account it is about.")
    bot = serializers.CharField(required=False, help_text="A bot of the account it is about.")
    invoice = serializers.CharField(required=False, help_text="An invoice it is about.")
    cc = serializers.ListField(
        child=serializers.EmailField(),
        required=False,
        max_length=CC_LIMIT,
        help_text="Teammates to copy: e-mail addresses of members of the account (400 "
        "`validation_failed`, code `not_a_member`, for anyone else). They receive every public "
        "reply by mail.",
    )


class TicketReplySerializer(StrictInputSerializer):
    body = serializers.CharField(max_length=BODY_LIMIT)


class TicketAttachmentsSerializer(StrictInputSerializer):
    """``multipart/form-data``: one or more ``file`` parts and an optional ``body``."""

    file = serializers.ListField(
        child=serializers.FileField(),
        help_text="The files (repeat the part for several): images, PDF, text, logs, JSON, "
        "CSV or archives, each at most `SUPPORT_ATTACHMENT_MAX_BYTES`.",
    )
    body = serializers.CharField(
        max_length=BODY_LIMIT, required=False, help_text="Text of the reply that carries them."
    )


class StaffReplySerializer(StrictInputSerializer):
    body = serializers.CharField(max_length=BODY_LIMIT)
    internal = serializers.BooleanField(
        required=False, help_text="An internal note: never shown to the customer."
    )
    set_status = serializers.ChoiceField(
        choices=TicketStatus.choices,
        required=False,
        help_text="The status after a public reply (default: `pending_customer`).",
    )


class StaffTicketUpdateSerializer(StrictInputSerializer):
    department = serializers.CharField(required=False, help_text="`dept_…`")
    priority = serializers.ChoiceField(choices=Priority.choices, required=False)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=40), required=False, max_length=20
    )
    server = serializers.CharField(required=False, allow_null=True)
    bot = serializers.CharField(required=False, allow_null=True)
    invoice = serializers.CharField(required=False, allow_null=True)


class TicketAssignSerializer(StrictInputSerializer):
    assignee = serializers.CharField(
        allow_null=True, help_text="A staff member of the ticket's department, or null."
    )


class TicketStatusSerializer(StrictInputSerializer):
    status = serializers.ChoiceField(choices=TicketStatus.choices)


class TicketMergeSerializer(StrictInputSerializer):
    into = serializers.CharField(help_text="The ticket (`tkt_…`) that keeps the conversation.")


class TicketRateSerializer(StrictInputSerializer):
    rating = serializers.IntegerField(min_value=1, max_value=5)
    comment = serializers.CharField(max_length=1000, required=False, allow_blank=True)


TICKET_EXAMPLE = {
    "id": "tkt_5Rb9Mv3HdPz1Lk2Tq4Wn7Xc8",
    "number": 1042,
    "subject": "Server stops at 'Loading world'",
    "account": "acct_7Kq2Xw9Lm4Tz8Rb1Nc5Vd3Hy",
    "requester": {
        "user": "usr_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs",
        "email": "owner@blockworks.example",
        "name": "Mia",
    },
    "cc": [],
    "department": "dept_2Lm9Xw4Zr1Nc8Vb3Kd5Ts6Hq",
    "priority": "high",
    "status": "pending_customer",
    "channel": "api",
    "server": "srv_7Hq2Lm9Xw4Zr1Nc8Vb3Kd5Ts6",
    "bot": None,
    "invoice": None,
    "merged_into": None,
    "rating": None,
    "rating_comment": "",
    "first_response_at": "2026-11-24T09:12:40Z",
    "resolved_at": None,
    "closed_at": None,
    "created_at": "2026-11-24T09:01:05Z",
    "updated_at": "2026-11-24T09:12:40Z",
}
MESSAGE_EXAMPLE = {
    "id": "msg_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc",
    "ticket": TICKET_EXAMPLE["id"],
    "kind": "public",
    "author": {"user": None, "email": None, "staff": True, "name": "Support team"},
    "body": "The world file is damaged; I restored last night's backup. Try starting it now.",
    "channel": "web",
    "attachments": [
        {
            "id": "att_1Nc8Vb4Gs3Hx7Lm2Qw9Zr5Tk",
            "filename": "latest.log",
            "content_type": "text/plain",
            "size": 48213,
            "created_at": "2026-11-24T09:12:40Z",
        }
    ],
    "created_at": "2026-11-24T09:12:40Z",
}
STAFF_TICKET_EXAMPLE = {
    **TICKET_EXAMPLE,
    "assignee": "usr_8Mv3HdPz1Lk2Tq4Wn7Xc5Rb9",
    "tags": ["minecraft", "world-corruption"],
    "sla": {
        "first_response_due_at": "2026-11-24T11:01:05Z",
        "resolution_due_at": "2026-11-25T09:01:05Z",
        "first_response_breached": False,
        "resolution_breached": False,
        "paused": True,
    },
}
STAFF_MESSAGE_EXAMPLE = {
    **MESSAGE_EXAMPLE,
    "author": {**MESSAGE_EXAMPLE["author"], "user": "usr_8Mv3HdPz1Lk2Tq4Wn7Xc5Rb9"},
}
NOTE_EXAMPLE = {
    **STAFF_MESSAGE_EXAMPLE,
    "kind": "internal",
    "body": "Second world corruption this month: check the node's disk.",
    "attachments": [],
}
DEPARTMENT_EXAMPLE = {
    "id": TICKET_EXAMPLE["department"],
    "name": "Technical",
    "email": "support@desk.example",
    "default_priority": "normal",
}


TICKET_EXAMPLES = response_examples("Answered by staff", "ticket", TICKET_EXAMPLE)
TICKET_LIST_EXAMPLES = response_examples("Answered by staff", None, TICKET_EXAMPLE)
MESSAGE_EXAMPLES = response_examples("A staff reply with a log", "message", MESSAGE_EXAMPLE)
MESSAGE_LIST_EXAMPLES = response_examples("A staff reply with a log", None, MESSAGE_EXAMPLE)
DEPARTMENT_LIST_EXAMPLES = response_examples("Technical", None, DEPARTMENT_EXAMPLE)
STAFF_TICKET_EXAMPLES = response_examples(
    "Answered, waiting on the customer", "ticket", STAFF_TICKET_EXAMPLE
)
STAFF_TICKET_LIST_EXAMPLES = response_examples(
    "Answered, waiting on the customer", None, STAFF_TICKET_EXAMPLE
)
NOTE_EXAMPLES = response_examples("An internal note", "message", NOTE_EXAMPLE)
STAFF_MESSAGE_LIST_EXAMPLES = [
    *response_examples("A staff reply with a log", None, STAFF_MESSAGE_EXAMPLE),
    *response_examples("An internal note", None, NOTE_EXAMPLE),
]

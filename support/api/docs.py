"""OpenAPI documentation of the tickets API."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema

from hosting.api.schema import envelope, error_doc
from support.api.serializers import (
    DEPARTMENT_LIST_EXAMPLES,
    MESSAGE_EXAMPLES,
    MESSAGE_LIST_EXAMPLES,
    TICKET_EXAMPLES,
    TICKET_LIST_EXAMPLES,
    MessageSerializer,
    TicketAttachmentsSerializer,
    TicketCreateSerializer,
    TicketRateSerializer,
    TicketReplySerializer,
    TicketSerializer,
)

TAGS = ["Support tickets"]
TICKET = envelope("ticket", TicketSerializer())
MESSAGE = envelope("message", MessageSerializer())
STATE = error_doc(
    409, "invalid_state",
    "`invalid_state` (details.status, details.allowed_statuses) when the ticket's status does "
    "not allow it: a closed ticket takes no reply and cannot be reopened (open a new one).",
    "Cannot reply: the ticket is closed.", {"status": "closed", "allowed_statuses": []},
)  # fmt: skip
CUSTOMERS_ONLY = error_doc(
    403, "permission_denied",
    "`permission_denied`: customers close a ticket or reopen a resolved one; other status "
    "changes are the hosting company's.",
    "Customers may only close or reopen a ticket.",
)  # fmt: skip

DEPARTMENT_DOCS = dict(
    list=extend_schema(
        summary="List departments",
        description="Where a ticket can be opened (Technical, Billing, …), with the address "
        "that takes e-mail for it.",
        examples=DEPARTMENT_LIST_EXAMPLES,
        tags=TAGS,
    ),
)

TICKET_DOCS = dict(
    list=extend_schema(
        summary="List tickets",
        description="The account's tickets, newest first; filter by `status`, `priority`, "
        "`department` or `server`, and `search` by number or subject.",
        examples=TICKET_LIST_EXAMPLES,
        tags=TAGS,
    ),
    retrieve=extend_schema(
        summary="Get a ticket", responses=TICKET, examples=TICKET_EXAMPLES, tags=TAGS
    ),
    create=extend_schema(
        summary="Open a ticket",
        description="A new ticket with its first message, requested by the key's user. "
        "`server`, `bot` and `invoice` must be of the account (400 `validation_failed`, code "
        "`not_found`, otherwise); `department` one of `GET /v1/departments`. The first "
        "response and resolution targets of the department's SLA start now.",
        request=TicketCreateSerializer,
        responses={201: TICKET},
        examples=TICKET_EXAMPLES,
        tags=TAGS,
    ),
    messages=extend_schema(
        summary="List a ticket's messages",
        description="The conversation, oldest first: replies of the customer and of staff, "
        "and system entries (status changes). Staff's internal notes are never shown here.",
        responses=MessageSerializer(many=True),
        examples=MESSAGE_LIST_EXAMPLES,
        tags=TAGS,
    ),
    close=extend_schema(
        summary="Close a ticket",
        description="Closed is final: a closed ticket takes no reply.",
        request=None,
        responses={200: TICKET, 409: STATE},
        examples=TICKET_EXAMPLES,
        tags=TAGS,
    ),
    reopen=extend_schema(
        summary="Reopen a resolved ticket",
        request=None,
        responses={200: TICKET, 403: CUSTOMERS_ONLY, 409: STATE},
        examples=TICKET_EXAMPLES,
        tags=TAGS,
    ),
    attachments=extend_schema(
        summary="Reply with attachments",
        description="The one `multipart/form-data` endpoint: a reply carrying one or more "
        "`file` parts (and an optional `body`). Every file is checked before any is kept: a "
        "file too large (`too_large`), of a type a help desk does not take "
        "(`type_not_allowed`), whose content is another type than its name says "
        "(`type_mismatch`), or too many (`too_many`) is 400 `validation_failed` on "
        "`attachments`, and nothing is written.",
        request={"multipart/form-data": TicketAttachmentsSerializer},
        responses={201: MESSAGE, 409: STATE},
        examples=MESSAGE_EXAMPLES,
        tags=TAGS,
    ),
    rate=extend_schema(
        summary="Rate a resolved ticket",
        description="Satisfaction from 1 to 5, with an optional comment, once the ticket is "
        "resolved or closed; rating again replaces it.",
        request=TicketRateSerializer,
        responses={200: TICKET, 409: STATE},
        examples=TICKET_EXAMPLES,
        tags=TAGS,
    ),
)

# On the POST of the messages path (a method mapping: extend_schema_view cannot reach it).
REPLY_DOC = extend_schema(
    summary="Reply to a ticket",
    description="A reply hands the ticket back to staff (`pending_staff`); a resolved "
    "ticket reopens. Staff and the requester's copied teammates get it by e-mail.",
    request=TicketReplySerializer,
    responses={201: MESSAGE, 409: STATE},
    examples=MESSAGE_EXAMPLES,
    tags=TAGS,
)

ATTACHMENT_DOCS = dict(
    retrieve=extend_schema(
        summary="Download an attachment",
        description="The file of a reply on one of the account's tickets, as a download under "
        "its name. Files of staff's internal notes are never served here (404).",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The file, with its own `Content-Type`."
            )
        },
        tags=TAGS,
    ),
)

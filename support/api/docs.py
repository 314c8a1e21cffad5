"""OpenAPI documentation of the tickets API."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema

from hosting.api.schema import envelope, error_doc
from support.api.serializers import (
    DEPARTMENT_LIST_EXAMPLES,
    MESSAGE_EXAMPLES,
    MESSAGE_LIST_EXAMPLES,
    NOTE_EXAMPLES,
    STAFF_MESSAGE_LIST_EXAMPLES,
    STAFF_TICKET_EXAMPLES,
    STAFF_TICKET_LIST_EXAMPLES,
    TICKET_EXAMPLES,
    TICKET_LIST_EXAMPLES,
    MessageSerializer,
    StaffMessageSerializer,
    StaffReplySerializer,
    StaffTicketSerializer,
    StaffTicketUpdateSerializer,
    TicketAssignSerializer,
    TicketAttachmentsSerializer,
    TicketCreateSerializer,
    TicketMergeSerializer,
    TicketRateSerializer,
    TicketReplySerializer,
    TicketSerializer,
    TicketStatusSerializer,
)

TAGS = ["Support tickets"]
TICKET = envelope("ticket", TicketSerializer())
MESSAGE = envelope("message", MessageSerializer())
STATE = error_doc(
    409,
    "invalid_state",
    "`invalid_state` (details.status, details.allowed_statuses) when the ticket's status does "
    "not allow it: a closed ticket takes no reply and cannot be reopened (open a new one).",
    "Cannot reply: the ticket is closed.",
    {"status": "closed", "allowed_statuses": []},
)
CUSTOMERS_ONLY = error_doc(
    403,
    "permission_denied",
    "`permission_denied`: customers close a ticket or reopen a resolved one; other status "
    "changes are the hosting company's.",
    "Customers may only close or reopen a ticket.",
)

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

ATTACHMENT_FILE = OpenApiResponse(
    OpenApiTypes.BINARY, description="The file, with its own `Content-Type`."
)
ATTACHMENT_DOCS = dict(
    retrieve=extend_schema(
        summary="Download an attachment",
        description="The file of a reply on one of the account's tickets, as a download under "
        "its name. Files of staff's internal notes are never served here (404).",
        # Served with the file's own type (text/plain, image/png, ...): declared as bytes for
        # generated clients (they read application/octet-stream), and as any type besides.
        responses={
            (200, "application/octet-stream"): ATTACHMENT_FILE,
            (200, "*/*"): ATTACHMENT_FILE,
        },
        tags=TAGS,
    ),
)


STAFF_TAGS = ["Staff"]
STAFF_TICKET = envelope("ticket", StaffTicketSerializer(), name="StaffTicketEnvelope")
STAFF_MESSAGE = envelope("message", StaffMessageSerializer(), name="StaffMessageEnvelope")

STAFF_TICKET_DOCS = dict(
    list=extend_schema(
        summary="List tickets (staff)",
        description="Every ticket of the departments the key's staff member works (all of "
        "them for a superuser), and those assigned to them. Filters as the customers' list, "
        "plus `account`, `assignee` (`none`: unassigned) and `breached`; "
        "`ordering=resolution_due_at` is the desk's queue order.",
        examples=STAFF_TICKET_LIST_EXAMPLES,
        tags=STAFF_TAGS,
    ),
    retrieve=extend_schema(
        summary="Get a ticket (staff)",
        responses=STAFF_TICKET,
        examples=STAFF_TICKET_EXAMPLES,
        tags=STAFF_TAGS,
    ),
    partial_update=extend_schema(
        summary="Change a ticket's department, priority, tags or links",
        description="The SLA due times follow a new department or priority; an assignee who is "
        "not in the new department is unassigned.",
        request=StaffTicketUpdateSerializer,
        responses=STAFF_TICKET,
        examples=STAFF_TICKET_EXAMPLES,
        tags=STAFF_TAGS,
    ),
    messages=extend_schema(
        summary="List a ticket's messages (staff)",
        description="The whole conversation, internal notes and system entries included.",
        responses=StaffMessageSerializer(many=True),
        examples=STAFF_MESSAGE_LIST_EXAMPLES,
        tags=STAFF_TAGS,
    ),
    assign=extend_schema(
        summary="Assign a ticket",
        description="To a staff member of the ticket's department (400 `validation_failed`, "
        "code `not_in_department`, otherwise), or to nobody (`null`).",
        request=TicketAssignSerializer,
        responses=STAFF_TICKET,
        examples=STAFF_TICKET_EXAMPLES,
        tags=STAFF_TAGS,
    ),
    status=extend_schema(
        summary="Change a ticket's status",
        request=TicketStatusSerializer,
        responses={200: STAFF_TICKET, 409: STATE},
        examples=STAFF_TICKET_EXAMPLES,
        tags=STAFF_TAGS,
    ),
    merge=extend_schema(
        summary="Merge a duplicate into another ticket",
        description="Its messages move to `into`, and it is closed with `merged_into` set. Both "
        "must be of the same customer (400 `validation_failed` on `into` otherwise).",
        request=TicketMergeSerializer,
        responses={200: STAFF_TICKET, 409: STATE},
        examples=STAFF_TICKET_EXAMPLES,
        tags=STAFF_TAGS,
    ),
)

STAFF_REPLY_DOC = extend_schema(
    summary="Reply or add an internal note (staff)",
    description="A public reply answers the ticket (`pending_customer`, or `set_status`) and "
    "stamps the first response; `internal: true` adds a note only staff ever see.",
    request=StaffReplySerializer,
    responses={201: STAFF_MESSAGE, 409: STATE},
    examples=NOTE_EXAMPLES,
    tags=STAFF_TAGS,
)

"""The tickets API for customers (``tickets:read`` / ``tickets:write``): departments, tickets,
their conversation (never an internal note), close, reopen and rate."""

from django.conf import settings
from drf_spectacular.utils import extend_schema_view
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.actors import Actor
from accounts.models import User
from hosting.api.pagination import PageNumberPagination
from hosting.api.serializers import EmptyBodySerializer
from hosting.api.views import (
    AccountListMixin,
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    paginated,
    validated,
)
from hosting.errors import NotFound, ValidationFailed
from hosting.http import download_response
from hosting.text import text_problem
from support.api.docs import (
    ATTACHMENT_DOCS,
    DEPARTMENT_DOCS,
    REPLY_DOC,
    STAFF_REPLY_DOC,
    STAFF_TICKET_DOCS,
    TICKET_DOCS,
)
from support.api.serializers import (
    DepartmentSerializer,
    MessageSerializer,
    StaffMessageSerializer,
    StaffReplySerializer,
    StaffTicketSerializer,
    StaffTicketUpdateSerializer,
    TicketAssignSerializer,
    TicketCreateSerializer,
    TicketMergeSerializer,
    TicketRateSerializer,
    TicketReplySerializer,
    TicketSerializer,
    TicketStatusSerializer,
)
from support.filters import StaffTicketFilter, TicketFilter
from support.models import Channel, Department, Ticket
from support.selectors import (
    attachment_for_customer,
    departments_for_customers,
    messages_visible,
    tickets_for_staff,
    tickets_of_account,
)
from support.services.attachments import Upload, too_large
from support.services.tickets import (
    Requester,
    ticket_assign,
    ticket_close,
    ticket_merge,
    ticket_open,
    ticket_rate,
    ticket_reopen,
    ticket_reply,
    ticket_status_change,
    ticket_update,
)

READ, WRITE = ["tickets:read"], ["tickets:write"]
STAFF_READ, STAFF_WRITE = ["admin:read"], ["admin:write"]


@extend_schema_view(**DEPARTMENT_DOCS)
class DepartmentViewSet(EnvelopeListMixin, ApiViewSet):
    model = Department
    list_key = "departments"
    serializer_class = DepartmentSerializer
    required_scopes = {"list": READ}

    def get_queryset(self):
        return departments_for_customers()


@extend_schema_view(**TICKET_DOCS)
class TicketViewSet(
    AccountListMixin, CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet
):
    model = Ticket
    list_key = "tickets"
    resource_key = "ticket"
    serializer_class = TicketSerializer
    filterset_classes = {"list": TicketFilter}
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "messages": READ,
        "create": WRITE,
        "reply": WRITE,
        "close": WRITE,
        "reopen": WRITE,
        "rate": WRITE,
        "attachments": WRITE,
    }

    account_rows = staticmethod(tickets_of_account)
    list_records = True  # the list's answer (ticket_representation) reads fields only
    speculative_list = True  # answered while the key's lookup is on its way (hosting.api.views)

    def create(self, request):
        body = validated(TicketCreateSerializer, request)
        principal = request.auth
        department = departments_for_customers().filter(pk=body["department"]).first()
        if department is None:
            raise ValidationFailed.field("department", "not_found", "No such department.")
        user = principal.user
        ticket, _ = ticket_open(
            requester=Requester(
                email=user.email, name=user.name, user=user, account=principal.account
            ),
            subject=body["subject"],
            body=body["body"],
            department=department,
            channel=Channel.API,
            actor=Actor.from_request(request),
            priority=body.get("priority"),
            links={name: body.get(name) for name in ("server", "bot", "invoice")},
            cc=body.get("cc"),
        )
        return created(
            request, {"ticket": TicketSerializer(ticket).data}, f"/v1/tickets/{ticket.id}"
        )

    # pagination_class: only for the schema, which otherwise documents the view's own list key.
    @action(detail=True, methods=["get"], pagination_class=PageNumberPagination.for_key("messages"))
    def messages(self, request, pk: str):
        ticket = self.get_object()
        return paginated(self, messages_visible(ticket, staff=False), "messages", MessageSerializer)

    @REPLY_DOC
    @messages.mapping.post
    def reply(self, request, pk: str):
        body = validated(TicketReplySerializer, request)
        message = ticket_reply(
            ticket=self.get_object(),
            body=body["body"],
            actor=Actor.from_request(request),
            by_staff=False,
            channel=Channel.API,
            author_email=request.auth.user.email,
        )
        return created(
            request,
            {"message": MessageSerializer(message).data},
            f"/v1/tickets/{message.ticket_id}/messages",
        )

    @action(detail=True, methods=["post"])
    def close(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        ticket = ticket_close(ticket=self.get_object(), actor=Actor.from_request(request))
        return Response({"ticket": TicketSerializer(ticket).data})

    @action(detail=True, methods=["post"])
    def reopen(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        ticket = ticket_reopen(ticket=self.get_object(), actor=Actor.from_request(request))
        return Response({"ticket": TicketSerializer(ticket).data})

    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def attachments(self, request, pk: str):
        unknown = sorted(set(request.data) - {"file", "body"})
        if unknown:
            raise ValidationFailed.field(unknown[0], "unknown_field", "This field is not accepted.")
        files = request.FILES.getlist("file")
        if not files:
            raise ValidationFailed.field("file", "required", "Send at least one file part.")
        body = request.data.get("body", "")
        problem = text_problem(body) if isinstance(body, str) else ("invalid", "must be text.")
        if problem is not None:
            raise ValidationFailed.field("body", problem[0], f"body {problem[1]}")
        uploads = [_upload(each) for each in files]
        message = ticket_reply(
            ticket=self.get_object(),
            body=body,
            actor=Actor.from_request(request),
            by_staff=False,
            channel=Channel.API,
            author_email=request.auth.user.email,
            uploads=uploads,
        )
        return created(
            request,
            {"message": MessageSerializer(message).data},
            f"/v1/tickets/{message.ticket_id}/messages",
        )

    @action(detail=True, methods=["post"])
    def rate(self, request, pk: str):
        body = validated(TicketRateSerializer, request)
        ticket = ticket_rate(
            ticket=self.get_object(),
            rating=body["rating"],
            comment=body.get("comment", ""),
            actor=Actor.from_request(request),
        )
        return Response({"ticket": TicketSerializer(ticket).data})


def _upload(file) -> Upload:
    """A part as the service checks it; one over the limit is refused unread."""
    if file.size > settings.SUPPORT_ATTACHMENT_MAX_BYTES:
        raise too_large(file.name or "")
    return Upload(filename=file.name or "", content=file.read())


@extend_schema_view(**ATTACHMENT_DOCS)
class AttachmentViewSet(ApiViewSet):
    required_scopes = {"retrieve": READ}

    def retrieve(self, request, pk: str):
        attachment = attachment_for_customer(attachment_id=pk, account_id=request.auth.account.id)
        if attachment is None:
            raise NotFound("No such attachment.")
        return download_response(
            attachment.file, filename=attachment.filename, content_type=attachment.content_type
        )


@extend_schema_view(**STAFF_TICKET_DOCS)
class StaffTicketViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    """The desk for the hosting company's own tools: the tickets of the staff member's
    departments, with internal notes, assignment, status, merging and the SLA fields."""

    model = Ticket
    list_key = "tickets"
    resource_key = "ticket"
    serializer_class = StaffTicketSerializer
    filterset_classes = {"list": StaffTicketFilter}
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "messages": STAFF_READ,
        "partial_update": STAFF_WRITE,
        "reply": STAFF_WRITE,
        "assign": STAFF_WRITE,
        "status": STAFF_WRITE,
        "merge": STAFF_WRITE,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Ticket.objects.none()
        return tickets_for_staff(self.request.auth.user).order_by("-created_at", "-id")

    def _answer(self, ticket: Ticket) -> Response:
        return Response({"ticket": StaffTicketSerializer(Ticket.objects.get(pk=ticket.pk)).data})

    def partial_update(self, request, pk: str):
        changes = validated(StaffTicketUpdateSerializer, request)
        ticket = ticket_update(
            ticket=self.get_object(), changes=changes, actor=Actor.from_request(request)
        )
        return self._answer(ticket)

    # pagination_class: only for the schema, which otherwise documents the view's own list key.
    @action(detail=True, methods=["get"], pagination_class=PageNumberPagination.for_key("messages"))
    def messages(self, request, pk: str):
        ticket = self.get_object()
        return paginated(
            self, messages_visible(ticket, staff=True), "messages", StaffMessageSerializer
        )

    @STAFF_REPLY_DOC
    @messages.mapping.post
    def reply(self, request, pk: str):
        body = validated(StaffReplySerializer, request)
        message = ticket_reply(
            ticket=self.get_object(),
            body=body["body"],
            actor=Actor.from_request(request),
            by_staff=True,
            channel=Channel.API,
            internal=body.get("internal", False),
            set_status=body.get("set_status"),
        )
        return created(
            request,
            {"message": StaffMessageSerializer(message).data},
            f"/v1/admin/tickets/{message.ticket_id}/messages",
        )

    @action(detail=True, methods=["post"])
    def assign(self, request, pk: str):
        body = validated(TicketAssignSerializer, request)
        assignee = None
        if body["assignee"] is not None:
            assignee = User.objects.filter(pk=body["assignee"], is_active=True).first()
            if assignee is None:
                raise ValidationFailed.field("assignee", "not_found", "No such staff member.")
        ticket = ticket_assign(
            ticket=self.get_object(), assignee=assignee, actor=Actor.from_request(request)
        )
        return self._answer(ticket)

    @action(detail=True, methods=["post"])
    def status(self, request, pk: str):
        body = validated(TicketStatusSerializer, request)
        ticket = ticket_status_change(
            ticket=self.get_object(),
            status=body["status"],
            actor=Actor.from_request(request),
            by_staff=True,
        )
        return self._answer(ticket)

    @action(detail=True, methods=["post"])
    def merge(self, request, pk: str):
        body = validated(TicketMergeSerializer, request)
        into = self.get_queryset().filter(pk=body["into"]).first()
        if into is None:
            raise ValidationFailed.field("into", "not_found", "No such ticket.")
        source = self.get_object()
        ticket_merge(source=source, target=into, actor=Actor.from_request(request))
        return self._answer(source)

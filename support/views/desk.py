"""The staff desk in the dashboard (``desk/…``): the queues of the staff member's departments
and each ticket's page with its whole conversation, the reply form and the customer's context.

Only staff who work at least one department (``departments_of_staff``: theirs, every one for a
superuser) reach the desk; anyone else, signed in or not as staff, gets the 404 page. Staff need
no account of their own: the desk reads no ``request.account``. A staff member sees the tickets
``tickets_for_staff`` gives them; another department's ticket or file is the 404 page.

Views parse input, call one service of ``support.services.tickets`` with the signed-in person
as the actor (``by_staff=True``) and render. A refusal reads as everywhere on the dashboard
(``hosting/dashboard/refusals.py``): on the reply form next to its fields, with what was typed
kept; from the side panel's small forms as an error message on the ticket's page.

The desk's forms are ``support.forms``'s, its queue's menus ``support.filters``'s
(``DeskTicketFilter``).
"""

from functools import cached_property

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import ListView

from accounts.actors import Actor
from accounts.roles import StaffArea
from billing.selectors import invoices_payable_of_account
from events.selectors import events_of_account
from hosting.dashboard.lists import SEARCH_PARAM, ListControlsMixin
from hosting.dashboard.refusals import ServiceRefusalMixin
from hosting.errors import ApplicationError
from hosting.http import download_response
from hosting.money import format_amount
from servers.selectors import bots_of_account, servers_of_account
from support import transitions
from support.filters import UNFINISHED, DeskTicketFilter
from support.forms import AssignForm, DeskReplyForm, StatusForm, TicketFieldsForm
from support.models import Channel, Department, Ticket, TicketStatus
from support.representations import staff_member_name
from support.selectors import (
    NEXT_DUE,
    attachment_for_staff,
    departments_of_staff,
    macros_for_ticket,
    messages_visible,
    staff_of_departments,
    tickets_for_staff,
)
from support.services.tickets import (
    ticket_assign,
    ticket_reply,
    ticket_status_change,
    ticket_update,
)

# The customer's context beside a ticket: this many of each, newest first.
CONTEXT_ROWS = 10


class DeskMixin(ServiceRefusalMixin, LoginRequiredMixin):
    """A page of the desk: for staff whose role works the desk (``accounts/roles.py``) and who
    work at least one department, else the 404 page."""

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not request.user.works_desk or not self.departments:
            raise Http404("No such page.")
        return super().dispatch(request, *args, **kwargs)

    @cached_property
    def departments(self) -> list[Department]:
        return list(departments_of_staff(self.request.user).order_by("name"))

    def tickets(self) -> QuerySet[Ticket]:
        return tickets_for_staff(self.request.user)

    def actor(self) -> Actor:
        return Actor.from_request(self.request)


class DeskQueueView(ListControlsMixin, DeskMixin, ListView):
    """The queues: every unfinished ticket of my departments (the default), those given to me,
    or one department's; the one due soonest first, late ones marked."""

    template_name = "support/desk/queue.html"
    context_object_name = "tickets"
    search_fields = ("subject", "requester_email")
    search_label = gettext_lazy("Number, subject or e-mail")
    filterset_class = DeskTicketFilter
    sort_fields = {
        "due": "next_due_at",
        "number": "number",
        "created_at": "created_at",
        "updated_at": "updated_at",
    }
    default_sort = "due"

    def get_base_queryset(self):
        return (
            self.tickets()
            .select_related("department", "assignee", "account")
            .annotate(next_due_at=NEXT_DUE)
        )

    def search_queryset(self, queryset):
        text = " ".join(self.request.GET.get(SEARCH_PARAM, "").split())
        number = text.removeprefix("#")
        # A bigint holds 18 digits whatever they are; longer ones are no ticket's number.
        if not (number.isdigit() and len(number) <= 18):
            return super().search_queryset(queryset)
        self.search_text = self.list_params[SEARCH_PARAM] = text
        return queryset.filter(
            Q(number=int(number)) | Q(subject__icontains=text) | Q(requester_email__icontains=text)
        )

    def queues(self) -> list[dict]:
        """The tabs: all of mine, mine, and each of my departments, with their unfinished
        tickets counted in one query."""
        user = self.request.user
        counts = (
            self.tickets()
            .filter(UNFINISHED)
            .aggregate(
                all=Count("pk"),
                mine=Count("pk", filter=Q(assignee=user)),
                **{
                    f"department_{index}": Count("pk", filter=Q(department_id=department.pk))
                    for index, department in enumerate(self.departments)
                },
            )
        )
        applied = (self.list_params.get("department"), self.list_params.get("assignee"))
        desk = reverse("desk")
        queues = [
            {
                "name": _("All my departments"),
                "url": desk,
                "count": counts["all"],
                "current": applied == (None, None),
            },
            {
                "name": _("Assigned to me"),
                "url": f"{desk}?assignee=me",
                "count": counts["mine"],
                "current": applied == (None, "me"),
            },
        ]
        for index, department in enumerate(self.departments):
            queues.append(
                {
                    "name": department.name,
                    "url": f"{desk}?department={department.pk}",
                    "count": counts[f"department_{index}"],
                    "current": applied == (department.pk, None),
                }
            )
        return queues

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["queues"] = self.queues()
        context["now"] = timezone.now()
        return context


class DeskTicketView(DeskMixin, View):
    """A ticket: its whole conversation (internal notes and system entries too), the reply
    form, its fields with the forms that change them, and the customer's context."""

    template_name = "support/desk/ticket.html"

    @cached_property
    def ticket(self) -> Ticket:
        tickets = self.tickets().select_related(
            "department", "assignee", "account", "requester", "server", "bot", "invoice"
        )
        return get_object_or_404(tickets, pk=self.kwargs["ticket_id"])

    @cached_property
    def macros(self) -> list:
        return list(macros_for_ticket(self.ticket))

    def reply_form(self, *args, **kwargs) -> DeskReplyForm:
        return DeskReplyForm(
            *args, ticket=self.ticket, macros=self.macros, user=self.request.user, **kwargs
        )

    def get(self, request, *args, **kwargs):
        return self.page(self.reply_form())

    def post(self, request, *args, **kwargs):
        form = self.reply_form(request.POST, request.FILES)
        if "insert_macro" in request.POST:
            return self.page(form.with_macro())
        if not form.is_valid():
            return self.form_invalid(form)
        data = form.cleaned_data
        internal = data["kind"] == DeskReplyForm.NOTE
        try:
            with transaction.atomic():  # taken and answered together, or neither
                if data.get("take"):
                    ticket_assign(ticket=self.ticket, assignee=request.user, actor=self.actor())
                self._reply(data, internal)
        except ApplicationError as error:
            return self.refused(error, form=form)
        if data.get("take"):
            done = (
                _("Internal note added; the ticket is yours.")
                if internal
                else _("Reply sent; the ticket is yours.")
            )
        else:
            done = _("Internal note added.") if internal else _("Reply sent.")
        messages.success(request, done)
        return redirect("desk_ticket", ticket_id=self.ticket.pk)

    def _reply(self, data: dict, internal: bool) -> None:
        ticket_reply(
            ticket=self.ticket,
            body=data["body"],
            actor=self.actor(),
            by_staff=True,
            channel=Channel.WEB,
            internal=internal,
            set_status=data["set_status"] or None,
            uploads=data["attachments"],
        )

    def form_invalid(self, form: DeskReplyForm) -> HttpResponse:
        return self.page(form)

    def page(self, form: DeskReplyForm) -> HttpResponse:
        ticket = self.ticket
        members = list(staff_of_departments(Department.objects.filter(pk=ticket.department_id)))
        context = {
            "ticket": ticket,
            "conversation": messages_visible(ticket, staff=True).select_related("author"),
            "form": form,
            "macro_texts": {
                macro.pk: {"body": macro.body, "set_status": macro.set_status}
                for macro in self.macros
            },
            "assign_form": AssignForm(initial={"assignee": ticket.assignee_id}, members=members),
            "next_statuses": [TicketStatus(each) for each in transitions.allowed(ticket.status)],
            "fields_form": TicketFieldsForm(initial=self.fields_initial()),
            "customer": self.customer_context(),
            "now": timezone.now(),
        }
        return render(self.request, self.template_name, context)

    def fields_initial(self) -> dict:
        ticket = self.ticket
        return {
            "department": ticket.department_id,
            "priority": ticket.priority,
            "tags": ", ".join(ticket.tags),
        }

    def customer_context(self) -> dict | None:
        """The account's servers and bots, unpaid invoices (for staff whose role reads billing,
        ``accounts/roles.py``) and latest events (a guest ticket has none: only the
        requester's address is known)."""
        account_id = self.ticket.account_id
        if account_id is None:
            return None
        servers = list(
            servers_of_account(account_id=account_id).order_by("name", "id")[: CONTEXT_ROWS + 1]
        )
        bots = list(
            bots_of_account(account_id=account_id).order_by("name", "id")[: CONTEXT_ROWS + 1]
        )
        can_see_billing = self.request.user.staff_can_see(StaffArea.BILLING)
        invoices = (
            list(invoices_payable_of_account(account_id=account_id)[: CONTEXT_ROWS + 1])
            if can_see_billing
            else []
        )
        for invoice in invoices:
            invoice.remaining_shown = format_amount(invoice.amount_remaining, invoice.currency)
        return {
            "servers": servers[:CONTEXT_ROWS],
            "more_servers": len(servers) > CONTEXT_ROWS,
            "bots": bots[:CONTEXT_ROWS],
            "more_bots": len(bots) > CONTEXT_ROWS,
            "can_see_billing": can_see_billing,
            "invoices": invoices[:CONTEXT_ROWS],
            "more_invoices": len(invoices) > CONTEXT_ROWS,
            "events": [
                (event, _event_object(event))
                for event in events_of_account(account_id=account_id)[:CONTEXT_ROWS]
            ],
        }


def _event_object(event) -> str:
    """What an event is about, as its own representation calls it (a ticket by its number)."""
    shown = event.data.get("object") or {}
    return str(shown.get("name") or shown.get("number") or event.object_id)


class DeskTicketChangeView(DeskMixin, View):
    """A form of a ticket's side panel: read it, call one service, and go back to the ticket
    with what happened (or the refusal) as a message. Each view says which form it reads
    (``form(ticket, data)``) and which service it calls (``change(ticket, form)``, returning
    what to tell the person)."""

    def post(self, request, ticket_id: str):
        ticket = get_object_or_404(self.tickets().select_related("department"), pk=ticket_id)
        form = self.form(ticket, request.POST)
        if not form.is_valid():
            for errors in form.errors.values():
                messages.error(request, errors[0])
            return redirect("desk_ticket", ticket_id=ticket.pk)
        try:
            done = self.change(ticket, form)
        except ApplicationError as error:
            return self.refused(error, back_to="desk_ticket", ticket_id=ticket.pk)
        messages.success(request, done)
        if not self.tickets().filter(pk=ticket.pk).exists():
            return redirect("desk")  # moved to a department this person does not work
        return redirect("desk_ticket", ticket_id=ticket.pk)


class DeskAssignView(DeskTicketChangeView):
    """Give the ticket to a staff member of its department, or to nobody."""

    def form(self, ticket, data):
        members = list(staff_of_departments(Department.objects.filter(pk=ticket.department_id)))
        return AssignForm(data, members=members)

    def change(self, ticket, form):
        assignee = form.members.get(form.cleaned_data["assignee"])
        ticket_assign(ticket=ticket, assignee=assignee, actor=self.actor())
        if assignee is None:
            return _("Unassigned.")
        return _("Assigned to %(name)s.") % {"name": staff_member_name(assignee)}


class DeskStatusView(DeskTicketChangeView):
    """Move the ticket along the status table."""

    def form(self, ticket, data):
        return StatusForm(data)

    def change(self, ticket, form):
        status = form.cleaned_data["status"]
        ticket_status_change(ticket=ticket, status=status, actor=self.actor(), by_staff=True)
        return _("Status: %(status)s.") % {"status": TicketStatus(status).label}


class DeskUpdateView(DeskTicketChangeView):
    """Change the department, priority and tags; the SLA due times follow."""

    def form(self, ticket, data):
        return TicketFieldsForm(data)

    def change(self, ticket, form):
        changes = form.changes(ticket)
        if not changes:
            return _("Nothing was changed.")
        updated = ticket_update(ticket=ticket, changes=changes, actor=self.actor())
        return _("Ticket #%(number)s updated.") % {"number": updated.number}


class DeskAttachmentView(DeskMixin, View):
    """A file of a ticket the staff member sees, always as a download, never cached."""

    def get(self, request, attachment_id: str):
        attachment = attachment_for_staff(attachment_id=attachment_id, user=request.user)
        if attachment is None:
            raise Http404("No such file.")
        return download_response(
            attachment.file, filename=attachment.filename, content_type=attachment.content_type
        )

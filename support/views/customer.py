"""Dashboard pages of Support for customers: the account's tickets, opening one (about a server
or bot of the account, with files), the conversation with its attachments, replying, closing,
reopening and rating.

Views parse input, call one service of support/services with the signed-in person as the actor,
and render. Tickets and attachments are looked up within ``request.account``, so another
account's answer 404, and the conversation is ``messages_visible(staff=False)``: an internal
note never reaches these pages. Reading needs ``tickets:read`` in the role's scopes (else 404,
like a missing right; the navigation hides the section then); every POST needs
``tickets:write``, and a suspended account is read-only. The new-ticket page, nothing but a
form, is refused as soon as it is opened.
"""

from functools import cached_property

from django.contrib import messages
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import FormView, ListView, TemplateView

from accounts.mixins import AreaPageMixin
from hosting.dashboard.lists import ListControlsMixin
from hosting.errors import ApplicationError
from hosting.http import download_response
from support.filters import TicketListFilter
from support.forms import TicketCreateForm, TicketRateForm, TicketReplyForm
from support.models import Channel, Ticket, TicketStatus
from support.representations import author_shown
from support.selectors import attachment_for_customer, messages_visible, tickets_of_account
from support.services.tickets import (
    Requester,
    ticket_close,
    ticket_open,
    ticket_rate,
    ticket_reopen,
    ticket_reply,
)
from support.transitions import FINISHED


class TicketPageMixin(AreaPageMixin):
    """A Support page: readable with ``tickets:read``, changed only with ``tickets:write``."""

    area = "tickets"

    @property
    def refused_url(self) -> str:
        if "ticket_id" in self.kwargs:
            return reverse("support_ticket", args=[self.kwargs["ticket_id"]])
        return reverse("support_tickets")


class TicketObjectMixin(TicketPageMixin):
    """A page of one ticket of the current account, found by ``ticket_id``."""

    @cached_property
    def ticket(self) -> Ticket:
        tickets = tickets_of_account(account_id=self.account.id).select_related(
            "department", "server", "bot"
        )
        return get_object_or_404(tickets, id=self.kwargs["ticket_id"])


# --- The list --------------------------------------------------------------------------------


class TicketListView(ListControlsMixin, TicketPageMixin, ListView):
    """The account's tickets, found by their number or words of their subject, filtered by
    status, priority and department; the most recently active first."""

    template_name = "support/ticket_list.html"
    context_object_name = "tickets"
    # ``reference`` is ``#1042``: a search for 1042 or #1042 finds it, as part of the text,
    # the way the invoices page finds invoice numbers.
    search_fields = ("reference", "subject", "=id")
    search_label = gettext_lazy("Number or subject")
    filterset_class = TicketListFilter
    sort_fields = {"number": "number", "created_at": "created_at", "updated_at": "updated_at"}
    default_sort = "-updated_at"

    def get_base_queryset(self):
        reference = Concat(Value("#"), Cast("number", CharField()), output_field=CharField())
        return (
            tickets_of_account(account_id=self.account.id)
            .select_related("department")
            .alias(reference=reference)
        )


# --- Opening a ticket ------------------------------------------------------------------------


class TicketCreateView(TicketPageMixin, FormView):
    """A new ticket from the web: a department, a subject, the first message, optionally a
    server or bot of the account and files; then its page (post/redirect/get)."""

    template_name = "support/ticket_create.html"
    form_class = TicketCreateForm
    form_page = True

    def get_form_kwargs(self):
        return super().get_form_kwargs() | {"account_id": self.account.id}

    def form_valid(self, form):
        data = form.cleaned_data
        user = self.request.user
        try:
            ticket, _created = ticket_open(
                requester=Requester(
                    email=user.email, name=user.name, user=user, account=self.account
                ),
                subject=data["subject"],
                body=data["body"],
                department=data["department"],
                channel=Channel.WEB,
                actor=self.actor(),
                priority=data["priority"] or None,
                links=form.links(),
                uploads=data["attachments"],
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        messages.success(
            self.request,
            _("Ticket #%(number)s is open: our answer will show on this page.")
            % {"number": ticket.number},
        )
        return redirect("support_ticket", ticket_id=ticket.id)


# --- One ticket ------------------------------------------------------------------------------


class TicketDetailView(TicketObjectMixin, TemplateView):
    """The ticket and its conversation (public replies and system entries, never an internal
    note) with its files; replying (a POST here), closing, reopening a resolved ticket and
    rating a finished one. A form sent with errors is shown again with what was typed."""

    template_name = "support/ticket_detail.html"

    def get_context_data(self, reply_form=None, rate_form=None, **kwargs):
        ticket = self.ticket
        conversation = list(messages_visible(ticket, staff=False))
        for entry in conversation:
            entry.author_shown = author_shown(entry)
        if self.can_write:
            if reply_form is None and ticket.status != TicketStatus.CLOSED:
                reply_form = TicketReplyForm()
            if rate_form is None and ticket.status in FINISHED and ticket.rating is None:
                rate_form = TicketRateForm()
        return super().get_context_data(
            ticket=ticket,
            conversation=conversation,
            reply_form=reply_form,
            rate_form=rate_form,
            can_close=self.can_write and ticket.status != TicketStatus.CLOSED,
            can_reopen=self.can_write and ticket.status == TicketStatus.RESOLVED,
            **kwargs,
        )

    def post(self, request, *args, **kwargs):
        form = TicketReplyForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                ticket_reply(
                    ticket=self.ticket,
                    body=form.cleaned_data["body"],
                    actor=self.actor(),
                    by_staff=False,
                    channel=Channel.WEB,
                    author_email=request.user.email,
                    uploads=form.cleaned_data["attachments"],
                )
            except ApplicationError as error:
                form.add_service_error(error)
            else:
                messages.success(request, _("Your reply is sent."))
                return redirect(self.refused_url)
        return self.render_to_response(self.get_context_data(reply_form=form))


class TicketCloseView(TicketObjectMixin, View):
    """The "Close" button: the customer is done with the ticket (a closed ticket is final)."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            ticket = ticket_close(ticket=self.ticket, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(request, _("Ticket #%(number)s is closed.") % {"number": ticket.number})
        return redirect(self.refused_url)


class TicketReopenView(TicketObjectMixin, View):
    """The "Reopen" button of a resolved ticket: it goes back to staff."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            ticket = ticket_reopen(ticket=self.ticket, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.refused_url)
        messages.success(
            request, _("Ticket #%(number)s is open again.") % {"number": ticket.number}
        )
        return redirect(self.refused_url)


class TicketRateView(TicketDetailView):
    """The rating form of a resolved or closed ticket: shown again on the ticket's page with
    its errors."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        form = TicketRateForm(request.POST)
        if form.is_valid():
            try:
                ticket_rate(
                    ticket=self.ticket,
                    rating=form.cleaned_data["rating"],
                    comment=form.cleaned_data["comment"],
                    actor=self.actor(),
                )
            except ApplicationError as error:
                form.add_service_error(error)
            else:
                messages.success(request, _("Thank you for rating this ticket."))
                return redirect(self.refused_url)
        return self.render_to_response(self.get_context_data(rate_form=form))


# --- Attachments -----------------------------------------------------------------------------


class AttachmentView(TicketPageMixin, View):
    """A file of a public message of the account's tickets (``attachment_for_customer``: any
    other answers 404, a file of an internal note too)."""

    http_method_names = ["get", "head"]

    def get(self, request, *args, **kwargs):
        attachment = attachment_for_customer(
            attachment_id=kwargs["attachment_id"], account_id=self.account.id
        )
        if attachment is None:
            raise Http404("No such attachment.")
        return download_response(
            attachment.file, filename=attachment.filename, content_type=attachment.content_type
        )

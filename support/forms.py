"""Dashboard forms of Support, the customers' pages' and the staff desk's: they collect input;
support/services decides.

A ticket's rules (the subject's and body's lengths, an active department, a server or bot of
the account, which files may be attached) are ``ticket_open``'s, ``ticket_reply``'s and
``attachments_add``'s: their refusals come back through ``ServiceErrorFormMixin`` next to the
field they name, so every rule is written once. The lists' menus are ``support/filters.py``'s.
"""

from django import forms
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext_lazy

from accounts.models import User
from hosting.dashboard.refusals import ServiceErrorFormMixin
from servers.selectors import bots_of_account, servers_of_account
from support import transitions
from support.models import Department, Priority, Ticket, TicketStatus
from support.representations import staff_member_name
from support.selectors import departments_for_customers
from support.services.attachments import Upload, too_large
from support.services.tickets import BODY_LIMIT, SUBJECT_LIMIT


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class AttachmentsField(forms.FileField):
    """Any number of files (``<input type="file" multiple>``), each as an ``Upload`` for the
    service to check. A file over ``SUPPORT_ATTACHMENT_MAX_BYTES`` is refused unread, as the
    API refuses it."""

    widget = MultipleFileInput

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            ngettext_lazy(
                "Screenshots, PDF, text, logs, JSON, CSV or archives; at most %(number)d file.",
                "Screenshots, PDF, text, logs, JSON, CSV or archives; at most %(number)d files.",
                "number",
            )
            % {"number": settings.SUPPORT_ATTACHMENTS_PER_MESSAGE},
        )
        super().__init__(**kwargs)

    def clean(self, data, initial=None) -> list[Upload]:
        files = data if isinstance(data, list | tuple) else [data] if data else []
        uploads = []
        for file in files:
            file = super().clean(file, initial)
            if file.size > settings.SUPPORT_ATTACHMENT_MAX_BYTES:
                raise forms.ValidationError(too_large(file.name or "").message, code="too_large")
            uploads.append(Upload(filename=file.name or "", content=file.read()))
        return uploads


def _body_field(**kwargs) -> forms.CharField:
    return forms.CharField(
        label=gettext_lazy("Message"),
        max_length=BODY_LIMIT,
        widget=forms.Textarea(attrs={"rows": 8}),
        **kwargs,
    )


class TicketCreateForm(ServiceErrorFormMixin, forms.Form):
    """A new ticket: where it goes, what it is about, the first message and its files."""

    department = forms.ModelChoiceField(
        label=gettext_lazy("Department"),
        queryset=departments_for_customers(),
        empty_label=gettext_lazy("Choose a department…"),
    )
    subject = forms.CharField(label=gettext_lazy("Subject"), max_length=SUBJECT_LIMIT)
    body = _body_field(
        help_text=gettext_lazy("What happened, what you expected, and what you tried.")
    )
    priority = forms.ChoiceField(
        label=gettext_lazy("Priority"),
        choices=[("", gettext_lazy("The department's usual")), *Priority.choices],
        required=False,
        help_text=gettext_lazy("Urgent: something is down and cannot wait."),
    )
    about = forms.ChoiceField(
        label=gettext_lazy("Server or bot"),
        required=False,
        help_text=gettext_lazy("The server or bot of this account the ticket is about, if any."),
    )
    attachments = AttachmentsField()

    # The service names the link it refuses by its kind; the form has one menu for both.
    service_field_names = {"server": "about", "bot": "about"}

    def __init__(self, *args, account_id: str, **kwargs):
        super().__init__(*args, **kwargs)
        servers = servers_of_account(account_id=account_id).order_by("name", "id")
        bots = bots_of_account(account_id=account_id).order_by("name", "id")
        self.kinds: dict[str, str] = {}
        choices: list = [("", _("Nothing in particular"))]
        for label, kind, instances in ((_("Servers"), "server", servers), (_("Bots"), "bot", bots)):
            group = [(pk, name) for pk, name in instances.values_list("id", "name")]
            self.kinds.update(dict.fromkeys((pk for pk, _name in group), kind))
            if group:
                choices.append((label, group))
        self.fields["about"].choices = choices

    def links(self) -> dict[str, str | None]:
        """The ``links`` of ``ticket_open``: the chosen server or bot, under its kind."""
        chosen = self.cleaned_data["about"]
        return {self.kinds[chosen]: chosen} if chosen else {}


class TicketReplyForm(ServiceErrorFormMixin, forms.Form):
    """A reply to the conversation; with files, the text may be left empty."""

    body = _body_field(required=False)
    attachments = AttachmentsField()


class TicketRateForm(ServiceErrorFormMixin, forms.Form):
    """How the ticket was handled, 1 (poor) to 5 (excellent), and optionally why."""

    rating = forms.TypedChoiceField(
        choices=[(score, str(score)) for score in range(1, 6)],
        coerce=int,
        widget=forms.RadioSelect,
        label=gettext_lazy("Rating"),
    )
    comment = forms.CharField(
        label=gettext_lazy("Comment"),
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


# --- The staff desk ---------------------------------------------------------------------------


class UploadsField(forms.FileField):
    """Any number of files, as the service checks them (``Upload``); one over the size limit
    is refused before it is read, as the API refuses it."""

    widget = MultipleFileInput

    def clean(self, data, initial=None):
        files = [each for each in (data or []) if each]
        uploads = []
        for file in files:
            if file.size > settings.SUPPORT_ATTACHMENT_MAX_BYTES:
                raise forms.ValidationError(too_large(file.name or "").message)
            uploads.append(Upload(filename=file.name or "", content=file.read()))
        return uploads


class DeskReplyForm(ServiceErrorFormMixin, forms.Form):
    """A reply to the customer or an internal note, its files, and the status after a reply.

    A macro fills the text and pre-selects its status: in the browser as soon as it is picked
    (``static/js/desk.js``), without JavaScript by the "Insert macro" button."""

    REPLY, NOTE = "reply", "note"

    kind = forms.ChoiceField(
        label=gettext_lazy("Send as"),
        choices=[(REPLY, gettext_lazy("Reply to customer")), (NOTE, gettext_lazy("Internal note"))],
        widget=forms.RadioSelect,
        initial=REPLY,
    )
    macro = forms.ChoiceField(label=gettext_lazy("Macro"), required=False)
    body = forms.CharField(
        label=gettext_lazy("Message"), required=False, widget=forms.Textarea(attrs={"rows": 8})
    )
    set_status = forms.ChoiceField(
        label=gettext_lazy("Then set the status to"),
        required=False,
        help_text=gettext_lazy(
            "Only for a reply; a reply marks the ticket answered unless you choose."
        ),
    )
    attachments = UploadsField(label=gettext_lazy("Files"), required=False)
    take = forms.BooleanField(
        label=gettext_lazy("Take the ticket: assign it to me"),
        required=False,
    )

    def __init__(self, *args, ticket: Ticket, macros: list, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.ticket = ticket
        self.user = user
        # Offered when the ticket is not already the replier's; ticked when nobody has it.
        self.offers_take = user is not None and ticket.assignee_id != user.pk
        if not self.offers_take:
            del self.fields["take"]
        else:
            self.fields["take"].initial = ticket.assignee_id is None
        self.macros = {macro.pk: macro for macro in macros}
        self.fields["macro"].choices = [("", _("Choose a macro…"))] + [
            (macro.pk, macro.name) for macro in macros
        ]
        self.fields["set_status"].choices = [("", _("As the reply sets it"))] + [
            (status, TicketStatus(status).label) for status in transitions.allowed(ticket.status)
        ]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("kind") == self.NOTE and cleaned.get("set_status"):
            self.add_error(
                "set_status", _("A note leaves the status as it is: change it beside the ticket.")
            )
        return cleaned

    def with_macro(self) -> "DeskReplyForm":
        """The form again with the chosen macro's text (after what was typed) and status."""
        data = self.data.copy()
        macro = self.macros.get(self.data.get("macro", ""))
        if macro is not None:
            typed = self.data.get("body", "").rstrip()
            data["body"] = f"{typed}\n\n{macro.body}" if typed else macro.body
            if macro.set_status:
                data["set_status"] = macro.set_status
        return type(self)(
            data, ticket=self.ticket, macros=list(self.macros.values()), user=self.user
        )


class AssignForm(forms.Form):
    """Whom the ticket is given to: a staff member of its department, or nobody."""

    assignee = forms.ChoiceField(label=gettext_lazy("Assignee"), required=False)

    def __init__(self, *args, members: list[User], **kwargs):
        super().__init__(*args, **kwargs)
        self.members = {member.pk: member for member in members}
        self.fields["assignee"].choices = [("", _("Nobody"))] + [
            (member.pk, staff_member_name(member)) for member in members
        ]


class StatusForm(forms.Form):
    status = forms.ChoiceField(label=gettext_lazy("Status"), choices=TicketStatus.choices)


class TicketFieldsForm(forms.Form):
    """The department, priority and tags (comma-separated) of a ticket."""

    department = forms.ModelChoiceField(
        label=gettext_lazy("Department"),
        queryset=Department.objects.filter(active=True),
        empty_label=None,
    )
    priority = forms.ChoiceField(label=gettext_lazy("Priority"), choices=Priority.choices)
    tags = forms.CharField(
        label=gettext_lazy("Tags"), required=False, help_text=gettext_lazy("Separated by commas.")
    )

    def changes(self, ticket: Ticket) -> dict:
        """What differs from ``ticket``, as ``ticket_update`` takes it."""
        wanted = {
            "department": self.cleaned_data["department"].pk,
            "priority": self.cleaned_data["priority"],
            "tags": sorted(
                {tag.strip().lower() for tag in self.cleaned_data["tags"].split(",")} - {""}
            ),
        }
        now = {
            "department": ticket.department_id,
            "priority": ticket.priority,
            "tags": sorted(ticket.tags),
        }
        return {name: value for name, value in wanted.items() if value != now[name]}

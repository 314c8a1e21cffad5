"""Dashboard forms of the customers' Support pages: they collect input; support/services decides.

A ticket's rules (the subject's and body's lengths, an active department, a server or bot of
the account, which files may be attached) are ``ticket_open``'s, ``ticket_reply``'s and
``attachments_add``'s: their refusals come back through ``ServiceErrorFormMixin`` next to the
field they name, so every rule is written once.

The list's filter menus are the API's filters (``support/filters.py``) narrowed to what a menu
offers: one value each, chosen from a list. Searching is the list's own ``?q=`` and sorting its
``?sort=``, so the API's ``search`` and date range are left out.
"""

import django_filters
from django import forms
from django.conf import settings

from hosting.dashboard.refusals import ServiceErrorFormMixin
from servers.selectors import bots_of_account, servers_of_account
from support.filters import TicketFilter
from support.models import Priority, TicketStatus
from support.selectors import departments_for_customers
from support.services.attachments import Upload, too_large
from support.services.tickets import BODY_LIMIT, SUBJECT_LIMIT


class TicketListFilter(TicketFilter):
    """The tickets page: by status, priority and department."""

    status = django_filters.ChoiceFilter(
        choices=TicketStatus.choices, label="Status", empty_label="Any status"
    )
    priority = django_filters.ChoiceFilter(
        choices=Priority.choices, label="Priority", empty_label="Any priority"
    )
    department = django_filters.ModelChoiceFilter(
        queryset=departments_for_customers(), label="Department", empty_label="Any department"
    )
    created_after = created_before = server = search = None


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
            "Screenshots, PDF, text, logs, JSON, CSV or archives; "
            f"at most {settings.SUPPORT_ATTACHMENTS_PER_MESSAGE} files.",
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
        label="Message",
        max_length=BODY_LIMIT,
        widget=forms.Textarea(attrs={"rows": 8}),
        **kwargs,
    )


class TicketCreateForm(ServiceErrorFormMixin, forms.Form):
    """A new ticket: where it goes, what it is about, the first message and its files."""

    department = forms.ModelChoiceField(
        queryset=departments_for_customers(), empty_label="Choose a department…"
    )
    subject = forms.CharField(max_length=SUBJECT_LIMIT)
    body = _body_field(help_text="What happened, what you expected, and what you tried.")
    priority = forms.ChoiceField(
        choices=[("", "The department's usual"), *Priority.choices],
        required=False,
        help_text="Urgent: something is down and cannot wait.",
    )
    about = forms.ChoiceField(
        label="Server or bot",
        required=False,
        help_text="The server or bot of this account the ticket is about, if any.",
    )
    attachments = AttachmentsField()

    # The service names the link it refuses by its kind; the form has one menu for both.
    service_field_names = {"server": "about", "bot": "about"}

    def __init__(self, *args, account_id: str, **kwargs):
        super().__init__(*args, **kwargs)
        servers = servers_of_account(account_id=account_id).order_by("name", "id")
        bots = bots_of_account(account_id=account_id).order_by("name", "id")
        self.kinds: dict[str, str] = {}
        choices: list = [("", "Nothing in particular")]
        for label, kind, instances in (("Servers", "server", servers), ("Bots", "bot", bots)):
            group = [(pk, name) for pk, name in instances.values_list("id", "name")]
            self.kinds.update(dict.fromkeys((pk for pk, _ in group), kind))
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
        label="Rating",
    )
    comment = forms.CharField(
        required=False, max_length=1000, widget=forms.Textarea(attrs={"rows": 3})
    )

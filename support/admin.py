"""Staff pages for the desk's configuration: SLA policies, departments (their staff, address and
defaults) and macros, each changed through its service (``support.services.departments`` and
``support.services.macros``), so the rules of the API and the desk hold here too.

Tickets are listed here for search and reporting only, view-only: conversations are worked in
the desk (``/desk``), which each ticket's page links to. Nothing is deleted but macros: a
department is deactivated and a policy in use stays (the database refuses to drop it).
"""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from accounts.actors import Actor
from accounts.models import Account, User
from accounts.service_admin import ReadOnlyAdmin, ServiceAdmin, ServiceForm, add_refusal
from hosting.errors import ApplicationError
from support.models import Channel, Department, Macro, Priority, SlaPolicy, Ticket
from support.services.departments import department_save, sla_policy_save
from support.services.macros import macro_create, macro_delete, macro_update
from support.services.tickets import Requester, ticket_open

CALENDAR_EXAMPLE = (
    '{"time_zone": "Europe/Berlin", "hours": {"mon": [["09:00", "17:00"]], '
    '"tue": [["09:00", "17:00"]]}} — empty: around the clock.'
)
TARGETS_EXAMPLE = (
    '{"urgent": {"first_response_minutes": 60, "resolution_minutes": 480}, '
    '"normal": {"first_response_minutes": 240}} — a priority left out has no target.'
)


class PrettyJSONField(forms.JSONField):
    """JSON shown indented, so a policy reads as a small table."""

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)


class SlaPolicyForm(ServiceForm):
    targets = PrettyJSONField(required=False, help_text=TARGETS_EXAMPLE)
    calendar = PrettyJSONField(required=False, help_text=CALENDAR_EXAMPLE)

    class Meta:
        model = SlaPolicy
        fields = ["name", "targets", "calendar"]


@admin.register(SlaPolicy)
class SlaPolicyAdmin(ServiceAdmin):
    """Targets per priority and business hours, through ``sla_policy_save``."""

    form = SlaPolicyForm
    editable_after_add = True
    list_display = ["name", "id", "created_at"]
    search_fields = ["name", "id"]
    fields = ["id", "name", "targets", "calendar", "created_at"]
    readonly_fields = ["id", "created_at"]

    def save_through_service(self, form, *, actor, change):
        data = form.cleaned_data
        return sla_policy_save(
            policy=form.instance if change else None,
            name=data["name"],
            targets=data["targets"] or {},
            calendar=data["calendar"] or {},
            actor=actor,
        )


class DepartmentForm(ServiceForm):
    members = forms.ModelMultipleChoiceField(
        queryset=User.objects.filter(is_staff=True, is_active=True).order_by("email"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Staff who work its tickets in the desk and receive its notices.",
    )

    class Meta:
        model = Department
        fields = [
            "name",
            "email",
            "default_priority",
            "sla_policy",
            "customer_visible",
            "active",
            "members",
        ]


@admin.register(Department)
class DepartmentAdmin(ServiceAdmin):
    """Departments through ``department_save``; deactivated rather than deleted."""

    form = DepartmentForm
    editable_after_add = True
    list_display = ["name", "email", "default_priority", "sla_policy", "customer_visible", "active"]
    list_filter = ["active", "customer_visible"]
    list_select_related = ["sla_policy"]
    search_fields = ["name", "email", "id"]
    fields = [
        "id",
        "name",
        "email",
        "default_priority",
        "sla_policy",
        "customer_visible",
        "active",
        "members",
        "created_at",
    ]
    readonly_fields = ["id", "created_at"]

    def save_through_service(self, form, *, actor, change):
        data = form.cleaned_data
        return department_save(
            department=form.instance if change else None,
            name=data["name"],
            email=data["email"],
            default_priority=data["default_priority"],
            sla_policy=data["sla_policy"],
            customer_visible=data["customer_visible"],
            active=data["active"],
            members=list(data["members"]),
            actor=actor,
        )


class MacroForm(ServiceForm):
    class Meta:
        model = Macro
        fields = ["name", "department", "set_status", "body"]


@admin.register(Macro)
class MacroAdmin(ServiceAdmin):
    """Canned responses through ``macro_create`` / ``macro_update``; removed by the action
    (``macro_delete``)."""

    form = MacroForm
    editable_after_add = True
    list_display = ["name", "department", "set_status", "created_at"]
    list_filter = ["department"]
    list_select_related = ["department"]
    search_fields = ["name", "body"]
    fields = ["id", "name", "department", "set_status", "body", "created_at"]
    readonly_fields = ["id", "created_at"]
    actions = ["delete_selected_macros"]

    def save_through_service(self, form, *, actor, change):
        data = {name: form.cleaned_data[name] for name in MacroForm.Meta.fields}
        if not change:
            return macro_create(**data, actor=actor)
        changes = {name: data[name] for name in form.changed_data}
        if not changes:
            return form.instance
        return macro_update(macro=form.instance, changes=changes, actor=actor)

    @admin.action(description="Delete selected macros", permissions=["change"])
    def delete_selected_macros(self, request, queryset):
        self.run(request, queryset, macro_delete, "macro", "Deleted")


class OpenTicketForm(forms.Form):
    requester = forms.ModelChoiceField(
        queryset=User.objects.none(), help_text="The member the ticket is for: replies reach them."
    )
    department = forms.ModelChoiceField(queryset=Department.objects.filter(active=True))
    priority = forms.ChoiceField(
        choices=[("", "The department's default"), *Priority.choices], required=False
    )
    subject = forms.CharField(max_length=200)
    body = forms.CharField(widget=forms.Textarea({"rows": 6}), label="First message")

    def __init__(self, *args, account: Account, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["requester"].queryset = User.objects.filter(
            memberships__account=account, is_active=True
        ).order_by("email")
        self.fields["requester"].label_from_instance = lambda user: (
            f"{user.name} <{user.email}>" if user.name else user.email
        )


@admin.register(Ticket)
class TicketAdmin(ReadOnlyAdmin):
    """Every ticket, to find and count; each opens in the desk, where it is worked."""

    list_display = [
        "number",
        "subject",
        "status",
        "priority",
        "department",
        "account",
        "requester_email",
        "assignee",
        "updated_at",
    ]
    list_filter = ["status", "priority", "department", "channel"]
    list_select_related = ["department", "account", "assignee"]
    search_fields = ["=number", "subject", "requester_email", "account__name", "=id"]
    readonly_fields = ["desk_link"]
    fields = [
        "desk_link",
        "number",
        "subject",
        "status",
        "priority",
        "department",
        "account",
        "requester_email",
        "assignee",
        "tags",
        "channel",
        "created_at",
        "updated_at",
    ]
    show_full_result_count = False

    # --- "Open a ticket for this customer" (the customer 360's action) -----------------------

    def get_urls(self):
        view = self.admin_site.admin_view(self.open_view)
        return [path("open/", view, name="support_ticket_open"), *super().get_urls()]

    def open_view(self, request: HttpRequest) -> HttpResponse:
        """A ticket staff open for a customer (``ticket_open(by_staff=True)``), for one of its
        members, then worked in the desk: for staff who work the desk (``accounts/roles.py``)."""
        if not (request.user.works_desk and self.has_view_permission(request)):
            raise PermissionDenied
        account = Account.objects.filter(pk=request.GET.get("account", "")).first()
        if account is None:
            raise Http404("No such account.")
        form = OpenTicketForm(request.POST if request.method == "POST" else None, account=account)
        if form.is_bound and form.is_valid():
            data = form.cleaned_data
            member = data["requester"]
            try:
                ticket, _ = ticket_open(
                    requester=Requester(
                        email=member.email, name=member.name, user=member, account=account
                    ),
                    subject=data["subject"],
                    body=data["body"],
                    department=data["department"],
                    priority=data["priority"] or None,
                    channel=Channel.WEB,
                    actor=Actor.from_request(request),
                    by_staff=True,
                )
            except ApplicationError as refusal:
                add_refusal(form, refusal, {})
            else:
                self.message_user(
                    request, f"Opened ticket #{ticket.number} for {account}.", messages.SUCCESS
                )
                return redirect("desk_ticket", ticket.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Open a ticket for {account.name}",
            "account": account,
            "form": form,
        }
        return TemplateResponse(request, "admin/support/ticket/open.html", context)

    @admin.display(description="Desk")
    def desk_link(self, obj: Ticket) -> str:
        url = reverse("desk_ticket", args=[obj.pk])
        return format_html('<a href="{}">Open ticket #{} in the desk</a>', url, obj.number)

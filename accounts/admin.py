from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from accounts.forms import ProfileForm
from accounts.keys import KEY_ID_LENGTH, TOKEN_PREFIX
from accounts.models import Account, ApiKey, Invitation, Membership, SshKey, User
from accounts.service_admin import ReadOnlyAdmin
from accounts.services import (
    ACCOUNT_LIMITS,
    ACCOUNT_NOTE_LIMIT,
    account_changes_clean,
    account_note_add,
    account_suspend,
    account_unsuspend,
    account_update,
    api_key_revoke,
    ssh_key_delete,
    user_update_profile,
)
from hosting.errors import ApplicationError, ValidationFailed


class MembershipInline(admin.TabularInline):
    """Shown, not edited: roles change and members leave through the team services (the last
    owner, key revocation and the member.* events are theirs), in the dashboard or the API."""

    model = Membership
    extra = 0
    fields = readonly_fields = ["user", "role", "created_at"]
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class AccountAdminForm(forms.ModelForm):
    """The account's name and limits, checked by the same rule as the API's (the service's)."""

    class Meta:
        model = Account
        fields = ["name", *ACCOUNT_LIMITS]

    def clean(self):
        cleaned = super().clean()
        changes = {field: cleaned[field] for field in self.changed_data if field in cleaned}
        try:
            account_changes_clean(**changes)
        except ValidationFailed as refused:
            for problem in refused.details["fields"]:
                self.add_error(problem["name"], problem["message"])
        return cleaned


class UserAdminForm(UserChangeForm):
    """Django's user form, whose e-mail is checked by the profile page's rule: both change it
    through ``user_update_profile``, which lowercases it and keeps it unique in any case."""

    clean_email = ProfileForm.clean_email

    def clean(self):
        cleaned = super().clean()
        staff, superuser = cleaned.get("is_staff"), cleaned.get("is_superuser")
        role = cleaned.get("staff_role")
        if staff and not superuser and not role:
            self.add_error("staff_role", "Choose the staff member's job: it decides their rights.")
        if role and not staff:
            self.add_error("staff_role", "Only staff have a staff role.")
        return cleaned


# Who may sign in and whether as staff: Django's own flags, which no service owns.
USER_ACCESS_FIELDS = ("is_active", "is_staff", "staff_role", "is_superuser")


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    """Name and e-mail change through ``user_update_profile`` (the ``user.updated`` events of
    the user's accounts); the access flags, groups and password are Django's own, and a staff
    member's job (``staff_role``, whose rights are the table in ``accounts/roles.py``) is set
    beside them.

    Users are neither added nor deleted here: customers sign up or are invited, staff create
    customers with ``POST /v1/admin/customers`` and staff users with ``createsuperuser``; a user
    leaves an account through the team services (last owner, key revocation), and is turned off
    here with ``is_active`` rather than deleted, so their history stays.
    """

    form = UserAdminForm
    ordering = ["email"]
    list_display = [
        "email",
        "name",
        "is_active",
        "is_staff",
        "staff_role",
        "sftp_login",
        "date_joined",
        "last_login",
    ]
    list_filter = ["is_active", "is_staff", "staff_role", "is_superuser"]
    search_fields = ["email", "name", "id", "sftp_login"]
    readonly_fields = [
        "id",
        "date_joined",
        "last_login",
        "sftp_login",
        "has_sftp_password",
        "sftp_password_set_at",
        "ssh_keys_link",
    ]
    fieldsets = [
        (None, {"fields": ["id", "email", "password"]}),
        ("Profile", {"fields": ["name"]}),
        (
            "SFTP",
            {
                "fields": [
                    "sftp_login",
                    "has_sftp_password",
                    "sftp_password_set_at",
                    "ssh_keys_link",
                ],
                "description": "The user's own, changed by them on their SSH keys & SFTP page.",
            },
        ),
        ("Access", {"fields": ["is_active", "is_staff", "staff_role", "is_superuser", "groups"]}),
        ("Dates", {"fields": ["date_joined", "last_login"]}),
    ]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="SFTP password set", boolean=True)
    def has_sftp_password(self, obj: User) -> bool:
        return obj.has_sftp_password

    @admin.display(description="SSH keys")
    def ssh_keys_link(self, obj: User) -> str:
        url = reverse("admin:accounts_sshkey_changelist") + "?" + urlencode({"user__id": obj.pk})
        return format_html('<a href="{}">{} SSH keys</a>', url, obj.ssh_keys.count())

    def save_model(self, request, obj, form, change) -> None:
        changed = form.changed_data
        if {"name", "email"} & set(changed):
            user_update_profile(
                user=obj,
                name=form.cleaned_data["name"],
                email=form.cleaned_data["email"],
                actor=Actor.from_request(request),
            )
        # Only the edited flags: a whole-row save would write the name and e-mail past the
        # service, and write back whatever else changed since the page was read.
        obj.save(update_fields=[name for name in changed if name in USER_ACCESS_FIELDS])


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    """Every change is a service call: the form's name and limits through ``account_update``
    (with its ``account.updated`` event), suspension through the actions."""

    form = AccountAdminForm
    # The customer 360: below the account's own fields and its members, each higher app's
    # section (servers and bots, subscriptions, invoices and balance, tickets, activity) from
    # its template tag library, named by the template and never imported here (the layers of
    # pyproject.toml); staff notes and the suspend buttons are accounts' own.
    change_form_template = "admin/accounts/account/change_form.html"

    list_display = ["name", "id", "status", "suspended_at", "max_api_keys", "created_at"]
    list_filter = ["status", "require_second_factor", "created_at"]
    search_fields = ["name", "id", "memberships__user__email"]
    readonly_fields = [
        "id",
        "status",
        # The account's owners decide it (Team page, PATCH /v1/account); staff see it.
        "require_second_factor",
        "suspended_at",
        "suspended_reason",
        "created_at",
        "updated_at",
        "invoices_link",
    ]
    inlines = [MembershipInline]
    actions = ["suspend_accounts", "unsuspend_accounts"]

    def has_add_permission(self, request) -> bool:
        return False  # customers sign up, or staff create them with POST /v1/admin/customers

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # suspend instead: an account's history stays

    def save_model(self, request, obj, form, change):
        changes = {field: form.cleaned_data[field] for field in form.changed_data}
        account_update(account=obj, actor=Actor.from_request(request), **changes)

    # --- The customer 360's own actions: suspend, unsuspend, a staff note ---------------------

    def get_urls(self):
        def route(suffix: str, view, name: str):
            return path(
                f"<path:object_id>/{suffix}",
                self.admin_site.admin_view(require_POST(view)),
                name=f"accounts_account_{name}",
            )

        # Ahead of the defaults, whose catch-all "<path:object_id>/" would take them otherwise.
        return [
            route("suspend/", self.suspend_view, "suspend"),
            route("unsuspend/", self.unsuspend_view, "unsuspend"),
            route("notes/", self.note_view, "note"),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["customer"] = obj
            context["may_suspend"] = self.has_change_permission(request, obj)
            context["notes"] = obj.staff_notes.select_related("author")[:20]
            context["note_limit"] = ACCOUNT_NOTE_LIMIT
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _account(self, request: HttpRequest, object_id: str, *, change: bool) -> Account:
        account = self.get_object(request, unquote(object_id))
        if account is None:
            raise Http404
        allowed = (
            self.has_change_permission(request, account)
            if change
            else self.has_view_permission(request, account)
        )
        if not allowed:
            raise PermissionDenied
        return account

    def _back(self, account: Account, anchor: str = "") -> HttpResponse:
        url = reverse("admin:accounts_account_change", args=[quote(account.pk)])
        return redirect(url + anchor)

    def suspend_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        account = self._account(request, object_id, change=True)
        self.suspend_accounts(request, Account.objects.filter(pk=account.pk))
        return self._back(account)

    def unsuspend_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        account = self._account(request, object_id, change=True)
        self.unsuspend_accounts(request, Account.objects.filter(pk=account.pk))
        return self._back(account)

    def note_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A staff note (``account_note_add``): any staff member who may see the account."""
        account = self._account(request, object_id, change=False)
        try:
            note = account_note_add(
                account=account,
                body=request.POST.get("body", ""),
                actor=Actor.from_request(request),
            )
        except ApplicationError as refusal:
            self.message_user(request, f"Note not added: {refusal.message}", messages.ERROR)
        else:
            self.log_change(request, account, f"Added a staff note ({note.pk}).")
            self.message_user(request, "Note added.", messages.SUCCESS)
        return self._back(account, "#customer-notes")

    @admin.display(description="Invoices")
    def invoices_link(self, obj: Account) -> str:
        # Billing sits above accounts: its admin page is named by its URL, never imported.
        url = reverse("admin:billing_invoice_changelist")
        query = urlencode({"account__id__exact": obj.pk})
        return format_html('<a href="{}?{}">Invoices of this account</a>', url, query)

    @admin.action(description="Suspend selected accounts", permissions=["change"])
    def suspend_accounts(self, request, queryset):
        actor = Actor.from_request(request)
        done = 0
        for account in queryset.filter(status=Account.Status.ACTIVE):
            account_suspend(account=account, reason=f"Suspended by {request.user}", actor=actor)
            done += 1
        message = ngettext("Suspended %d account.", "Suspended %d accounts.", done) % done
        self.message_user(request, message, messages.SUCCESS if done else messages.INFO)

    @admin.action(description="Unsuspend selected accounts", permissions=["change"])
    def unsuspend_accounts(self, request, queryset):
        actor = Actor.from_request(request)
        done = 0
        for account in queryset.filter(status=Account.Status.SUSPENDED):
            account_unsuspend(account=account, actor=actor)
            done += 1
        message = ngettext("Unsuspended %d account.", "Unsuspended %d accounts.", done) % done
        self.message_user(request, message, messages.SUCCESS if done else messages.INFO)


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    """Read-only: invitations are sent, accepted and revoked through the team services (with
    their member.* events), by the account's owners and admins in the dashboard or the API."""

    list_display = ["email", "account", "role", "invitation_status", "created_at", "expires_at"]
    list_filter = ["role", "created_at"]
    search_fields = ["email", "id", "account__name", "account__id"]
    list_select_related = ["account"]
    readonly_fields = [
        "id",
        "account",
        "email",
        "role",
        "invited_by",
        "created_at",
        "expires_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    ]
    exclude = ["token_digest"]

    @admin.display(description="Status")
    def invitation_status(self, obj: Invitation) -> str:
        return obj.status


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    """Read-only: see ``MembershipInline``."""

    list_display = ["user", "account", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "account__name", "account__id"]
    readonly_fields = ["user", "account", "role", "created_at"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Staff find a key by the ``hms_<key id>`` its owner reads to them, and revoke it.

    The digest and pepper are never shown, and keys cannot be added here: a token exists only
    in the response that created it. Revoking (``api_key_revoke``) is the only change: a key's
    page is view-only, as no service edits a key's name, networks or expiry.
    """

    list_display = [
        "name",
        "prefix",
        "account",
        "user",
        "key_status",
        "scope_list",
        "last_used_at",
        "last_used_ip",
        "expires_at",
        "created_at",
    ]
    list_filter = ["revoked_at", "expires_at", "created_at"]
    search_fields = ["key_id", "id", "name", "user__email", "account__name", "account__id"]
    list_select_related = ["account", "user"]
    fields = [
        "id",
        "prefix",
        "name",
        "account",
        "user",
        "scopes",
        "allowed_ips",
        "expires_at",
        "revoked_at",
        "last_used_at",
        "last_used_ip",
        "created_by",
        "created_at",
    ]
    readonly_fields = fields
    actions = ["revoke_keys"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # The changelist's revoke action needs "change"; one key's page does not, and saving
        # it would write back the whole row, undoing a revocation made since it was read.
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoke instead: the key's events keep pointing at it

    def get_search_results(self, request, queryset, search_term):
        # A pasted "hms_<key id>…" or a whole token finds its key by the key id inside it.
        term = search_term.strip().rstrip("…").rstrip(".")
        if term.startswith(TOKEN_PREFIX):
            term = term[len(TOKEN_PREFIX) : len(TOKEN_PREFIX) + KEY_ID_LENGTH]
        return super().get_search_results(request, queryset, term)

    @admin.display(description="Key")
    def prefix(self, obj: ApiKey) -> str:
        return obj.display_prefix

    @admin.display(description="Status")
    def key_status(self, obj: ApiKey) -> str:
        return obj.status

    @admin.display(description="Scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes)

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request, queryset):
        revoked = 0
        for api_key in queryset.unrevoked():
            api_key_revoke(api_key=api_key, actor=Actor.from_request(request))
            revoked += 1
        self.message_user(
            request,
            ngettext("Revoked %d API key.", "Revoked %d API keys.", revoked) % revoked,
            messages.SUCCESS,
        )


@admin.register(SshKey)
class SshKeyAdmin(admin.ModelAdmin):
    """Users' SSH keys for SFTP, found by fingerprint, user or name; revoking one deletes it
    through ``ssh_key_delete`` (its ``ssh_key.deleted`` events), the only change made here: keys
    are added by their users, and a key's page is view-only."""

    list_display = ["name", "user", "key_type", "bits", "fingerprint", "last_used_at", "created_at"]
    list_filter = ["key_type", "created_at", "last_used_at"]
    search_fields = ["fingerprint", "id", "name", "user__email", "user__sftp_login", "user__id"]
    list_select_related = ["user"]
    fields = [
        "id",
        "name",
        "user",
        "key_type",
        "bits",
        "fingerprint",
        "public_key",
        "created_at",
        "last_used_at",
    ]
    readonly_fields = fields
    actions = ["revoke_ssh_keys"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # The changelist's revoke action needs "change"; one key's page is view-only.
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoke through the service instead: its events are recorded

    @admin.action(description="Revoke (delete) selected SSH keys", permissions=["change"])
    def revoke_ssh_keys(self, request, queryset):
        revoked = 0
        for ssh_key in queryset.select_related("user"):
            ssh_key_delete(ssh_key=ssh_key, actor=Actor.from_request(request))
            revoked += 1
        self.message_user(
            request,
            ngettext("Revoked %d SSH key.", "Revoked %d SSH keys.", revoked) % revoked,
            messages.SUCCESS,
        )


# django-allauth registers its rows for free editing; here they are read only, as every change
# goes through the flows that record it (a factor's events, the sessions' sign-out): staff see a
# person's second factors, e-mail records and sessions, and change none of them here.
def _read_only_allauth_admins() -> None:
    from allauth.account.models import EmailAddress
    from allauth.mfa.models import Authenticator
    from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
    from allauth.usersessions.models import UserSession

    from accounts.service_admin import ReadOnlyAdmin

    for model in (Authenticator, UserSession, EmailAddress, SocialAccount):
        if admin.site.is_registered(model):
            admin.site.unregister(model)
        admin.site.register(model, ReadOnlyAdmin)
    # Single sign-on's providers are the host's environment variables (README), not rows an
    # admin page could add; no provider's tokens are kept (SOCIALACCOUNT_STORE_TOKENS).
    for model in (SocialApp, SocialToken):
        if admin.site.is_registered(model):
            admin.site.unregister(model)


_read_only_allauth_admins()

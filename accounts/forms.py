"""Dashboard forms: they parse and check input; the services in accounts/services.py decide.

A service refuses with an ``ApplicationError`` whose ``details.fields`` name the offending
inputs; ``ServiceErrorFormMixin.add_service_error`` (hosting/dashboard/refusals.py) puts those
messages next to the matching field, so a refusal reads like any other form error and what was
typed is kept.
"""

import json
from datetime import timedelta

from allauth.mfa.base.forms import AuthenticateForm, ReauthenticateForm
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, SetPasswordMixin
from django.contrib.auth.forms import PasswordResetForm as DjangoPasswordResetForm
from django.core.exceptions import ValidationError
from django.utils import timezone, translation
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from accounts.models import User
from accounts.roles import ALL_SCOPES, Role
from accounts.services.sftp import (
    LOGIN_MAX,
    LOGIN_RULES,
    MAX_PUBLIC_KEY_LENGTH,
    MAX_SFTP_PASSWORD_LENGTH,
)
from accounts.sign_in import FactorCodeLimitMixin, SignInLimitFormMixin
from hosting.dashboard.refusals import ServiceErrorFormMixin
from hosting.errors import ApplicationError
from hosting.i18n import language_of


def _email_is_taken(email: str, *, exclude: User | None = None) -> bool:
    users = User.objects.filter(email__iexact=email)
    if exclude is not None:
        users = users.exclude(pk=exclude.pk)
    return users.exists()


# --- Signing up and in ----------------------------------------------------------------------


class SignupForm(ServiceErrorFormMixin, SetPasswordMixin, forms.Form):
    service_field_names = {"name": "account_name"}

    name = forms.CharField(label=_("Your name"), max_length=150)
    email = forms.EmailField(
        label=_("E-mail"), max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    account_name = forms.CharField(
        label=_("Account name"),
        max_length=150,
        help_text=_("Your company or project; you can invite your team to it later."),
    )
    password1, password2 = SetPasswordMixin.create_password_fields()

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if _email_is_taken(email):
            raise ValidationError(
                _("An account with this e-mail address already exists; sign in instead."),
                code="unique",
            )
        return email

    def clean(self):
        cleaned = super().clean()
        self.validate_passwords()
        self.validate_password_for_user(User(email=cleaned.get("email", "")))
        return cleaned


class LoginForm(SignInLimitFormMixin, AuthenticationForm):
    """Django's sign-in form with the e-mail as the user name, under the sign-in limits."""

    username = forms.EmailField(
        label=_("E-mail"),
        max_length=254,
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )


class PasswordResetForm(DjangoPasswordResetForm):
    """Django's, with the e-mail in the language its recipient chose in Profile (else the one
    the reset was asked in)."""

    def send_mail(self, subject_template_name, email_template_name, context, *args, **kwargs):
        language = language_of(context.get("user")) or translation.get_language()
        with translation.override(language):
            super().send_mail(subject_template_name, email_template_name, context, *args, **kwargs)


class AdminLoginForm(SignInLimitFormMixin, AdminAuthenticationForm):
    """Django admin's sign-in form (staff only), under the same limits as the dashboard's."""


class AccountCreateForm(ServiceErrorFormMixin, forms.Form):
    service_field_names = {"name": "account_name"}

    account_name = forms.CharField(label=_("Account name"), max_length=150)


class SwitchAccountForm(forms.Form):
    account_id = forms.CharField(max_length=64)


# --- API keys -------------------------------------------------------------------------------

SCOPE_AREAS = {
    "servers": _("Servers"),
    "bots": _("Bots"),
    "billing": _("Billing"),
    "tickets": _("Tickets"),
    "analytics": _("Analytics"),
    "webhooks": _("Webhooks"),
    "account": _("Account"),
    "api_keys": _("API keys"),
    "profile": _("Your profile"),
    "admin": _("Staff"),
}
PRESETS = {"read": {"read"}, "write": {"read", "write"}, "power": {"read", "write", "power"}}
EXPIRY_CHOICES = [
    ("30", _("30 days")),
    ("90", _("90 days")),
    ("365", _("1 year")),
    ("never", _("Never")),
]


def scope_summary(scopes: list[str]) -> list[tuple[str, str]]:
    """``["servers:read", "servers:power"]`` as ``[("Servers", "read, power")]``."""
    order = {scope: position for position, scope in enumerate(ALL_SCOPES)}
    actions: dict[str, list[str]] = {}
    for scope in sorted(scopes, key=lambda scope: order.get(scope, len(order))):
        area, _colon, action = scope.partition(":")
        actions.setdefault(area, []).append(action)
    return [(SCOPE_AREAS.get(area, area), ", ".join(names)) for area, names in actions.items()]


class ApiKeyCreateForm(ServiceErrorFormMixin, forms.Form):
    """Name, scopes (or a preset), expiry and allowed networks of a new key.

    Every scope is a valid choice: the ones the user's role may not grant are shown disabled
    and, if sent anyway, refused by ``api_key_create`` with a message next to the field.
    """

    service_field_names = {"expires_at": "expiry"}

    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        help_text=_("What the key is for, e.g. “CI deploys” or “Billing export”."),
    )
    preset = forms.ChoiceField(
        label=_("Preset"),
        required=False,
        choices=[
            ("", _("Custom: the scopes ticked below")),
            ("read", _("Read only: every read scope you may grant")),
            ("write", _("Read and write")),
            ("power", _("Read, write and power")),
        ],
        help_text=_("A preset replaces the ticked scopes with every such scope you may grant."),
    )
    scopes = forms.MultipleChoiceField(
        required=False, choices=list(ALL_SCOPES.items()), widget=forms.CheckboxSelectMultiple
    )
    expiry = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="90", label=_("Expires after"))
    allowed_ips = forms.CharField(
        required=False,
        label=_("Allowed IP addresses"),
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "203.0.113.7\n198.51.100.0/24"}),
        help_text=_("One IP address or CIDR network per line. Leave empty to allow any address."),
    )

    def __init__(self, *args, grantable: list[str], is_staff: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.grantable = grantable
        self.is_staff = is_staff

    def preset_actions_json(self) -> str:
        """For the page's script: which scopes' actions each preset ticks (as ``clean`` does)."""
        return json.dumps({name: sorted(actions) for name, actions in PRESETS.items()})

    def clean(self):
        cleaned = super().clean()
        preset = cleaned.get("preset")
        if preset:
            actions = PRESETS[preset]
            cleaned["scopes"] = [
                scope for scope in self.grantable if scope.partition(":")[2] in actions
            ]
        return cleaned

    def clean_allowed_ips(self) -> list[str]:
        lines = self.cleaned_data["allowed_ips"].splitlines()
        return [line.strip() for line in lines if line.strip()]

    def expires_at(self):
        expiry = self.cleaned_data["expiry"]
        return None if expiry == "never" else timezone.now() + timedelta(days=int(expiry))

    def scope_groups(self) -> list[dict]:
        """The scope checkboxes grouped by area, each with whether it may be granted and ticked."""
        if self.is_bound:
            ticked = set(self.data.getlist(self.add_prefix("scopes")))
        else:
            ticked = set(self.initial.get("scopes", ()))
        groups: dict[str, dict] = {}
        for scope, description in ALL_SCOPES.items():
            area = scope.partition(":")[0]
            if area == "admin" and not self.is_staff:
                continue  # staff's scopes: not shown to customers at all
            group = groups.setdefault(area, {"label": SCOPE_AREAS.get(area, area), "scopes": []})
            group["scopes"].append(
                {
                    "value": scope,
                    "description": description,
                    "id": "scope-" + scope.replace(":", "-").replace("_", "-"),
                    "action": scope.partition(":")[2],
                    "enabled": scope in self.grantable,
                    "checked": scope in ticked,
                }
            )
        return list(groups.values())


# --- Team -----------------------------------------------------------------------------------


def role_choices(*, may_grant_owner: bool) -> list[tuple[str, str]]:
    return [(role, label) for role, label in Role.choices if may_grant_owner or role != Role.OWNER]


class InviteForm(ServiceErrorFormMixin, forms.Form):
    email = forms.EmailField(label=_("E-mail"), max_length=254)
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.DEVELOPER)

    def __init__(self, *args, may_grant_owner: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = role_choices(may_grant_owner=may_grant_owner)

    def add_service_error(self, error: ApplicationError) -> None:
        if error.code == "conflict":  # already a member: about the address typed
            self.add_error("email", error.message)
        else:
            super().add_service_error(error)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices)


class InvitationSignupForm(SetPasswordMixin, forms.ModelForm):
    """Name and password of someone joining through an invitation who has no user yet."""

    password1, password2 = SetPasswordMixin.create_password_fields()

    class Meta:
        model = User
        fields = ["name"]
        labels = {"name": _("Your name")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].required = True

    def clean(self):
        cleaned = super().clean()
        if _email_is_taken(self.instance.email):
            raise ValidationError(_("A user with this e-mail address exists; sign in instead."))
        self.validate_passwords()
        self.validate_password_for_user(self.instance)
        return cleaned


# --- Profile and activity -------------------------------------------------------------------


class ProfileForm(ServiceErrorFormMixin, forms.ModelForm):
    class Meta:
        model = User
        fields = ["name", "email", "language"]
        labels = {"name": _("Name"), "email": _("E-mail"), "language": _("Language")}
        help_texts = {"language": _("The dashboard's and your e-mails' language.")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Each language by its own name; blank: whatever the browser asks for.
        self.fields["language"].choices = [("", _("Your browser's language")), *settings.LANGUAGES]

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if _email_is_taken(email, exclude=self.instance):
            raise ValidationError(_("Another user has this e-mail address."), code="unique")
        return email


# --- SSH keys and SFTP ----------------------------------------------------------------------


class SshKeyAddForm(ServiceErrorFormMixin, forms.Form):
    public_key = forms.CharField(
        label=_("Public key"),
        max_length=MAX_PUBLIC_KEY_LENGTH,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA… you@laptop"}
        ),
        help_text=_(
            "The contents of your <code>.pub</code> file (e.g. "
            "<code>~/.ssh/id_ed25519.pub</code>): ed25519, ECDSA, or RSA of at least 2,048 bits."
        ),
    )
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        required=False,
        help_text=_("Empty: the key's comment (<code>you@laptop</code>)."),
    )


class SftpPasswordForm(ServiceErrorFormMixin, forms.Form):
    password = forms.CharField(
        label=_("New SFTP password"),
        max_length=MAX_SFTP_PASSWORD_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=_(
            "Not your account's password: one for SFTP only, with the same rules (at "
            "least 8 characters, not common, not all digits)."
        ),
    )
    confirm = forms.CharField(
        label=_("Repeat it"),
        max_length=MAX_SFTP_PASSWORD_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("password") and cleaned.get("password") != cleaned.get("confirm"):
            self.add_error("confirm", _("The two passwords differ."))
        return cleaned


class SftpLoginForm(ServiceErrorFormMixin, forms.Form):
    sftp_login = forms.CharField(
        label=_("SFTP login"),
        max_length=LOGIN_MAX,
        strip=False,
        help_text=format_lazy(
            "{} {}",
            _(LOGIN_RULES),  # marked where it is written (gettext_noop)
            _("Your SFTP user name for a server is this, a dot and the server's short id."),
        ),
    )


class FactorAuthenticateForm(FactorCodeLimitMixin, AuthenticateForm):
    """The second factor's code after the password (MFA_FORMS), in the sign-in's limits."""


class FactorReauthenticateForm(FactorCodeLimitMixin, ReauthenticateForm):
    """The factor's code typed again for a sensitive action, in the sign-in's limits."""

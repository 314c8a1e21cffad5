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
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, SetPasswordMixin
from django.core.exceptions import ValidationError
from django.utils import timezone

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


def _email_is_taken(email: str, *, exclude: User | None = None) -> bool:
    users = User.objects.filter(email__iexact=email)
    if exclude is not None:
        users = users.exclude(pk=exclude.pk)
    return users.exists()


# --- Signing up and in ----------------------------------------------------------------------


class SignupForm(ServiceErrorFormMixin, SetPasswordMixin, forms.Form):
    service_field_names = {"name": "account_name"}

    name = forms.CharField(label="Your name", max_length=150)
    email = forms.EmailField(
        label="E-mail", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    account_name = forms.CharField(
        label="Account name",
        max_length=150,
        help_text="Your company or project; you can invite your team to it later.",
    )
    password1, password2 = SetPasswordMixin.create_password_fields()

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if _email_is_taken(email):
            raise ValidationError(
                "An account with this e-mail address already exists; sign in instead.",
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
        label="E-mail",
        max_length=254,
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )


class AdminLoginForm(SignInLimitFormMixin, AdminAuthenticationForm):
    """Django admin's sign-in form (staff only), under the same limits as the dashboard's."""


class AccountCreateForm(ServiceErrorFormMixin, forms.Form):
    service_field_names = {"name": "account_name"}

    account_name = forms.CharField(label="Account name", max_length=150)


class SwitchAccountForm(forms.Form):
    account_id = forms.CharField(max_length=64)


# --- API keys -------------------------------------------------------------------------------

SCOPE_AREAS = {
    "servers": "Servers",
    "bots": "Bots",
    "billing": "Billing",
    "tickets": "Tickets",
    "analytics": "Analytics",
    "webhooks": "Webhooks",
    "account": "Account",
    "api_keys": "API keys",
    "profile": "Your profile",
    "admin": "Staff",
}
PRESETS = {"read": {"read"}, "write": {"read", "write"}, "power": {"read", "write", "power"}}
EXPIRY_CHOICES = [
    ("30", "30 days"),
    ("90", "90 days"),
    ("365", "1 year"),
    ("never", "Never"),
]


def scope_summary(scopes: list[str]) -> list[tuple[str, str]]:
    """``["servers:read", "servers:power"]`` as ``[("Servers", "read, power")]``."""
    order = {scope: position for position, scope in enumerate(ALL_SCOPES)}
    actions: dict[str, list[str]] = {}
    for scope in sorted(scopes, key=lambda scope: order.get(scope, len(order))):
        area, _, action = scope.partition(":")
        actions.setdefault(area, []).append(action)
    return [(SCOPE_AREAS.get(area, area), ", ".join(names)) for area, names in actions.items()]


class ApiKeyCreateForm(ServiceErrorFormMixin, forms.Form):
    """Name, scopes (or a preset), expiry and allowed networks of a new key.

    Every scope is a valid choice: the ones the user's role may not grant are shown disabled
    and, if sent anyway, refused by ``api_key_create`` with a message next to the field.
    """

    service_field_names = {"expires_at": "expiry"}

    name = forms.CharField(
        max_length=100,
        help_text="What the key is for, e.g. “CI deploys” or “Billing export”.",
    )
    preset = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Custom: the scopes ticked below"),
            ("read", "Read only: every read scope you may grant"),
            ("write", "Read and write"),
            ("power", "Read, write and power"),
        ],
        help_text="A preset replaces the ticked scopes with every such scope you may grant.",
    )
    scopes = forms.MultipleChoiceField(
        required=False, choices=list(ALL_SCOPES.items()), widget=forms.CheckboxSelectMultiple
    )
    expiry = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="90", label="Expires after")
    allowed_ips = forms.CharField(
        required=False,
        label="Allowed IP addresses",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "203.0.113.7\n198.51.100.0/24"}),
        help_text="One IP address or CIDR network per line. Leave empty to allow any address.",
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
    email = forms.EmailField(label="E-mail", max_length=254)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.DEVELOPER)

    def __init__(self, *args, may_grant_owner: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = role_choices(may_grant_owner=may_grant_owner)

    def add_service_error(self, error: ApplicationError) -> None:
        if error.code == "conflict":  # already a member: about the address typed
            self.add_error("email", error.message)
        else:
            super().add_service_error(error)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class InvitationSignupForm(SetPasswordMixin, forms.ModelForm):
    """Name and password of someone joining through an invitation who has no user yet."""

    password1, password2 = SetPasswordMixin.create_password_fields()

    class Meta:
        model = User
        fields = ["name"]
        labels = {"name": "Your name"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].required = True

    def clean(self):
        cleaned = super().clean()
        if _email_is_taken(self.instance.email):
            raise ValidationError("A user with this e-mail address exists; sign in instead.")
        self.validate_passwords()
        self.validate_password_for_user(self.instance)
        return cleaned


# --- Profile and activity -------------------------------------------------------------------


class ProfileForm(ServiceErrorFormMixin, forms.ModelForm):
    class Meta:
        model = User
        fields = ["name", "email", "language"]
        labels = {"name": "Name", "email": "E-mail", "language": "Language"}

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if _email_is_taken(email, exclude=self.instance):
            raise ValidationError("Another user has this e-mail address.", code="unique")
        return email


# --- SSH keys and SFTP ----------------------------------------------------------------------


class SshKeyAddForm(ServiceErrorFormMixin, forms.Form):
    public_key = forms.CharField(
        label="Public key",
        max_length=MAX_PUBLIC_KEY_LENGTH,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA… you@laptop"}
        ),
        help_text="The contents of your <code>.pub</code> file (e.g. "
        "<code>~/.ssh/id_ed25519.pub</code>): ed25519, ECDSA, or RSA of at least 2,048 bits.",
    )
    name = forms.CharField(
        label="Name",
        max_length=100,
        required=False,
        help_text="Empty: the key's comment (<code>you@laptop</code>).",
    )


class SftpPasswordForm(ServiceErrorFormMixin, forms.Form):
    password = forms.CharField(
        label="New SFTP password",
        max_length=MAX_SFTP_PASSWORD_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Not your account's password: one for SFTP only, with the same rules (at "
        "least 8 characters, not common, not all digits).",
    )
    confirm = forms.CharField(
        label="Repeat it",
        max_length=MAX_SFTP_PASSWORD_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("password") and cleaned.get("password") != cleaned.get("confirm"):
            self.add_error("confirm", "The two passwords differ.")
        return cleaned


class SftpLoginForm(ServiceErrorFormMixin, forms.Form):
    sftp_login = forms.CharField(
        label="SFTP login",
        max_length=LOGIN_MAX,
        strip=False,
        help_text=f"{LOGIN_RULES} Your SFTP user name for a server is this, a dot and the "
        "server's short id.",
    )


class FactorAuthenticateForm(FactorCodeLimitMixin, AuthenticateForm):
    """The second factor's code after the password (MFA_FORMS), in the sign-in's limits."""


class FactorReauthenticateForm(FactorCodeLimitMixin, ReauthenticateForm):
    """The factor's code typed again for a sensitive action, in the sign-in's limits."""

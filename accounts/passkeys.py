"""Passkeys and security keys (WebAuthn, django-allauth's MFA) in our sign-in.

allauth checks the browser's assertion (its challenge, origin, signature and counter, through
``fido2``); these forms, named in ``MFA_FORMS``, add our rules around it:

- **Signing in with a passkey** (no password, ``/auth/2fa/webauthn/login/``): each assertion
  counts in the sign-in's bucket of the client address (``login-ip:<ip>``), as a password does;
  over the limit it is refused unread, with the wait. Not in the e-mail's bucket: the person a
  passkey names comes from the assertion itself, so counting it there would let anyone lock a
  person out, and a passkey holds no secret that can be guessed per account. One that signs
  nobody in (registered to nobody, removed since, made for another site or challenge) is a
  ``user.login_failed`` event (``method: "passkey"``) and the sign-in page says so plainly. A
  deactivated person, and staff when ``STAFF_SSO_ONLY``, are refused as with a password.
- **A passkey as the second factor** (after the password) **and to confirm it is you**
  (re-authentication): counted per address and per e-mail, as a code typed there is; one that
  fails is a ``user.factor_failed`` event (``factor: "webauthn"``).
"""

from collections.abc import Callable
from typing import Any

from allauth.core import context
from allauth.mfa.models import Authenticator
from allauth.mfa.webauthn.forms import (
    AuthenticateWebAuthnForm,
    LoginWebAuthnForm,
    ReauthenticateWebAuthnForm,
)
from allauth.mfa.webauthn.internal import auth
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_lazy

from accounts.models import User
from accounts.services import factor_event_record
from accounts.services.passkeys import passkey_failure_record
from accounts.sign_in import STAFF_SSO_ONLY_REFUSAL, count_attempt, count_factor_attempt
from hosting.http import client_ip

PASSKEY_REFUSED = gettext_lazy(
    "That passkey was not accepted: it is not registered to an account here (it may have been "
    "removed), or the sign-in took too long. Try again, or sign in with your password."
)
INACTIVE = gettext_lazy("This account is deactivated: it cannot sign in. Ask the host's support.")
NO_PASSKEY = gettext_lazy("No passkey was offered. Try again, or sign in with your password.")
FACTOR_REFUSED = gettext_lazy(
    "That security key or passkey was not accepted: it is not one registered to your account "
    "(it may have been removed), or it took too long. Try again, or type a code instead."
)


def _named_user(credential: dict) -> User | None:
    """The person an assertion names (its user handle), or None: untrusted until verified."""
    try:
        user = auth.extract_user_from_response(credential)
    except ValidationError:
        return None
    return user if isinstance(user, User) else None


def _registered_to(user: User, credential: dict) -> bool:
    try:
        raw_id = auth.parse_authentication_response(credential).raw_id
    except ValidationError:
        return False
    return auth.get_authenticator_by_credential_id(user, raw_id) is not None


class PasskeyLoginForm(LoginWebAuthnForm):
    """A passkey offered to sign in without a password (see the module's docstring). allauth's
    view puts this form's errors on the sign-in page as messages."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Nothing (or no JSON) sent: the page's script did not run to its end.
        self.fields["credential"].error_messages.update(required=NO_PASSKEY, invalid=NO_PASSKEY)

    def clean_credential(self) -> Authenticator:
        ip = client_ip(context.request)
        if retry_after := count_attempt(f"login-ip:{ip}"):
            raise ValidationError(
                gettext("Too many sign-in attempts; try again in %(seconds)s seconds.")
                % {"seconds": retry_after},
                code="rate_limited",
            )
        credential = self.cleaned_data["credential"]
        try:
            authenticator = super().clean_credential()
        except ValidationError:
            user = _named_user(credential) if isinstance(credential, dict) else None
            registered = user is not None and _registered_to(user, credential)
            reason = "assertion_refused" if registered else "passkey_not_registered"
            passkey_failure_record(user=user, reason=reason, ip=ip)
            raise ValidationError(PASSKEY_REFUSED, code="passkey_refused") from None
        user = authenticator.user
        if not user.is_active:
            passkey_failure_record(user=user, reason="user_inactive", ip=ip)
            raise ValidationError(INACTIVE, code="user_inactive")
        if settings.STAFF_SSO_ONLY and user.is_staff:
            passkey_failure_record(user=user, reason="staff_sso_only", ip=ip)
            raise ValidationError(STAFF_SSO_ONLY_REFUSAL, code="staff_sso_only")
        return authenticator


class _PasskeyFactorMixin:
    """For allauth's forms of a passkey used as a factor by a known person: counted as a code
    typed is; a refusal said plainly, and an event."""

    # Where the refusal goes: allauth's page of the second factor shows the form again (its
    # field is hidden: above the form's buttons, then); its re-authentication with a key turns
    # the credential's errors into messages.
    refusal_on_credential = False
    # allauth's forms', which this mixes into:
    user: User
    add_error: Callable[[str | None, ValidationError], None]

    def clean_credential(self) -> Authenticator | None:
        try:
            count_factor_attempt(self.user)
            try:
                return super().clean_credential()  # type: ignore[misc]
            except ValidationError:
                factor_event_record(
                    user=self.user,
                    change="failed",
                    factor=Authenticator.Type.WEBAUTHN,
                    ip=client_ip(context.request),
                )
                raise ValidationError(FACTOR_REFUSED, code="passkey_refused") from None
        except ValidationError as refusal:
            if self.refusal_on_credential:
                raise
            self.add_error(None, refusal)
            return None


class PasskeyFactorForm(_PasskeyFactorMixin, AuthenticateWebAuthnForm):
    """A passkey or security key as the second factor, after the password."""


class PasskeyReauthenticateForm(_PasskeyFactorMixin, ReauthenticateWebAuthnForm):
    """A passkey or security key to confirm it is you before a sensitive action."""

    refusal_on_credential = True

"""Who may sign in with single sign-on (README, "Single sign-on"), as django-allauth's social
account adapter:

- a person whose identity at the provider is linked to them (Profile → Security → Single
  sign-on) signs in with it, through allauth's login (their second factor still asked);
- at a first sign-in with the host's own OpenID Connect provider, an e-mail address the provider
  says it verified and that is a person's here links the identity to them at once: the host
  runs that provider and vouches for its addresses. Never with Discord, GitHub or Google, where
  anyone can hold an identity whose address matches (a takeover by e-mail); never with an
  address the provider has not verified;
- nobody gets an account through single sign-on: an account here is made by /signup (its first
  organisation, its billing) or by an invitation, and the identity is linked afterwards;
- every refusal says why and what to do, on the sign-in page, and is a ``user.login_failed``
  event with ``method: "sso"``.
"""

import requests
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialAccount
from allauth.socialaccount.providers.base import AuthProcess
from allauth.socialaccount.providers.base.constants import AuthError
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import User
from accounts.services import sso_failure_record
from accounts.services.sso import AUTO_CONNECTED
from accounts.sign_in import count_attempt
from hosting.http import client_ip

# The provider whose verified addresses are trusted to link at first sign-in: the host's own.
TRUSTED_PROVIDER = "openid_connect"


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    error_messages = {
        **DefaultSocialAccountAdapter.error_messages,
        "no_password": gettext_lazy(
            "This is your only way to sign in: set a password (Forgot your password? on the "
            "sign-in page) or link another provider before removing it."
        ),
    }

    def is_open_for_signup(self, request, sociallogin) -> bool:
        return False

    def pre_social_login(self, request, sociallogin) -> None:
        if sociallogin.state.get("process") == AuthProcess.CONNECT:
            return  # linking from Profile: allauth's connect flow, for the signed-in person
        provider = sociallogin.provider
        if sociallogin.is_existing:
            if not sociallogin.user.is_active:
                self._refuse(request, sociallogin, _("This account is deactivated."), "inactive")
            return
        addresses = sociallogin.email_addresses
        verified = [address.email for address in addresses if address.verified]
        if provider.id == TRUSTED_PROVIDER and verified:
            user = User.objects.filter(email__iexact=verified[0], is_active=True).first()
            if user is not None:
                if SocialAccount.objects.filter(user=user, provider=provider.sub_id).exists():
                    self._refuse(
                        request,
                        sociallogin,
                        _(
                            "Your account is linked to another identity at %(provider)s; sign "
                            "in with that one, or with your password."
                        )
                        % {"provider": provider.name},
                        "another identity linked",
                    )
                sociallogin.state[AUTO_CONNECTED] = True
                sociallogin.connect(request, user)
                return
        if provider.id == TRUSTED_PROVIDER and addresses and not verified:
            self._refuse(
                request,
                sociallogin,
                _(
                    "%(provider)s has not verified your e-mail address, so it cannot be matched "
                    "to an account here. Sign in with your password, then link %(provider)s "
                    "under Profile → Security."
                )
                % {"provider": provider.name},
                "e-mail not verified",
            )
        self._refuse(
            request,
            sociallogin,
            _(
                "No account here is linked to this %(provider)s identity. Sign in with your "
                "password, then link %(provider)s under Profile → Security."
            )
            % {"provider": provider.name},
            "not linked",
        )

    def on_authentication_error(
        self, request, provider, error=None, exception=None, extra_context=None
    ) -> None:
        extra_context = extra_context or {}
        if error == AuthError.CANCELLED:
            reason = "cancelled"
            text = _("Sign-in with %(provider)s was cancelled.") % {"provider": provider.name}
        else:
            reason = _reason(exception, extra_context)
            text = _(
                "Sign-in with %(provider)s failed (%(reason)s). Try again, or sign in with "
                "your password."
            ) % {"provider": provider.name, "reason": reason}
        _failure_record(request, provider=provider.sub_id, reason=reason)
        state = extra_context.get("state") or {}
        messages.error(request, text)
        linking = state.get("process") == AuthProcess.CONNECT and request.user.is_authenticated
        raise ImmediateHttpResponse(redirect("socialaccount_connections" if linking else "login"))

    def validate_disconnect(self, account, accounts) -> None:
        others = accounts.exclude(pk=account.pk)
        if settings.STAFF_SSO_ONLY and account.user.is_staff and not others.exists():
            raise ValidationError(
                _(
                    "Staff sign in with single sign-on only: link another provider before "
                    "removing your last one."
                ),
                code="sso_only",
            )

    def _refuse(self, request, sociallogin, text: str, reason: str) -> None:
        email = next((address.email for address in sociallogin.email_addresses), "")
        user = sociallogin.user if sociallogin.is_existing else None
        _failure_record(
            request,
            provider=sociallogin.provider.sub_id,
            reason=reason,
            email="" if user else email,
            user=user,
        )
        messages.error(request, text)
        raise ImmediateHttpResponse(redirect("login"))


def _failure_record(request, **failure) -> None:
    """A refused single sign-on counts in the sign-in's per-address budget
    (``LOGIN_ATTEMPTS_PER_MINUTE``); over it, it is not recorded again, so forged callbacks
    cannot flood the event log."""
    ip = client_ip(request)
    if count_attempt(f"login-ip:{ip}"):
        return
    sso_failure_record(ip=ip, **failure)


def _reason(exception: Exception | None, extra_context: dict) -> str:
    """Why a sign-in with a provider failed, in a few words for the person and the event log
    (never the provider's answer itself)."""
    if isinstance(exception, requests.HTTPError):
        return "the provider answered with an error"
    if isinstance(exception, requests.RequestException):
        return "the provider could not be reached"
    if isinstance(exception, OAuth2Error):
        message = str(exception)
        if message.startswith("Error retrieving access token"):
            return "the provider refused the sign-in code"
        return message[:200]
    if exception is not None:
        return type(exception).__name__
    if "state" not in extra_context:
        return "state missing or not this browser's"
    return "refused by the provider"

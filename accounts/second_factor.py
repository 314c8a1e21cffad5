"""Who must use a second factor, and which actions ask for a recent sign-in (issue 33).

- **Staff** (``STAFF_REQUIRE_SECOND_FACTOR``, on by default) reach Django admin, the desk and
  the staff pages only in a session that passed a second factor: without a factor they are sent
  to set one up, with one (a session from before it, say) to type it again.
- **An account's owner** may require a second factor of every member (``Account.
  require_second_factor``): the account's pages then send a member whose session did not pass
  one to the same places. Profile, the factor pages, sessions, sign-out and switching account
  stay open, so they can comply or leave.
- **Sensitive actions** (creating an API key, adding a card, changing the e-mail address,
  deleting a server or a bot) ask for a sign-in or a factor typed within
  ``REAUTHENTICATION_MINUTES``: django-allauth's re-authentication, which resumes the
  action afterwards. Removing one's last factor asks for one typed within the last minute.

A session "passed a factor" when its sign-in (or a later re-authentication) used one, or when
the person set the factor up in it (setting up a factor means typing it). django-allauth keeps
these records in the session; this module reads them through one function.
"""

import time
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.selectors import SECOND_FACTOR_TYPES, user_has_second_factor
from accounts.signals import FACTOR_ADDED_SESSION_KEY
from hosting.errors import PermissionDenied

FACTOR_TYPES = SECOND_FACTOR_TYPES
# Where staff work: every page under these paths asks staff for a second factor.
STAFF_AREAS = ("/admin/", "/desk", "/staff")
# What a person whose factor is asked for may still open: setting it up, typing it, their
# profile and sessions, signing out, another account, their own new account.
OPEN_PATHS = (
    "/auth/",
    "/logout",
    "/settings/profile",
    "/switch",
    "/accounts/new",
    "/admin/login/",
    "/admin/logout/",
    "/static/",
    "/healthz",
    "/favicon.ico",
)
# Removing one's last factor: a password or factor typed this recently.
LAST_FACTOR_FRESH_SECONDS = 60


class RecentSignInRequired(PermissionDenied):
    """For a page's script (a JSON answer): the action asks for a recent sign-in first."""

    code = "reauthentication_required"
    message = gettext_noop(
        "Confirm it is you first: type your password (or a second factor) again."
    )


def _records(request: HttpRequest) -> list[dict[str, Any]]:
    from allauth.account.internal.flows.login import get_authentication_records

    return list(get_authentication_records(request, request.user))


def session_passed_factor(request: HttpRequest, *, sso_counts: bool = False) -> bool:
    """Whether this session's person typed a second factor in it (at sign-in, re-typed since,
    or set up here). ``sso_counts``: a single sign-on through the host's own provider counts
    (staff under ``STAFF_SSO_ONLY``, whose factors the host's provider enforces)."""
    if not request.user.is_authenticated:
        return False
    if request.session.get(FACTOR_ADDED_SESSION_KEY):
        return True
    for record in _records(request):
        if record.get("method") == "mfa":
            return True
        if sso_counts and record.get("method") == "socialaccount":
            return True
    return False


def staff_must_pass_factor(user) -> bool:
    return bool(settings.STAFF_REQUIRE_SECOND_FACTOR and user.is_active and user.is_staff)


# What a person types that counts for a sensitive action: their password, or a factor (a code,
# a passkey), at sign-in or again since. A single sign-on does not (nothing was typed here).
TYPED_METHODS = ("password", "mfa")


def seconds_since_reauthentication(request: HttpRequest) -> float | None:
    """Seconds since this session's person last typed a password or a factor (at sign-in, a
    passkey's sign-in included, or to re-authenticate), or None."""
    typed = [record["at"] for record in _records(request) if record.get("method") in TYPED_METHODS]
    added = request.session.get(FACTOR_ADDED_SESSION_KEY)
    moments = [*typed, *([added] if added else [])]
    return time.time() - max(moments) if moments else None


def recently_authenticated(request: HttpRequest, seconds: float | None = None) -> bool:
    """Whether a password or factor was typed in this session within ``seconds`` (by default
    ``REAUTHENTICATION_MINUTES``)."""
    limit = settings.ACCOUNT_REAUTHENTICATION_TIMEOUT if seconds is None else seconds
    since = seconds_since_reauthentication(request)
    return since is not None and since < limit


def reauthenticate_redirect(request: HttpRequest) -> HttpResponse:
    """Off to type the password (or a factor) again; a POST is kept and carried out after,
    as django-allauth's re-authentication does."""
    from allauth.account.internal.flows.reauthentication import suspend_request
    from allauth.core.exceptions import ReauthenticationRequired

    from accounts.allauth_adapter import AccountAdapter

    methods = AccountAdapter(request).get_reauthentication_methods(request.user)
    if not methods:
        raise ReauthenticationRequired()  # allauth's middleware answers it
    return suspend_request(request, methods[0]["url"])


def reauthentication_url(request: HttpRequest, next_path: str) -> str:
    return f"{reverse('account_reauthenticate')}?{urlencode({'next': next_path})}"


class RecentSignInRequiredMixin:
    """For a dashboard view of a sensitive action: without a password or factor typed within
    ``REAUTHENTICATION_MINUTES``, the person types one first; the action then goes on (a form
    sent is kept and sent on). ``recent_sign_in_on_get``: the form's page asks already, so
    nothing typed into it is lost."""

    recent_sign_in_on_get = True

    def dispatch(self, request, *args, **kwargs):
        asks = request.method not in ("GET", "HEAD") or self.recent_sign_in_on_get
        if request.user.is_authenticated and asks and not recently_authenticated(request):
            return reauthenticate_redirect(request)
        return super().dispatch(request, *args, **kwargs)


def _required_of(request: HttpRequest) -> str | None:
    """Why this request needs a session that passed a factor (a message), or None."""
    user = request.user
    path = request.path_info
    if path.startswith(OPEN_PATHS):
        return None
    if path.startswith(STAFF_AREAS) and staff_must_pass_factor(user):
        sso_counts = bool(getattr(settings, "STAFF_SSO_ONLY", False))
        if not session_passed_factor(request, sso_counts=sso_counts):
            return _("Staff use a second factor to open admin, the desk and the staff pages.")
        return None
    account = getattr(request, "account", None)
    if account is not None and account.require_second_factor and not session_passed_factor(request):
        return _("%(account)s asks every member to sign in with a second factor.") % {
            "account": account.name
        }
    return None


class SecondFactorPolicyMiddleware:
    """Sends a person a policy asks a second factor of to set one up, or to type it, before any
    other page (see the module's docstring). After AuthenticationMiddleware and
    CurrentAccountMiddleware (it reads ``request.account``); never on the API."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if (
            user is not None
            and user.is_authenticated
            and not request.path_info.startswith("/v1/")
            and (reason := _required_of(request))
        ):
            return self._send_to_factor(request, reason)
        return self.get_response(request)

    def _send_to_factor(self, request: HttpRequest, reason: str) -> HttpResponse:
        next_path = request.get_full_path() if request.method == "GET" else ""
        if user_has_second_factor(request.user):
            # A session from before the factor, or a sign-in without it: type it now.
            url = reverse("mfa_reauthenticate")
            messages.info(request, _("%(reason)s Type yours to go on.") % {"reason": reason})
        else:
            url = reverse("mfa_index")
            messages.warning(request, _("%(reason)s Set one up to go on.") % {"reason": reason})
        if next_path:
            url = f"{url}?{urlencode({'next': next_path})}"
        return HttpResponseRedirect(url)

"""The limits every sign-in form shares: the dashboard's ``/login`` and Django admin's.

Attempts are counted per client address and per e-mail address, in the same buckets for every
form, so guessing gets one budget (``LOGIN_ATTEMPTS_PER_MINUTE``) wherever it signs in. Over it
the form is refused with 429 and ``Retry-After`` before the password is looked at; any other
sign-in that fails is a ``user.login_failed`` event.
"""

from collections.abc import Callable
from functools import wraps

from allauth.core import context
from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.services import lockout_notify, login_failure_record
from hosting.api.throttling import RateLimitExceeded, rate_limit_hit
from hosting.http import client_ip

# Set on the request by ``sign_in_limited`` for ``SignInLimitFormMixin`` to read.
_REFUSAL_ATTRIBUTE = "sign_in_refusal"
STAFF_SSO_ONLY_REFUSAL = gettext_lazy(
    "Staff sign in with single sign-on only: use the “Sign in with …” button below."
)


def count_attempt(*buckets: str) -> int:
    """Count a sign-in, sign-up or reset attempt in each bucket; the seconds to wait, or 0."""
    retry_after = 0
    for bucket in buckets:
        try:
            rate_limit_hit(bucket=bucket, limit=settings.LOGIN_ATTEMPTS_PER_MINUTE, policy="login")
        except RateLimitExceeded as exceeded:
            retry_after = max(retry_after, exceeded.state.seconds_to_reset)
    return retry_after


def sign_in_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap a sign-in view (Django's ``LoginView`` or one built on it) with the shared limits.

    Its form must use ``SignInLimitFormMixin``. A POST that comes back with the form (200)
    instead of a redirect did not sign anyone in.
    """

    @wraps(view)
    def limited(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        email = request.POST.get("username", "").strip().lower()[:254]
        ip = client_ip(request)
        retry_after = count_attempt(f"login-ip:{ip}", *([f"login-email:{email}"] if email else []))
        if retry_after:
            refusal = _("Too many sign-in attempts; try again in %(seconds)s seconds.") % {
                "seconds": retry_after
            }
            setattr(request, _REFUSAL_ATTRIBUTE, refusal)
            if email:
                lockout_notify(email=email, retry_after=retry_after, ip=ip)
        response = view(request, *args, **kwargs)
        if response.status_code != 200:
            return response
        if retry_after:
            # Refused before the password was looked at: not a failed sign-in of the user.
            response.status_code = 429
            response["Retry-After"] = str(retry_after)
        elif email:
            login_failure_record(email=email, ip=ip)
        return response

    return limited


class SecondFactorLoginMixin:
    """For ``LoginView`` subclasses (the dashboard's and admin's sign-in): a checked password
    does not sign the person in by itself; django-allauth's login flow does, after the stages a
    person's account asks for (their second factor: TOTP, a recovery code). Without a factor
    set up, that is at once, as before."""

    def form_valid(self, form):
        from allauth.account.internal.flows.login import perform_login, record_authentication
        from allauth.account.models import Login

        user = form.get_user()
        if settings.STAFF_SSO_ONLY and user.is_staff:
            # Checked after the password, so the refusal tells nobody else who is staff; a
            # failed sign-in (``sign_in_limited`` records it: the form comes back).
            form.add_error(None, STAFF_SSO_ONLY_REFUSAL)
            return self.form_invalid(form)
        # A password just typed counts as a recent sign-in for the sensitive actions that ask
        # for one (ACCOUNT_REAUTHENTICATION_TIMEOUT), as GitHub's sudo mode counts it.
        record_authentication(
            self.request, user, method="password", email=user.email, reauthenticated=True
        )
        login = Login(user=user, redirect_url=self.get_success_url(), email=user.email)
        return perform_login(self.request, login)


def sign_in_with_new_password(request: HttpRequest, user) -> None:
    """Sign in a person who just chose their password (signing up, joining by invitation): as
    a sign-in with it, it counts as typed just now for the sensitive actions."""
    from allauth.account.internal.flows.login import record_authentication
    from django.contrib.auth import login

    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    record_authentication(request, user, method="password", email=user.email, reauthenticated=True)


class SignInLimitFormMixin:
    """For ``AuthenticationForm`` subclasses: over the limit, refuse before any password check."""

    def clean(self):
        if refusal := getattr(self.request, _REFUSAL_ATTRIBUTE, ""):
            raise ValidationError(refusal, code="rate_limited")
        return super().clean()


class FactorCodeLimitMixin:
    """For allauth's factor forms (the code asked after the password, and when re-typed for a
    sensitive action): each code typed counts in the sign-in's own buckets, per client address
    and per e-mail, so a guesser of codes has the budget a guesser of passwords has; over it the
    code is refused unread, with the wait, and the person is e-mailed."""

    def clean_code(self):
        count_factor_attempt(self.user)
        return super().clean_code()


def count_factor_attempt(user) -> None:
    """A factor used (a code typed, a passkey offered) for ``user``: one attempt in the
    sign-in's buckets of the client address and of the person's e-mail; over the limit a
    ``ValidationError`` with the wait, and the person is e-mailed (once a window)."""
    request = context.request
    email = user.email.lower()
    ip = client_ip(request)
    retry_after = count_attempt(f"login-ip:{ip}", f"login-email:{email}")
    if retry_after:
        lockout_notify(email=email, retry_after=retry_after, ip=ip)
        raise ValidationError(
            _("Too many sign-in attempts; try again in %(seconds)s seconds.")
            % {"seconds": retry_after},
            code="rate_limited",
        )

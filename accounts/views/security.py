"""Profile → Security beyond django-allauth's own pages: removing one's last second factor, and
the owner's "require a second factor of every member" switch on the team page."""

from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views import View

from accounts.mixins import AccountChangeMixin
from accounts.models import Membership
from accounts.second_factor import (
    FACTOR_TYPES,
    LAST_FACTOR_FRESH_SECONDS,
    reauthenticate_redirect,
    recently_authenticated,
    staff_must_pass_factor,
)
from accounts.services import account_require_second_factor
from hosting.errors import ApplicationError


def _last_factor_removed(request: HttpRequest, kind: str, pk: int | None) -> bool:
    from allauth.mfa.models import Authenticator

    factors = list(
        Authenticator.objects.filter(user_id=request.user.pk, type__in=FACTOR_TYPES).values_list(
            "pk", "type"
        )
    )
    removed = [
        factor for factor in factors if factor[1] == kind and (pk is None or factor[0] == pk)
    ]
    return bool(removed) and len(factors) == len(removed)


def _requirers(user) -> list[str]:
    """Who asks this person for a second factor: "staff", and the accounts that do."""
    names = [_("the hosting company (you are staff)")] if staff_must_pass_factor(user) else []
    names += list(
        Membership.objects.filter(user_id=user.pk, account__require_second_factor=True)
        .order_by("account__name")
        .values_list("account__name", flat=True)
    )
    return names


def last_factor_guard(kind: str) -> Callable:
    """Wrap allauth's view removing a factor of ``kind`` (``totp``; ``webauthn`` by ``pk``).

    Removing one's last factor is refused while a policy asks for one (staff; an account that
    requires it), and otherwise asks for a password or factor typed within the last minute,
    then goes on: an unattended signed-in browser cannot switch the factor off."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated or not _last_factor_removed(
                request, kind, kwargs.get("pk")
            ):
                return view(request, *args, **kwargs)
            if requirers := _requirers(request.user):
                messages.error(
                    request,
                    ngettext(
                        "This is your last second factor, and %(requirers)s requires one: add "
                        "another before removing it.",
                        "This is your last second factor, and %(requirers)s require one: add "
                        "another before removing it.",
                        len(requirers),
                    )
                    % {"requirers": _(" and ").join(requirers)},
                )
                return redirect("mfa_index")
            if not recently_authenticated(request, LAST_FACTOR_FRESH_SECONDS):
                return reauthenticate_redirect(request)
            return view(request, *args, **kwargs)

        return guarded

    return decorate


class RequireSecondFactorView(AccountChangeMixin, View):
    """``POST`` on the team page: the owner requires (or stops requiring) a second factor of
    every member."""

    http_method_names = ["post"]
    refused_url = "team"

    def post(self, request, *args, **kwargs):
        required = request.POST.get("required") == "true"
        try:
            account_require_second_factor(
                account=self.account, required=required, actor=self.actor()
            )
        except ApplicationError as error:
            return self.refused(error, back_to="team")
        if required:
            messages.success(request, _("Every member now signs in with a second factor."))
        else:
            messages.success(request, _("Members may sign in without a second factor again."))
        return redirect("team")

"""The account-aware base of every dashboard page: what the servers, webhooks and, next,
billing and support pages build on.

The generic half (lists, how a service's refusal is shown) is the project's, in
``hosting/dashboard``; this half needs the current account and role (``CurrentAccountMiddleware``)
and the roles table, so it lives with them in accounts.
"""

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render

from accounts.actors import Actor
from accounts.forms import AccountCreateForm
from accounts.roles import role_can
from hosting.dashboard.refusals import ServiceRefusalMixin


class AccountPageMixin(ServiceRefusalMixin, LoginRequiredMixin):
    """A page of the current account, optionally only for roles holding ``required_right``.

    A user without any account gets the "create an account" page instead; a missing right is
    a 404, like an object of another account.
    """

    required_right: str | None = None

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if request.account is None:
            return render(request, "dashboard/no_account.html", {"form": AccountCreateForm()})
        if self.required_right and not role_can(request.membership.role, self.required_right):
            raise Http404("No such page.")
        self.account, self.role = request.account, request.membership.role
        if refusal := self.refuse(request):
            return refusal
        return super().dispatch(request, *args, **kwargs)

    def refuse(self, request) -> HttpResponse | None:
        return None

    def actor(self) -> Actor:
        return Actor.from_request(self.request)


class AccountChangeMixin(AccountPageMixin):
    """A page whose POSTs change the account's data: refused while the account is suspended."""

    refused_url = "home"

    def refuse(self, request) -> HttpResponse | None:
        if request.method == "POST" and self.account.is_suspended:
            messages.error(request, "This account is suspended, so its data cannot be changed.")
            return redirect(self.refused_url)
        return None

"""The account-aware base of every dashboard page, as view mixins: what the pages of accounts
and of every app above it (events, servers, webhooks, billing, support, analytics) build on.

The generic half (lists, how a service's refusal is shown) is the project's, in
``hosting/dashboard``; this half needs the current account and role (``CurrentAccountMiddleware``)
and the roles table, so it lives with them in accounts.
"""

from functools import cached_property

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.text import get_text_list
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.forms import AccountCreateForm
from accounts.models import Membership
from accounts.roles import SCOPES, Right, Role, role_can, scopes_allowed_for
from hosting.dashboard.refusals import ServiceRefusalMixin


def not_allowed(request, what: str, roles: list[Role]) -> HttpResponse:
    """A page the person's role does not open, where the page's existence is no secret (an area
    of every account: billing, activity, webhooks…): the 403 page says which roles open it and
    whom to ask, rather than the 404 page pretending it is not there. An object's own page
    never says so: this is answered before any object is looked up."""
    owners = list(
        Membership.objects.filter(account=request.account, role=Role.OWNER)
        .exclude(user=request.user)
        .select_related("user")
        .order_by("created_at")
        .values_list("user__email", flat=True)[:3]
    )
    labels = [str(role.label) for role in roles]
    context = {
        "what": what,  # its label as written: no case change that German nouns would not survive
        "roles": labels,
        # One sentence for the translators: "a, b or c", each name in bold.
        "roles_text": mark_safe(  # noqa: S308 - each item is escaped by format_html
            get_text_list([format_html("<strong>{}</strong>", label) for label in labels], _("or"))
        ),
        "role": request.membership.get_role_display(),
        "owners": owners,
        "owner_links": format_html_join(
            ", ", '<a href="mailto:{0}">{0}</a>', ((email,) for email in owners)
        ),
    }
    return render(request, "dashboard/not_allowed.html", context, status=403)


class AccountPageMixin(ServiceRefusalMixin, LoginRequiredMixin):
    """A page of the current account, optionally only for roles holding ``required_right``.

    A user without any account gets the "create an account" page instead; a missing right is
    the 403 page naming the roles that have it (``not_allowed``).
    """

    required_right: str | None = None

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if request.account is None:
            if request.user.is_staff and request.path == "/":
                return redirect("staff_home")  # staff's own home; an account stays one click away
            return render(request, "dashboard/no_account.html", {"form": AccountCreateForm()})
        if self.required_right and not role_can(request.membership.role, self.required_right):
            allowed = [role for role in Role if role_can(role, self.required_right)]
            return not_allowed(request, Right(self.required_right).label, allowed)
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
            messages.error(request, _("This account is suspended, so its data cannot be changed."))
            return redirect(self.refused_url)
        return None


class AreaPageMixin(AccountChangeMixin):
    """A page of one area of the account (``area``: ``billing``, ``webhooks``, ``tickets``):
    readable with ``<area>:read`` in the role's scopes (else 404, like a missing right; the
    navigation hides the area then), changed only with ``<area>:write`` (else a message and a
    redirect to ``refused_url``), and read-only while the account is suspended.

    ``form_page``: a page that is only a form is refused on GET too, since it could never be
    sent. (A suspended account's every page says so in its banner, so that refusal is a plain
    redirect.)
    """

    area: str
    form_page = False

    def role_may(self, verb: str) -> bool:
        return f"{self.area}:{verb}" in scopes_allowed_for(self.role, is_staff=False)

    def refuse(self, request) -> HttpResponse | None:
        if not self.role_may("read"):
            scope = f"{self.area}:read"
            allowed = [role for role in Role if scope in scopes_allowed_for(role, is_staff=False)]
            return not_allowed(request, SCOPES[scope], allowed)
        if (request.method == "POST" or self.form_page) and not self.role_may("write"):
            scope = SCOPES[f"{self.area}:write"]
            role = request.membership.get_role_display()
            messages.error(
                request,
                _("As %(role)s, you may not %(action)s.")
                % {"role": role, "action": f"{scope[0].lower()}{scope[1:]}"},
            )
            return redirect(self.refused_url)
        if self.form_page and request.method == "GET" and self.account.is_suspended:
            return redirect(self.refused_url)
        return super().refuse(request)

    @cached_property
    def can_write(self) -> bool:
        return not self.account.is_suspended and self.role_may("write")

    def get_context_data(self, **kwargs):
        return super().get_context_data(can_write=self.can_write, **kwargs)

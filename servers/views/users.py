"""The Users tab of a server or bot: its sub-users (servers/services/grants.py) with their
status and permissions; owners and admins invite an e-mail address with a preset or chosen
permissions, change them and remove a person (the API's rule: the team right). Other members
read the list; a guest does not see it. Every change is a plain form POST that comes back to
the list with a message."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import TemplateView

from accounts.actors import Actor
from accounts.roles import Right, Role, role_can
from hosting.errors import ApplicationError, ValidationFailed
from servers.services.grants import grant_create, grant_delete, grant_of, grant_update, grants_of
from servers.services.permissions import (
    PRESETS,
    permission_groups,
    permissions_summary,
    preset_choices,
)
from servers.views import BotPages, InstanceObjectMixin, ServerPages, area_refusal


def chosen_permissions(form) -> list[str]:
    """The preset picked, or else the boxes ticked."""
    preset = form.get("preset", "")
    if preset in PRESETS:
        return list(PRESETS[preset][1])
    return [name for name in form.getlist("permissions") if name]


class InstanceUsersMixin(InstanceObjectMixin):
    """Members of the account read the tab (a guest does not); owners and admins change it."""

    def may_manage(self) -> bool:
        return role_can(self.role, Right.MANAGE_TEAM) and not self.account.is_suspended

    def refuse(self, request):
        refused = super().refuse(request)
        if refused is not None:
            return refused
        if self.role == Role.GUEST or (request.method == "POST" and not self.may_manage()):
            role = request.membership.get_role_display()
            doing = "see" if request.method != "POST" else "manage"
            messages.error(request, area_refusal("users", doing, self.kind, role))
            return redirect(self.url("detail") if request.method != "POST" else self.url("users"))
        return None


class InstanceUsersView(InstanceUsersMixin, TemplateView):
    """The sub-users, newest first (one query)."""

    template_name = "servers/instance_users.html"

    def get_context_data(self, **kwargs):
        grants = list(grants_of(self.instance).order_by("-created_at", "-id"))
        for grant in grants:
            grant.summary = permissions_summary(grant.permissions)
        return super().get_context_data(
            grants=grants,
            groups=permission_groups(),
            presets=preset_choices(),
            can_manage_users=self.may_manage(),
            **kwargs,
        )


class InstanceUsersDoView(InstanceUsersMixin, View):
    """``POST op=create|update|delete``: one change, then back to the list."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        self.instance  # noqa: B018 - another account's, or none: 404 before reading the form
        actor = Actor.from_request(request)
        try:
            done = self.perform(request.POST.get("op", ""), request.POST, actor)
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, done)
        return redirect(self.url("users"))

    def perform(self, op: str, form, actor: Actor) -> str:
        if op == "create":
            email = form.get("email", "").strip()
            if not email or len(email) > 254 or "@" not in email:
                raise ValidationFailed.field("email", "invalid", _("Enter an e-mail address."))
            grant = grant_create(
                instance=self.instance,
                email=email,
                permissions=chosen_permissions(form),
                actor=actor,
            )
            if grant.user_id:
                done = (
                    _("%(email)s may now use this server.")
                    if self.kind == "server"
                    else _("%(email)s may now use this bot.")
                )
                return done % {"email": email}
            return _("%(email)s is invited: the permissions apply once they join.") % {
                "email": email
            }
        grant = grant_of(self.instance, form.get("grant_id", ""))
        who = grant.user.email if grant.user_id else grant.invitation.email
        if op == "update":
            grant_update(grant=grant, permissions=chosen_permissions(form), actor=actor)
            return _("%(who)s's permissions are saved.") % {"who": who}
        if op == "delete":
            grant_delete(grant=grant, actor=actor)
            done = (
                _("%(who)s no longer has access to this server.")
                if self.kind == "server"
                else _("%(who)s no longer has access to this bot.")
            )
            return done % {"who": who}
        raise Http404("No such operation.")


class ServerUsersView(ServerPages, InstanceUsersView):
    pass


class ServerUsersDoView(ServerPages, InstanceUsersDoView):
    pass


class BotUsersView(BotPages, InstanceUsersView):
    pass


class BotUsersDoView(BotPages, InstanceUsersDoView):
    pass

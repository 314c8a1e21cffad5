"""Dashboard pages for game servers and Discord bots.

Views parse input, call one service of servers/services.py with the signed-in person as the
actor, and render; which action a status allows, quotas and validation are the services'
business. Every object is looked up within ``request.account``, so another account's servers and
bots, and deleted ones, answer 404. Pages and buttons that change something need the role to
allow ``<area>:write`` (create, edit, delete) or ``<area>:power`` (start, stop, ...), and a
suspended account is read-only. The usage figures and charts on these pages are analytics'
(its ``usage`` template tags and the charts' JSON views), named by the templates, not imported.
"""

import hashlib
import json
from functools import cached_property

from django.contrib import messages
from django.db.models import QuerySet
from django.db.models.functions import Lower
from django.http import HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import parse_etags
from django.utils.text import get_text_list
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import FormView, ListView, TemplateView

from accounts.mixins import AccountChangeMixin
from accounts.roles import SCOPES, Role, scopes_allowed_for
from accounts.second_factor import RecentSignInRequiredMixin
from events.models import Event
from events.selectors import events_of_object
from hosting.api.exceptions import error_response
from hosting.dashboard.lists import ListControlsMixin
from hosting.errors import (
    ApplicationError,
    InvalidParameter,
    NotFound,
    PlanLimit,
)
from servers.filters import BotEventFilter, BotListFilter, ServerEventFilter, ServerListFilter
from servers.forms import (
    BotCreateForm,
    BotEditForm,
    GameChoiceForm,
    PowerActionForm,
    ServerCreateForm,
    ServerEditForm,
)
from servers.models import ActionStatus, Instance
from servers.models import ServerStatus as S
from servers.representations import resources_representation, shown_variables
from servers.selectors import actions_of, bots_of_account, servers_of_account, unbilled_left
from servers.services import action_request, bot_create, instance_update, server_create
from servers.services.console import console_open
from servers.services.permissions import (
    DELETE,
    Caller,
    dashboard_visible_q,
    grants_by_instance,
    instance_may,
    instance_permissions,
    permissions_summary,
    power_permission,
    with_own_permissions,
)
from servers.transitions import POWER_ACTIONS, allowed_actions

# Statuses the worker is still moving away from: a page showing one refreshes itself.
TRANSITIONAL = frozenset({S.PROVISIONING, S.INSTALLING, S.STARTING, S.STOPPING, S.DELETING})
POWER_LABELS = {
    "start": gettext_lazy("Start"),
    "stop": gettext_lazy("Stop"),
    "restart": gettext_lazy("Restart"),
    "kill": gettext_lazy("Kill"),
    "reinstall": gettext_lazy("Reinstall"),
}
assert set(POWER_LABELS) == set(POWER_ACTIONS)
# "Power requested for …" (the message after a button), in a language's own word order.
POWER_REQUESTED = {
    "start": gettext_lazy("Start requested for “%(name)s”."),
    "stop": gettext_lazy("Stop requested for “%(name)s”."),
    "restart": gettext_lazy("Restart requested for “%(name)s”."),
    "kill": gettext_lazy("Kill requested for “%(name)s”."),
    "reinstall": gettext_lazy("Reinstall requested for “%(name)s”."),
}
RESTART_LABELS = {
    "memory_mb": gettext_lazy("memory"),
    "cpu_percent": gettext_lazy("CPU"),
    "disk_mb": gettext_lazy("disk"),
    "variables": gettext_lazy("variables"),
    "start_command": gettext_lazy("start command"),
    "environment": gettext_lazy("environment"),
    "token": gettext_lazy("token"),
    "runtime": gettext_lazy("runtime"),
}
# A tab's refusal, one whole sentence for each (tab, verb, kind): see area_refusal.
AREA_REFUSALS = {
    ("backups", "see", "server"): gettext_lazy(
        "As %(role)s, you may not see this server's backups."
    ),
    ("backups", "see", "bot"): gettext_lazy("As %(role)s, you may not see this bot's backups."),
    ("backups", "change", "server"): gettext_lazy(
        "As %(role)s, you may not change this server's backups."
    ),
    ("backups", "change", "bot"): gettext_lazy(
        "As %(role)s, you may not change this bot's backups."
    ),
    ("files", "read", "server"): gettext_lazy("As %(role)s, you may not read this server's files."),
    ("files", "read", "bot"): gettext_lazy("As %(role)s, you may not read this bot's files."),
    ("files", "change", "server"): gettext_lazy(
        "As %(role)s, you may not change this server's files."
    ),
    ("files", "change", "bot"): gettext_lazy("As %(role)s, you may not change this bot's files."),
    ("schedules", "see", "server"): gettext_lazy(
        "As %(role)s, you may not see this server's schedules."
    ),
    ("schedules", "see", "bot"): gettext_lazy("As %(role)s, you may not see this bot's schedules."),
    ("schedules", "change", "server"): gettext_lazy(
        "As %(role)s, you may not change this server's schedules."
    ),
    ("schedules", "change", "bot"): gettext_lazy(
        "As %(role)s, you may not change this bot's schedules."
    ),
    ("users", "see", "server"): gettext_lazy("As %(role)s, you may not see this server's users."),
    ("users", "see", "bot"): gettext_lazy("As %(role)s, you may not see this bot's users."),
    ("users", "manage", "server"): gettext_lazy(
        "As %(role)s, you may not manage this server's users."
    ),
    ("users", "manage", "bot"): gettext_lazy("As %(role)s, you may not manage this bot's users."),
}
LIVE_PARTIAL = "live"
# How many ids one status request may name (a list page shows at most 100 rows).
STATUS_IDS_LIMIT = 100


def area_refusal(area: str, doing: str, kind: str, role: str) -> str:
    """ "As Viewer, you may not change this server's backups." in the reader's language."""
    return AREA_REFUSALS[(area, doing, kind)] % {"role": role}


def pressable_actions(status: str, permissions: frozenset[str]) -> list[str]:
    """The power actions the status allows (``transitions``' table) that these permissions
    may press, in the buttons' order: the header's buttons and the status endpoint's."""
    return [name for name in allowed_actions(status) if power_permission(name) in permissions]


# --- What every page of servers and bots shares -----------------------------------------------


class InstancePageMixin(AccountChangeMixin):
    """A page of the account's servers or bots; ``needs`` names what the role must allow.

    Every member reads them (as the home page always allowed); a page that changes something
    needs ``<area>:write`` or ``<area>:power`` in the role's scopes, and without it answers with
    a message and a redirect, the way a suspended account's changes are refused.
    """

    area: str  # "servers" or "bots": the scopes' prefix
    kind: str  # "server" or "bot": the URL names' prefix
    list_url_name: str
    needs: str | None = None  # "write" or "power"

    def instances(self) -> QuerySet[Instance]:
        raise NotImplementedError

    @cached_property
    def caller(self) -> Caller:
        return Caller(user=self.request.user, account_id=self.account.pk, role=self.role)

    def visible(self, instances: QuerySet) -> QuerySet:
        """Those of ``instances`` the signed-in person sees (a guest: their grants')."""
        return instances.filter(dashboard_visible_q(self.caller, self.kind))

    def role_may(self, verb: str) -> bool:
        return f"{self.area}:{verb}" in scopes_allowed_for(self.role, is_staff=False)

    def refuse(self, request):
        if self.needs and not self.role_may(self.needs):
            scope = SCOPES[f"{self.area}:{self.needs}"]
            role = request.membership.get_role_display()
            messages.error(
                request,
                _("As %(role)s, you may not %(action)s.")
                % {"role": role, "action": f"{scope[0].lower()}{scope[1:]}"},
            )
            return redirect(self.refused_url)
        return super().refuse(request)

    @property
    def refused_url(self) -> str:
        if "pk" in self.kwargs:
            return reverse(f"{self.kind}_detail", args=[self.kwargs["pk"]])
        return reverse(self.list_url_name)

    def get_context_data(self, **kwargs):
        writable = not self.account.is_suspended
        return super().get_context_data(
            kind=self.kind,
            list_url=reverse(self.list_url_name),
            can_write=writable and self.role_may("write"),
            can_power=writable and self.role_may("power"),
            **kwargs,
        )


class InstanceObjectMixin(InstancePageMixin):
    """A page of one server or bot, found by ``pk`` among the account's live ones; what the
    person may do there is its ``permissions`` (role and grant), and ``permission`` names
    what the page itself needs."""

    permission: str | None = None

    @cached_property
    def instance(self) -> Instance:
        return get_object_or_404(self.instances(), pk=self.kwargs["pk"])

    @cached_property
    def permissions(self) -> frozenset[str]:
        return instance_permissions(self.caller, self.instance)

    def power_actions(self) -> list[tuple[str, str, bool]]:
        """Every power button the person may press, and whether the status allows it now: the
        others are rendered hidden, for status.js to show when the status comes to allow them."""
        allowed = pressable_actions(self.instance.status, self.permissions)
        return [
            (name, POWER_LABELS[name], name in allowed)
            for name in POWER_ACTIONS
            if power_permission(name) in self.permissions
        ]

    def role_may(self, verb: str) -> bool:
        if verb == "write":
            return "settings.write" in self.permissions
        if verb == "power":  # any power button, reinstalling too
            return any(power_permission(name) in self.permissions for name in POWER_ACTIONS)
        return super().role_may(verb)

    def refuse(self, request):
        refused = super().refuse(request)  # the role's refusal first, in its words
        if refused is None and self.permission and self.permission not in self.permissions:
            messages.error(
                request,
                _("You may not do this on this server.")
                if self.kind == "server"
                else _("You may not do this on this bot."),
            )
            return redirect(reverse(f"{self.kind}_detail", args=[self.kwargs["pk"]]))
        return refused

    def url(self, name: str) -> str:
        return reverse(f"{self.kind}_{name}", args=[self.instance.pk])

    def get_context_data(self, **kwargs):
        names = [
            "detail",
            "edit",
            "delete",
            "action",
            "activity",
            "console",
            "console_token",
            "files",
            "backups",
            "schedules",
            "users",
            "databases",  # the databases app's pages, by name: servers imports nothing of it
        ]
        return super().get_context_data(
            instance=self.instance,
            urls={name: self.url(name) for name in names},
            can_read_files="files.read" in self.permissions,
            can_read_backups="backups.read" in self.permissions,
            can_console=not self.account.is_suspended and "console.view" in self.permissions,
            can_read_activity="activity.read" in self.permissions,
            can_read_settings="settings.read" in self.permissions,
            can_delete=DELETE in self.permissions,
            can_read_schedules="schedules.read" in self.permissions,
            can_read_databases="databases.read" in self.permissions,
            can_see_users=self.role != Role.GUEST,
            **kwargs,
        )


class LivePartialMixin:
    """``?partial=live`` renders only the page's ``live`` partial: what dashboard.js polls."""

    def get_template_names(self):
        names = super().get_template_names()
        if self.request.GET.get("partial") == LIVE_PARTIAL:
            return [f"{name}#{LIVE_PARTIAL}" for name in names]
        return names


class ServerPages:
    area, kind, list_url_name = "servers", "server", "home"

    def instances(self):
        return self.visible(servers_of_account(account_id=self.account.id)).select_related(
            "game", "region"
        )


class BotPages:
    area, kind, list_url_name = "bots", "bot", "bot_list"

    def instances(self):
        return self.visible(bots_of_account(account_id=self.account.id)).select_related("region")


# --- Generic pages ----------------------------------------------------------------------------


class InstanceListView(ListControlsMixin, InstancePageMixin, LivePartialMixin, ListView):
    """The account's servers or bots, found by a part of the name or the whole id.

    Its page extends ``servers/instance_list.html``; the rows are ``servers`` or ``bots``.
    """

    search_fields = ("name", "=id")
    search_label = gettext_lazy("Name or ID")
    # The columns both lists have; each adds its own.
    sort_fields = {
        "name": Lower("name"),
        "region": "region__name",
        "status": "status",
        "created_at": "created_at",
    }
    default_sort = "-created_at"

    def get_base_queryset(self):
        return with_own_permissions(self.instances(), self.caller, self.kind)

    def get_context_object_name(self, object_list):
        return self.area  # "servers" or "bots"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        rows = context["object_list"]
        context["polling"] = any(item.status in TRANSITIONAL for item in rows)
        context["create_url"] = reverse(f"{self.kind}_create")
        for item in rows:  # what the person's own grant gives there (a sub-user's)
            item.grant_summary = permissions_summary(item.own_permissions or [])
        context["is_guest"] = self.role == Role.GUEST
        return context


class InstanceStatusView(InstancePageMixin, View):
    """``GET``: the statuses of the account's servers or bots the person sees, as JSON for
    status.js, which asks every few seconds with ``If-None-Match`` and gets 304 until something
    changed (a status, its reason, or which buttons the person may press).

    ``?id=`` (repeatable) narrows the answer to those instances; one the person does not see
    (another account's, a deleted one, a guest's ungranted one) answers 404 ``not_found``, as
    its page does. Each instance carries the power actions its status allows that the person
    may press (``transitions``' table, within their role and grant): none while the account is
    suspended, as the pages show none.
    """

    http_method_names = ["get"]

    def get(self, request, *args, **kwargs):
        ids = request.GET.getlist("id")
        if len(ids) > STATUS_IDS_LIMIT or any(len(value) > 64 for value in ids):
            return error_response(
                InvalidParameter.named(
                    "id",
                    "invalid",
                    _("Name at most %(limit)s ids of 64 characters.") % {"limit": STATUS_IDS_LIMIT},
                ),
                request,
            )
        instances = (
            self.instances()
            .select_related(None)
            .only("id", "name", "status", "status_reason", "account_id")
            .order_by("id")
        )
        if ids:
            instances = instances.filter(pk__in=ids)
        found = list(instances)
        if ids and len(found) != len(set(ids)):
            return error_response(
                NotFound(_("No such server.") if self.kind == "server" else _("No such bot.")),
                request,
            )
        grants = grants_by_instance(self.caller, found)
        may_power = not self.account.is_suspended
        body = json.dumps(
            {
                "success": True,
                "data": {
                    self.area: [
                        {
                            "id": instance.pk,
                            "name": instance.name,
                            "status": instance.status,
                            "status_label": instance.get_status_display(),
                            "status_reason": instance.status_reason,
                            "changing": instance.status in TRANSITIONAL,
                            "actions": pressable_actions(
                                instance.status,
                                instance_permissions(
                                    self.caller, instance, grant=grants.get(instance.pk)
                                ),
                            )
                            if may_power
                            else [],
                        }
                        for instance in found
                    ]
                },
            },
            separators=(",", ":"),
            sort_keys=True,
        ).encode()
        etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        if etag in parse_etags(request.headers.get("If-None-Match", "")):
            response: HttpResponse = HttpResponseNotModified()
        else:
            response = HttpResponse(body, content_type="application/json")
        response["ETag"] = etag
        # Asked again every few seconds: a cache may keep it only to revalidate it.
        response["Cache-Control"] = "private, no-cache"
        return response


class InstanceDetailView(InstanceObjectMixin, LivePartialMixin, TemplateView):
    template_name = "servers/instance_detail.html"

    def get_context_data(self, **kwargs):
        instance = self.instance
        recent = actions_of(instance).select_related("requested_by_user", "requested_by_key")
        return super().get_context_data(
            power_actions=self.power_actions(),
            # What was done and by whom is the activity's: without it, none read.
            recent_actions=recent[:10] if "activity.read" in self.permissions else [],
            polling=instance.status in TRANSITIONAL,
            **kwargs,
        )


class InstanceConsoleView(InstanceObjectMixin, TemplateView):
    """The live console of a server or bot on a node: xterm.js on the agent's WebSocket."""

    permission = "console.view"
    template_name = "servers/instance_console.html"

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            power_actions=self.power_actions(),
            **kwargs,
        )


class InstanceConsoleTokenView(InstanceObjectMixin, View):
    """``POST``: a console token for the signed-in person, as JSON for console.js."""

    permission = "console.view"
    http_method_names = ["post"]

    def refuse(self, request):
        refused = super().refuse(request)
        if refused is not None:  # JSON for the script, not a redirect
            return JsonResponse(
                {
                    "success": False,
                    "error": {
                        "code": "permission_denied",
                        "message": _("You may not use this console."),
                    },
                },
                status=403,
            )
        return None

    def post(self, request, *args, **kwargs):
        try:
            console = console_open(
                instance=self.instance,
                user_id=request.user.pk,
                command=instance_may(self.caller, self.instance, "console.command"),
            )
        except ApplicationError as error:
            return JsonResponse(
                {"success": False, "error": {"code": error.code, "message": error.message}},
                status=error.status,
            )
        return JsonResponse({"success": True, "data": {"console": console}})


class InstanceEditView(InstanceObjectMixin, FormView):
    needs = "write"

    def form_valid(self, form):
        changes = form.instance_changes()
        try:
            instance, restart_for = instance_update(
                instance=self.instance, changes=changes, actor=self.actor()
            )
        except PlanLimit as error:
            # Offer the plan change that gives what was asked, with its prorated price.
            wanted = {**resources_representation(self.instance), **(changes.resources or {})}
            fits = ",".join(f"{field}:{value}" for field, value in sorted(wanted.items()))
            subscription = (self.instance.plan or {}).get("subscription")
            upgrade_url = (
                f"{reverse('billing_subscription', args=[subscription])}?fits={fits}"
                if subscription
                else None
            )
            form.add_service_error(error)
            return self.render_to_response(
                self.get_context_data(form=form, upgrade_url=upgrade_url)
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        if restart_for:
            changed = get_text_list(
                [str(RESTART_LABELS.get(field, field)) for field in restart_for], _("and")
            )
            messages.warning(
                self.request,
                _("Saved. Restart “%(name)s” for the new %(changed)s to take effect.")
                % {"name": instance.name, "changed": changed},
            )
        else:
            messages.success(self.request, _("Saved “%(name)s”.") % {"name": instance.name})
        return redirect(self.url("detail"))


class InstanceDeleteView(InstanceObjectMixin, RecentSignInRequiredMixin, TemplateView):
    """Asks first (and for a recent sign-in: a sensitive action); deleting is an action the
    worker finishes, then the instance is gone."""

    needs = "write"
    permission = DELETE
    template_name = "servers/instance_delete.html"

    def post(self, request, *args, **kwargs):
        instance = self.instance
        try:
            action_request(instance=instance, action_type="delete", actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.url("detail"))
        messages.success(
            request,
            _("“%(name)s” is being deleted; it leaves this list once it is gone.")
            % {"name": instance.name},
        )
        return redirect(self.list_url_name)


class InstanceActionView(InstanceObjectMixin, View):
    """One power button: start, stop, restart, kill or reinstall."""

    needs = "power"
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        form = PowerActionForm(request.POST)
        if not form.is_valid():
            messages.error(request, _("Choose one of the power actions."))
            return redirect(self.url("detail"))
        action_type = form.cleaned_data["type"]
        if power_permission(action_type) not in self.permissions:
            messages.error(
                request,
                # Translators: the action is a power button's label (Start, Stop, Restart…).
                _("You may not use “%(action)s” on this server.")
                % {"action": POWER_LABELS[action_type]}
                if self.kind == "server"
                else _("You may not use “%(action)s” on this bot.")
                % {"action": POWER_LABELS[action_type]},
            )
            return redirect(self.url("detail"))
        try:
            action_request(instance=self.instance, action_type=action_type, actor=self.actor())
        except ApplicationError as error:
            return self.refused(error, back_to=self.url("detail"))
        messages.success(request, POWER_REQUESTED[action_type] % {"name": self.instance.name})
        return redirect(self.url("detail"))


class InstanceActivityView(ListControlsMixin, InstanceObjectMixin, ListView):
    """The instance's events and those of its actions, newest first."""

    permission = "activity.read"

    template_name = "servers/instance_activity.html"
    context_object_name = "events"
    paginate_by = 50
    sort_fields = {"created_at": "created_at"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        return events_of_object(
            account_id=self.account.pk, object_id=self.instance.pk
        ).select_related("actor_user", "actor_api_key")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for event in context["events"]:
            event.summary = event_summary(event)
        return context


# An action's type as the activity list names it (the power buttons' labels, and the rest).
ACTION_LABELS = {
    **POWER_LABELS,
    "create": gettext_lazy("Create"),
    "suspend": gettext_lazy("Suspend"),
    "unsuspend": gettext_lazy("Unsuspend"),
    "delete": gettext_lazy("Delete"),
}


def event_summary(event: Event) -> str:
    """One line on what an event of a server, a bot or their actions says, in the page's
    language: the action's type and status, or the status before and after, by their labels."""
    obj = event.data.get("object") or {}
    previous = event.data.get("previous_attributes") or {}
    if event.object_type == "action":
        # Translators: an action on a server and its status, e.g. "Restart: Succeeded".
        line = _("%(action)s: %(status)s") % {
            "action": ACTION_LABELS.get(obj.get("type"), obj.get("type")),
            "status": _label(ActionStatus, obj.get("status")),
        }
        return line + (f" ({obj['error']})" if obj.get("error") else "")
    if "status" in previous:
        reason = obj.get("status_reason")
        # Translators: a server's status before and after a change, e.g. "Stopped → Starting".
        line = _("%(before)s → %(after)s") % {
            "before": _label(S, previous["status"]),
            "after": _label(S, obj.get("status")),
        }
        return line + (f" ({reason})" if reason else "")
    if previous:
        return _("Changed %(fields)s") % {"fields": ", ".join(sorted(previous))}
    return ""


def _label(choices, value) -> str:
    """A status's label, or the value itself when it is not (or no longer) one of them."""
    try:
        return str(choices(value).label)
    except ValueError:
        return str(value)


# --- Servers ----------------------------------------------------------------------------------


class ServerListView(ServerPages, InstanceListView):
    """The home page: the current account's servers, newest first."""

    template_name = "dashboard/home.html"
    filterset_class = ServerListFilter
    sort_fields = {**InstanceListView.sort_fields, "game": "game__name"}


class UnbilledRoomMixin:
    """New servers and bots without a plan: the page says up front when the account's unbilled
    allowance is used up (staff are not bound by it), pointing to ordering a plan instead."""

    def get_context_data(self, **kwargs):
        bound = not self.request.user.is_staff
        return super().get_context_data(
            plan_needed=bound and unbilled_left(self.account) == 0, **kwargs
        )


class ServerCreateView(UnbilledRoomMixin, ServerPages, InstancePageMixin, TemplateView):
    """Two steps: ``?game=`` picks the game, then a form asks for that game's variables."""

    needs = "write"
    template_name = "servers/server_create.html"

    def get(self, request, *args, **kwargs):
        chooser = GameChoiceForm(request.GET if "game" in request.GET else None)
        if not chooser.is_valid():
            return self.render_to_response(self.get_context_data(chooser=chooser))
        game = chooser.cleaned_data["game"]
        form = ServerCreateForm(game=game)
        return self.render_to_response(self.get_context_data(game=game, form=form))

    def post(self, request, *args, **kwargs):
        chooser = GameChoiceForm(request.GET)
        if not chooser.is_valid():
            messages.error(request, _("Choose a game first."))
            return redirect("server_create")
        game = chooser.cleaned_data["game"]
        form = ServerCreateForm(request.POST, game=game)
        if form.is_valid():
            try:
                server = server_create(
                    account=self.account,
                    game=game.slug,
                    region=form.cleaned_data["region"].slug,
                    start_on_install=form.cleaned_data["start_on_install"],
                    actor=self.actor(),
                    **form.changes(),
                )
            except ApplicationError as error:
                form.add_service_error(error)
            else:
                messages.success(
                    request,
                    _("Created “%(name)s”: it is being provisioned and installed.")
                    % {"name": server.name},
                )
                return redirect("server_detail", pk=server.pk)
        return self.render_to_response(self.get_context_data(game=game, form=form))


class ServerDetailView(ServerPages, InstanceDetailView):
    def get_context_data(self, **kwargs):
        server = self.instance
        names = {definition["key"]: definition["name"] for definition in server.game.variables}
        variables = [
            (names.get(key, key), key, value) for key, value in shown_variables(server).items()
        ]
        return super().get_context_data(variables=variables, **kwargs)


class ServerEditView(ServerPages, InstanceEditView):
    template_name = "servers/server_edit.html"

    def get_form(self, form_class=None):
        return ServerEditForm(**self.get_form_kwargs(), server=self.instance)


class ServerDeleteView(ServerPages, InstanceDeleteView):
    pass


class ServerActionView(ServerPages, InstanceActionView):
    pass


class ServerActivityView(ServerPages, InstanceActivityView):
    filterset_class = ServerEventFilter


class ServerConsoleView(ServerPages, InstanceConsoleView):
    pass


class ServerConsoleTokenView(ServerPages, InstanceConsoleTokenView):
    pass


class ServerStatusView(ServerPages, InstanceStatusView):
    pass


# --- Bots -------------------------------------------------------------------------------------


class BotListView(BotPages, InstanceListView):
    template_name = "servers/bot_list.html"
    filterset_class = BotListFilter
    sort_fields = {**InstanceListView.sort_fields, "runtime": "runtime"}


class BotCreateView(UnbilledRoomMixin, BotPages, InstancePageMixin, FormView):
    needs = "write"
    template_name = "servers/bot_form.html"
    form_class = BotCreateForm

    def form_valid(self, form):
        try:
            bot = bot_create(
                account=self.account,
                region=form.cleaned_data["region"].slug,
                token=form.cleaned_data["token"],
                actor=self.actor(),
                **form.changes(),
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        messages.success(
            self.request, _("Created “%(name)s”: it is being provisioned.") % {"name": bot.name}
        )
        return redirect("bot_detail", pk=bot.pk)


class BotDetailView(BotPages, InstanceDetailView):
    pass


class BotEditView(BotPages, InstanceEditView):
    template_name = "servers/bot_form.html"

    def get_form(self, form_class=None):
        return BotEditForm(**self.get_form_kwargs(), bot=self.instance)


class BotDeleteView(BotPages, InstanceDeleteView):
    pass


class BotActionView(BotPages, InstanceActionView):
    pass


class BotActivityView(BotPages, InstanceActivityView):
    filterset_class = BotEventFilter


class BotConsoleView(BotPages, InstanceConsoleView):
    pass


class BotConsoleTokenView(BotPages, InstanceConsoleTokenView):
    pass


class BotStatusView(BotPages, InstanceStatusView):
    pass

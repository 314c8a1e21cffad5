"""The Ports tab of a server: its allocations (servers/services/allocations.py), the primary
first, each with the name of the game's port it is given to and its note. Reading takes
``settings.read`` there, a change ``settings.write`` (and an account that is not suspended), as
the API's endpoints do: add one (a port asked for, or the lowest free one of its node), make
another one primary, edit a note, remove an additional one. Every change is a plain form POST
that comes back to the list with a message."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import TemplateView

from accounts.actors import Actor
from hosting.errors import ApplicationError, ValidationFailed
from servers.services.allocations import (
    NOTE_MAX,
    allocation_add,
    allocation_limit,
    allocation_names,
    allocation_of,
    allocation_remove,
    allocation_update,
    allocations_of,
)
from servers.views import InstanceObjectMixin, ServerPages


class ServerPortsView(ServerPages, InstanceObjectMixin, TemplateView):
    """The server's allocations (one query for them, one for the game's template)."""

    permission = "settings.read"
    template_name = "servers/instance_ports.html"

    def get_context_data(self, **kwargs):
        server = self.instance
        allocations = list(allocations_of(server))
        names = allocation_names(server, allocations)
        for allocation in allocations:
            allocation.port_name = names[allocation.pk]
        return super().get_context_data(
            allocations=allocations,
            limit=allocation_limit(server),
            note_max=NOTE_MAX,
            can_change_ports=(
                "settings.write" in self.permissions and not self.account.is_suspended
            ),
            ports_url=reverse("server_ports", args=[server.pk]),
            **kwargs,
        )


class ServerPortsDoView(ServerPages, InstanceObjectMixin, View):
    """``POST op=add|note|primary|remove``: one change, then back to the list."""

    http_method_names = ["post"]
    permission = "settings.write"
    needs = "write"

    def post(self, request, *args, **kwargs):
        self.instance  # noqa: B018 - another account's, or none: 404 before reading the form
        actor = Actor.from_request(request)
        try:
            done = self.perform(request.POST.get("op", ""), request.POST, actor)
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, done)
        return redirect(reverse("server_ports", args=[self.instance.pk]))

    def perform(self, op: str, form, actor: Actor) -> str:
        server = self.instance
        if op == "add":
            port = form.get("port", "").strip()
            if port and not port.isdigit():
                raise ValidationFailed.field("port", "invalid", _("A port is a whole number."))
            allocation = allocation_add(
                server=server,
                actor=actor,
                port=int(port) if port else None,
                note=form.get("note", ""),
            )
            return _("%(address)s is now this server's too.") % {"address": allocation.address}
        allocation = allocation_of(server, form.get("allocation_id", ""))
        if op == "note":
            allocation_update(allocation=allocation, actor=actor, note=form.get("note", ""))
            return _("The note of %(address)s is saved.") % {"address": allocation.address}
        if op == "primary":
            allocation_update(allocation=allocation, actor=actor, is_primary=True)
            return _("%(address)s is the primary port from the next start.") % {
                "address": allocation.address
            }
        if op == "remove":
            allocation_remove(allocation=allocation, actor=actor)
            return _("%(address)s went back to the node.") % {"address": allocation.address}
        raise Http404("No such operation.")

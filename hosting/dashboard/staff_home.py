"""The staff home (``/staff``): what a staff member looks after, on one page.

Each app adds its own panel in its ``AppConfig.ready`` (``register_staff_panel``): the desk its
queues and breaches, billing today's run and its failures, the fleet its nodes' health, the
reports their links. The project package draws the page and imports no app (the layering
contract): a panel is a template of its app and a function that gives it its context, shown to
the staff members its ``visible`` rule admits (``user.staff_can_see(area)``, by default).

Staff without an account of their own land here from ``/`` instead of the "create an account"
page; staff with one reach it from the menu's Staff section.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404
from django.views.generic import TemplateView


@dataclass(frozen=True)
class StaffPanel:
    """One panel of the staff home.

    ``key``: unique, the panel's HTML id; ``order``: its place (lower first); ``template``: the
    app's template drawing it; ``context``: the template's context for the staff member;
    ``visible``: whether that staff member sees the panel at all."""

    key: str
    order: int
    template: str
    context: Callable[[Any], dict[str, Any]]
    visible: Callable[[Any], bool]


_PANELS: dict[str, StaffPanel] = {}


def register_staff_panel(panel: StaffPanel) -> None:
    """Add (or, on a second ``ready``, replace) a panel of the staff home."""
    _PANELS[panel.key] = panel


def area_visible(area: str) -> Callable[[Any], bool]:
    """The usual rule: staff whose role may read ``area`` (``StaffArea``) see the panel."""
    return lambda user: user.staff_can_see(area)


def staff_panels(user) -> list[dict[str, Any]]:
    """The panels ``user`` sees, in order, each with its context computed."""
    shown = sorted(
        (panel for panel in _PANELS.values() if panel.visible(user)),
        key=lambda panel: (panel.order, panel.key),
    )
    return [
        {"key": panel.key, "template": panel.template, "context": panel.context(user)}
        for panel in shown
    ]


class StaffHomeView(LoginRequiredMixin, TemplateView):
    """Staff only (anyone else: the 404 page, as for every staff page)."""

    template_name = "staff/home.html"

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not request.user.is_staff:
            raise Http404("No such page.")
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        return super().get_context_data(panels=staff_panels(self.request.user), **kwargs)

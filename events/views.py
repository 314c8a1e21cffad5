"""Dashboard pages of the event log: Settings → Activity, the account's events, each naming and
linking the object it is about."""

from dataclasses import dataclass

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.generic import ListView

from accounts.mixins import AccountPageMixin
from accounts.roles import Right
from events.filters import ActivityFilter
from events.models import Event
from events.selectors import newest_events
from hosting.dashboard.lists import ListControlsMixin


class ActivityView(ListControlsMixin, AccountPageMixin, ListView):
    """The account's event log, its objects named as they are now (``name_event_objects``)."""

    template_name = "events/activity.html"
    context_object_name = "events"
    paginate_by = 50
    required_right = Right.VIEW_ACTIVITY
    search_fields = ("=object_id", "data__object__name", "data__object__email")
    search_label = _("Name, e-mail or ID")
    filterset_class = ActivityFilter
    sort_fields = {"created_at": "created_at"}
    default_sort = "-created_at"

    def get_base_queryset(self):
        events = Event.objects.filter(account=self.account)
        return events.select_related("actor_user", "actor_api_key")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        name_event_objects(context["events"], account_id=self.account.pk)
        return context


@dataclass(frozen=True)
class EventObject:
    """What an event is about, as the Activity page shows it: a name, a link while the object
    exists, and a note ("deleted", or which power action)."""

    name: str
    url: str | None = None
    note: str = ""


# Where an object is seen on the dashboard: (URL name, whether the URL takes the object's id).
# Pages of the apps above the event log are named, never imported. Credit notes and subscriptions
# have no page of their own (an invoice's page lists its credit notes).
OBJECT_PAGES = {
    "server": ("server_detail", True),
    "bot": ("bot_detail", True),
    "webhook_endpoint": ("webhook_detail", True),
    "api_key": ("api_keys", False),
    "member": ("team", False),
    "invoice": ("billing_invoice", True),
    "balance_transaction": ("billing_balance", False),
    "billing_profile": ("billing_profile", False),
}
# An object whose newest event is one of these no longer exists.
GONE_EVENTS = {
    "server.deleted": _("deleted"),
    "bot.deleted": _("deleted"),
    "webhook_endpoint.deleted": _("deleted"),
    "member.removed": _("removed"),
}


def object_name(representation: dict) -> str:
    """What a resource's representation (``event.data["object"]``) is called."""
    for field in ("name", "number", "legal_name", "description", "url", "email"):
        if representation.get(field):
            return str(representation[field])
    return ""


def name_event_objects(events: QuerySet[Event] | list[Event], *, account_id: str) -> None:
    """Set ``event.subject`` on each event: its object's name as the object's newest event has
    it, linked to the object's page, or, once that newest event deleted it, unlinked. An
    action's object is its server or bot. One query, whatever the number of events.

    The event log records every change and every deletion in the change's own transaction,
    so an object's newest event says what it is called now and whether it still exists; asking
    the log keeps this page from reaching into every other app's tables."""
    objects = {}
    for event in events:
        representation = event.data.get("object") or {}
        if event.object_type == "action":
            target = representation.get("target") or {}
            objects[event.pk] = (target.get("type", ""), target.get("id", ""))
        else:
            objects[event.pk] = (event.object_type, event.object_id)
    newest = newest_events(set(objects.values()), account_id=account_id)
    for event in events:
        object_type, object_id = objects[event.pk]
        latest = newest.get((object_type, object_id))
        own = event.data.get("object") or {}
        now_called = object_name(latest.data.get("object") or {}) if latest else ""
        name = now_called or object_name(own) or object_id or "—"
        notes = [own.get("type", "")] if event.object_type == "action" else []
        url = None
        if latest and latest.type in GONE_EVENTS:
            notes.append(GONE_EVENTS[latest.type])
        elif object_type in OBJECT_PAGES and object_id:
            url_name, takes_id = OBJECT_PAGES[object_type]
            url = reverse(url_name, args=[object_id] if takes_id else [])
        event.subject = EventObject(
            name=name, url=url, note=" · ".join(map(str, filter(None, notes)))
        )

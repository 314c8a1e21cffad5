"""Dashboard forms for webhook endpoints: they parse input; webhooks/services.py decides.

The URL's safety (scheme, private addresses), the event patterns and the quota are the service's
rules; its refusals come back through ``ServiceErrorFormMixin`` next to the field concerned.
"""

from django import forms
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from events.catalogue import EVENT_TYPES
from hosting.dashboard.refusals import ServiceErrorFormMixin
from webhooks.models import WebhookEndpoint

ALL_EVENTS = "*"
# How "All <noun> events" names each resource (the prefix of its event types).
_NOUNS = {
    "account": gettext_lazy("account"),
    "action": gettext_lazy("action"),
    "api_key": gettext_lazy("API key"),
    "backup": gettext_lazy("backup"),
    "bot": gettext_lazy("bot"),
    "credit_note": gettext_lazy("credit note"),
    "customer": gettext_lazy("customer"),
    "database": gettext_lazy("database"),
    "invoice": gettext_lazy("invoice"),
    "member": gettext_lazy("member"),
    "payment": gettext_lazy("payment"),
    "payment_method": gettext_lazy("payment method"),
    "schedule": gettext_lazy("schedule"),
    "server": gettext_lazy("server"),
    "ssh_key": gettext_lazy("SSH key"),
    "subscription": gettext_lazy("subscription"),
    "ticket": gettext_lazy("ticket"),
    "user": gettext_lazy("user"),
    "webhook": gettext_lazy("webhook"),
    "webhook_endpoint": gettext_lazy("webhook endpoint"),
}
# The event catalogue's groups (events.catalogue.EVENT_TYPES), as the picker's headings read.
_GROUP_LABELS = {
    "Servers": gettext_lazy("Servers"),
    "Bots": gettext_lazy("Bots"),
    "Backups": gettext_lazy("Backups"),
    "Databases": gettext_lazy("Databases"),
    "Schedules": gettext_lazy("Schedules"),
    "Actions": gettext_lazy("Actions"),
    "API keys": gettext_lazy("API keys"),
    "Team": gettext_lazy("Team"),
    "Account": gettext_lazy("Account"),
    "SSH keys and SFTP": gettext_lazy("SSH keys and SFTP"),
    "Billing": gettext_lazy("Billing"),
    "Support": gettext_lazy("Support"),
    "Webhooks": gettext_lazy("Webhooks"),
}


def _prefixes(types: list[str]) -> list[str]:
    """``["account.created", "user.updated"]`` -> ``["account", "user"]``, in order."""
    return list(dict.fromkeys(event_type.split(".")[0] for event_type in types))


def event_choices() -> list[tuple[str, str]]:
    """Every pattern a person may tick: all events, each area's ``<prefix>.*``, each type."""
    choices = [(ALL_EVENTS, _("All events"))]
    for types in EVENT_TYPES.values():
        choices += [
            (f"{prefix}.*", _("All %(pattern)s events") % {"pattern": f"{prefix}.*"})
            for prefix in _prefixes(types)
        ]
        choices += [(event_type, event_type) for event_type in types]
    return choices


def events_summary(patterns: list[str], *, shown: int = 3) -> str:
    """``["server.*", "bot.crashed"]`` as "server.*, bot.crashed"; ``["*"]`` as "All events"."""
    if ALL_EVENTS in patterns:
        return _("All events")
    summary = ", ".join(patterns[:shown])
    if len(patterns) > shown:
        more = len(patterns) - shown
        summary = ngettext(
            "%(patterns)s and %(more)d more", "%(patterns)s and %(more)d more", more
        ) % {"patterns": summary, "more": more}
    return summary


def _checkbox_id(value: str) -> str:
    return "event-" + value.replace(".", "-").replace("*", "all")


class WebhookEndpointForm(ServiceErrorFormMixin, forms.Form):
    """URL, description, event types (grouped by area) and whether a new endpoint is enabled."""

    url = forms.URLField(
        label=gettext_lazy("URL"),
        max_length=2000,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/webhooks"}),
        help_text=gettext_lazy(
            "Events are POSTed here as JSON, signed with the endpoint's secret."
        ),
    )
    description = forms.CharField(
        label=gettext_lazy("Description"),
        required=False,
        max_length=500,
        help_text=gettext_lazy("What receives these events, e.g. “Deploy bot” or “Status page”."),
    )
    enabled_events = forms.MultipleChoiceField(
        label=gettext_lazy("Events"),
        choices=event_choices,
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": gettext_lazy("Choose at least one event type, or all events.")},
    )
    enabled = forms.BooleanField(
        required=False,
        initial=True,
        label=gettext_lazy("Enabled"),
        help_text=gettext_lazy("A disabled endpoint receives nothing until it is enabled again."),
    )

    def event_groups(self) -> list[dict]:
        """The event checkboxes by area: each resource's ``<prefix>.*`` box, then its types.

        A group's types start folded away unless one of them is ticked, so the common choices
        (everything of a resource) are on screen and the fifty single types are not.
        """
        ticked = set(self["enabled_events"].value() or ())

        def box(value: str) -> dict:
            return {"value": value, "id": _checkbox_id(value), "checked": value in ticked}

        groups = []
        for label, types in EVENT_TYPES.items():
            chosen = sum(event_type in ticked for event_type in types)
            wildcards = [
                {**box(f"{prefix}.*"), "noun": _NOUNS.get(prefix, prefix)}
                for prefix in _prefixes(types)
            ]
            groups.append(
                {
                    "label": _GROUP_LABELS.get(label, label),
                    "id": "events-" + slugify(label),
                    "wildcards": wildcards,
                    "types": [box(event_type) for event_type in types],
                    "chosen": chosen,
                }
            )
        return groups

    def all_events_checked(self) -> bool:
        return ALL_EVENTS in (self["enabled_events"].value() or ())


class WebhookEditForm(WebhookEndpointForm):
    """The settings of an existing endpoint; enabling and disabling have their own button."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["enabled"]

    @classmethod
    def of(cls, endpoint: WebhookEndpoint, data=None) -> "WebhookEditForm":
        initial = {
            "url": endpoint.url,
            "description": endpoint.description,
            "enabled_events": endpoint.enabled_events,
        }
        return cls(data, initial=initial)

    def changes(self) -> dict:
        """Only what was changed: an unchanged URL is not resolved and checked again."""
        return {name: self.cleaned_data[name] for name in self.changed_data}

"""Dashboard forms for webhook endpoints: they parse input; webhooks/services.py decides.

The URL's safety (scheme, private addresses), the event patterns and the quota are the service's
rules; its refusals come back through ``ServiceErrorFormMixin`` next to the field concerned.
"""

from django import forms
from django.utils.text import slugify

from events.catalogue import EVENT_TYPES
from hosting.dashboard.refusals import ServiceErrorFormMixin
from webhooks.models import WebhookEndpoint

ALL_EVENTS = "*"
# How "All <noun> events" names a resource whose prefix does not read as a word.
_NOUNS = {"api_key": "API key", "webhook_endpoint": "webhook endpoint"}


def _prefixes(types: list[str]) -> list[str]:
    """``["account.created", "user.updated"]`` -> ``["account", "user"]``, in order."""
    return list(dict.fromkeys(event_type.split(".")[0] for event_type in types))


def event_choices() -> list[tuple[str, str]]:
    """Every pattern a person may tick: all events, each area's ``<prefix>.*``, each type."""
    choices = [(ALL_EVENTS, "All events")]
    for types in EVENT_TYPES.values():
        choices += [(f"{prefix}.*", f"All {prefix}.* events") for prefix in _prefixes(types)]
        choices += [(event_type, event_type) for event_type in types]
    return choices


def events_summary(patterns: list[str], *, shown: int = 3) -> str:
    """``["server.*", "bot.crashed"]`` as "server.*, bot.crashed"; ``["*"]`` as "All events"."""
    if ALL_EVENTS in patterns:
        return "All events"
    summary = ", ".join(patterns[:shown])
    if len(patterns) > shown:
        summary += f" and {len(patterns) - shown} more"
    return summary


def _checkbox_id(value: str) -> str:
    return "event-" + value.replace(".", "-").replace("*", "all")


class WebhookEndpointForm(ServiceErrorFormMixin, forms.Form):
    """URL, description, event types (grouped by area) and whether a new endpoint is enabled."""

    url = forms.URLField(
        label="URL",
        max_length=2000,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/webhooks"}),
        help_text="Events are POSTed here as JSON, signed with the endpoint's secret.",
    )
    description = forms.CharField(
        required=False,
        max_length=500,
        help_text="What receives these events, e.g. “Deploy bot” or “Status page”.",
    )
    enabled_events = forms.MultipleChoiceField(
        label="Events",
        choices=event_choices,
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one event type, or all events."},
    )
    enabled = forms.BooleanField(
        required=False,
        initial=True,
        label="Enabled",
        help_text="A disabled endpoint receives nothing until it is enabled again.",
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
                    "label": label,
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

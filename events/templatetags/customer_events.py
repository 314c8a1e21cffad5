"""The customer 360's recent activity: the account's newest events (accounts' AccountAdmin
page loads this library; the event log sits above accounts)."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from events.selectors import events_of_account

register = template.Library()
SHOWN = 15


@register.inclusion_tag("admin/accounts/account/panel.html", takes_context=True)
def customer_activity(context, account) -> dict:
    user = context["request"].user
    panel: dict = {"key": "activity", "title": _("Recent activity")}
    if not user.has_perm("events.view_event"):
        panel["refused"] = _("Your staff role does not see the event log.")
        return {"panel": panel}
    events = events_of_account(account_id=account.pk).select_related("actor_user", "actor_api_key")[
        :SHOWN
    ]
    query = urlencode({"account__id__exact": account.pk})
    panel |= {
        "headers": [_("When"), _("Event"), _("Object"), _("By")],
        "rows": [
            [
                each.created_at.strftime("%Y-%m-%d %H:%M"),
                format_html(
                    '<a href="{}">{}</a>',
                    reverse("admin:events_event_change", args=[each.pk]),
                    each.type,
                ),
                each.object_id,
                each.actor_label,
            ]
            for each in events
        ],
        "empty": _("Nothing recorded yet."),
        "more": [(_("Whole event log"), reverse("admin:events_event_changelist") + "?" + query)],
    }
    return {"panel": panel}

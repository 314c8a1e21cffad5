"""The customer 360's servers and bots (accounts' AccountAdmin page loads this library: a
higher app's data on a lower app's page is named, never imported; pyproject's contracts)."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from servers.models import Bot, Server

register = template.Library()
SHOWN = 20


def _rows(instances, url_name: str, kind: str) -> list[list[str]]:
    return [
        [
            format_html('<a href="{}">{}</a>', reverse(url_name, args=[each.pk]), each.name),
            kind,
            each.get_status_display(),
            str(each.region),
            each.created_at.strftime("%Y-%m-%d"),
        ]
        for each in instances
    ]


@register.inclusion_tag("admin/accounts/account/panel.html", takes_context=True)
def customer_servers(context, account) -> dict:
    user = context["request"].user
    panel: dict = {"key": "servers", "title": _("Servers and bots")}
    if not (user.has_perm("servers.view_server") or user.has_perm("servers.view_bot")):
        panel["refused"] = _("Your staff role does not see servers or bots.")
        return {"panel": panel}
    rows: list[list[str]] = []
    query = urlencode({"account__id__exact": account.pk})
    more = []
    if user.has_perm("servers.view_server"):
        servers = Server.objects.filter(account=account, deleted_at=None).select_related("region")
        rows += _rows(servers.order_by("name")[:SHOWN], "admin:servers_server_change", _("Server"))
        more.append((_("All servers"), reverse("admin:servers_server_changelist") + "?" + query))
    if user.has_perm("servers.view_bot"):
        bots = Bot.objects.filter(account=account, deleted_at=None).select_related("region")
        rows += _rows(bots.order_by("name")[:SHOWN], "admin:servers_bot_change", _("Bot"))
        more.append((_("All bots"), reverse("admin:servers_bot_changelist") + "?" + query))
    panel |= {
        "headers": [_("Name"), _("Kind"), _("Status"), _("Region"), _("Created")],
        "rows": rows,
        "empty": _("No servers or bots."),
        "more": more,
    }
    return {"panel": panel}

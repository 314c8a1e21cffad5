"""The customer 360's tickets, with "Open a ticket for this customer" (accounts' AccountAdmin
page loads this library; support sits above accounts)."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from support.models import Ticket

register = template.Library()
SHOWN = 10


@register.inclusion_tag("admin/accounts/account/panel.html", takes_context=True)
def customer_tickets(context, account) -> dict:
    user = context["request"].user
    panel: dict = {"key": "tickets", "title": _("Tickets")}
    if not user.has_perm("support.view_ticket"):
        panel["refused"] = _("Your staff role does not see tickets.")
        return {"panel": panel}
    tickets = (
        Ticket.objects.filter(account=account)
        .select_related("department", "assignee")
        .order_by("-updated_at", "-id")[:SHOWN]
    )
    desk = user.works_desk

    def opened(ticket: Ticket) -> str:
        # Worked in the desk; staff who do not work it read the record in admin.
        url_name = "desk_ticket" if desk else "admin:support_ticket_change"
        url = reverse(url_name, args=[ticket.pk])
        return format_html('<a href="{}">#{} {}</a>', url, ticket.number, ticket.subject)

    actions = []
    if desk:
        url = reverse("admin:support_ticket_open") + "?" + urlencode({"account": account.pk})
        actions.append({"label": _("Open a ticket for this customer"), "url": url})
    query = urlencode({"account__id__exact": account.pk})
    panel |= {
        "headers": [_("Ticket"), _("Status"), _("Department"), _("Assignee"), _("Updated")],
        "rows": [
            [
                opened(each),
                each.get_status_display(),
                str(each.department),
                str(each.assignee or "-"),
                each.updated_at.strftime("%Y-%m-%d %H:%M"),
            ]
            for each in tickets
        ],
        "empty": _("No tickets."),
        "actions": actions,
        "more": [(_("All tickets"), reverse("admin:support_ticket_changelist") + "?" + query)],
    }
    return {"panel": panel}

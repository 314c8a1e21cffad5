"""Dashboard pages of analytics: the account's overview (fleet, usage, spend, tickets).

Readable with ``analytics:read`` in the role's scopes (else 404, and the navigation hides it);
it changes nothing. Every figure is the account's own, read through the apps' selectors.
"""

from datetime import timedelta

from django.db.models import Count
from django.utils import timezone
from django.views.generic import TemplateView

from accounts.dashboard import AreaPageMixin
from analytics.representations import account_usage_representation
from analytics.selectors.usage import (
    LEVELS,
    account_daily_usage,
    account_usage,
)
from servers.models import ServerStatus
from servers.selectors import bots_of_account, servers_of_account
from support.selectors import tickets_of_account

OVERVIEW_DAYS = 30
OPEN_TICKETS = ("open", "pending_customer", "pending_staff", "on_hold")


class AccountOverviewView(AreaPageMixin, TemplateView):
    """The account at a glance: servers and bots per status, the last 30 days' usage with
    its largest consumers, and open tickets."""

    area = "analytics"
    template_name = "analytics/overview.html"

    def get_context_data(self, **kwargs):
        account_id = self.account.id
        servers = servers_of_account(account_id=account_id)
        bots = bots_of_account(account_id=account_id)
        labels = dict(ServerStatus.choices)
        fleet = []
        for kind, queryset in (("Servers", servers), ("Bots", bots)):
            counts = dict(queryset.order_by().values_list("status").annotate(n=Count("pk")))
            fleet.append(
                {
                    "kind": kind,
                    "total": sum(counts.values()),
                    "statuses": [(labels[s], n) for s, n in sorted(counts.items()) if n],
                }
            )
        names = {pk: ("server", name) for pk, name in servers.values_list("id", "name")} | {
            pk: ("bot", name) for pk, name in bots.values_list("id", "name")
        }
        end = timezone.now()
        start = (end - timedelta(days=OVERVIEW_DAYS - 1)).replace(
            hour=0, minute=0, second=0, microsecond=0
        )
        day_level = LEVELS[0]
        consumers = account_usage(instance_ids=names, start=start, end=end, level=day_level)
        usage = account_usage_representation(
            start=start, end=end, level=day_level, consumers=consumers, names=names,
            top="cpu_percent", limit=5,
        )  # fmt: skip
        daily = account_daily_usage(instance_ids=names, start=start, end=end)
        return super().get_context_data(
            fleet=fleet,
            usage=usage,
            daily=[
                {
                    "day": totals.day.strftime("%Y-%m-%d"),
                    "cpu_percent": round(totals.cpu_percent, 2),
                    "memory_bytes": round(totals.memory_bytes),
                    "network_rx_bytes": totals.network_rx_bytes,
                    "network_tx_bytes": totals.network_tx_bytes,
                }
                for totals in daily
            ],
            open_tickets=tickets_of_account(account_id=account_id)
            .filter(status__in=OPEN_TICKETS)
            .count(),
            **kwargs,
        )

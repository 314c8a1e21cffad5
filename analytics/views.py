"""Dashboard pages of analytics: the account's overview (fleet, usage, tickets), the usage
charts' data of a server's or bot's page, and the staff's business reports.

The overview is readable with ``analytics:read`` in the role's scopes (else 404, and the
navigation hides it); every figure is the account's own. The charts' data needs that and the
read scope of the instance's kind. The reports page is for staff users only (anyone else:
404). None changes anything.
"""

from datetime import UTC, date, datetime, timedelta
from functools import cached_property

from django.contrib.auth.mixins import LoginRequiredMixin
from django.db.models import Count, QuerySet
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views import View
from django.views.generic import TemplateView

from accounts.mixins import AccountPageMixin, AreaPageMixin
from accounts.roles import STAFF_REPORT_AREAS, scopes_allowed_for
from analytics.forms import ReportRangeForm
from analytics.reporting import Report, month_start
from analytics.representations import (
    account_usage_representation,
    metrics_representation,
    report_csv_response,
    report_labels,
    report_representation,
    report_table,
    timestamp,
    uptime_representation,
)
from analytics.selectors.instances import instances_ever, kinds_readable, usage_readable
from analytics.selectors.reports_billing import (
    BUCKET_LABELS,
    BUCKETS,
    ar_aging_report,
    revenue_report,
    spend_report,
)
from analytics.selectors.reports_mrr import churn_report, mrr_report, mrr_snapshot_latest
from analytics.selectors.reports_operations import fleet_report, tickets_report
from analytics.selectors.uptime import instances_uptime, uptime_range
from analytics.selectors.usage import (
    LEVELS,
    account_daily_usage,
    account_usage,
    metrics_plan,
    metrics_series,
    usage_latest,
)
from hosting.money import SUPPORTED_CURRENCIES, minor_units
from servers.models import Instance, ServerStatus
from servers.selectors import bots_of_account, region_catalogue, servers_of_account
from support.selectors import tickets_of_account

OVERVIEW_DAYS = 30
SPEND_MONTHS = 6
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
        for kind, queryset in ((_("Servers"), servers), (_("Bots"), bots)):
            counts = dict(queryset.order_by().values_list("status").annotate(n=Count("pk")))
            fleet.append(
                {
                    "kind": kind,
                    "total": sum(counts.values()),
                    "statuses": [(labels[s], n) for s, n in sorted(counts.items()) if n],
                }
            )
        # History keeps deleted servers and bots (marked); the role names only the kinds it reads.
        instances = instances_ever(account_id=account_id)
        names = {instance.pk: (instance.kind, instance.name) for instance in instances}
        readable = kinds_readable(scopes_allowed_for(self.role, is_staff=False))
        end = timezone.now()
        start = (end - timedelta(days=OVERVIEW_DAYS - 1)).replace(
            hour=0, minute=0, second=0, microsecond=0
        )
        day_level = LEVELS[0]
        consumers = account_usage(instance_ids=names, start=start, end=end, level=day_level)
        usage = account_usage_representation(
            start=start,
            end=end,
            level=day_level,
            consumers=consumers,
            names=names,
            top="cpu_percent",
            limit=5,
            listed={instance.pk for instance in instances if instance.kind in readable},
            deleted={
                instance.pk: instance.deleted_at for instance in instances if instance.deleted_at
            },
        )
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
            spend=self.spend(),
            **kwargs,
        )

    def spend(self):
        """The last six months' invoices, for a role that may read billing (else None)."""
        if "billing:read" not in scopes_allowed_for(self.role, is_staff=False):
            return None
        last = month_start(timezone.now())
        index = last.year * 12 + last.month - 1 - (SPEND_MONTHS - 1)
        first = date(index // 12, index % 12 + 1, 1)
        return report_table(spend_report(account_id=self.account.id, first=first, last=last))


# --- A server's or bot's usage charts ----------------------------------------------------------

# The ``range`` the charts ask for (their buttons: the ``usage`` template tags' CHART_RANGES).
USAGE_RANGES = {
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}


class InstanceUsageView(AccountPageMixin, View):
    """``GET ?range=24h``: the usage charts' series (as the metrics API shows them) and the
    last 30 days' uptime of one of the account's servers or bots, as JSON for
    usage_charts.js. Needs ``analytics:read`` and the read scope of the instance's kind."""

    http_method_names = ["get"]
    kind: str  # "server" or "bot"

    def instances(self) -> QuerySet[Instance]:
        of_account = servers_of_account if self.kind == "server" else bots_of_account
        return of_account(account_id=self.account.id)

    def get(self, request, pk: str):
        if not usage_readable(scopes_allowed_for(self.role, is_staff=False), self.kind):
            return JsonResponse(
                {
                    "success": False,
                    "error": {
                        "code": "permission_denied",
                        "message": _("Your role may not read usage."),
                    },
                },
                status=403,
            )
        instance = get_object_or_404(self.instances(), pk=pk)
        span = USAGE_RANGES.get(request.GET.get("range", "24h"), USAGE_RANGES["24h"])
        now = timezone.now()
        plan = metrics_plan(start=now - span, end=now, now=now)
        series = metrics_series(
            instance_id=instance.pk,
            metrics=("cpu_percent", "memory_bytes", "network_rx_bytes", "network_tx_bytes"),
            aggregate="avg",
            plan=plan,
        )
        start, end = uptime_range(None, None, now=now)
        uptime = instances_uptime([instance], start=start, end=end)[instance.pk]
        latest = usage_latest(instance.pk)
        return JsonResponse(
            {
                "success": True,
                "data": {
                    "metrics": metrics_representation(plan, series),
                    "uptime": uptime_representation(uptime),
                    "memory_limit_bytes": instance.memory_mb * 2**20,
                    # For the empty state: why a range has no samples (never ran, or not then).
                    "kind": instance.kind,
                    "status": instance.status,
                    "last_sample_at": timestamp(latest.at) if latest else None,
                },
            }
        )


class ServerUsageView(InstanceUsageView):
    kind = "server"


class BotUsageView(InstanceUsageView):
    kind = "bot"


# --- Staff -------------------------------------------------------------------------------------


class StaffPageMixin(LoginRequiredMixin):
    """A page for the hosting company's staff; anyone else gets the 404 page. Each staff member
    sees the reports of the areas their role may read (``accounts/roles.py``)."""

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not any(request.user.staff_can_see(area) for area in STAFF_REPORT_AREAS.values()):
            raise Http404("No such page.")
        return super().dispatch(request, *args, **kwargs)

    @cached_property
    def form(self) -> ReportRangeForm:
        return ReportRangeForm(self.request.GET or None)

    def range(self) -> tuple[date, date, str | None]:
        """The months and currency asked for; the defaults when the form is not valid (the
        page shows its errors)."""
        form = self.form if self.form.is_bound and self.form.is_valid() else ReportRangeForm({})
        form.is_valid()
        data = form.cleaned_data
        return data["first"], data["last"], data.get("currency") or None

    def reports(self) -> dict[str, Report]:
        first, last, currency = self.range()
        user = self.request.user
        wanted = {name for name, area in STAFF_REPORT_AREAS.items() if user.staff_can_see(area)}
        # Only the reports asked for are computed: each reads a good part of the database.
        makers = {
            "mrr": lambda: mrr_report(first=first, last=last, currency=currency),
            "churn": lambda: churn_report(first=first, last=last, currency=currency),
            "revenue": lambda: revenue_report(
                first=first, last=last, currency=currency, group_by="month"
            ),
            "ar-aging": lambda: ar_aging_report(
                as_of=timezone.now().date(), currency=currency, group_by="bucket"
            ),
            "tickets": lambda: tickets_report(user=user, first=first, last=last),
            "fleet": lambda: fleet_report(group_by="status"),
            "nodes": lambda: fleet_report(group_by="node"),
        }
        return {name: make() for name, make in makers.items() if name in wanted}


STAFF_REPORT_TITLES = {
    "mrr": gettext_lazy("MRR and its movements"),
    "revenue": gettext_lazy("Revenue: billed and collected"),
    "churn": gettext_lazy("Customer and revenue churn"),
    "ar-aging": gettext_lazy("Accounts receivable aging"),
    "tickets": gettext_lazy("Tickets: response, resolution and SLA"),
    "fleet": gettext_lazy("Fleet: servers and bots per status"),
    "nodes": gettext_lazy("Nodes: capacity given"),
}


def report_value_names() -> dict[str, dict[str, str]]:
    """What the reports' machine values are called on the page (the CSV and the API keep the
    values): aging buckets, statuses, kinds and regions by their names."""
    return {
        "bucket": {b: _(label) for b, label in zip(BUCKETS, BUCKET_LABELS, strict=True)},
        "status": {value: str(label) for value, label in ServerStatus.choices},
        "kind": {"server": _("Server"), "bot": _("Bot")},
        "region": dict(region_catalogue().values_list("slug", "name")),
    }


def mrr_empty_note(*, now: datetime) -> SafeString:
    """Why the MRR and churn reports have no row, and when that changes: they are read from
    the daily snapshots housekeeping takes (on its first run of each UTC day)."""
    latest = mrr_snapshot_latest()
    tomorrow = (now.astimezone(UTC) + timedelta(days=1)).date()
    if latest is None:
        # Constant text, no value in it (its translation is trusted as a template is).
        return mark_safe(  # noqa: S308
            _(
                "No MRR snapshot has been taken yet. These reports read the daily snapshots: "
                "housekeeping (<code>manage.py housekeeping</code>) takes the first on its next "
                "run, then one on its first run of each UTC day; "
                "<code>manage.py mrr_snapshot</code> takes one now."
            )
        )
    text = ngettext(
        "No paying subscription in the MRR snapshots of this range. The latest snapshot, of "
        "{day} (taken {time} UTC), counted {accounts} paying account; subscriptions paid since "
        "count from the next, which housekeeping takes on {tomorrow} on its first run after "
        "00:00 UTC.",
        "No paying subscription in the MRR snapshots of this range. The latest snapshot, of "
        "{day} (taken {time} UTC), counted {accounts} paying accounts; subscriptions paid since "
        "count from the next, which housekeeping takes on {tomorrow} on its first run after "
        "00:00 UTC.",
        latest.accounts,
    )
    return format_html(
        text,
        day=date_format(latest.day, "j M Y"),
        time=f"{latest.taken_at.astimezone(UTC):%H:%M}",
        accounts=latest.accounts,
        tomorrow=date_format(tomorrow, "j M Y"),
    )


class StaffReportsView(StaffPageMixin, TemplateView):
    """The business reports for staff, each as a chart and a table, with CSV downloads."""

    template_name = "analytics/staff_reports.html"

    def get_context_data(self, **kwargs):
        reports = self.reports()
        query = self.request.GET.urlencode()
        names = report_value_names()
        empty_mrr = (
            mrr_empty_note(now=timezone.now())
            if any(not reports[n].rows for n in ("mrr", "churn") if n in reports)
            else ""
        )
        return super().get_context_data(
            form=self.form,
            sections=[
                {
                    "name": name,
                    "title": STAFF_REPORT_TITLES[name],
                    "table": report_table(report, names),
                    "empty": empty_mrr if name in ("mrr", "churn") else "",
                    "csv_url": reverse("analytics_staff_report_csv", args=[name])
                    + (f"?{query}" if query else ""),
                }
                for name, report in reports.items()
            ],
            charts={
                "reports": {name: report_representation(r) for name, r in reports.items()},
                "labels": {name: report_labels(r) for name, r in reports.items()},
                # How many decimals each currency's minor units are (EUR 2, JPY 0).
                "exponents": {code: minor_units(code) for code in SUPPORTED_CURRENCIES},
                "names": names,
            },
            **kwargs,
        )


class StaffReportCsvView(StaffPageMixin, View):
    """One of the staff reports as a CSV download, with the page's months and currency."""

    def get(self, request, name: str):
        reports = self.reports()
        if name not in reports:
            raise Http404("No such report.")
        return report_csv_response(reports[name])

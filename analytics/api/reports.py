"""The report endpoints (customer and staff), each with a CSV export of the same rows.

A customer's usage, uptime and spend are ``GET /v1/analytics/reports/{usage,uptime,spend}``
(``analytics:read``; usage and uptime list only the servers, or bots, the key may read; spend
also needs ``billing:read``); the staff's
business reports are ``GET /v1/admin/reports/{mrr,revenue,ar-aging,churn,tickets,fleet}``
(``admin:read``). Every one answers ``data.report`` (``analytics.representations``), or with
``format=csv`` a CSV download; a refusal is the JSON error envelope either way.
"""

import re
from datetime import date

from django.http import QueryDict
from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import extend_schema_view
from rest_framework.response import Response

from analytics.api import report_docs as docs
from analytics.reporting import Report, month_start
from analytics.representations import report_csv_response, report_representation
from analytics.selectors.instances import kinds_readable
from analytics.selectors.reports_billing import ar_aging_report, revenue_report, spend_report
from analytics.selectors.reports_mrr import churn_report, mrr_report
from analytics.selectors.reports_operations import fleet_report, tickets_report
from analytics.selectors.reports_usage import uptime_report, usage_report
from hosting.api.params import invalid_parameter, single_value
from hosting.api.views import ApiViewSet
from hosting.money import UnsupportedCurrency, validate_currency

# Spend is invoice money: a role that may not read billing (developers, support) sees none.
READ, SPEND_READ = ["analytics:read"], ["analytics:read", "billing:read"]
STAFF_READ = ["admin:read"]
FORMATS = ("json", "csv")
DEFAULT_MONTHS = 12
MAX_MONTHS = 120
EARLIEST = date(1970, 1, 1)
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})", re.ASCII)
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


def _choice(params: QueryDict, name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first when absent)."""
    value = single_value(params, name)
    if value is None:
        return choices[0]
    if value not in choices:
        raise invalid_parameter(
            name, "invalid_choice", f"Query parameter '{name}' is one of: {', '.join(choices)}."
        )
    return value


def _month(params: QueryDict, name: str) -> date | None:
    raw = single_value(params, name)
    if raw is None:
        return None
    match = _MONTH.fullmatch(raw)
    if match is None or not 1 <= int(match[2]) <= 12 or int(match[1]) < EARLIEST.year:
        raise invalid_parameter(
            name, "invalid", f"Query parameter '{name}' must be a month written YYYY-MM, 1970 on."
        )
    return date(int(match[1]), int(match[2]), 1)


def _index(month: date) -> int:
    return month.year * 12 + month.month - 1


def _months_back(month: date, count: int) -> date:
    index = _index(month) - count
    return date(index // 12, index % 12 + 1, 1)


def _month_range(params: QueryDict) -> tuple[date, date]:
    """``start_month`` and ``end_month``, both included: by default the 12 months to the
    current one; never past the current month, at most ``MAX_MONTHS`` long."""
    current = month_start(timezone.now())
    last = _month(params, "end_month") or current
    if last > current:
        raise invalid_parameter(
            "end_month", "max_value", "Query parameter 'end_month' may not be after this month."
        )
    first = _month(params, "start_month") or max(_months_back(last, DEFAULT_MONTHS - 1), EARLIEST)
    if first > last:
        raise invalid_parameter(
            "start_month", "invalid", "Query parameter 'start_month' may not be after end_month."
        )
    if _index(last) - _index(first) >= MAX_MONTHS:
        raise invalid_parameter(
            "start_month", "out_of_range", f"A report covers at most {MAX_MONTHS} months."
        )
    return first, last


def _as_of(params: QueryDict) -> date:
    raw = single_value(params, "as_of")
    if raw is None:
        return timezone.now().date()
    try:
        day = date.fromisoformat(raw) if _DAY.fullmatch(raw) else None
    except ValueError:
        day = None
    if day is None or not EARLIEST <= day < date(9999, 12, 31):
        raise invalid_parameter(
            "as_of", "invalid", "Query parameter 'as_of' must be a day written YYYY-MM-DD, 1970 on."
        )
    return day


def _currency(params: QueryDict) -> str | None:
    raw = single_value(params, "currency")
    if raw is None:
        return None
    try:
        return validate_currency(raw)
    except UnsupportedCurrency as unknown:
        raise invalid_parameter("currency", "invalid_choice", str(unknown)) from None


class ReportViewSet(ApiViewSet):
    """``GET`` one report: ``report()`` reads its parameters and makes it."""

    def report(self, params: QueryDict) -> Report:
        raise NotImplementedError

    def retrieve(self, request):
        as_csv = _choice(request.query_params, "format", FORMATS) == "csv"
        report = self.report(request.query_params)
        if as_csv:
            return report_csv_response(report)
        return Response({"report": report_representation(report)})


@extend_schema_view(retrieve=docs.SPEND_DOC)
class SpendReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": SPEND_READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        group_by = _choice(params, "group_by", docs.SPEND_GROUPS)
        account_id = self.request.auth.account.id
        return spend_report(account_id=account_id, first=first, last=last, group_by=group_by)


@extend_schema_view(retrieve=docs.USAGE_REPORT_DOC)
class UsageReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        return usage_report(
            account_id=self.request.auth.account.id,
            first=first,
            last=last,
            kinds=kinds_readable(self.request.auth.scopes),
        )


@extend_schema_view(retrieve=docs.UPTIME_REPORT_DOC)
class UptimeReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        return uptime_report(
            account_id=self.request.auth.account.id,
            first=first,
            last=last,
            kinds=kinds_readable(self.request.auth.scopes),
        )


@extend_schema_view(retrieve=docs.MRR_DOC)
class MrrReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": STAFF_READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        return mrr_report(first=first, last=last, currency=_currency(params))


@extend_schema_view(retrieve=docs.CHURN_DOC)
class ChurnReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": STAFF_READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        return churn_report(first=first, last=last, currency=_currency(params))


@extend_schema_view(retrieve=docs.REVENUE_DOC)
class RevenueReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": STAFF_READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        return revenue_report(
            first=first,
            last=last,
            currency=_currency(params),
            group_by=_choice(params, "group_by", docs.REVENUE_GROUPS),
        )


@extend_schema_view(retrieve=docs.AR_AGING_DOC)
class ArAgingReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": STAFF_READ}

    def report(self, params: QueryDict) -> Report:
        return ar_aging_report(
            as_of=_as_of(params),
            currency=_currency(params),
            group_by=_choice(params, "group_by", docs.AR_AGING_GROUPS),
        )


@extend_schema_view(retrieve=docs.TICKETS_DOC)
class TicketsReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": STAFF_READ}

    def report(self, params: QueryDict) -> Report:
        first, last = _month_range(params)
        return tickets_report(user=self.request.auth.user, first=first, last=last)


@extend_schema_view(retrieve=docs.FLEET_DOC)
class FleetReportViewSet(ReportViewSet):
    required_scopes = {"retrieve": STAFF_READ}

    def report(self, params: QueryDict) -> Report:
        return fleet_report(group_by=_choice(params, "group_by", docs.FLEET_GROUPS))


def _route(url: str, view: type[ReportViewSet], name: str):
    return path(url, view.as_view({"get": "retrieve"}), name=f"report-{name}")


urlpatterns = [
    _route("analytics/reports/spend", SpendReportViewSet, "spend"),
    _route("analytics/reports/usage", UsageReportViewSet, "usage"),
    _route("analytics/reports/uptime", UptimeReportViewSet, "uptime"),
    _route("admin/reports/mrr", MrrReportViewSet, "mrr"),
    _route("admin/reports/revenue", RevenueReportViewSet, "revenue"),
    _route("admin/reports/ar-aging", ArAgingReportViewSet, "ar-aging"),
    _route("admin/reports/churn", ChurnReportViewSet, "churn"),
    _route("admin/reports/tickets", TicketsReportViewSet, "tickets"),
    _route("admin/reports/fleet", FleetReportViewSet, "fleet"),
]

"""The analytics API: usage series of one server or bot."""

from datetime import timedelta

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from analytics import rollups
from analytics.api.serializers import (
    ACCOUNT_USAGE_EXAMPLES,
    METRICS_EXAMPLES,
    UPTIME_EXAMPLES,
    AccountUsageSerializer,
    MetricsSerializer,
    UptimeSerializer,
)
from analytics.representations import (
    account_usage_representation,
    metrics_representation,
    uptime_representation,
)
from analytics.selectors.instances import KIND_SCOPES, instances_ever, kinds_readable
from analytics.selectors.uptime import instances_uptime, uptime_range
from analytics.selectors.usage import (
    MIN_STEP,
    TOP_METRICS,
    account_usage,
    metrics_plan,
    metrics_series,
    parse_metrics,
    usage_range,
    usage_range_level,
)
from hosting.api.params import datetime_value, integer_value, invalid_parameter, single_value
from hosting.api.schema import envelope, error_doc
from hosting.api.views import ApiViewSet
from hosting.errors import NotFound
from servers.selectors import bots_of_account, servers_of_account

READ = ["analytics:read"]


def bad_parameter(problems: str, example: str, name: str):
    return error_doc(
        400,
        "invalid_parameter",
        "`invalid_parameter` (details.parameters): a parameter given twice or malformed, "
        f"{problems}.",
        example,
        {"parameters": [{"name": name, "code": "invalid", "message": example}]},
    )


SERIES_BAD = bad_parameter(
    "`end` not after `start`, a range of more than 3,660 days, a `step` below 10, an unknown "
    "metric or aggregate",
    "end must be after start.",
    "end",
)
UPTIME_BAD = bad_parameter(
    "`end` not after `start` (or `start` after now), a range of more than 400 days",
    "end must be after start, and start before now.",
    "end",
)
USAGE_BAD = bad_parameter(
    "`end` not after `start`, a range of more than 3,660 days, an unknown `top`, a `limit` "
    "outside 1 to 100",
    "end must be after start.",
    "end",
)


def range_parameters(default: str) -> list[OpenApiParameter]:
    return [
        OpenApiParameter(
            "start", OpenApiTypes.DATETIME, description=f"ISO 8601; default `end` less {default}."
        ),
        OpenApiParameter(
            "end", OpenApiTypes.DATETIME, description="ISO 8601 (exclusive); default now."
        ),
    ]


DEFAULT_RANGE = timedelta(hours=24)
USAGE_RANGE = timedelta(days=30)
METRICS_PARAMETERS = [
    OpenApiParameter(
        "metrics",
        str,
        description="Comma-separated: " + ", ".join(f"`{m}`" for m in rollups.METRICS) + ". "
        "Default: cpu, memory, disk and network.",
    ),
    *range_parameters("24 hours"),
    OpenApiParameter(
        "step",
        int,
        description=f"Seconds per point, {MIN_STEP} or more; default (and whenever it would "
        "give more than 500 points) the smallest of 10 s, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, "
        "3, 6, 12 h, 1, 2, 7, 14, 28 days that gives at most 500.",
    ),
    OpenApiParameter(
        "aggregate",
        str,
        enum=list(rollups.AGGREGATES),
        description="How a bucket's samples of a gauge become one value (default `avg`).",
    ),
]


class InstanceAnalyticsMixin:
    """One server's or bot's figures: ``analytics:read`` and the read scope of its kind (a
    role that may not read servers reads none of their figures)."""

    kind = "server"

    @property
    def required_scopes(self) -> dict[str, list[str]]:
        return {"retrieve": [*READ, KIND_SCOPES[self.kind]]}

    def instance(self, pk: str):
        of_account = servers_of_account if self.kind == "server" else bots_of_account
        found = of_account(account_id=self.request.auth.account.id).filter(pk=pk).first()
        if found is None:
            raise NotFound()
        return found


class InstanceMetricsViewSet(InstanceAnalyticsMixin, ApiViewSet):
    """``GET /v1/servers/{id}/metrics`` and ``/v1/bots/{id}/metrics``."""

    @extend_schema(
        summary="Usage series",
        description="CPU, memory, disk, network, players and uptime of one server or bot "
        "over a range, in at most 500 buckets per series, read from the raw samples (kept "
        "3 days), the minute rows (30 days), the hour rows (13 months) or the day rows "
        "(for ever), whichever fits the step. Gauges give the `aggregate` of each bucket's "
        "samples, network counters the bytes moved in it. Needs `analytics:read` and the "
        "read scope of the instance's kind (`servers:read`, `bots:read`).",
        parameters=METRICS_PARAMETERS,
        responses={200: envelope("metrics", MetricsSerializer()), 400: SERIES_BAD},
        examples=METRICS_EXAMPLES,
        tags=["Analytics"],
    )
    def retrieve(self, request, pk=None):
        instance = self.instance(pk)
        params = request.query_params
        start, end = usage_range(
            datetime_value(params, "start"), datetime_value(params, "end"), default=DEFAULT_RANGE
        )
        step = integer_value(params, "step", default=0, minimum=MIN_STEP, maximum=10**8) or None
        aggregate = single_value(params, "aggregate") or "avg"
        if aggregate not in rollups.AGGREGATES:
            raise invalid_parameter(
                "aggregate", "invalid", "aggregate is one of: " + ", ".join(rollups.AGGREGATES)
            )
        metrics = parse_metrics(single_value(params, "metrics"))
        plan = metrics_plan(start=start, end=end, step=step)
        series = metrics_series(
            instance_id=instance.pk, metrics=metrics, aggregate=aggregate, plan=plan
        )
        return Response({"metrics": metrics_representation(plan, series)})


class InstanceUptimeViewSet(InstanceAnalyticsMixin, ApiViewSet):
    """``GET /v1/servers/{id}/uptime`` and ``/v1/bots/{id}/uptime``."""

    @extend_schema(
        summary="Uptime and incidents",
        description="The share of the time the server or bot was meant to run during which it "
        "ran, over the range and per UTC day, worked out from its status changes and crashes. "
        "A crash opens an incident that lasts until it runs again or someone stops it on "
        "purpose; time stopped on purpose, suspended or installing counts neither way. The "
        "event log keeps `EVENT_RETENTION_DAYS` (30 by default); earlier days come from the "
        "uptime housekeeping records each day (whole UTC days, without the incidents' "
        "details), and a day neither covers is null. Needs `analytics:read` and the read scope "
        "of the instance's kind (`servers:read`, `bots:read`).",
        parameters=[
            *range_parameters("30 days"),
        ],
        responses={200: envelope("uptime", UptimeSerializer()), 400: UPTIME_BAD},
        examples=UPTIME_EXAMPLES,
        tags=["Analytics"],
    )
    def retrieve(self, request, pk=None):
        instance = self.instance(pk)
        params = request.query_params
        start, end = uptime_range(datetime_value(params, "start"), datetime_value(params, "end"))
        uptime = instances_uptime([instance], start=start, end=end)[instance.pk]
        return Response({"uptime": uptime_representation(uptime)})


class AccountUsageViewSet(ApiViewSet):
    """``GET /v1/analytics/usage``: the account's usage over a range."""

    required_scopes = {"retrieve": READ}

    @extend_schema(
        summary="Account usage",
        description="Totals over a range for every server and bot of the account that "
        "reported, and its largest consumers of one figure. Read from day rows for a range of "
        "a week or more, hour rows from six hours, minute rows below (the range is widened to "
        "whole rows). The totals count every server and bot of the account, deleted since or "
        "not (`analytics:read`); the consumers list, by name, only the servers (with "
        "`servers:read`) and bots (with `bots:read`) the key may read, a deleted one with its "
        "`deleted_at`.",
        parameters=[
            *range_parameters("30 days"),
            OpenApiParameter(
                "top", str, enum=list(TOP_METRICS), description="Rank by (default cpu_percent)."
            ),
            OpenApiParameter("limit", int, description="How many consumers, 1 to 100 (10)."),
        ],
        responses={200: envelope("usage", AccountUsageSerializer()), 400: USAGE_BAD},
        examples=ACCOUNT_USAGE_EXAMPLES,
        tags=["Analytics"],
    )
    def retrieve(self, request):
        params = request.query_params
        start, end = usage_range(
            datetime_value(params, "start"), datetime_value(params, "end"), default=USAGE_RANGE
        )
        top = single_value(params, "top") or "cpu_percent"
        if top not in TOP_METRICS:
            raise invalid_parameter("top", "invalid", "top is one of: " + ", ".join(TOP_METRICS))
        limit = integer_value(params, "limit", default=10, minimum=1, maximum=100)
        start, end, level = usage_range_level(start, end)
        instances = instances_ever(account_id=request.auth.account.id)
        readable = kinds_readable(request.auth.scopes)
        consumers = account_usage(
            instance_ids=[i.pk for i in instances], start=start, end=end, level=level
        )
        return Response(
            {
                "usage": account_usage_representation(
                    start=start,
                    end=end,
                    level=level,
                    consumers=consumers,
                    names={i.pk: (i.kind, i.name) for i in instances},
                    top=top,
                    limit=limit,
                    listed={i.pk for i in instances if i.kind in readable},
                    deleted={i.pk: i.deleted_at for i in instances if i.deleted_at},
                )
            }
        )

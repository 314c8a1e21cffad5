from django.urls import path, re_path

from analytics.api.agent_usage import AgentUsageView
from analytics.api.report_downloads import urlpatterns as report_download_urlpatterns
from analytics.api.reports import urlpatterns as report_urlpatterns
from analytics.api.views import (
    AccountUsageViewSet,
    InstanceMetricsViewSet,
    InstanceUptimeViewSet,
)
from hosting.ids import ID_PATTERN

urlpatterns = [
    path("agent/usage", AgentUsageView.as_view(), name="agent-usage"),
    path("analytics/usage", AccountUsageViewSet.as_view({"get": "retrieve"}), name="account-usage"),
    *report_urlpatterns,
    *report_download_urlpatterns,
    re_path(
        rf"^servers/(?P<pk>{ID_PATTERN})/metrics$",
        InstanceMetricsViewSet.as_view({"get": "retrieve"}, kind="server"),
        name="server-metrics",
    ),
    re_path(
        rf"^bots/(?P<pk>{ID_PATTERN})/metrics$",
        InstanceMetricsViewSet.as_view({"get": "retrieve"}, kind="bot"),
        name="bot-metrics",
    ),
    re_path(
        rf"^servers/(?P<pk>{ID_PATTERN})/uptime$",
        InstanceUptimeViewSet.as_view({"get": "retrieve"}, kind="server"),
        name="server-uptime",
    ),
    re_path(
        rf"^bots/(?P<pk>{ID_PATTERN})/uptime$",
        InstanceUptimeViewSet.as_view({"get": "retrieve"}, kind="bot"),
        name="bot-uptime",
    ),
]

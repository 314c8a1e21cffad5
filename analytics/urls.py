"""Dashboard pages of analytics."""

from django.urls import path

from analytics import views

urlpatterns = [
    path("overview", views.AccountOverviewView.as_view(), name="analytics_overview"),
    # The usage charts of a server's or bot's page (servers' URLs, analytics' data).
    path("servers/<id:pk>/usage", views.ServerUsageView.as_view(), name="server_usage"),
    path("bots/<id:pk>/usage", views.BotUsageView.as_view(), name="bot_usage"),
    path("staff/reports", views.StaffReportsView.as_view(), name="analytics_staff_reports"),
    path(
        "staff/reports/<slug:name>.csv",
        views.StaffReportCsvView.as_view(),
        name="analytics_staff_report_csv",
    ),
]

"""Dashboard pages of analytics."""

from django.urls import path

from analytics import views

urlpatterns = [
    path("overview", views.AccountOverviewView.as_view(), name="analytics_overview"),
    path("staff/reports", views.StaffReportsView.as_view(), name="analytics_staff_reports"),
    path(
        "staff/reports/<slug:name>.csv",
        views.StaffReportCsvView.as_view(),
        name="analytics_staff_report_csv",
    ),
]

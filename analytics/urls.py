"""Dashboard pages of analytics."""

from django.urls import path

from analytics import views

urlpatterns = [
    path("overview", views.AccountOverviewView.as_view(), name="analytics_overview"),
]

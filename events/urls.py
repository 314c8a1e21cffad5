"""Dashboard pages of the event log: Settings → Activity."""

from django.urls import path

from events import views

urlpatterns = [
    path("settings/activity", views.ActivityView.as_view(), name="activity"),
]

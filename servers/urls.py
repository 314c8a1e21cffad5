"""Dashboard pages for servers."""

from django.urls import path

from servers import views

urlpatterns = [
    path("", views.ServerListView.as_view(), name="home"),
]

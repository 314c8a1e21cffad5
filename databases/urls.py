"""Dashboard pages of the databases: the Databases tab of a server or bot."""

from django.urls import path

from databases import views

urlpatterns = [
    path(
        "servers/<id:pk>/databases",
        views.ServerDatabasesView.as_view(),
        name="server_databases",
    ),
    path(
        "servers/<id:pk>/databases/do",
        views.ServerDatabasesDoView.as_view(),
        name="server_databases_do",
    ),
    path("bots/<id:pk>/databases", views.BotDatabasesView.as_view(), name="bot_databases"),
    path("bots/<id:pk>/databases/do", views.BotDatabasesDoView.as_view(), name="bot_databases_do"),
]

"""Dashboard pages for servers (the home page) and bots."""

from django.urls import path

from servers import views
from servers.views import backups, files, ports, schedules, users

urlpatterns = [
    path("", views.ServerListView.as_view(), name="home"),
    path("servers/new", views.ServerCreateView.as_view(), name="server_create"),
    path("servers/status", views.ServerStatusView.as_view(), name="server_status"),
    path("servers/<id:pk>", views.ServerDetailView.as_view(), name="server_detail"),
    path("servers/<id:pk>/edit", views.ServerEditView.as_view(), name="server_edit"),
    path("servers/<id:pk>/delete", views.ServerDeleteView.as_view(), name="server_delete"),
    path("servers/<id:pk>/actions", views.ServerActionView.as_view(), name="server_action"),
    path("servers/<id:pk>/activity", views.ServerActivityView.as_view(), name="server_activity"),
    path("servers/<id:pk>/console", views.ServerConsoleView.as_view(), name="server_console"),
    path(
        "servers/<id:pk>/console/token",
        views.ServerConsoleTokenView.as_view(),
        name="server_console_token",
    ),
    path("servers/<id:pk>/files", files.ServerFilesView.as_view(), name="server_files"),
    path(
        "servers/<id:pk>/files/edit", files.ServerFileEditView.as_view(), name="server_files_edit"
    ),
    path("servers/<id:pk>/files/do", files.ServerFilesDoView.as_view(), name="server_files_do"),
    path(
        "servers/<id:pk>/files/download",
        files.ServerFileDownloadView.as_view(),
        name="server_files_download",
    ),
    path("servers/<id:pk>/users", users.ServerUsersView.as_view(), name="server_users"),
    path("servers/<id:pk>/users/do", users.ServerUsersDoView.as_view(), name="server_users_do"),
    path("servers/<id:pk>/backups", backups.ServerBackupsView.as_view(), name="server_backups"),
    path(
        "servers/<id:pk>/backups/do",
        backups.ServerBackupsDoView.as_view(),
        name="server_backups_do",
    ),
    path(
        "servers/<id:pk>/backups/<id:backup_id>/restore",
        backups.ServerBackupRestoreView.as_view(),
        name="server_backup_restore",
    ),
    path(
        "servers/<id:pk>/backups/<id:backup_id>/download",
        backups.ServerBackupDownloadView.as_view(),
        name="server_backup_download",
    ),
    path(
        "servers/<id:pk>/schedules",
        schedules.ServerSchedulesView.as_view(),
        name="server_schedules",
    ),
    path(
        "servers/<id:pk>/schedules/new",
        schedules.ServerScheduleFormView.as_view(),
        name="server_schedule_new",
    ),
    path(
        "servers/<id:pk>/schedules/do",
        schedules.ServerSchedulesDoView.as_view(),
        name="server_schedules_do",
    ),
    path(
        "servers/<id:pk>/schedules/<id:schedule_id>",
        schedules.ServerScheduleFormView.as_view(),
        name="server_schedule_edit",
    ),
    path(
        "servers/<id:pk>/schedules/<id:schedule_id>/runs",
        schedules.ServerScheduleRunsView.as_view(),
        name="server_schedule_runs",
    ),
    path("servers/<id:pk>/ports", ports.ServerPortsView.as_view(), name="server_ports"),
    path("servers/<id:pk>/ports/do", ports.ServerPortsDoView.as_view(), name="server_ports_do"),
    path("bots", views.BotListView.as_view(), name="bot_list"),
    path("bots/new", views.BotCreateView.as_view(), name="bot_create"),
    path("bots/status", views.BotStatusView.as_view(), name="bot_status"),
    path("bots/<id:pk>", views.BotDetailView.as_view(), name="bot_detail"),
    path("bots/<id:pk>/edit", views.BotEditView.as_view(), name="bot_edit"),
    path("bots/<id:pk>/delete", views.BotDeleteView.as_view(), name="bot_delete"),
    path("bots/<id:pk>/actions", views.BotActionView.as_view(), name="bot_action"),
    path("bots/<id:pk>/activity", views.BotActivityView.as_view(), name="bot_activity"),
    path("bots/<id:pk>/console", views.BotConsoleView.as_view(), name="bot_console"),
    path(
        "bots/<id:pk>/console/token", views.BotConsoleTokenView.as_view(), name="bot_console_token"
    ),
    path("bots/<id:pk>/files", files.BotFilesView.as_view(), name="bot_files"),
    path("bots/<id:pk>/files/edit", files.BotFileEditView.as_view(), name="bot_files_edit"),
    path("bots/<id:pk>/files/do", files.BotFilesDoView.as_view(), name="bot_files_do"),
    path(
        "bots/<id:pk>/files/download",
        files.BotFileDownloadView.as_view(),
        name="bot_files_download",
    ),
    path("bots/<id:pk>/users", users.BotUsersView.as_view(), name="bot_users"),
    path("bots/<id:pk>/users/do", users.BotUsersDoView.as_view(), name="bot_users_do"),
    path("bots/<id:pk>/backups", backups.BotBackupsView.as_view(), name="bot_backups"),
    path("bots/<id:pk>/backups/do", backups.BotBackupsDoView.as_view(), name="bot_backups_do"),
    path(
        "bots/<id:pk>/backups/<id:backup_id>/restore",
        backups.BotBackupRestoreView.as_view(),
        name="bot_backup_restore",
    ),
    path(
        "bots/<id:pk>/backups/<id:backup_id>/download",
        backups.BotBackupDownloadView.as_view(),
        name="bot_backup_download",
    ),
    path("bots/<id:pk>/schedules", schedules.BotSchedulesView.as_view(), name="bot_schedules"),
    path(
        "bots/<id:pk>/schedules/new",
        schedules.BotScheduleFormView.as_view(),
        name="bot_schedule_new",
    ),
    path(
        "bots/<id:pk>/schedules/do",
        schedules.BotSchedulesDoView.as_view(),
        name="bot_schedules_do",
    ),
    path(
        "bots/<id:pk>/schedules/<id:schedule_id>",
        schedules.BotScheduleFormView.as_view(),
        name="bot_schedule_edit",
    ),
    path(
        "bots/<id:pk>/schedules/<id:schedule_id>/runs",
        schedules.BotScheduleRunsView.as_view(),
        name="bot_schedule_runs",
    ),
]

"""Staff's pages for database hosts and customers' databases: changes go through the services
(a host's admin password is encrypted by them and never shown; a database is dropped on its
host before its row goes)."""

from django import forms
from django.contrib import admin, messages

from accounts.actors import Actor
from databases.models import DatabaseHost, ServerDatabase
from databases.services import (
    database_delete,
    database_host_check,
    database_host_password_set,
)
from hosting.errors import ApplicationError


class DatabaseHostForm(forms.ModelForm):
    admin_password = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="Kept encrypted and never shown again; leave empty to keep the current one.",
    )

    class Meta:
        model = DatabaseHost
        fields = (
            "engine",
            "name",
            "host",
            "port",
            "public_host",
            "admin_user",
            "region",
            "nodes",
            "max_databases",
            "active",
        )


@admin.register(DatabaseHost)
class DatabaseHostAdmin(admin.ModelAdmin):
    form = DatabaseHostForm
    list_display = ("name", "engine", "host", "port", "public_host", "region", "active")
    list_filter = ("engine", "active", "region")
    filter_horizontal = ("nodes",)
    actions = ["test_connection"]

    def save_model(self, request, obj, form, change):
        password = form.cleaned_data.get("admin_password")
        if password:
            database_host_password_set(obj, password, save=False)
        super().save_model(request, obj, form, change)

    @admin.action(description="Test the connection (sign in as the admin user)")
    def test_connection(self, request, queryset):
        for database_host in queryset:
            try:
                version = database_host_check(database_host)
            except ApplicationError as error:
                self.message_user(request, f"{database_host.name}: {error.message}", messages.ERROR)
            else:
                self.message_user(request, f"{database_host.name}: {version}", messages.SUCCESS)


@admin.register(ServerDatabase)
class ServerDatabaseAdmin(admin.ModelAdmin):
    list_display = ("db_name", "username", "host", "server", "bot", "account", "created_at")
    list_filter = ("host",)
    search_fields = ("id", "db_name", "username", "server__id", "bot__id")
    list_select_related = ("host", "server", "bot", "account")
    actions = ["drop_databases"]

    def has_add_permission(self, request):
        return False  # customers create them, through the API or the dashboard

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # the action below drops them on their host first

    @admin.action(description="Drop the selected databases and their users on their hosts")
    def drop_databases(self, request, queryset):
        for database in queryset:
            try:
                database_delete(database=database, actor=Actor.from_request(request))
            except ApplicationError as error:
                self.message_user(request, f"{database.db_name}: {error.message}", messages.ERROR)
            else:
                self.message_user(request, f"{database.db_name} dropped.", messages.SUCCESS)

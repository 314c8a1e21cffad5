"""Staff's pages for database hosts and customers' databases: changes go through the services
(a host's admin password is encrypted by them and never shown, and each change is a staff event;
a database is dropped on its host before its row goes)."""

from django import forms
from django.contrib import admin, messages

from accounts.actors import Actor
from accounts.service_admin import ServiceAdmin, ServiceForm
from databases.models import DatabaseHost, ServerDatabase
from databases.services import (
    DatabaseHostChanges,
    database_delete,
    database_host_check,
    database_host_create,
    database_host_delete,
    database_host_update,
)
from hosting.errors import ApplicationError, ValidationFailed


class DatabaseHostForm(ServiceForm):
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


# What a host's page may change (its engine stays: the databases on it were made by it).
CHANGEABLE = (
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
class DatabaseHostAdmin(ServiceAdmin):
    """Hosts are registered, changed and removed through the services, which record the staff
    events the API's changes record (``database_host.*``)."""

    form = DatabaseHostForm
    editable_after_add = True
    list_display = ("name", "engine", "host", "port", "public_host", "region", "active")
    list_filter = ("engine", "active", "region")
    filter_horizontal = ("nodes",)
    actions = ["test_connection", "remove_empty"]

    def get_readonly_fields(self, request, obj=None):
        return ("engine",) if obj is not None else ()

    def save_through_service(self, form, *, actor: Actor, change: bool) -> DatabaseHost:
        data = form.cleaned_data
        password = data.get("admin_password") or ""
        if change:
            given = {name: data[name] for name in form.changed_data if name in CHANGEABLE}
            if "nodes" in given:
                given["nodes"] = list(given["nodes"])
            if password:
                given["admin_password"] = password
            return database_host_update(
                database_host=form.instance, changes=DatabaseHostChanges(**given), actor=actor
            )
        if not password:
            raise ValidationFailed.field(
                "admin_password", "required", "The admin user's password is required."
            )
        return database_host_create(
            engine=data["engine"],
            name=data["name"],
            host=data["host"],
            port=data["port"],
            public_host=data.get("public_host") or "",
            admin_user=data["admin_user"],
            admin_password=password,
            region=data.get("region"),
            nodes=list(data.get("nodes") or []),
            max_databases=data["max_databases"],
            active=data["active"],
            actor=actor,
        )

    @admin.action(description="Test the connection (sign in as the admin user)")
    def test_connection(self, request, queryset):
        for database_host in queryset:
            try:
                version = database_host_check(database_host)
            except ApplicationError as error:
                self.message_user(request, f"{database_host.name}: {error.message}", messages.ERROR)
            else:
                self.message_user(request, f"{database_host.name}: {version}", messages.SUCCESS)

    @admin.action(description="Remove selected hosts that hold no database", permissions=["change"])
    def remove_empty(self, request, queryset):
        self.run(request, queryset, database_host_delete, "database_host", "Removed")


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

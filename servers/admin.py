"""Staff pages for the catalogues, servers, bots and their actions.

Lifecycle changes go through the admin actions, which call the same services as the API and the
dashboard; the change forms leave status, address and everything a service owns read-only. A bot's
Discord token is never shown here, encrypted or not: only its last four characters.
"""

from django.contrib import admin, messages

from events.services import Actor
from hosting.errors import ApplicationError
from servers.models import Action, Bot, Game, Region, Server
from servers.services import action_request, instance_suspend


@admin.register(Region)
class RegionAdmin(admin.ModelAdmin):
    list_display = [
        "name", "slug", "location", "address_count", "port_range_start", "port_range_end",
    ]  # fmt: skip
    search_fields = ["name", "slug", "location"]

    @admin.display(description="Addresses")
    def address_count(self, obj: Region) -> int:
        return len(obj.ip_addresses)


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "default_port", "variable_count"]
    search_fields = ["name", "slug"]

    @admin.display(description="Variables")
    def variable_count(self, obj: Game) -> int:
        return len(obj.variables)


class DeletedFilter(admin.SimpleListFilter):
    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request, model_admin):
        return [("no", "No"), ("yes", "Yes")]

    def queryset(self, request, queryset):
        if self.value() in {"yes", "no"}:
            return queryset.filter(deleted_at__isnull=self.value() == "no")
        return queryset


class InstanceAdmin(admin.ModelAdmin):
    """What the Server and Bot pages share: columns, filters and the lifecycle actions.

    Deleted instances stay listed (``deleted_at``, the ``DeletedFilter``). Adding and deleting
    rows here would skip provisioning and the driver, so both are left to the dashboard and API.
    """

    list_select_related = ["account", "region"]
    search_fields = ["name", "id", "address", "account__name", "account__id"]
    date_hierarchy = "created_at"
    actions = ["suspend_selected", "unsuspend_selected", "reinstall_selected"]
    # Only the simulated driver's instructions may be edited: everything else has a service.
    editable = ["simulation"]

    @admin.display(description="Account", ordering="account__name")
    def account_name(self, obj) -> str:
        return obj.account.name

    def get_readonly_fields(self, request, obj=None):
        return [name for name in self.fields if name not in self.editable]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def run(self, request, queryset, verb: str, perform) -> None:
        """Perform on each instance; report the ones done and each refusal with its reason."""
        done = 0
        for instance in queryset:
            try:
                perform(instance)
            except ApplicationError as error:
                self.message_user(request, f"{instance}: {error.message}", messages.ERROR)
            else:
                done += 1
        if done:
            meta = self.model._meta
            noun = meta.verbose_name if done == 1 else meta.verbose_name_plural
            self.message_user(request, f"{verb} {done} {noun}.", messages.SUCCESS)

    @admin.action(description="Suspend selected %(verbose_name_plural)s", permissions=["change"])
    def suspend_selected(self, request, queryset):
        actor, reason = Actor.from_request(request), f"Suspended by {request.user}"
        self.run(
            request,
            queryset,
            "Suspended",
            lambda instance: instance_suspend(instance=instance, reason=reason, actor=actor),
        )

    @admin.action(description="Unsuspend selected %(verbose_name_plural)s", permissions=["change"])
    def unsuspend_selected(self, request, queryset):
        self.lifecycle(request, queryset, "unsuspend", "Unsuspended")

    @admin.action(description="Reinstall selected %(verbose_name_plural)s", permissions=["change"])
    def reinstall_selected(self, request, queryset):
        self.lifecycle(request, queryset, "reinstall", "Started reinstalling")

    def lifecycle(self, request, queryset, action_type: str, verb: str) -> None:
        actor = Actor.from_request(request)
        self.run(
            request,
            queryset,
            verb,
            lambda instance: action_request(
                instance=instance, action_type=action_type, actor=actor
            ),
        )


@admin.register(Server)
class ServerAdmin(InstanceAdmin):
    list_display = [
        "name", "status", "account_name", "game", "region", "address", "id", "created_at",
        "deleted_at",
    ]  # fmt: skip
    list_filter = ["status", DeletedFilter, "game", "region"]
    list_select_related = ["account", "region", "game"]
    fields = [
        "id", "name", "account", "game", "region", "status", "status_reason", "suspended_reason",
        "address", "variables", "memory_mb", "cpu_percent", "disk_mb", "auto_restart",
        "start_on_install", "simulation", "created_at", "updated_at", "deleted_at",
    ]  # fmt: skip


@admin.register(Bot)
class BotAdmin(InstanceAdmin):
    """``token_encrypted`` is neither a field nor a column here; staff see ``…last4`` only."""

    list_display = [
        "name", "status", "account_name", "runtime", "region", "token_hint", "id", "created_at",
        "deleted_at",
    ]  # fmt: skip
    list_filter = ["status", DeletedFilter, "runtime", "region"]
    fields = [
        "id", "name", "account", "runtime", "region", "status", "status_reason",
        "suspended_reason", "start_command", "environment", "token_hint", "memory_mb",
        "cpu_percent", "disk_mb", "auto_restart", "simulation", "created_at", "updated_at",
        "deleted_at",
    ]  # fmt: skip
    exclude = ["token_encrypted", "token_last4"]

    @admin.display(description="Token")
    def token_hint(self, obj: Bot) -> str:
        return f"…{obj.token_last4}"


@admin.register(Action)
class ActionAdmin(admin.ModelAdmin):
    """The worker's operations, read-only: they change only through the lifecycle services."""

    list_display = [
        "id", "type", "status", "target_label", "account", "requested_by_user", "created_at",
        "completed_at",
    ]  # fmt: skip
    list_filter = ["type", "status"]
    search_fields = ["id", "server__id", "bot__id", "server__name", "bot__name", "account__id"]
    list_select_related = ["account", "requested_by_user"]
    date_hierarchy = "created_at"
    fields = [
        "id", "type", "status", "error", "account", "server", "bot", "requested_by_user",
        "requested_by_key", "created_at", "started_at", "heartbeat_at", "completed_at",
    ]  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Target")
    def target_label(self, obj: Action) -> str:
        return obj.target_id

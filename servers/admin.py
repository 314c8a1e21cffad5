"""Staff pages for the catalogues, servers, bots and their actions.

Lifecycle changes go through the admin actions (on the changelist) and the buttons of a server's
or bot's change page, which call the same services as the API and the dashboard; the change forms
leave status, address and everything a service owns read-only. A bot's Discord token is never
shown here, encrypted or not: only its last four characters.

Games go through their services (``servers.services.games``: ``Game.clean``'s checks, staff
events, a game in use never removed), as the staff API's changes do; an egg is imported from a
file and any game exported as one. The region catalogue is a plain admin edit: no service owns
it and no event is written for it, and the instances that use a region protect it.
"""

import json
from collections.abc import Iterable

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from accounts.actors import Actor
from accounts.service_admin import (
    ReadOnlyAdmin,
    ServiceActionsAdmin,
    ServiceAdmin,
    ServiceForm,
    add_refusal,
)
from hosting.errors import ApplicationError, ValidationFailed
from servers.eggs import MAX_EGG_BYTES
from servers.models import (
    Action,
    Allocation,
    Backup,
    BackupStorage,
    Bot,
    Game,
    Instance,
    Node,
    NodeIsolation,
    Region,
    Schedule,
    ScheduleRun,
    ScheduleTask,
    Server,
)
from servers.selectors import games_with_usage
from servers.services import action_request, instance_suspend
from servers.services.backups import backup_delete, backup_update, node_backup_storage_set
from servers.services.games import (
    GameChanges,
    game_create,
    game_delete,
    game_export,
    game_import,
    game_update,
)
from servers.services.nodes import (
    NodeChanges,
    node_allocations_add,
    node_allocations_remove,
    node_create,
    node_delete,
    node_token_rotate,
    node_update,
)
from servers.services.schedules import (
    schedule_delete,
    schedule_describe,
    schedule_run_now,
    schedule_update,
)
from servers.transitions import allowed_actions

# The lifecycle actions staff take here, in the order the change page shows them, with the verb
# that reports them ("Suspended 2 servers."). Deleting is left to the dashboard and the API.
LIFECYCLE_VERBS = {
    "start": "Starting",
    "stop": "Stopping",
    "restart": "Restarting",
    "reinstall": "Started reinstalling",
    "suspend": "Suspended",
    "unsuspend": "Unsuspended",
}


@admin.register(Region)
class RegionAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "location",
        "address_count",
        "port_range_start",
        "port_range_end",
    ]
    search_fields = ["name", "slug", "location"]

    @admin.display(description="Addresses")
    def address_count(self, obj: Region) -> int:
        return len(obj.ip_addresses)


class ReadableJSONField(forms.JSONField):
    """A template or variable list shown indented, one key a line, to be read and edited."""

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)


class GameForm(ServiceForm):
    template = ReadableJSONField(
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "class": "vLargeTextField"}),
        help_text="agent/PROTOCOL.md's template: install_script, start_command, ready_pattern, "
        "stop_command, stop_signal, the timeouts, backup_commands; optional ports, query, "
        "config_files, install_shell (README, “The game catalogue”).",
    )
    # Not required: a game may take no settings, and a form field that is required refuses
    # an empty list as if nothing had been typed. The service refuses what is no list.
    variables = ReadableJSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 20, "cols": 100, "class": "vLargeTextField"}),
        help_text="A list of {key, name, type, default, required, min, max, min_length, "
        "max_length, choices, must_be, pattern, visible, editable, description}.",
    )

    class Meta:
        model = Game
        fields = ("slug", "name", "default_port", "template", "variables")


class EggImportForm(forms.Form):
    egg = forms.FileField(
        label="Egg file",
        help_text="A Pterodactyl (PTDL_v1, PTDL_v2) or Pelican (PLCN_v1 to v3) egg, JSON or "
        "YAML. The egg of a game imported before (its uuid) updates that game.",
    )
    slug = forms.SlugField(
        required=False, max_length=64, help_text="Default: made from the egg's name."
    )
    default_port = forms.IntegerField(
        min_value=1,
        max_value=65535,
        required=False,
        help_text="The port its servers are placed on first: required for a new game.",
    )


@admin.register(Game)
class GameAdmin(ServiceAdmin):
    """Games are added, changed and removed through their services, which check them as the
    node agent will read them and record the staff events the API's changes record."""

    form = GameForm
    editable_after_add = True
    list_display = ["name", "slug", "default_port", "variable_count", "imported", "server_count"]
    search_fields = ["name", "slug"]
    actions = ["remove_unused"]
    change_list_template = "admin/servers/game_change_list.html"
    change_form_template = "admin/servers/game_change_form.html"

    def get_queryset(self, request):
        return games_with_usage()

    def get_readonly_fields(self, request, obj=None):
        return ("slug", "origin_shown") if obj is not None else ()

    def get_fields(self, request, obj=None):
        fields = ["slug", "name", "default_port", "template", "variables"]
        return [*fields, "origin_shown"] if obj is not None else fields

    @admin.display(description="Variables")
    def variable_count(self, obj: Game) -> int:
        return len(obj.variables)

    @admin.display(description="Imported", boolean=True)
    def imported(self, obj: Game) -> bool:
        return bool(obj.origin)

    @admin.display(description="Servers", ordering="server_count")
    def server_count(self, obj: Game) -> int:
        return obj.server_count

    @admin.display(description="Imported from")
    def origin_shown(self, obj: Game) -> str:
        if not obj.origin:
            return "-"
        origin = obj.origin
        notes = format_html_join("", "<li>{}</li>", ((note,) for note in origin.get("notes", [])))
        return format_html(
            "{} egg by {} (uuid {})<br>Images: {}<br>Notes of the import:<ul>{}</ul>",
            origin.get("format"),
            origin.get("author") or "?",
            origin.get("uuid") or "none",
            ", ".join(origin.get("images", [])) or "-",
            notes or format_html("<li>none</li>"),
        )

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the action below removes only games nothing uses, through the service

    def save_through_service(self, form, *, actor: Actor, change: bool) -> Game:
        data = form.cleaned_data
        if change:
            given = {name: data[name] for name in form.changed_data if name in GAME_CHANGEABLE}
            return game_update(game=form.instance, changes=GameChanges(**given), actor=actor)
        return game_create(
            slug=data["slug"],
            name=data["name"],
            default_port=data["default_port"],
            template=data["template"],
            variables=data["variables"],
            actor=actor,
        )

    @admin.action(
        description="Remove selected games no server or plan uses", permissions=["change"]
    )
    def remove_unused(self, request, queryset):
        self.run(request, queryset, game_delete, "game", "Removed")

    def get_urls(self):
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path(
                "import-egg/",
                self.admin_site.admin_view(self.import_view),
                name=f"{name}_import_egg",
            ),
            path(
                "<path:object_id>/egg/",
                self.admin_site.admin_view(self.egg_view),
                name=f"{name}_egg",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = EggImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["egg"]
            try:
                if upload.size > MAX_EGG_BYTES:
                    raise ValidationFailed.field(
                        "egg", "too_large", f"The egg is larger than {MAX_EGG_BYTES // 1024} KiB."
                    )
                result = game_import(
                    content=upload.read(),
                    slug=form.cleaned_data["slug"] or None,
                    default_port=form.cleaned_data["default_port"],
                    actor=Actor.from_request(request),
                )
            except ApplicationError as refusal:
                problems = (refusal.details or {}).get("problems")
                if problems:
                    for problem in problems:
                        form.add_error("egg", problem)
                else:
                    add_refusal(form, refusal, {})
            else:
                verb = "Imported" if result.created else "Updated"
                if result.created:
                    self.log_addition(request, result.game, "Imported from an egg")
                else:
                    self.log_change(request, result.game, "Updated from its egg")
                self.message_user(request, f"{verb} {result.game.name}.", messages.SUCCESS)
                for note in result.notes:
                    self.message_user(request, note, messages.WARNING)
                change = f"admin:{self.opts.app_label}_game_change"
                return redirect(reverse(change, args=[quote(result.game.pk)]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import an egg",
            "form": form,
        }
        return TemplateResponse(request, "admin/servers/game_import_egg.html", context)

    def egg_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        game = self.get_object(request, unquote(object_id))
        if game is None or not self.has_view_permission(request, game):
            raise Http404
        response = HttpResponse(
            json.dumps(game_export(game), indent=4, ensure_ascii=False) + "\n",
            content_type="application/json",
        )
        response["Content-Disposition"] = f'attachment; filename="egg-{game.slug}.json"'
        return response


# What a game's page may change (its slug stays: servers and plans name it).
GAME_CHANGEABLE = ("name", "default_port", "template", "variables")


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

    The lifecycle actions run from the changelist (on the selected instances) and from buttons
    on one instance's change page (those its status allows), both through ``perform``. Deleted
    instances stay listed (``deleted_at``, the ``DeletedFilter``). Adding and deleting rows here
    would skip provisioning and the driver, so both are left to the dashboard and API.
    """

    list_select_related = ["account", "region"]
    search_fields = ["name", "id", "address", "account__name", "account__id"]
    date_hierarchy = "created_at"
    actions = ["suspend_selected", "unsuspend_selected", "reinstall_selected"]
    change_form_template = "admin/servers/instance_change_form.html"
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

    def save_model(self, request, obj, form, change) -> None:
        # Only the edited columns: saving the whole row would write back a status or address
        # that the worker changed since the page was read, past the lifecycle table.
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])

    def perform(self, request: HttpRequest, instance: Instance, action_type: str) -> Action:
        """One lifecycle action through its service, as the API and the dashboard do it."""
        actor = Actor.from_request(request)
        if action_type == "suspend":
            reason = f"Suspended by {request.user}"
            return instance_suspend(instance=instance, reason=reason, actor=actor)
        return action_request(instance=instance, action_type=action_type, actor=actor)

    def run(self, request: HttpRequest, instances: Iterable[Instance], action_type: str) -> None:
        """Perform on each instance; report the ones done and each refusal with its reason."""
        done = 0
        for instance in instances:
            try:
                self.perform(request, instance, action_type)
            except ApplicationError as error:
                self.message_user(request, f"{instance}: {error.message}", messages.ERROR)
            else:
                done += 1
        if done:
            meta = self.model._meta
            noun = meta.verbose_name if done == 1 else meta.verbose_name_plural
            verb = LIFECYCLE_VERBS[action_type]
            self.message_user(request, f"{verb} {done} {noun}.", messages.SUCCESS)

    @admin.action(description="Suspend selected %(verbose_name_plural)s", permissions=["change"])
    def suspend_selected(self, request, queryset):
        self.run(request, queryset, "suspend")

    @admin.action(description="Unsuspend selected %(verbose_name_plural)s", permissions=["change"])
    def unsuspend_selected(self, request, queryset):
        self.run(request, queryset, "unsuspend")

    @admin.action(description="Reinstall selected %(verbose_name_plural)s", permissions=["change"])
    def reinstall_selected(self, request, queryset):
        self.run(request, queryset, "reinstall")

    # --- One instance's change page: a button per action its status allows ---------------------

    def _url_name(self, view: str) -> str:
        return f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_{view}"

    def get_urls(self):
        lifecycle = path(
            "<path:object_id>/lifecycle/<slug:action_type>/",
            self.admin_site.admin_view(require_POST(self.lifecycle_view)),
            name=f"{self.opts.app_label}_{self.opts.model_name}_lifecycle",
        )
        # Ahead of the defaults, whose catch-all "<path:object_id>/" would take it otherwise.
        return [lifecycle, *super().get_urls()]

    def lifecycle_actions(self, instance: Instance) -> list[str]:
        """The actions its status allows by the lifecycle table; none once it is deleted."""
        if instance.deleted_at is not None:
            return []
        return allowed_actions(instance.status, among=LIFECYCLE_VERBS)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and self.has_change_permission(request, obj):
            context["lifecycle_actions"] = [
                {
                    "label": action_type.capitalize(),
                    "url": reverse(self._url_name("lifecycle"), args=[quote(obj.pk), action_type]),
                }
                for action_type in self.lifecycle_actions(obj)
            ]
        return super().render_change_form(request, context, add, change, form_url, obj)

    def lifecycle_view(
        self, request: HttpRequest, object_id: str, action_type: str
    ) -> HttpResponse:
        """One action on one instance (POST only), then back to its page with the outcome.

        The page offers only what the status allowed when it was drawn; the status may have
        moved on since, so the service decides, and its refusal becomes an error message.
        """
        instance = self.get_object(request, unquote(object_id))
        if instance is None or action_type not in LIFECYCLE_VERBS:
            raise Http404
        if not self.has_change_permission(request, instance):
            raise PermissionDenied
        self.run(request, [instance], action_type)
        return redirect(self._url_name("change"), quote(instance.pk))


class ServerAllocationInline(admin.TabularInline):
    """A server's allocations, read-only: its primary first; the customer changes them through
    the allocations' services (their events recorded)."""

    model = Allocation
    fields = ["public_id", "ip", "port", "is_primary", "note", "assigned_at"]
    readonly_fields = fields
    ordering = ["-is_primary", "assigned_at", "id"]
    extra = 0
    can_delete = False
    verbose_name_plural = "allocations (ports)"

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Server)
class ServerAdmin(InstanceAdmin):
    inlines = [ServerAllocationInline]
    list_display = [
        "name",
        "status",
        "account_name",
        "game",
        "region",
        "address",
        "id",
        "created_at",
        "deleted_at",
    ]
    list_filter = ["status", DeletedFilter, "game", "region"]
    list_select_related = ["account", "region", "game"]
    fields = [
        "id",
        "name",
        "account",
        "game",
        "region",
        "node",
        "status",
        "status_reason",
        "suspended_reason",
        "address",
        "variables",
        "memory_mb",
        "cpu_percent",
        "disk_mb",
        "auto_restart",
        "start_on_install",
        "simulation",
        "created_at",
        "updated_at",
        "deleted_at",
    ]


@admin.register(Bot)
class BotAdmin(InstanceAdmin):
    """``token_encrypted`` is neither a field nor a column here; staff see ``…last4`` only."""

    list_display = [
        "name",
        "status",
        "account_name",
        "runtime",
        "region",
        "token_hint",
        "id",
        "created_at",
        "deleted_at",
    ]
    list_filter = ["status", DeletedFilter, "runtime", "region"]
    fields = [
        "id",
        "name",
        "account",
        "runtime",
        "region",
        "node",
        "status",
        "status_reason",
        "suspended_reason",
        "start_command",
        "environment",
        "token_hint",
        "memory_mb",
        "cpu_percent",
        "disk_mb",
        "auto_restart",
        "simulation",
        "created_at",
        "updated_at",
        "deleted_at",
    ]
    exclude = ["token_encrypted", "token_last4"]

    @admin.display(description="Token")
    def token_hint(self, obj: Bot) -> str:
        return f"…{obj.token_last4}"


@admin.register(Backup)
class BackupAdmin(ServiceActionsAdmin):
    """Backups, read-only; locking, unlocking and deleting go through the backups' services
    (a delete removes the archive on the node or in S3 first, and refuses a locked one)."""

    list_display = [
        "id",
        "name",
        "status",
        "instance_label",
        "account",
        "size",
        "locked",
        "storage_kind",
        "restore_status",
        "created_at",
    ]
    list_filter = ["status", "locked", "storage_kind", "restore_status"]
    search_fields = ["id", "name", "server__id", "bot__id", "account__id"]
    list_select_related = ["account"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "name",
        "status",
        "error",
        "account",
        "server",
        "bot",
        "node",
        "size",
        "checksum",
        "files",
        "locked",
        "ignore",
        "storage_kind",
        "restore_status",
        "restore_error",
        "restore_started_at",
        "restored_at",
        "created_by_user",
        "created_by_key",
        "created_at",
        "completed_at",
    ]
    readonly_fields = fields
    actions = ["lock_selected", "unlock_selected", "delete_selected_backups"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="Server or bot")
    def instance_label(self, backup: Backup) -> str:
        return backup.instance_id

    @admin.action(description="Lock selected backups", permissions=["change"])
    def lock_selected(self, request, queryset):
        self.run(request, queryset, _backup_locker(True), "backup", "Locked")

    @admin.action(description="Unlock selected backups", permissions=["change"])
    def unlock_selected(self, request, queryset):
        self.run(request, queryset, _backup_locker(False), "backup", "Unlocked")

    @admin.action(description="Delete selected backups and their archives", permissions=["change"])
    def delete_selected_backups(self, request, queryset):
        self.run(request, queryset, backup_delete, "backup", "Deleted")


def _backup_locker(locked: bool):
    def lock(*, backup: Backup, actor: Actor) -> Backup:
        return backup_update(backup=backup, locked=locked, actor=actor)

    return lock


class ScheduleTaskInline(admin.TabularInline):
    model = ScheduleTask
    fields = ["position", "action", "payload", "offset_seconds", "continue_on_failure"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Schedule)
class ScheduleAdmin(ServiceActionsAdmin):
    """Schedules, read-only; pausing, resuming, running now and deleting go through the
    schedules' services (their events recorded, the next run computed)."""

    list_display = [
        "id",
        "name",
        "instance_label",
        "account",
        "cron",
        "time_zone",
        "active",
        "next_run_at",
        "last_run_at",
    ]
    list_filter = ["active", "only_when_running"]
    search_fields = ["id", "name", "server__id", "bot__id", "account__id"]
    list_select_related = ["account"]
    fields = [
        "id",
        "name",
        "account",
        "server",
        "bot",
        "cron",
        "time_zone",
        "description",
        "active",
        "only_when_running",
        "next_run_at",
        "last_run_at",
        "created_at",
        "updated_at",
    ]
    readonly_fields = fields
    inlines = [ScheduleTaskInline]
    actions = ["pause_selected", "resume_selected", "run_selected", "delete_selected_schedules"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="Server or bot")
    def instance_label(self, schedule: Schedule) -> str:
        return schedule.instance_id

    @admin.display(description="In words")
    def description(self, schedule: Schedule) -> str:
        return schedule_describe(schedule.cron, schedule.time_zone)

    @admin.action(description="Pause selected schedules", permissions=["change"])
    def pause_selected(self, request, queryset):
        self.run(request, queryset, _schedule_activator(False), "schedule", "Paused")

    @admin.action(description="Resume selected schedules", permissions=["change"])
    def resume_selected(self, request, queryset):
        self.run(request, queryset, _schedule_activator(True), "schedule", "Resumed")

    @admin.action(description="Run selected schedules now", permissions=["change"])
    def run_selected(self, request, queryset):
        self.run(request, queryset, schedule_run_now, "schedule", "Started")

    @admin.action(description="Delete selected schedules", permissions=["change"])
    def delete_selected_schedules(self, request, queryset):
        self.run(request, queryset, schedule_delete, "schedule", "Deleted")


def _schedule_activator(active: bool):
    def activate(*, schedule: Schedule, actor: Actor) -> Schedule:
        return schedule_update(schedule=schedule, actor=actor, active=active)

    return activate


@admin.register(ScheduleRun)
class ScheduleRunAdmin(ReadOnlyAdmin):
    """Each schedule's runs with each task's outcome, read-only."""

    list_display = ["id", "schedule", "tick", "trigger", "status", "started_at", "completed_at"]
    list_filter = ["status", "trigger"]
    search_fields = ["id", "schedule__id"]
    list_select_related = ["schedule"]
    date_hierarchy = "started_at"
    fields = [
        "id",
        "schedule",
        "tick",
        "trigger",
        "status",
        "reason",
        "tasks",
        "started_at",
        "completed_at",
    ]
    readonly_fields = fields


@admin.register(Action)
class ActionAdmin(ReadOnlyAdmin):
    """The worker's operations, read-only: they change only through the lifecycle services."""

    list_display = [
        "id",
        "type",
        "status",
        "target_label",
        "account",
        "requested_by_user",
        "created_at",
        "completed_at",
    ]
    list_filter = ["type", "status"]
    search_fields = ["id", "server__id", "bot__id", "server__name", "bot__name", "account__id"]
    list_select_related = ["account", "requested_by_user"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "type",
        "status",
        "error",
        "account",
        "server",
        "bot",
        "requested_by_user",
        "requested_by_key",
        "created_at",
        "started_at",
        "heartbeat_at",
        "completed_at",
    ]
    readonly_fields = fields

    @admin.display(description="Target")
    def target_label(self, obj: Action) -> str:
        return obj.target_id


class AllocationInline(admin.TabularInline):
    """The node's pool, read-only: ports are added and removed through the form's fields."""

    model = Allocation
    fields = ["ip", "port", "server"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class NodeForm(ServiceForm):
    add_ip = forms.GenericIPAddressField(required=False, label="Add allocations: IP")
    add_ports = forms.CharField(
        required=False, label="Ports", help_text="Ports and ranges: 25565-25600, 27015."
    )
    remove_ports = forms.CharField(
        required=False, label="Remove free ports (same IP)", help_text="Ports and ranges."
    )
    storage_kind = forms.ChoiceField(
        choices=BackupStorage.choices,
        initial=BackupStorage.NODE,
        required=False,
        label="Backups kept",
        help_text="Where new backups of its servers go; existing ones stay where they are.",
    )
    storage_endpoint = forms.CharField(required=False, label="S3 endpoint", max_length=200)
    storage_region = forms.CharField(required=False, label="S3 region", max_length=64)
    storage_bucket = forms.CharField(required=False, label="S3 bucket", max_length=63)
    storage_prefix = forms.CharField(required=False, label="S3 key prefix", max_length=200)
    storage_access_key_id = forms.CharField(
        required=False, label="S3 access key id", max_length=128
    )
    storage_secret_access_key = forms.CharField(
        required=False,
        label="S3 secret access key",
        widget=forms.PasswordInput(render_value=False),
        help_text="Kept encrypted and never shown again; empty keeps the one set.",
    )
    field_aliases = {
        "ip": "add_ip",
        "ports": "add_ports",
        "kind": "storage_kind",
        "endpoint": "storage_endpoint",
        "bucket": "storage_bucket",
        "prefix": "storage_prefix",
        "access_key_id": "storage_access_key_id",
        "secret_access_key": "storage_secret_access_key",
    }
    STORAGE_FIELDS = (
        "storage_kind",
        "storage_endpoint",
        "storage_region",
        "storage_bucket",
        "storage_prefix",
        "storage_access_key_id",
        "storage_secret_access_key",
    )
    # The form's S3 fields and the node's columns (the secret has none it could show).
    S3_COLUMNS = (
        ("storage_endpoint", "s3_endpoint"),
        ("storage_region", "s3_region"),
        ("storage_bucket", "s3_bucket"),
        ("storage_prefix", "s3_prefix"),
        ("storage_access_key_id", "s3_access_key_id"),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        node = self.instance
        if node.pk:
            self.initial.setdefault("storage_kind", node.backup_storage)
            for name, column in self.S3_COLUMNS:
                self.initial.setdefault(name, getattr(node, column))

    def storage_changed(self, node: Node) -> bool:
        """Whether the form sets other storage than the node has (a new secret counts)."""
        data = self.cleaned_data
        if data.get("storage_secret_access_key"):
            return True
        if (data.get("storage_kind") or BackupStorage.NODE) != node.backup_storage:
            return True
        return node.backup_storage == BackupStorage.S3 and any(
            (data.get(name) or "") != getattr(node, column) for name, column in self.S3_COLUMNS
        )


class NodeIsolationFilter(admin.SimpleListFilter):
    """By what the agent said of its isolation, "unknown" included (blank is not a choice)."""

    title = "isolation"
    parameter_name = "isolation"
    UNKNOWN = "unknown"

    def lookups(self, request, model_admin):
        return [*NodeIsolation.choices, (self.UNKNOWN, "Unknown: the agent did not say")]

    def queryset(self, request, queryset):
        if self.value() == self.UNKNOWN:
            return queryset.filter(agent_isolation="")
        if self.value() in NodeIsolation.values:
            return queryset.filter(agent_isolation=self.value())
        return queryset


@admin.register(Node)
class NodeAdmin(ServiceAdmin):
    """Nodes change through their services; the token is shown once, when made or rotated.

    A node whose agent said hello without saying that it sandboxes each tenant is flagged in
    red in the list and with a warning on its page: customers' code there is not walled off.
    """

    form = NodeForm
    editable_after_add = True
    list_display = [
        "name",
        "region",
        "agent_url",
        "maintenance",
        "memory_mb",
        "disk_mb",
        "agent_limits",
        "isolation",
        "last_seen_at",
        "id",
    ]
    list_filter = ["region", "maintenance", NodeIsolationFilter]
    search_fields = ["name", "id", "agent_url"]
    fields = [
        "id",
        "name",
        "region",
        "agent_url",
        "memory_mb",
        "disk_mb",
        "cpu_percent",
        "maintenance",
        "token_hint",
        "agent_version",
        "agent_limits",
        "isolation",
        "last_seen_at",
        "created_at",
        "add_ip",
        "add_ports",
        "remove_ports",
        *NodeForm.STORAGE_FIELDS,
        "s3_secret_set",
    ]
    readonly_fields = [
        "id",
        "s3_secret_set",
        "token_hint",
        "agent_version",
        "agent_limits",
        "isolation",
        "last_seen_at",
        "created_at",
    ]
    inlines = [AllocationInline]
    actions = ["rotate_token", "delete_empty"]

    @staticmethod
    def _unisolated_because(node: Node) -> str:
        if node.agent_isolation == NodeIsolation.NONE:
            return "its agent runs without the sandbox"
        return "its agent did not say that it sandboxes them"

    @admin.display(description="Isolation", ordering="agent_isolation")
    def isolation(self, node: Node) -> str:
        if node.isolation_flagged:
            return format_html(
                '<strong style="color: var(--error-fg, #ba2121)">NOT ISOLATED</strong> ({})',
                self._unisolated_because(node),
            )
        return node.get_agent_isolation_display() or "-"

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and obj.isolation_flagged:
            self.message_user(
                request,
                f"{obj.name} is NOT ISOLATED: {self._unisolated_because(obj)}, so customers' "
                "servers and bots on it may read and signal each other's. Run its agent with "
                "the sandbox (without AGENT_ALLOW_UNISOLATED) before it takes customers.",
                messages.WARNING,
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_readonly_fields(self, request, obj=None):
        # The region of a node with servers is where they are: it is set once.
        return [*self.readonly_fields, *(["region"] if obj is not None else [])]

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        return [name for name in fields if obj is not None or name != "remove_ports"]

    @transaction.atomic  # the node and its pool together, or neither
    def save_through_service(self, form, *, actor: Actor, change: bool) -> Node:
        data = form.cleaned_data
        capacity = {name: data[name] for name in ("memory_mb", "disk_mb", "cpu_percent")}
        if change:
            changes = NodeChanges(
                name=data["name"],
                agent_url=data["agent_url"],
                maintenance=data["maintenance"],
                **capacity,
            )
            node = node_update(node=form.instance, changes=changes, actor=actor)
            token = None
        else:
            node, token = node_create(
                name=data["name"],
                region=data["region"].pk,
                agent_url=data["agent_url"],
                maintenance=data["maintenance"],
                actor=actor,
                **capacity,
            )
        if data.get("add_ip") and data.get("add_ports"):
            node_allocations_add(node=node, ip=data["add_ip"], ports=data["add_ports"], actor=actor)
        if change and data.get("add_ip") and data.get("remove_ports"):
            node_allocations_remove(
                node=node, ip=data["add_ip"], ports=data["remove_ports"], actor=actor
            )
        if form.storage_changed(node):
            secret = data.get("storage_secret_access_key") or None
            node = node_backup_storage_set(
                node=node,
                kind=data.get("storage_kind") or BackupStorage.NODE,
                endpoint=data.get("storage_endpoint", ""),
                region=data.get("storage_region", ""),
                bucket=data.get("storage_bucket", ""),
                prefix=data.get("storage_prefix", ""),
                access_key_id=data.get("storage_access_key_id", ""),
                secret_access_key=secret,
                actor=actor,
            )
        node.new_token = token
        return node

    @admin.display(description="S3 secret")
    def s3_secret_set(self, node: Node) -> str:
        return "set (never shown)" if node.s3_secret_encrypted else "-"

    def get_inlines(self, request, obj=None):
        return self.inlines if obj is not None else []

    def save_related(self, request, form, formsets, change) -> None:
        for formset in formsets:  # the read-only pool: nothing of it was saved
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if form.saved.new_token:
            self._show_token(request, form.saved, form.saved.new_token)

    def _show_token(self, request, node: Node, token: str) -> None:
        self.message_user(
            request,
            f"The token of {node.name}, shown this once — give it to its agent as AGENT_TOKEN: "
            f"{token}",
            messages.WARNING,
        )

    @admin.action(description="Rotate the token of selected nodes", permissions=["change"])
    def rotate_token(self, request, queryset):
        actor = Actor.from_request(request)
        for node in queryset:
            node, token = node_token_rotate(node=node, actor=actor)
            self.log_change(request, node, "Rotated the token")
            self._show_token(request, node, token)

    @admin.action(description="Delete selected nodes that run nothing", permissions=["change"])
    def delete_empty(self, request, queryset):
        self.run(request, queryset, node_delete, "node", "Deleted")

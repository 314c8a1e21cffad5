from collections.abc import Callable
from functools import cached_property

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import router
from django.db.models import QuerySet
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_view,
)
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.actors import Actor
from events.api.serializers import EventSerializer
from events.selectors import events_of_object
from hosting.api.pagination import PageNumberPagination
from hosting.api.schema import envelope
from hosting.api.serializers import StrictInputSerializer
from hosting.api.views import (
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    paginated,
    validated,
)
from hosting.errors import (
    ApplicationError,
    InsufficientScope,
    NotFound,
    ValidationFailed,
)
from hosting.queries import model_instance
from servers.api.allocations import ServerAllocationsMixin
from servers.api.backups import InstanceBackupsMixin
from servers.api.docs import ACTION_RESPONSE, instance_schema
from servers.api.files import InstanceFilesMixin
from servers.api.schedules import InstanceSchedulesMixin
from servers.api.serializers import (
    CONSOLE_EXAMPLES,
    GAME_EXAMPLES,
    SERVER_DETAIL_EXAMPLES,
    SERVER_EXAMPLES,
    SERVER_LIST_COLUMNS,
    ActionCreateSerializer,
    ActionSerializer,
    BotBulkActionSerializer,
    BotCreateSerializer,
    BotSerializer,
    BotUpdateSerializer,
    BulkActionSerializer,
    ConsoleSerializer,
    GameSerializer,
    RegionSerializer,
    ServerBulkActionSerializer,
    ServerCreateSerializer,
    ServerDetailSerializer,
    ServerSerializer,
    ServerUpdateSerializer,
)
from servers.api.users import InstanceUsersMixin
from servers.counts import (
    live_instance_count,
    live_instance_count_sql,
    live_instance_months,
    month_boundary,
)
from servers.filters import BotFilter, ServerFilter
from servers.models import Action, Bot, Instance, Server
from servers.selectors import (
    actions_of,
    bots_of_account,
    game_catalogue,
    instances_by_ids,
    region_catalogue,
    servers_of_account,
)
from servers.services import (
    InstanceChanges,
    action_request,
    bot_create,
    instance_update,
    server_create,
)
from servers.services.console import console_open
from servers.services.instances import bot_source_upload
from servers.services.permissions import (
    DELETE,
    Caller,
    instance_may,
    instances_visible_q,
    permission_check,
    power_permission,
    request_grants,
)

# --- Views ---------------------------------------------------------------------------------

# The list's default order (Meta.ordering) and the same asked for with ordering=-created_at.
NEWEST_FIRST = {(), ("-created_at", "-id")}

# The permission each action on one server or bot needs there (servers/services/permissions.py);
# None: any (seeing it at all). A power action's depends on its type (``power_permission``).
INSTANCE_PERMISSIONS: dict[str, str | None] = {
    "retrieve": None,
    "partial_update": "settings.write",
    "destroy": DELETE,
    "action_list": "activity.read",
    "action_create": None,
    "activity": "activity.read",
    "console": "console.view",
    "source": "settings.write",
    **dict.fromkeys(InstanceFilesMixin.FILE_READ, "files.read"),
    **dict.fromkeys(InstanceFilesMixin.FILE_WRITE, "files.write"),
    **dict.fromkeys(InstanceBackupsMixin.BACKUP_READ, "backups.read"),
    "backup_create": "backups.create",
    "backup_restore": "backups.restore",
    "backup_update": "backups.delete",
    "backup_destroy": "backups.delete",
    "backup_retention_update": "backups.delete",
    # Managing sub-users takes the team right (the service checks it), not a grant.
    **dict.fromkeys(InstanceUsersMixin.USERS_READ + InstanceUsersMixin.USERS_WRITE),
    # A server's ports are part of its configuration.
    **dict.fromkeys(ServerAllocationsMixin.ALLOCATION_READ, "settings.read"),
    **dict.fromkeys(ServerAllocationsMixin.ALLOCATION_WRITE, "settings.write"),
}


# Areas whose scopes name their permission one to one: ``schedules:write`` -> ``schedules.write``,
# for actions not in the table above (a mixin of them needs no entry of its own).
SCOPE_NAMED_AREAS = ("schedules", "databases")


SETTINGS_READ = "settings.read"


def action_permission(view) -> str | None:
    """The permission ``view``'s action needs on its instance; a 500 for an action neither the
    table nor its scopes name (forgetting is a bug, never a reason to let a request through)."""
    if view.action in INSTANCE_PERMISSIONS:
        return INSTANCE_PERMISSIONS[view.action]
    for scope in view.required_scopes.get(view.action, ()):
        area, _, verb = scope.partition(":")
        if area in SCOPE_NAMED_AREAS:
            return f"{area}.{'read' if verb == 'read' else 'write'}"
    raise ImproperlyConfigured(f"{type(view).__name__} names no permission for {view.action!r}.")


def _action_accepted(request, performed: Action) -> Response:
    return Response(
        {"action": ActionSerializer(performed).data},
        status=status.HTTP_202_ACCEPTED,
        headers={"Location": request.build_absolute_uri(f"/v1/actions/{performed.id}")},
    )


class InstanceViewSet(
    InstanceFilesMixin,
    InstanceBackupsMixin,
    InstanceUsersMixin,
    InstanceSchedulesMixin,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    ApiViewSet,
):
    """What servers and bots share: CRUD, power actions, bulk actions, activity, the console,
    the files, the backups and the sub-users. Each action on one of them asks its permission
    there (``INSTANCE_PERMISSIONS``) once the key's scopes let the request in."""

    scope: str  # "servers" or "bots"
    ids_field: str  # the bulk body's list of ids: "server_ids" or "bot_ids"
    bulk_serializer: type[BulkActionSerializer]
    detail_serializer: type[serializers.Serializer]
    update_serializer: type[StrictInputSerializer]
    settings_field: str  # the configuration's field, which settings.read shows
    # The account's servers or bots (a selector), and the columns of the hot list's plain rows
    # (None: the list reads model instances).
    instances_of_account: Callable[..., QuerySet]
    list_columns: tuple[str, ...] | None = None
    speculative_list = True  # answered while the key's lookup is on its way (hosting.api.views)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "scope" in cls.__dict__:
            read, write, power = (f"{cls.scope}:{verb}" for verb in ("read", "write", "power"))
            cls.required_scopes = (
                {
                    "list": [read],
                    "retrieve": [read],
                    "create": [write],
                    "partial_update": [write],
                    "destroy": [write],
                    "action_list": [read],
                    "action_create": [power],
                    "bulk_action": [power],
                    "activity": [read],
                    "console": [power],
                    "source": [write],
                }
                | cls.file_scopes(read)
                | cls.backup_scopes(read)
                | cls.schedule_scopes(read)
                | cls.user_scopes(read)
            )
            if issubclass(cls, ServerAllocationsMixin):
                cls.required_scopes |= cls.allocation_scopes(read, write)

    def get_serializer_class(self):
        return self.detail_serializer if self.action != "list" else self.list_serializer

    def shown(self, data: dict, instance: Instance) -> dict:
        """``data`` as the caller may see it: the configuration (a server's ``variables``, a
        bot's ``environment``, which hold passwords and tokens) empty to a sub-user whose grant
        lacks ``settings.read``."""
        if self.settings_field in data and not instance_may(self.caller, instance, SETTINGS_READ):
            return {**data, self.settings_field: {}}
        return data

    def retrieve(self, request, *args, **kwargs):
        instance = self.get_object()
        data = self.get_serializer(instance).data
        return Response({self.resource_key: self.shown(data, instance)})

    def rows_shown(self, rows: list[dict], page: list) -> list[dict]:
        if SETTINGS_READ in self.caller.from_role(self.model._meta.model_name):
            return rows
        using = router.db_for_read(self.model)
        return [
            self.shown(row, model_instance(self.model, instance, using=using))
            for row, instance in zip(rows, page, strict=True)
        ]

    @cached_property
    def caller(self) -> Caller:
        return Caller.of_principal(self.request.auth, request_grants(self.request._request))

    def visible(self, queryset, *, user=None):
        """The instances the caller sees: all of the account's, or those they have a grant on."""
        kind = self.model._meta.model_name
        return queryset.filter(instances_visible_q(self.caller, kind, user=user))

    def caller_queryset(self, principal):
        return self.visible(type(self).instances_of_account(account_id=principal.account.id))

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "list" and self.list_columns:
            # Plain rows for the hot list: the serializer reads mappings as well as models, and
            # building 25 model instances per page costs more than the rest of the list.
            return queryset.values(*self.list_columns)
        return queryset

    def list_base(self, param):
        """``caller_queryset`` with placeholders for the account and the user (``list_query``)."""
        queryset = type(self).instances_of_account(account_id=param("account_id"))
        queryset = self.visible(queryset, user=param("user_id"))
        return queryset.values(*self.list_columns) if self.list_columns else queryset

    def list_query(self):
        """The list built with placeholders once per shape (EnvelopeListMixin.compiled_pages):
        the account, and the user for a caller who sees only what they have grants on."""
        sees_all = self.caller.role_sees_all(self.model._meta.model_name)
        values = {"account_id": self.request.auth.account.id, "user_id": self.request.auth.user.id}
        return self.list_base, values, (sees_all,)

    def require_role_scope(self, verb: str) -> None:
        """Creating a server or bot takes the role's scope: grants are on existing ones."""
        scope = f"{self.scope}:{verb}"
        if scope not in self.caller.role_scopes():
            raise InsufficientScope(
                f"This operation needs the scope {scope}.", details={"required_scopes": [scope]}
            )

    def get_object(self):
        instance = super().get_object()
        permission_check(self.caller, instance, action_permission(self))
        return instance

    def _counted_statuses(self) -> tuple[bool, list[str] | None]:
        """Whether the maintained counts (servers/counts.py) can count this list, and the
        statuses it is narrowed to (None: all): only for the list, filtered by nothing but
        ``status``."""
        filters = getattr(self.request, "list_filters", None)
        if self.action != "list" or filters is None:
            return False, None
        if not self.caller.role_sees_all(self.model._meta.model_name):
            return False, None  # the counts are the account's; a grant's holder sees fewer
        narrowing = {name: value for name, value in filters.items() if name != "ordering"}
        return not narrowing.keys() - {"status"}, narrowing.get("status")

    def _maintained_count(self) -> dict | None:
        """What of the maintained counts the list's total is (``live_instance_count``'s
        arguments); None when the total must count the matching rows instead."""
        countable, statuses = self._counted_statuses()
        if not countable:
            return None
        kind = self.model._meta.model_name
        return {"account_id": self.request.auth.account.id, "kind": kind, "statuses": statuses}

    def maintained_total(self) -> int | None:
        """The list's ``total`` from the maintained counts, which cost the same for 100 servers
        as for 100,000; None to count the matching rows instead."""
        counted = self._maintained_count()
        return None if counted is None else live_instance_count(**counted)

    def maintained_total_sql(self) -> tuple[str, list] | None:
        """``maintained_total`` as SQL and its values, for a page read with its total in one
        statement (hosting.api.pagination); None to count the matching rows instead."""
        counted = self._maintained_count()
        return None if counted is None else live_instance_count_sql(**counted)

    def seek_deep_page(self, pages, offset: int, limit: int):
        """``(total, rows)`` of a deep page of the newest-first list, started at the month its
        first row was created in: the per-month counts say how many newer rows there are, so
        only that month's earlier rows are skipped, not the whole account's. None when the
        list is filtered or ordered otherwise."""
        countable, statuses = self._counted_statuses()
        if not countable or pages.ordering not in NEWEST_FIRST:
            return None
        months = live_instance_months(
            account_id=self.request.auth.account.id,
            kind=self.model._meta.model_name,
            statuses=statuses,
        )
        total = sum(count for _, count in months)
        found = month_boundary(months, offset)
        if found is None:
            return total, []
        before, skip = found
        return total, pages.rows(skip, limit, before=before)

    def partial_update(self, request, pk=None):
        changes = InstanceChanges.of(validated(self.update_serializer, request))
        instance, restart_for = instance_update(
            instance=self.get_object(), changes=changes, actor=Actor.from_request(request)
        )
        return Response(
            {
                self.resource_key: self.shown(self.detail_serializer(instance).data, instance),
                "restart_required": bool(restart_for),
                "restart_required_for": restart_for,
            }
        )

    def destroy(self, request, pk=None):
        performed = action_request(
            instance=self.get_object(), action_type="delete", actor=Actor.from_request(request)
        )
        return _action_accepted(request, performed)

    # pagination_class: only for the schema, which otherwise documents the view's own list key.
    @action(
        detail=True,
        methods=["get"],
        url_path="actions",
        pagination_class=PageNumberPagination.for_key("actions"),
    )
    def action_list(self, request, pk=None):
        return paginated(self, actions_of(self.get_object()), "actions", ActionSerializer)

    @extend_schema(
        summary="Run a power action",
        description="`start`, `stop`, `restart`, `kill` or `reinstall`; 202 with the action and "
        "its `Location`. 409 `invalid_state` when the status does not allow it "
        "(details.status, details.allowed_actions); 409 `action_in_progress` while another "
        "action runs (details.action_id), except for `kill`, which cuts it short.",
        request=ActionCreateSerializer,
        responses={202: ACTION_RESPONSE},
    )
    @action_list.mapping.post
    def action_create(self, request, pk=None):
        body = validated(ActionCreateSerializer, request)
        instance = self.get_object()
        permission_check(self.caller, instance, power_permission(body["type"]))
        performed = action_request(
            instance=instance,
            action_type=body["type"],
            actor=Actor.from_request(request),
        )
        return _action_accepted(request, performed)

    @action(detail=False, methods=["post"], url_path="actions")
    def bulk_action(self, request):
        body = validated(self.bulk_serializer, request)
        ids = list(dict.fromkeys(body[self.ids_field]))
        found = instances_by_ids(self.get_queryset(), ids)
        actor = Actor.from_request(request)
        caller = self.caller
        results = []
        for instance_id in ids:
            try:
                if instance_id not in found:
                    raise NotFound()
                permission_check(caller, found[instance_id], power_permission(body["type"]))
                performed = action_request(
                    instance=found[instance_id],
                    action_type=body["type"],
                    actor=actor,
                )
            except ApplicationError as error:
                problem = {"code": error.code, "message": error.message}
                if error.details:
                    problem["details"] = error.details
                results.append({"id": instance_id, "accepted": False, "error": problem})
            else:
                results.append(
                    {
                        "id": instance_id,
                        "accepted": True,
                        "action": ActionSerializer(performed).data,
                    }
                )
        return Response({"results": results})

    @extend_schema(
        summary="Open the console",
        description="A console token for the calling user, valid `CONSOLE_TOKEN_SECONDS` (10 "
        "minutes by default), and the WebSocket address of the node's agent to open with it "
        '(agent/PROTOCOL.md: send `{"event": "auth", "args": [token]}` first). The '
        "console streams the process's output and takes commands when `can_command` (the "
        "console.command permission; otherwise the agent refuses input). Needs the power "
        "scope and the console.view permission. 409 "
        "`console_unavailable` when it runs on no node (the simulated driver), `invalid_state` "
        "while suspended or being deleted.",
        request=None,
        responses=envelope("console", ConsoleSerializer(), name="ConsoleEnvelope"),
        examples=CONSOLE_EXAMPLES,
    )
    @action(detail=True, methods=["post"])
    def console(self, request, pk=None):
        instance = self.get_object()
        command = instance_may(self.caller, instance, "console.command")
        console = console_open(instance=instance, user_id=request.auth.user.pk, command=command)
        return Response({"console": console})

    @action(detail=True, methods=["get"], pagination_class=PageNumberPagination.for_key("events"))
    def activity(self, request, pk=None):
        instance = self.get_object()
        events = events_of_object(account_id=instance.account_id, object_id=instance.pk)
        return paginated(self, events, "events", EventSerializer)


@instance_schema(
    "server",
    "Servers",
    ServerDetailSerializer,
    ServerCreateSerializer,
    ServerUpdateSerializer,
    ServerBulkActionSerializer,
    SERVER_EXAMPLES,
)
@extend_schema_view(retrieve=extend_schema(examples=SERVER_DETAIL_EXAMPLES))
class ServerViewSet(ServerAllocationsMixin, InstanceViewSet):
    model = Server
    scope = "servers"
    ids_field = "server_ids"
    bulk_serializer = ServerBulkActionSerializer
    list_key = "servers"
    resource_key = "server"
    filterset_classes = {"list": ServerFilter}
    list_serializer = ServerSerializer
    detail_serializer = ServerDetailSerializer
    settings_field = "variables"
    update_serializer = ServerUpdateSerializer

    instances_of_account = staticmethod(servers_of_account)
    list_columns = SERVER_LIST_COLUMNS

    def get_queryset(self):
        queryset = super().get_queryset()
        return queryset if self.action == "list" else queryset.select_related("game")

    def create(self, request):
        self.require_role_scope("write")
        body = validated(ServerCreateSerializer, request)
        server = server_create(
            account=request.auth.account, actor=Actor.from_request(request), **body
        )
        return created(
            request, {"server": ServerDetailSerializer(server).data}, f"/v1/servers/{server.id}"
        )


@instance_schema(
    "bot", "Bots", BotSerializer, BotCreateSerializer, BotUpdateSerializer, BotBulkActionSerializer
)
class BotViewSet(InstanceViewSet):
    model = Bot
    scope = "bots"
    ids_field = "bot_ids"
    bulk_serializer = BotBulkActionSerializer
    list_key = "bots"
    resource_key = "bot"
    filterset_classes = {"list": BotFilter}
    list_serializer = BotSerializer
    detail_serializer = BotSerializer
    settings_field = "environment"
    update_serializer = BotUpdateSerializer

    instances_of_account = staticmethod(bots_of_account)
    # The list's answer (bot_representation) reads a bot's fields only: its rows are plain
    # records, not model instances (issue 35); a permission check gets the instance back.
    list_records = True

    def create(self, request):
        self.require_role_scope("write")
        body = validated(BotCreateSerializer, request)
        bot = bot_create(account=request.auth.account, actor=Actor.from_request(request), **body)
        return created(request, {"bot": BotSerializer(bot).data}, f"/v1/bots/{bot.id}")

    @extend_schema(
        summary="Upload the bot's code",
        description="A `multipart/form-data` body with one `file` part: the code as a .tar.gz, "
        ".tgz or .zip (at most `BOT_ARCHIVE_MAX_BYTES`, 50 MB by default). It replaces the "
        "bot's `source` and is installed at the next reinstall. 400 `validation_failed` "
        "(`file`: `invalid`, `too_large`, `required`).",
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
                "additionalProperties": False,
            }
        },
        responses=envelope("bot", BotSerializer(), name="BotSourceEnvelope"),
    )
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def source(self, request, pk=None):
        unknown = sorted(set(request.data) - {"file"})
        if unknown:
            raise ValidationFailed.field(unknown[0], "unknown_field", "This field is not accepted.")
        files = request.FILES.getlist("file")
        if len(files) != 1:
            raise ValidationFailed.field("file", "required", "Send the archive as one file part.")
        upload = files[0]
        if upload.size > settings.BOT_ARCHIVE_MAX_BYTES:  # refused unread
            raise ValidationFailed.field(
                "file",
                "too_large",
                f"The archive is larger than {settings.BOT_ARCHIVE_MAX_BYTES // 2**20} MB.",
            )
        bot = bot_source_upload(
            bot=self.get_object(),
            filename=upload.name or "",
            content=upload.read(),
            actor=Actor.from_request(request),
        )
        return Response({"bot": BotSerializer(bot).data})


@extend_schema_view(
    retrieve=extend_schema(
        summary="Get an action",
        description="Any action of the account's servers (needs servers:read) or bots (bots:read).",
        tags=["Actions"],
        responses=envelope("action", ActionSerializer(), name="ActionDetailEnvelope"),
    )
)
class ActionViewSet(CallerScopedMixin, EnvelopeRetrieveMixin, ApiViewSet):
    model = Action
    resource_key = "action"
    serializer_class = ActionSerializer
    required_scopes = {"retrieve": []}  # checked per target below: servers:read or bots:read

    def caller_queryset(self, principal):
        return Action.objects.filter(account=principal.account)

    def get_object(self):
        performed = super().get_object()
        needed = "servers:read" if performed.server_id else "bots:read"
        if needed not in self.request.auth.scopes:
            raise InsufficientScope(details={"required_scopes": [needed]})
        return performed


@extend_schema_view(
    list=extend_schema(
        summary="List games",
        description="The game catalogue: every game a server can be created for, with the "
        "variables it takes. Any valid key.",
        examples=GAME_EXAMPLES,
        tags=["Games"],
    )
)
class GameViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "games"
    serializer_class = GameSerializer
    queryset = game_catalogue()
    required_scopes = {"list": []}
    filter_backends: list = []


@extend_schema_view(
    list=extend_schema(
        summary="List regions",
        description="Where servers and bots can run. Any valid key.",
        tags=["Regions"],
    )
)
class RegionViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "regions"
    serializer_class = RegionSerializer
    queryset = region_catalogue()
    required_scopes = {"list": []}
    filter_backends: list = []

"""``/v1/servers/{id}/backups…`` and ``/v1/bots/{id}/backups…``: backups through the API.

A mixin of the instances' viewsets, as the files' is: the instance is found as their other
actions find it (the caller's account), the scopes are ``backups:read`` / ``backups:write``
beside the instance's own read scope, and the work is ``servers.services.backups``'.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.pagination import PageNumberPagination
from hosting.api.params import invalid_parameter, list_value, single_value
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import DeletedSerializer, RepresentedBy, StrictInputSerializer
from hosting.api.views import paginated, validated
from servers.api.files import NODE_DOWN, UNAVAILABLE, FileTransferSerializer
from servers.models import Backup, BackupStatus
from servers.representations import backup_representation
from servers.services.backups import (
    MAX_IGNORE_LINE_CHARS,
    MAX_IGNORE_LINES,
    Retention,
    backup_create,
    backup_delete,
    backup_download_url,
    backup_limits,
    backup_of,
    backup_progress,
    backup_restore,
    backup_update,
    backups_of,
    backups_used_bytes,
    retention_set,
)

BACKUP_ID = r"(?P<backup_id>bkp_[A-Za-z0-9]{1,60})"
ORDERINGS = ("created_at", "-created_at", "name", "-name", "size", "-size")


# --- Serializers --------------------------------------------------------------------------


class BackupTargetSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["server", "bot"])
    id = serializers.CharField()


class BackupProgressSerializer(serializers.Serializer):
    operation = serializers.ChoiceField(choices=["backup", "restore"])
    bytes = serializers.IntegerField(min_value=0, help_text="Bytes archived or unpacked so far.")
    files = serializers.IntegerField(min_value=0, help_text="Members so far.")


class BackupSerializer(RepresentedBy, serializers.Serializer):
    """A backup of a server's or bot's folder."""

    represent = staticmethod(backup_representation)

    id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=BackupStatus.choices)
    target = BackupTargetSerializer()
    size = serializers.IntegerField(allow_null=True, help_text="Bytes of the archive.")
    checksum = serializers.CharField(allow_null=True, help_text="`sha256:<64 hex>`.")
    files = serializers.IntegerField(allow_null=True, help_text="Members archived.")
    locked = serializers.BooleanField(help_text="Never rotated nor deleted while locked.")
    ignore = serializers.ListField(child=serializers.CharField())
    storage = serializers.ChoiceField(choices=["node", "s3"])
    error = serializers.CharField(allow_null=True)
    restore_status = serializers.ChoiceField(choices=BackupStatus.choices, allow_null=True)
    restore_error = serializers.CharField(allow_null=True)
    created_at = serializers.CharField()
    completed_at = serializers.CharField(allow_null=True)
    restored_at = serializers.CharField(allow_null=True)


class BackupDetailSerializer(BackupSerializer):
    progress = BackupProgressSerializer(
        allow_null=True,
        help_text="While the node works on it, how far it got; null otherwise or when the "
        "node cannot be asked.",
    )


class BackupCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(
        max_length=100, required=False, allow_blank=True, help_text="By default the UTC time."
    )
    ignore = serializers.ListField(
        child=serializers.CharField(
            max_length=MAX_IGNORE_LINE_CHARS, allow_blank=True, trim_whitespace=False
        ),
        max_length=MAX_IGNORE_LINES,
        required=False,
        help_text="gitignore-style patterns left out of the archive, added to those of the "
        "folder's own `.backupignore` and `.pteroignore`.",
    )


class BackupUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    locked = serializers.BooleanField(required=False)


class BackupRestoreSerializer(StrictInputSerializer):
    truncate = serializers.BooleanField(
        default=False, help_text="Delete everything else in the folder first."
    )


def _rule(text: str) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=1, max_value=1000, allow_null=True, required=False, help_text=text
    )


class BackupRetentionSerializer(StrictInputSerializer):
    keep_last = _rule("Keep the newest N backups.")
    daily = _rule("Keep the newest backup of each of the last N days (UTC) that have one.")
    weekly = _rule("Keep the newest backup of each of the last N ISO weeks that have one.")
    monthly = _rule("Keep the newest backup of each of the last N months that have one.")


class BackupRetentionShownSerializer(serializers.Serializer):
    keep_last = serializers.IntegerField(allow_null=True)
    daily = serializers.IntegerField(allow_null=True)
    weekly = serializers.IntegerField(allow_null=True)
    monthly = serializers.IntegerField(allow_null=True)
    backup_limit = serializers.IntegerField(help_text="Backups its plan allows it to keep.")
    backup_storage_mb = serializers.IntegerField(help_text="MB its backups may take in all.")
    used_bytes = serializers.IntegerField(help_text="Bytes its completed backups take.")


BACKUP_EXAMPLE = {
    "id": "bkp_7Qm2Xw9Lr4Tz1Nc8Vb3Hs6Kd",
    "name": "Before the 1.21 update",
    "status": "completed",
    "target": {"type": "server", "id": "srv_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs"},
    "size": 734003200,
    "checksum": "sha256:" + "9f2c" * 16,
    "files": 18342,
    "locked": False,
    "ignore": ["logs/", "*.tmp"],
    "storage": "node",
    "error": None,
    "restore_status": None,
    "restore_error": None,
    "created_at": "2026-11-21T15:04:05Z",
    "completed_at": "2026-11-21T15:05:41Z",
    "restored_at": None,
}
RUNNING_EXAMPLE = BACKUP_EXAMPLE | {
    "status": "running",
    "size": None,
    "checksum": None,
    "files": None,
    "completed_at": None,
    "progress": {"operation": "backup", "bytes": 209715200, "files": 5120},
}
BACKUP_ERRORS = (
    " 409 `files_unavailable` when it runs on no node (the simulated driver) or is not on it "
    "yet, `invalid_state` while suspended or being deleted; 503 `service_unavailable` when "
    "the node cannot be reached."
)
LIMITS = error_doc(
    409,
    "backup_limit_reached",
    "`backup_limit_reached` (details.limit): as many backups as the plan allows and none can "
    "be rotated; `backup_storage_exceeded` (details.limit, MB): the backups take all the "
    "storage the plan allows; `conflict`: a backup or restore of it is running; "
    "`files_unavailable`, `invalid_state`.",
    "This server keeps 3 backups, as many as its plan allows, and none can be rotated "
    "(locked, or kept by retention); delete or unlock one.",
    {"limit": 3},
)
LOCKED = error_doc(
    409,
    "locked",
    "`locked`: unlock it first; `conflict` while it is being made or restored.",
    "The backup is locked; unlock it first.",
)
NOT_FOUND = error_doc(404, "not_found", "`not_found`: no such backup here.", "No such backup.")


def _documented(status: int, body, conflict=UNAVAILABLE) -> dict:
    return {status: body, 404: NOT_FOUND, 409: conflict, 503: NODE_DOWN}


def _backup_envelope(name: str, detail: bool = False):
    return envelope("backup", (BackupDetailSerializer if detail else BackupSerializer)(), name=name)


class InstanceBackupsMixin:
    """Backups of a server or bot (``get_object`` of the viewset)."""

    BACKUP_READ = ("backups", "backup_detail", "backup_download_url", "backup_retention")
    BACKUP_WRITE = (
        "backup_create",
        "backup_update",
        "backup_destroy",
        "backup_restore",
        "backup_retention_update",
    )

    @classmethod
    def backup_scopes(cls, read_scope: str) -> dict[str, list[str]]:
        """Each backup action's scopes: the instance's read scope and backups:read or :write."""
        return {name: [read_scope, "backups:read"] for name in cls.BACKUP_READ} | {
            name: [read_scope, "backups:write"] for name in cls.BACKUP_WRITE
        }

    def _backup(self, backup_id: str) -> Backup:
        return backup_of(self.get_object(), backup_id)

    @extend_schema(
        summary="List backups",
        description="The backups of this server or bot, newest first. Filters: `status` "
        "(`running`, `completed`, `failed`; a comma list), `locked` (`true`/`false`). "
        f"`ordering`: {', '.join(f'`{name}`' for name in ORDERINGS)}. Needs backups:read.",
        parameters=[
            OpenApiParameter(
                "status",
                {
                    "type": "array",
                    "items": {"type": "string", "enum": list(BackupStatus.values)},
                    "minItems": 1,
                },
                style="form",
                explode=False,
                description="Only backups in this status, or in any of a comma-separated list.",
            ),
            OpenApiParameter("locked", OpenApiTypes.BOOL),
            OpenApiParameter("ordering", OpenApiTypes.STR, enum=list(ORDERINGS)),
        ],
        responses=BackupSerializer(many=True),
        examples=[OpenApiExample("A completed backup", value=BACKUP_EXAMPLE, response_only=True)],
    )
    # pagination_class: only for the schema, which otherwise documents the view's own list key.
    @action(
        detail=True,
        methods=["get"],
        url_path="backups",
        pagination_class=PageNumberPagination.for_key("backups"),
    )
    def backups(self, request, pk=None):
        backups = backups_of(self.get_object())
        statuses = list_value(request.query_params, "status")
        if statuses is not None:
            unknown = sorted(set(statuses) - set(BackupStatus.values))
            if unknown:
                raise invalid_parameter(
                    "status", "invalid_choice", "status is running, completed or failed."
                )
            backups = backups.filter(status__in=statuses)
        locked = single_value(request.query_params, "locked")
        if locked is not None:
            if locked not in ("true", "false"):
                raise invalid_parameter("locked", "invalid", "locked is true or false.")
            backups = backups.filter(locked=locked == "true")
        ordering = single_value(request.query_params, "ordering") or "-created_at"
        if ordering not in ORDERINGS:
            raise invalid_parameter(
                "ordering", "invalid_choice", f"ordering is one of {', '.join(ORDERINGS)}."
            )
        descending = "-" if ordering.startswith("-") else ""
        backups = backups.order_by(ordering, f"{descending}created_at", f"{descending}id")
        return paginated(self, backups, "backups", BackupSerializer)

    @extend_schema(
        summary="Back up now",
        description="Starts a backup of the folder (a .tar.gz made by the node, on the node or "
        "in the node's S3 store); 202 with it `running`; `backup.completed` or "
        "`backup.failed` follows. Minecraft's world is saved and held (`save-off`, "
        "`save-all`, then `save-on`) while it is archived. When the plan's count is reached the "
        "oldest unlocked backup that retention does not keep is deleted first. Needs "
        "backups:write." + BACKUP_ERRORS,
        request=BackupCreateSerializer,
        responses={
            202: _backup_envelope("BackupStartedEnvelope"),
            409: LIMITS,
            503: NODE_DOWN,
        },
        examples=[
            OpenApiExample(
                "Before an update",
                value={"name": "Before the 1.21 update", "ignore": ["logs/", "*.tmp"]},
                request_only=True,
            )
        ],
    )
    @backups.mapping.post
    def backup_create(self, request, pk=None):
        body = validated(BackupCreateSerializer, request)
        backup = backup_create(
            instance=self.get_object(),
            actor=Actor.from_request(request),
            name=body.get("name", ""),
            ignore=body.get("ignore"),
        )
        kind = "server" if backup.server_id else "bot"
        return Response(
            {"backup": BackupSerializer(backup).data},
            status=202,
            headers={
                "Location": request.build_absolute_uri(
                    f"/v1/{kind}s/{backup.instance_id}/backups/{backup.id}"
                )
            },
        )

    @extend_schema(
        summary="Get a backup",
        description="One backup; while it is being made or restored, `progress` says how far "
        "the node got (null when the node cannot be asked). Needs backups:read.",
        responses={200: _backup_envelope("BackupEnvelope", detail=True), 404: NOT_FOUND},
        examples=[OpenApiExample("Running", value={"backup": RUNNING_EXAMPLE}, response_only=True)],
    )
    @action(detail=True, methods=["get"], url_path=f"backups/{BACKUP_ID}")
    def backup_detail(self, request, pk=None, backup_id=None):
        backup = self._backup(backup_id)
        shown = BackupSerializer(backup).data | {"progress": backup_progress(backup)}
        return Response({"backup": shown})

    @extend_schema(
        summary="Rename, lock or unlock a backup",
        description="A locked backup is never rotated by the plan's count nor by retention, and "
        "cannot be deleted until unlocked. Recorded as `backup.updated`. Needs backups:write.",
        request=BackupUpdateSerializer,
        responses={200: _backup_envelope("BackupUpdatedEnvelope"), 404: NOT_FOUND},
        examples=[OpenApiExample("Lock", value={"locked": True}, request_only=True)],
    )
    @backup_detail.mapping.patch
    def backup_update(self, request, pk=None, backup_id=None):
        body = validated(BackupUpdateSerializer, request)
        backup = backup_update(
            backup=self._backup(backup_id), actor=Actor.from_request(request), **body
        )
        return Response({"backup": BackupSerializer(backup).data})

    @extend_schema(
        summary="Delete a backup",
        description="Deletes the archive (on the node or in S3) and the backup; "
        "`backup.deleted`. 409 `locked` while locked, `conflict` while it is being made or "
        "restored. Needs backups:write." + BACKUP_ERRORS,
        request=None,
        responses=_documented(200, DeletedSerializer, LOCKED),
    )
    @backup_detail.mapping.delete
    def backup_destroy(self, request, pk=None, backup_id=None):
        backup_delete(backup=self._backup(backup_id), actor=Actor.from_request(request))
        return Response({"id": backup_id, "deleted": True})

    @extend_schema(
        summary="Restore a backup",
        description="The node stops the server if it runs, unpacks the archive (its checksum "
        "checked; a mismatch changes nothing), with `truncate` deleting everything else in "
        "the folder first, and starts the server again if it was running; 202 with the "
        "backup, whose `restore_status` is `running` until `backup.restored` or "
        "`backup.restore_failed`. Power actions wait meanwhile (409 `conflict`). 409 "
        "`invalid_state` unless the backup is completed and the server stopped, running or "
        "install_failed; "
        "`conflict` while a backup or restore of it runs. Needs backups:write." + BACKUP_ERRORS,
        request=BackupRestoreSerializer,
        responses=_documented(202, _backup_envelope("BackupRestoringEnvelope")),
        examples=[OpenApiExample("Clean restore", value={"truncate": True}, request_only=True)],
    )
    @action(detail=True, methods=["post"], url_path=f"backups/{BACKUP_ID}/restore")
    def backup_restore(self, request, pk=None, backup_id=None):
        body = validated(BackupRestoreSerializer, request)
        backup = backup_restore(
            backup=self._backup(backup_id),
            truncate=body["truncate"],
            actor=Actor.from_request(request),
        )
        return Response({"backup": BackupSerializer(backup).data}, status=202)

    @extend_schema(
        summary="Get a backup's download address",
        description="An address that downloads the archive (`<backup id>.tar.gz`) for "
        "`BACKUP_URL_SECONDS` (15 minutes): `GET` it without an API key. On the node it is the "
        "agent's, signed for the calling user, and honours `Range`; in S3 it is a presigned "
        "URL of the store. 409 `invalid_state` unless completed. Needs backups:read."
        + BACKUP_ERRORS,
        request=None,
        responses=_documented(
            200, envelope("transfer", FileTransferSerializer(), name="BackupDownloadEnvelope")
        ),
    )
    @action(detail=True, methods=["post"], url_path=f"backups/{BACKUP_ID}/download-url")
    def backup_download_url(self, request, pk=None, backup_id=None):
        transfer = backup_download_url(backup=self._backup(backup_id), user_id=request.auth.user.pk)
        return Response({"transfer": transfer | {"path": f"/{backup_id}.tar.gz"}})

    @extend_schema(
        summary="Get the backup retention",
        description="How many backups retention keeps by each rule (null: the rule is not "
        "used; all null: only the plan's count rotates), and the plan's limits. Needs "
        "backups:read.",
        responses=envelope(
            "backup_retention", BackupRetentionShownSerializer(), name="BackupRetentionEnvelope"
        ),
    )
    @action(detail=True, methods=["get"], url_path="backup-retention")
    def backup_retention(self, request, pk=None):
        return Response({"backup_retention": self._retention(self.get_object())})

    @extend_schema(
        summary="Change the backup retention",
        description="After each completed backup, every completed, unlocked backup that no rule "
        "keeps is deleted (`backup.deleted`, `rotated: true`): the newest `keep_last`, and the "
        "newest of each of the last `daily` days, `weekly` ISO weeks and `monthly` months "
        "(UTC) that have one. Fields left out keep their value; null turns a rule off. Needs "
        "backups:write.",
        request=BackupRetentionSerializer,
        responses=envelope(
            "backup_retention", BackupRetentionShownSerializer(), name="BackupRetentionSetEnvelope"
        ),
        examples=[
            OpenApiExample(
                "Grandfather-father-son",
                value={"keep_last": 3, "daily": 7, "weekly": 4, "monthly": 6},
                request_only=True,
            )
        ],
    )
    @backup_retention.mapping.patch
    def backup_retention_update(self, request, pk=None):
        body = validated(BackupRetentionSerializer, request)
        instance = self.get_object()
        retention = Retention(**(Retention.of(instance).as_dict() | dict(body)))
        instance = retention_set(
            instance=instance, retention=retention, actor=Actor.from_request(request)
        )
        return Response({"backup_retention": self._retention(instance)})

    @staticmethod
    def _retention(instance) -> dict:
        limit, storage_mb = backup_limits(instance)
        return Retention.of(instance).as_dict() | {
            "backup_limit": limit,
            "backup_storage_mb": storage_mb,
            "used_bytes": backups_used_bytes(instance),
        }

"""Backups of a server's or bot's folder (agent/PROTOCOL.md "Backups", issue 30).

The node's agent makes, restores and deletes the archives, on the node or in the S3-compatible
store its node is set to (``node_backup_storage_set``, by staff), and reports how each ended
(``backup_event``, from ``agent_reports``). Here: who may keep how many (the plan's
``backup_limit`` and ``backup_storage_mb``, or the ``BACKUP_DEFAULT_*`` settings when unbilled),
rotation when the count is reached, the retention rules (``retention_keeps``: keep-last, daily,
weekly, monthly in UTC), locks, the download addresses and the events.

A restore is recorded on its backup (``restore_status``), not as a status of the server nor as
an ``Action``: the agent stops the server, restores and starts it again by itself and reports
the end, so no worker step or lifecycle edge is involved; while it runs, power actions and
other backups of that server are refused (409 ``conflict``), as the agent refuses them too.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet, Sum
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.actors import SYSTEM, Actor
from events.services import record_event
from hosting.errors import (
    ApplicationError,
    Conflict,
    InvalidState,
    NotFound,
    ServiceUnavailable,
    ValidationFailed,
)
from hosting.secrets_box import decrypt_secret, encrypt_secret
from servers.drivers import DriverError
from servers.drivers.agent import agent_request
from servers.models import Backup, BackupStatus, BackupStorage, Bot, Instance, Node, Server
from servers.models import ServerStatus as S
from servers.representations import backup_representation, instance_representation
from servers.services.files import FileCall, agent_error, instance_node
from servers.services.nodes import node_representation
from servers.services.records import instance_locked
from servers.signing import backup_token

logger = logging.getLogger(__name__)

MAX_IGNORE_LINES = 200
MAX_IGNORE_LINE_CHARS = 500
# A restore is asked for only where the agent can stop and start the server around it, or
# where nothing runs: a failed install's folder may well be what a restore is for.
RESTORABLE = {S.STOPPED, S.RUNNING, S.INSTALL_FAILED}
ACTIVE = Q(status=BackupStatus.RUNNING) | Q(restore_status=BackupStatus.RUNNING)
MB = 1024 * 1024
STORAGE_FIELDS = (
    "backup_storage",
    "s3_endpoint",
    "s3_region",
    "s3_bucket",
    "s3_prefix",
    "s3_access_key_id",
    "s3_secret_encrypted",
)


class BackupLimitReached(ApplicationError):
    status, code = 409, "backup_limit_reached"
    message = gettext_noop(
        "This server keeps as many backups as its plan allows and none can be rotated."
    )


class BackupStorageExceeded(ApplicationError):
    status, code = 409, "backup_storage_exceeded"
    message = gettext_noop("This server's backups take all the storage its plan allows.")


class BackupLocked(ApplicationError):
    status, code = 409, "locked"
    message = gettext_noop("The backup is locked; unlock it first.")


# --- Storage ----------------------------------------------------------------------------------


def node_backup_storage_set(
    *,
    node: Node,
    kind: str,
    actor: Actor,
    endpoint: str = "",
    region: str = "",
    bucket: str = "",
    prefix: str = "",
    access_key_id: str = "",
    secret_access_key: str | None = None,
) -> Node:
    """Where the node's servers keep new backups: ``node`` (on the node) or ``s3`` (an
    S3-compatible store at ``endpoint``). The secret is kept encrypted and never shown again;
    ``None`` keeps the one already set. Existing backups stay where they are."""
    if kind not in BackupStorage.values:
        raise ValidationFailed.field("kind", "invalid_choice", _("kind is node or s3."))
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        node.backup_storage = kind
        if kind == BackupStorage.S3:
            if not endpoint.startswith(("http://", "https://")):
                raise ValidationFailed.field(
                    "endpoint", "invalid", _("The endpoint is an http:// or https:// address.")
                )
            for field, value in (("bucket", bucket), ("access_key_id", access_key_id)):
                if not value.strip():
                    raise ValidationFailed.field(
                        field, "required", _("%(field)s is required.") % {"field": field}
                    )
            if secret_access_key is None and not node.s3_secret_encrypted:
                raise ValidationFailed.field(
                    "secret_access_key", "required", _("secret_access_key is required.")
                )
            node.s3_endpoint = endpoint.rstrip("/")
            node.s3_region = region.strip() or "us-east-1"
            node.s3_bucket = bucket.strip()
            node.s3_prefix = prefix.strip()
            node.s3_access_key_id = access_key_id.strip()
            if secret_access_key is not None:
                node.s3_secret_encrypted = encrypt_secret(secret_access_key)
        previous = {"backup_storage": Node.objects.get(pk=node.pk).backup_storage}
        # Only these columns: the agent's hello writes others of the same row.
        node.save(update_fields=[*STORAGE_FIELDS])
        record_event(
            type="node.updated",
            account=None,
            object_type="node",
            obj=node_representation(node) | {"backup_storage": kind},
            previous_attributes=previous,
            actor=actor,
        )
    return node


def backup_storage(node: Node, kind: str) -> dict[str, Any]:
    """The ``storage`` object of an agent call (the agent keeps no storage settings)."""
    if kind == BackupStorage.NODE:
        return {"kind": "node"}
    if not node.s3_bucket or not node.s3_secret_encrypted:
        raise ServiceUnavailable(
            _("The node %(node)s has no S3 store set any more; ask support to set it again.")
            % {"node": node.name}
        )
    return {
        "kind": "s3",
        "endpoint": node.s3_endpoint,
        "region": node.s3_region,
        "bucket": node.s3_bucket,
        "prefix": node.s3_prefix,
        "access_key_id": node.s3_access_key_id,
        "secret_access_key": decrypt_secret(node.s3_secret_encrypted),
    }


def _s3_client(storage: dict[str, Any]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=storage["endpoint"],
        region_name=storage["region"],
        aws_access_key_id=storage["access_key_id"],
        aws_secret_access_key=storage["secret_access_key"],
        config=Config(
            s3={"addressing_style": "path"},
            signature_version="s3v4",
            connect_timeout=10,
            retries={"max_attempts": 2},
        ),
    )


# --- Limits and retention ---------------------------------------------------------------------


def backup_limits(instance: Instance) -> tuple[int, int]:
    """``(count, storage MB)`` the instance may keep: its plan's, or the settings' defaults
    when it has no plan (or a plan from before backups)."""
    plan = instance.plan or {}
    return (
        plan.get("backup_limit", settings.BACKUP_DEFAULT_LIMIT),
        plan.get("backup_storage_mb", settings.BACKUP_DEFAULT_STORAGE_MB),
    )


@dataclass(frozen=True)
class Retention:
    """How many to keep by each rule; None: the rule is not used."""

    keep_last: int | None = None
    daily: int | None = None
    weekly: int | None = None
    monthly: int | None = None

    @classmethod
    def of(cls, instance: Instance) -> "Retention":
        return cls(
            keep_last=instance.backup_keep_last,
            daily=instance.backup_daily,
            weekly=instance.backup_weekly,
            monthly=instance.backup_monthly,
        )

    @property
    def used(self) -> bool:
        return any(
            value is not None for value in (self.keep_last, self.daily, self.weekly, self.monthly)
        )

    def as_dict(self) -> dict[str, int | None]:
        return {
            "keep_last": self.keep_last,
            "daily": self.daily,
            "weekly": self.weekly,
            "monthly": self.monthly,
        }


def retention_keeps(backups: Iterable[tuple[str, datetime]], retention: Retention) -> set[str]:
    """The ids that retention keeps among completed backups ``(id, created_at)``.

    Grandfather-father-son, in UTC: the newest ``keep_last``; the newest of each of the last
    ``daily`` days, ``weekly`` ISO weeks and ``monthly`` months that have a backup (as restic's
    ``--keep-daily``: a pause in backups never makes the older ones go). A backup kept by any
    rule is kept. With no rule used everything is kept (only the plan's count rotates)."""
    ordered = sorted(backups, key=lambda pair: (pair[1], pair[0]), reverse=True)
    if not retention.used:
        return {backup_id for backup_id, _when in ordered}
    kept = {backup_id for backup_id, _when in ordered[: retention.keep_last or 0]}
    buckets = (
        (retention.daily, lambda moment: moment.date()),
        (retention.weekly, lambda moment: moment.isocalendar()[:2]),
        (retention.monthly, lambda moment: (moment.year, moment.month)),
    )
    for count, bucket_of in buckets:
        if not count:
            continue
        seen: set[Any] = set()
        for backup_id, created_at in ordered:
            bucket = bucket_of(created_at.astimezone(UTC))
            if bucket in seen:
                continue
            if len(seen) == count:
                break
            seen.add(bucket)
            kept.add(backup_id)
    return kept


def backups_of(instance: Instance) -> QuerySet[Backup]:
    """The instance's backups, newest first."""
    field = "server" if isinstance(instance, Server) else "bot"
    return Backup.objects.filter(**{field: instance}).order_by("-created_at", "-id")


def backups_used_bytes(instance: Instance) -> int:
    """Bytes the instance's completed backups take."""
    used = (
        backups_of(instance)
        .filter(status=BackupStatus.COMPLETED)
        .aggregate(total=Sum("size"))["total"]
    )
    return used or 0


def _rotatable(instance: Instance) -> list[Backup]:
    """Completed, unlocked backups retention does not keep, oldest first."""
    completed = list(backups_of(instance).filter(status=BackupStatus.COMPLETED))
    keeps = retention_keeps(
        [(backup.id, backup.created_at) for backup in completed], Retention.of(instance)
    )
    return sorted(
        (
            backup
            for backup in completed
            if not backup.locked
            and backup.restore_status != BackupStatus.RUNNING
            and (backup.id not in keeps or not Retention.of(instance).used)
        ),
        key=lambda backup: (backup.created_at, backup.id),
    )


def retention_set(*, instance: Instance, retention: Retention, actor: Actor) -> Instance:
    """Set the instance's retention rules (each a count from 1 to 1000, or None)."""
    for name, value in retention.as_dict().items():
        if value is not None and (isinstance(value, bool) or not 1 <= value <= 1000):
            raise ValidationFailed.field(
                name, "out_of_range", _("%(name)s is from 1 to 1000, or null.") % {"name": name}
            )
    with transaction.atomic():
        instance = instance_locked(instance)
        previous = Retention.of(instance).as_dict()
        instance.backup_keep_last = retention.keep_last
        instance.backup_daily = retention.daily
        instance.backup_weekly = retention.weekly
        instance.backup_monthly = retention.monthly
        instance.save(
            update_fields=[
                "backup_keep_last",
                "backup_daily",
                "backup_weekly",
                "backup_monthly",
                "updated_at",
            ]
        )
        if previous != retention.as_dict():
            record_event(
                type=f"{instance.kind}.updated",
                account=instance.account,
                object_type=instance.kind,
                obj=instance_representation(instance) | {"backup_retention": retention.as_dict()},
                previous_attributes={"backup_retention": previous},
                actor=actor,
                related_id=instance.pk,
            )
    return instance


# --- The agent ----------------------------------------------------------------------------


def _agent(
    instance: Instance, method: str, path: str, body: Any = None, *, field: str = "backup"
) -> Any:
    """One backup call to the instance's agent; its errors as the contract's."""
    node = instance_node(instance)
    try:
        status, answer, _headers = agent_request(
            node, method, f"servers/{instance.pk}/backups{path}", body=body
        )
    except DriverError as unreachable:
        raise ServiceUnavailable(str(unreachable)) from None
    if status < 400:
        return answer
    refusal = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(refusal, dict) and refusal.get("code") == "storage_unavailable":
        # The node's S3 store refused or did not answer: the store's sentence, not the node's.
        said = refusal.get("message") or _("The backup storage cannot be reached right now.")
        raise ServiceUnavailable(str(said)[:500])
    if isinstance(refusal, dict) and refusal.get("code") == "invalid_state":
        refused = refusal.get("message") or (
            _("The server cannot do that now.")
            if instance.kind == "server"
            else _("The bot cannot do that now.")
        )
        raise InvalidState(
            str(refused)[:500],
            details={"status": instance.status, "allowed_actions": []},
        )
    raise agent_error(instance, FileCall(method, "", field=field), status, answer)


def backup_progress(backup: Backup) -> dict[str, Any] | None:
    """What the agent says of a backup or restore it is working on (``operation``, ``bytes``,
    ``files``); None when it is not at it or cannot be asked now."""
    if backup.status != BackupStatus.RUNNING and backup.restore_status != BackupStatus.RUNNING:
        return None
    try:
        answer = _agent(backup.instance, "GET", f"/{backup.id}")
    except ApplicationError:
        return None
    if not isinstance(answer, dict):
        return None
    return {
        "operation": answer.get("operation"),
        "bytes": answer.get("bytes"),
        "files": answer.get("files"),
    }


def _record(backup: Backup, change: str, actor: Actor, previous: dict | None = None) -> None:
    instance = backup.instance
    record_event(
        type=f"backup.{change}",
        account=instance.account,
        object_type="backup",
        obj=backup_representation(backup),
        previous_attributes=previous,
        actor=actor,
        related_id=instance.pk,
    )


def _clean_ignore(ignore: Any) -> list[str]:
    if ignore is None:
        return []
    if isinstance(ignore, str):
        ignore = ignore.splitlines()
    if not isinstance(ignore, list) or len(ignore) > MAX_IGNORE_LINES:
        raise ValidationFailed.field(
            "ignore",
            "invalid",
            _("ignore is a list of at most %(max)s patterns.") % {"max": MAX_IGNORE_LINES},
        )
    lines = []
    for line in ignore:
        if not isinstance(line, str) or len(line) > MAX_IGNORE_LINE_CHARS or "\0" in line:
            raise ValidationFailed.field(
                "ignore",
                "invalid",
                _("Each pattern is one line of at most %(max)s characters.")
                % {"max": MAX_IGNORE_LINE_CHARS},
            )
        if line.strip():
            lines.append(line.strip("\r\n"))
    return lines


def _default_name() -> str:
    return timezone.now().astimezone(UTC).strftime("Backup %Y-%m-%d %H:%M:%S UTC")


def _backup_commands(instance: Instance) -> dict[str, list[str]] | None:
    if not isinstance(instance, Server):
        return None
    commands = instance.game.template.get("backup_commands") or {}
    if not commands.get("before") and not commands.get("after"):
        return None
    return {"before": list(commands.get("before", [])), "after": list(commands.get("after", []))}


# --- Create, restore, change, delete --------------------------------------------------------


def backup_create(
    *, instance: Instance, actor: Actor, name: str = "", ignore: Any = None
) -> Backup:
    """Back up now: room is made first (the oldest completed, unlocked backup that retention
    does not keep goes when the plan's count is reached; 409 ``backup_limit_reached`` if none
    can), 409 ``backup_storage_exceeded`` when the backups already take the plan's storage, 409
    ``conflict`` while another backup or a restore of it runs. The row is committed before the
    agent is asked (its report may come back at once); when the agent cannot take it, the
    backup fails with the reason and the error is raised."""
    patterns = _clean_ignore(ignore)
    name = (name or "").strip() or _default_name()
    if len(name) > 100:
        raise ValidationFailed.field("name", "max_length", _("A name has at most 100 characters."))
    node = instance_node(instance)
    if instance.status in (S.PROVISIONING, S.INSTALLING):
        raise InvalidState(
            _("A server is backed up once it is installed.")
            if instance.kind == "server"
            else _("A bot is backed up once it is installed."),
            details={"status": instance.status, "allowed_actions": []},
        )
    limit, storage_mb = backup_limits(instance)
    if limit == 0:
        raise BackupLimitReached(
            _("The plan of this server includes no backups.")
            if instance.kind == "server"
            else _("The plan of this bot includes no backups.")
        )
    kept = backups_of(instance).exclude(status=BackupStatus.FAILED)
    while kept.count() >= limit:
        victims = _rotatable(instance)
        if not victims:
            raise BackupLimitReached(
                (
                    _(
                        "This server keeps %(limit)s backups, as many as its plan allows, and "
                        "none can be rotated (locked, or kept by retention); delete or unlock one."
                    )
                    if instance.kind == "server"
                    else _(
                        "This bot keeps %(limit)s backups, as many as its plan allows, and "
                        "none can be rotated (locked, or kept by retention); delete or unlock one."
                    )
                )
                % {"limit": limit},
                details={"limit": limit},
            )
        backup_delete(backup=victims[0], actor=SYSTEM, rotated=True)
    with transaction.atomic():
        instance = instance_locked(instance)
        mine = backups_of(instance)
        if mine.filter(ACTIVE).exists():
            raise Conflict(
                _("A backup or restore of this server is already running.")
                if instance.kind == "server"
                else _("A backup or restore of this bot is already running.")
            )
        if mine.exclude(status=BackupStatus.FAILED).count() >= limit:
            raise BackupLimitReached(details={"limit": limit})
        used = backups_used_bytes(instance)
        if used >= storage_mb * MB:
            raise BackupStorageExceeded(
                (
                    _(
                        "This server's backups take %(used)s MB of the %(storage)s MB its plan "
                        "allows; delete one first."
                    )
                    if instance.kind == "server"
                    else _(
                        "This bot's backups take %(used)s MB of the %(storage)s MB its plan "
                        "allows; delete one first."
                    )
                )
                % {"used": f"{used // MB:,}", "storage": f"{storage_mb:,}"},
                details={"limit": storage_mb, "unit": "MB"},
            )
        backup = Backup.objects.create(
            account=instance.account,
            server=instance if isinstance(instance, Server) else None,
            bot=instance if isinstance(instance, Bot) else None,
            node=node,
            name=name,
            ignore=patterns,
            storage_kind=node.backup_storage,
            created_by_user=actor.user,
            created_by_key=actor.api_key,
        )
        _record(backup, "created", actor)
    body: dict[str, Any] = {
        "backup_id": backup.id,
        "storage": backup_storage(node, backup.storage_kind),
        "ignore": patterns,
    }
    if commands := _backup_commands(instance):
        body["commands"] = commands
    try:
        _agent(instance, "POST", "", body, field="ignore")
    except ApplicationError as error:
        _finish(backup, ok=False, error=error.message)
        raise
    return backup


def _finish(backup: Backup, *, ok: bool, error: str = "", report: dict | None = None) -> bool:
    """End a running backup as completed or failed (once); whether it changed."""
    with transaction.atomic():
        backup = Backup.objects.select_for_update().get(pk=backup.pk)
        if backup.status != BackupStatus.RUNNING:
            return False
        backup.status = BackupStatus.COMPLETED if ok else BackupStatus.FAILED
        backup.completed_at = timezone.now()
        if ok and report is not None:
            backup.size = report["size"]
            backup.checksum = report["checksum"]
            backup.files = report["files"]
        backup.error = "" if ok else (error or "The backup failed.")[:500]
        backup.save()
        _record(backup, "completed" if ok else "failed", SYSTEM)
    return True


def backup_restore(*, backup: Backup, truncate: bool, actor: Actor) -> Backup:
    """Restore a completed backup into its server's folder (``truncate``: the folder is
    emptied first). The agent stops the server if it runs, checks the checksum as it unpacks,
    and starts it again; 409 ``invalid_state`` unless it is stopped, running or install_failed, 409
    ``conflict`` while a backup or restore of it runs."""
    instance = backup.instance
    node = instance_node(instance)
    with transaction.atomic():
        instance = instance_locked(instance)
        backup = Backup.objects.select_for_update().get(pk=backup.pk)
        if backup.status != BackupStatus.COMPLETED:
            raise InvalidState(
                _("Only a completed backup can be restored; this one is %(status)s.")
                % {"status": backup.status},
                details={"status": backup.status, "allowed_actions": []},
            )
        if instance.status not in RESTORABLE:
            raise InvalidState(
                (
                    _(
                        "A server that is %(status)s cannot be restored; wait until it is stopped "
                        "or running."
                    )
                    if instance.kind == "server"
                    else _(
                        "A bot that is %(status)s cannot be restored; wait until it is stopped or "
                        "running."
                    )
                )
                % {"status": instance.status},
                details={"status": instance.status, "allowed_actions": []},
            )
        if backups_of(instance).filter(ACTIVE).exists():
            raise Conflict(
                _("A backup or restore of this server is already running.")
                if instance.kind == "server"
                else _("A backup or restore of this bot is already running.")
            )
        previous = backup_representation(backup)
        backup.restore_status = BackupStatus.RUNNING
        backup.restore_error = ""
        backup.restore_started_at = timezone.now()
        backup.save()
        _record(
            backup,
            "restore_started",
            actor,
            {"restore_status": previous["restore_status"]},
        )
    body = {
        "storage": backup_storage(node, backup.storage_kind),
        "checksum": backup.checksum,
        "truncate": bool(truncate),
    }
    try:
        _agent(instance, "POST", f"/{backup.id}/restore", body)
    except ApplicationError as error:
        _restore_finish(backup, ok=False, error=error.message)
        raise
    return backup


def _restore_finish(backup: Backup, *, ok: bool, error: str = "") -> bool:
    with transaction.atomic():
        backup = Backup.objects.select_for_update().get(pk=backup.pk)
        if backup.restore_status != BackupStatus.RUNNING:
            return False
        backup.restore_status = BackupStatus.COMPLETED if ok else BackupStatus.FAILED
        backup.restore_error = "" if ok else (error or "The restore failed.")[:500]
        if ok:
            backup.restored_at = timezone.now()
        backup.save()
        _record(backup, "restored" if ok else "restore_failed", SYSTEM)
    return True


def backup_update(
    *, backup: Backup, actor: Actor, locked: bool | None = None, name: str | None = None
) -> Backup:
    """Lock or unlock (a locked backup is never rotated nor deleted) and rename."""
    with transaction.atomic():
        backup = Backup.objects.select_for_update().get(pk=backup.pk)
        previous = backup_representation(backup)
        if locked is not None:
            backup.locked = locked
        if name is not None:
            name = name.strip()
            if not name or len(name) > 100:
                raise ValidationFailed.field("name", "invalid", _("A name of 1 to 100 characters."))
            backup.name = name
        changed = {
            key: previous[key]
            for key in ("locked", "name")
            if previous[key] != getattr(backup, key)
        }
        if changed:
            backup.save(update_fields=["locked", "name"])
            _record(backup, "updated", actor, changed)
    return backup


def backup_delete(*, backup: Backup, actor: Actor, rotated: bool = False) -> None:
    """Delete a backup: its archive first (the agent's ``DELETE``, which succeeds when it is
    already gone), then its row, with ``backup.deleted``. 409 ``locked`` while locked, 409
    ``conflict`` while it is being made or restored. A failed backup left nothing to delete."""
    if backup.locked:
        raise BackupLocked()
    if backup.status == BackupStatus.RUNNING or backup.restore_status == BackupStatus.RUNNING:
        raise Conflict(_("The backup is being made or restored; delete it when that has ended."))
    if backup.status == BackupStatus.COMPLETED:
        instance = backup.instance
        node = instance_node(instance)
        _agent(
            instance,
            "DELETE",
            f"/{backup.id}",
            {"storage": backup_storage(node, backup.storage_kind)},
        )
    with transaction.atomic():
        current = Backup.objects.select_for_update().filter(pk=backup.pk).first()
        if current is None:
            return
        backup = current
        if backup.locked:  # locked while the archive was being removed: it stays, archive gone
            raise BackupLocked()
        shown = backup_representation(backup)
        instance = backup.instance
        backup.delete()
        record_event(
            type="backup.deleted",
            account=instance.account,
            object_type="backup",
            obj=shown | {"deleted": True, "rotated": rotated},
            actor=actor,
            related_id=instance.pk,
        )


def retention_apply(instance: Instance) -> int:
    """Delete (through the agent) every completed, unlocked backup retention keeps by no rule;
    how many went. One that cannot be deleted now is tried again after the next backup."""
    if not Retention.of(instance).used:
        return 0
    deleted = 0
    for backup in _rotatable(instance):
        try:
            backup_delete(backup=backup, actor=SYSTEM, rotated=True)
        except ApplicationError as error:
            logger.warning("Retention could not delete %s: %s", backup.id, error.message)
        else:
            deleted += 1
    return deleted


@task
def retention_run(kind: str, instance_id: str) -> None:
    """Retention after a completed backup, away from the agent's own report."""
    model = Server if kind == "server" else Bot
    instance = model.objects.filter(pk=instance_id, deleted_at=None).first()
    if instance is not None:
        retention_apply(instance)


def backups_purge(instance: Instance) -> int:
    """The backups of a deleted server or bot go with it: its agent removed the node-stored
    archives with its folder, the S3 ones are deleted here (straight from the store, as the
    node may be gone too); how many rows went. One whose object cannot be deleted now stays,
    for the next housekeeping run."""
    purged = 0
    for backup in Backup.objects.filter(**{instance.kind: instance}).select_related("node"):
        if backup.storage_kind == BackupStorage.S3 and backup.status == BackupStatus.COMPLETED:
            try:
                storage = backup_storage(backup.node, BackupStorage.S3) if backup.node else None
                if storage is not None:
                    _s3_client(storage).delete_object(
                        Bucket=storage["bucket"],
                        Key=f"{storage['prefix']}{instance.pk}/{backup.id}.tar.gz",
                    )
            except (ApplicationError, BotoCoreError, ClientError) as error:
                logger.warning("The S3 archive of %s could not be deleted: %s", backup.id, error)
                continue
        backup.delete()
        purged += 1
    return purged


def backups_purge_left() -> int:
    """``backups_purge`` again for every deleted server or bot that still has backups (an S3
    store that did not answer then); from the housekeeping loop."""
    purged = 0
    for model, field in ((Server, "server"), (Bot, "bot")):
        gone = model.objects.exclude(deleted_at=None).filter(
            pk__in=Backup.objects.filter(**{f"{field}__isnull": False}).values(field)
        )
        for instance in gone:
            purged += backups_purge(instance)
    return purged


@task
def backups_purge_run(kind: str, instance_id: str) -> None:
    """``backups_purge`` once the instance's deletion committed."""
    model = Server if kind == "server" else Bot
    instance = model.objects.filter(pk=instance_id).exclude(deleted_at=None).first()
    if instance is not None:
        backups_purge(instance)


def backup_download_url(*, backup: Backup, user_id: Any) -> dict[str, Any]:
    """An address to download a completed backup for ``BACKUP_URL_SECONDS``: on the node, a
    signed token for its agent; in S3, a presigned ``GET`` of the object."""
    if backup.status != BackupStatus.COMPLETED:
        raise InvalidState(
            _("Only a completed backup can be downloaded; this one is %(status)s.")
            % {"status": backup.status},
            details={"status": backup.status, "allowed_actions": []},
        )
    instance = backup.instance
    node = instance_node(instance)
    seconds = settings.BACKUP_URL_SECONDS
    if backup.storage_kind == BackupStorage.S3:
        storage = backup_storage(node, backup.storage_kind)
        key = f"{storage['prefix']}{instance.pk}/{backup.id}.tar.gz"
        url = _s3_client(storage).generate_presigned_url(
            "get_object",
            Params={
                "Bucket": storage["bucket"],
                "Key": key,
                "ResponseContentDisposition": f'attachment; filename="{backup.id}.tar.gz"',
            },
            ExpiresIn=seconds,
        )
        expires = int(timezone.now().timestamp()) + seconds
    else:
        token, expires = backup_token(
            node_id=node.id, instance_id=instance.pk, user_id=user_id, backup_id=backup.id
        )
        url = (
            f"{node.agent_url}/api/servers/{instance.pk}/backups/{backup.id}/download?token={token}"
        )
    return {
        "url": url,
        "method": "GET",
        "expires_at": datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


# --- The agent's reports and upkeep -----------------------------------------------------------

BACKUP_EVENTS = ("backup_completed", "backup_failed", "backup_restored", "backup_restore_failed")


def backup_report_complete(event: dict[str, Any]) -> bool:
    """Whether a backup event has what its type needs (a completed one its size, checksum and
    member count)."""
    if not isinstance(event.get("backup_id"), str):
        return False
    if event["type"] != "backup_completed":
        return True
    return (
        all(
            isinstance(event.get(key), int) and not isinstance(event.get(key), bool)
            for key in ("size", "files")
        )
        and isinstance(event.get("checksum"), str)
        and event["checksum"].startswith("sha256:")
        and len(event["checksum"]) == 71
    )


def backup_event(*, instance: Instance, event: dict[str, Any]) -> bool:
    """Apply the agent's report on one of the instance's backups; whether it changed anything
    (a repeated report, or one about another instance's backup, changes nothing)."""
    backup = backups_of(instance).filter(pk=event["backup_id"]).first()
    if backup is None:
        return False
    reason = str(event.get("reason") or "").strip()[:400]
    kind = event["type"]
    if kind == "backup_completed":
        changed = _finish(backup, ok=True, report=event)
        if changed and Retention.of(instance).used:
            transaction.on_commit(lambda: retention_run.enqueue(instance.kind, instance.pk))
        return changed
    if kind == "backup_failed":
        return _finish(backup, ok=False, error=reason or "The backup failed.")
    return _restore_finish(
        backup, ok=kind == "backup_restored", error=reason or "The restore failed."
    )


def backups_fail_stale(*, now: datetime | None = None) -> int:
    """Fail backups and restores the agent has said nothing about for ``BACKUP_STALE_HOURS``
    (its node is gone: an agent that restarts reports its lost work itself); how many."""
    edge = (now or timezone.now()) - timedelta(hours=settings.BACKUP_STALE_HOURS)
    reason = (
        f"The node did not report on it for {settings.BACKUP_STALE_HOURS} hours; it is "
        "considered failed."
    )
    failed = 0
    for backup in Backup.objects.filter(status=BackupStatus.RUNNING, created_at__lt=edge):
        failed += _finish(backup, ok=False, error=reason)
    for backup in Backup.objects.filter(
        restore_status=BackupStatus.RUNNING, restore_started_at__lt=edge
    ):
        failed += _restore_finish(backup, ok=False, error=reason)
    return failed


def backup_of(instance: Instance, backup_id: str) -> Backup:
    """One of the instance's backups; 404 for any other id."""
    backup = backups_of(instance).filter(pk=backup_id).first()
    if backup is None:
        raise NotFound(_("No such backup."))
    return backup

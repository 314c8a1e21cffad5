"""What node agents report: hello (with the state to sync to) and process events (their usage
samples are analytics': ``analytics.services.ingest``).

A report about an instance that is not on the reporting node is ignored (counted as rejected),
so a node can never touch another node's servers.
"""

from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from accounts.actors import SYSTEM, Actor
from accounts.models import User
from hosting.errors import ValidationFailed
from servers.drivers.spec import desired_state, instance_spec
from servers.models import Bot, Instance, Node, NodeIsolation, Server
from servers.models import ServerStatus as S
from servers.services.actions import instance_crash, instance_responding
from servers.services.backups import BACKUP_EVENTS, backup_event, backup_report_complete
from servers.services.files import files_changed_record
from servers.services.nodes import node_seen
from servers.services.records import instance_locked, instance_status_set
from servers.signing import public_key_pem

MAX_EVENTS_PER_BATCH = 500
# Instances an agent is told about: everything it has been asked to create and not yet deleted.
SYNCED_STATUSES = [
    S.INSTALLING,
    S.INSTALL_FAILED,
    S.STOPPED,
    S.STARTING,
    S.RUNNING,
    S.STOPPING,
    S.SUSPENDED,
]


def _instances_of(node: Node, **filters: Any) -> list[Instance]:
    return [
        instance
        for model in (Server, Bot)
        for instance in model.objects.filter(node=node, deleted_at=None, **filters)
        .select_related("node", *(["game"] if model is Server else []))
        .order_by("id")
    ]


def agent_hello(
    *, node: Node, boot_id: Any, version: Any, limits: Any, isolation: Any = None
) -> dict[str, Any]:
    """Record the agent's start (or reconnect) and answer with the full state to sync to.

    ``isolation`` is how the agent keeps tenants apart (``NodeIsolation``); an agent older than
    the sandbox does not say, and the node's isolation is then unknown (blank)."""
    for name, value in (("boot_id", boot_id), ("version", version), ("limits", limits)):
        if not isinstance(value, str) or len(value) > 64:
            raise ValidationFailed.field(name, "invalid", f"{name} must be a short string.")
    if isolation is not None and isolation not in NodeIsolation.values:
        raise ValidationFailed.field(
            "isolation", "invalid_choice", f"isolation is one of {', '.join(NodeIsolation.values)}."
        )
    node_seen(node, boot_id=boot_id, version=version, limits=limits, isolation=isolation or "")
    return {
        "node_id": node.id,
        "console_public_key": public_key_pem(),
        "servers": [
            instance_spec(instance) | {"desired": desired_state(instance)}
            for instance in _instances_of(node, status__in=SYNCED_STATUSES)
        ],
    }


def live_instance_ids(node: Node, ids: set[str]) -> set[str]:
    """Which of ``ids`` are live servers and bots of ``node``: what it may report about."""
    found: set[str] = set()
    for model, prefix in ((Server, "srv_"), (Bot, "bot_")):
        wanted = [i for i in ids if i.startswith(prefix)]
        if wanted:
            found |= set(
                model.objects.filter(node=node, deleted_at=None, pk__in=wanted).values_list(
                    "pk", flat=True
                )
            )
    return found


def report_time(value: Any, where: str) -> datetime:
    """An agent's timestamp (ISO 8601 with its offset) in UTC, or a field error. Any year is a
    time (the schema's date-time); one whose offset would carry it past the calendar's edge is
    that edge. What a time is used for decides whether it is plausible (``usage_ingest``)."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValidationFailed.field(where, "invalid", "An ISO 8601 time with its UTC offset.")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        edge = datetime.min if moment.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)


EVENT_TYPES = (
    "crashed",
    "stopped",
    "running",
    "not_responding",
    "responding",
    "files_uploaded",
    *BACKUP_EVENTS,
)


def _complete(event: dict[str, Any]) -> bool:
    """Whether an event has what its type needs: an upload its path, size and user (one
    without is counted as rejected, not a reason to refuse the whole batch)."""
    if event["type"] in BACKUP_EVENTS:
        return backup_report_complete(event)
    if event["type"] != "files_uploaded":
        return True
    return (
        isinstance(event.get("path"), str)
        and isinstance(event.get("size"), int)
        and not isinstance(event.get("size"), bool)
        and isinstance(event.get("user"), str)
    )


def agent_events(*, node: Node, events: Any) -> tuple[int, int]:
    """Apply process events in order; returns ``(accepted, rejected)``.

    ``crashed``: a running instance stops with the reason and is restarted if it may
    (``instance_crash``). ``stopped``: it stopped without being asked (``stop`` typed in its
    console): it becomes ``stopped``, not restarted. ``running`` is taken note of only: a
    process the control plane does not expect to run is stopped by the next sync instead.
    ``not_responding`` / ``responding``: a running server stopped (or went back to) answering
    its game query while its process runs (``instance_responding``: an event, and the restart
    its ``restart_when_not_responding`` asks for). ``files_uploaded``: a file came in through a
    signed upload address (``path``, ``size``, ``user``, the signed-in person the address was
    made for): ``<kind>.files.uploaded``.
    ``backup_completed`` (``backup_id``, ``size``, ``checksum``, ``files``), ``backup_failed``,
    ``backup_restored``, ``backup_restore_failed`` (``backup_id``, ``reason``): how a backup or
    restore ended (``servers.services.backups.backup_event``; a repeat changes nothing).
    """
    if not isinstance(events, list) or not 0 < len(events) <= MAX_EVENTS_PER_BATCH:
        raise ValidationFailed.field(
            "events", "invalid", f"1 to {MAX_EVENTS_PER_BATCH} events in a batch."
        )
    for index, event in enumerate(events):
        where = f"events[{index}]"
        if (
            not isinstance(event, dict)
            or not isinstance(event.get("instance_id"), str)
            or event.get("type") not in EVENT_TYPES
            or not isinstance(event.get("reason", ""), str)
        ):
            raise ValidationFailed.field(
                where, "invalid", f"instance_id, type ({', '.join(EVENT_TYPES)}) and a reason."
            )
        report_time(event.get("at"), f"{where}.at")
    live = live_instance_ids(node, {event["instance_id"] for event in events})
    accepted = 0
    for event in events:
        if event["instance_id"] not in live or not _complete(event):
            continue
        accepted += 1
        model = Server if event["instance_id"].startswith("srv_") else Bot
        instance = model.objects.get(pk=event["instance_id"])
        reason = event.get("reason", "").strip()[:400] or "The process exited."
        if event["type"] == "crashed":
            instance_crash(instance=instance, reason=reason)
        elif event["type"] in ("not_responding", "responding"):
            instance_responding(
                instance=instance, responding=event["type"] == "responding", reason=reason
            )
        elif event["type"] in BACKUP_EVENTS:
            backup_event(instance=instance, event=event)
        elif event["type"] == "files_uploaded":
            uploader = User.objects.filter(
                pk=event["user"], memberships__account_id=instance.account_id
            ).first()
            files_changed_record(
                instance,
                "uploaded",
                [event["path"]],
                Actor(user=uploader) if uploader else SYSTEM,
                size=event["size"],
            )
        elif event["type"] == "stopped":
            with transaction.atomic():
                instance = instance_locked(instance)
                if instance.status == S.RUNNING:
                    instance_status_set(
                        instance, S.STOPPED, actor=SYSTEM, reason=f"Stopped: {reason}"
                    )
    return accepted, len(events) - accepted

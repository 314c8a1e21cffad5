"""What every lifecycle change shares: the row lock, the one status edge, its events."""

from typing import Any

from accounts.actors import SYSTEM, Actor
from events.services import record_event
from hosting.errors import NotFound
from servers import transitions
from servers.models import Action, Instance
from servers.representations import action_representation, instance_representation


def instance_event_record(
    instance: Instance, event: str, actor: Actor, previous: dict[str, Any] | None = None
) -> None:
    """Record ``<kind>.<event>`` with the instance as it is now."""
    record_event(
        type=f"{instance.kind}.{event}",
        account=instance.account,
        object_type=instance.kind,
        obj=instance_representation(instance),
        actor=actor,
        previous_attributes=previous,
    )


def action_event_record(action: Action, event: str, actor: Actor = SYSTEM) -> None:
    """Record ``action.<event>`` with the action as it is now."""
    record_event(
        type=f"action.{event}",
        account=action.account,
        object_type="action",
        obj=action_representation(action),
        actor=actor,
        related_id=action.target_id,
    )


def instance_status_set(
    instance: Instance, new: str, *, actor: Actor, reason: str | None = None
) -> None:
    """Move along one edge of the lifecycle table, with its one ``status_changed`` event."""
    old = instance.status
    if old == new:
        return
    if (old, new) not in transitions.EDGES:
        raise RuntimeError(f"{instance.kind} {instance.pk}: {old} → {new} is not in the table")
    instance.status = new
    fields = ["status", "updated_at"]
    if reason is not None:
        instance.status_reason = reason[:500]
        fields.append("status_reason")
    instance.save(update_fields=fields)
    instance_event_record(instance, "status_changed", actor, {"status": old})


def instance_locked[T: Instance](instance: T) -> T:
    """The instance re-read under a row lock; deleted ones are gone (404)."""
    fresh = type(instance)._default_manager.select_for_update().filter(pk=instance.pk).first()
    if fresh is None or fresh.deleted_at is not None:
        raise NotFound()
    return fresh

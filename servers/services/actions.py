"""Actions on servers and bots: accepted by requests, carried out by the worker.

A request checks the transitions table under the instance's row lock, sets the first status and
queues ``run_action``; the worker (``manage.py db_worker``) walks the steps, calling the driver
outside any transaction and re-checking under lock that its action is still in charge before
writing. Crashes reported by nodes and actions a dead worker left behind end here too.
"""

from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.tasks import TaskResultStatus, task
from django.utils import timezone
from django.utils.translation import gettext as _
from django_tasks_db.models import DBTaskResult

from accounts.actors import SYSTEM, Actor
from hosting.errors import ActionInProgress, Conflict, InvalidState
from servers import transitions
from servers.drivers import DriverError
from servers.drivers.routing import driver_for
from servers.models import ACTIVE_ACTION, Action, ActionStatus, Backup, BackupStatus, Instance
from servers.models import ServerStatus as S
from servers.services.backups import backups_purge_run
from servers.services.nodes import instance_release
from servers.services.records import (
    action_event_record,
    instance_event_record,
    instance_locked,
    instance_status_set,
)


@task
def run_action(action_id: str) -> None:
    """The worker's entry point for one action (queued by ``action_enqueue``)."""
    action_run(action_id=action_id)


def create_action_start(instance: Instance, actor: Actor) -> Action:
    """The create action of a new instance, queued with it (in its transaction)."""
    action = Action.objects.create(
        account=instance.account,
        type="create",
        **{instance.kind: instance},
        requested_by_user=actor.user,
        requested_by_key=actor.api_key,
    )
    action_enqueue(action)
    return action


def action_enqueue(action: Action) -> None:
    """Queue the worker's half of ``action``."""
    # The task row is written in this transaction: the action and its work commit together.
    action.task_id = str(run_action.enqueue(action.id).id)
    action.save(update_fields=["task_id"])


def _restoring(instance: Instance) -> bool:
    return Backup.objects.filter(
        restore_status=BackupStatus.RUNNING, **{instance.kind: instance}
    ).exists()


def _check_allowed(instance: Instance, action_type: str) -> None:
    spec = transitions.ACTIONS[action_type]
    if instance.status not in spec.allowed_from:
        allowed = transitions.allowed_actions(instance.status)
        values = {"action": action_type, "status": instance.status, "allowed": ", ".join(allowed)}
        if instance.kind == "server":
            # Translators: action, status and allowed are the API's codes (start, stopped…).
            message = (
                _("Cannot %(action)s a server that is %(status)s; allowed: %(allowed)s.")
                if allowed
                else _("Cannot %(action)s a server that is %(status)s.")
            )
        else:
            message = (
                _("Cannot %(action)s a bot that is %(status)s; allowed: %(allowed)s.")
                if allowed
                else _("Cannot %(action)s a bot that is %(status)s.")
            )
        raise InvalidState(
            message % values,
            details={"status": instance.status, "allowed_actions": allowed},
        )


@transaction.atomic
def action_request(*, instance: Instance, action_type: str, actor: Actor) -> Action:
    """Accept an action: check the table, set the first status at once, queue the rest.

    The instance row is locked for the whole check, so of two simultaneous requests exactly one
    is accepted; the database's one-active-action constraint backs this up.
    """
    instance = instance_locked(instance)
    _check_allowed(instance, action_type)
    if action_type in transitions.POWER_ACTIONS and _restoring(instance):
        # The agent stops and starts it around the restore (servers.services.backups).
        raise Conflict(
            _("A backup is being restored into this server; wait until it ends.")
            if instance.kind == "server"
            else _("A backup is being restored into this bot; wait until it ends.")
        )
    active = Action.objects.filter(ACTIVE_ACTION, **{instance.kind: instance})
    if action_type in transitions.PREEMPTING_ACTIONS:
        for cut_short in active.exclude(type=action_type):
            _finish(cut_short, ok=False, error=f"Interrupted by {action_type}.")
    elif current := active.first():
        raise ActionInProgress(
            # Translators: type and status are the API's codes (restart, pending…).
            _("The %(type)s action %(id)s is still %(status)s.")
            % {"type": current.type, "id": current.id, "status": current.status},
            details={"action_id": current.id},
        )
    try:
        with transaction.atomic():
            action = Action.objects.create(
                account=instance.account,
                type=action_type,
                **{instance.kind: instance},
                requested_by_user=actor.user,
                requested_by_key=actor.api_key,
            )
    except IntegrityError:
        current = active.first()
        raise ActionInProgress(details={"action_id": current.id if current else None}) from None
    spec = transitions.ACTIONS[action_type]
    instance_status_set(
        instance, spec.first_status, actor=actor, reason="" if action_type != "suspend" else None
    )
    if action_type == "suspend":
        instance_event_record(instance, "suspended", actor)
    elif action_type == "unsuspend":
        instance.suspended_reason = ""
        instance.save(update_fields=["suspended_reason", "updated_at"])
        instance_event_record(instance, "unsuspended", actor)
    if spec.steps:
        action_enqueue(action)
    else:
        _finish(action, ok=True)
    return action


def instance_suspend(*, instance: Instance, reason: str, actor: Actor) -> Action:
    """Suspend (staff and billing): the process is killed and nothing but unsuspend/delete works."""
    with transaction.atomic():
        locked = instance_locked(instance)
        locked.suspended_reason = reason.strip()[:500] or "Suspended by the hosting provider."
        locked.save(update_fields=["suspended_reason", "updated_at"])
        return action_request(instance=locked, action_type="suspend", actor=actor)


def _finish(action: Action, *, ok: bool, error: str = "", actor: Actor = SYSTEM) -> None:
    action.status = ActionStatus.SUCCEEDED if ok else ActionStatus.FAILED
    action.error = error[:500]
    action.completed_at = timezone.now()
    action.save(update_fields=["status", "error", "completed_at"])
    action_event_record(action, "succeeded" if ok else "failed", actor)


def _claim(action_id: str) -> Action | None:
    with transaction.atomic():
        action = Action.objects.select_for_update().filter(pk=action_id).first()
        if action is None or action.status != ActionStatus.PENDING:
            return None
        action.status = ActionStatus.RUNNING
        action.started_at = action.heartbeat_at = timezone.now()
        action.save(update_fields=["status", "started_at", "heartbeat_at"])
        return action


def _still_in_charge(action: Action) -> Action | None:
    """Under lock: the action, if nobody (kill, suspend, the sweeper) took over meanwhile."""
    fresh = Action.objects.select_for_update().get(pk=action.pk)
    return fresh if fresh.status == ActionStatus.RUNNING else None


def action_run(*, action_id: str) -> None:
    """The worker's half of an action: walk the steps of the table, one driver call at a time."""
    action = _claim(action_id)
    if action is None:
        return
    target = action.target
    driver = driver_for(target)
    steps = transitions.steps_for(
        action.type, start_on_install=getattr(target, "start_on_install", False)
    )
    for number, step in enumerate(steps, start=1):
        instance = type(target).objects.select_related("region", "account").get(pk=target.pk)
        try:
            result = getattr(driver, step.call)(instance)
        except DriverError as failure:
            with transaction.atomic():
                if (current := _still_in_charge(action)) is None:
                    return
                instance = type(target).objects.select_for_update().get(pk=target.pk)
                if step.on_failure is not None:
                    instance_status_set(
                        instance, step.on_failure, actor=SYSTEM, reason=str(failure)
                    )
                _finish(current, ok=False, error=str(failure))
            return
        with transaction.atomic():
            if (current := _still_in_charge(action)) is None:
                return
            instance = type(target).objects.select_for_update().get(pk=target.pk)
            if step.call == "create" and result:
                instance.address = result
                instance.save(update_fields=["address", "updated_at"])
            if step.on_success == transitions.GONE:
                instance.deleted_at = timezone.now()
                instance.save(update_fields=["deleted_at", "updated_at"])
                instance_release(instance)
                instance_event_record(instance, "deleted", SYSTEM)
                transaction.on_commit(
                    partial(backups_purge_run.enqueue, instance.kind, instance.pk)
                )
            elif step.on_success is not None:
                instance_status_set(instance, step.on_success, actor=SYSTEM, reason="")
            current.heartbeat_at = timezone.now()
            current.save(update_fields=["heartbeat_at"])
            if number == len(steps):
                # The last status and the end of the action commit together: whoever sees the
                # outcome (a crash report, the customer's next action) sees the action done.
                _finish(current, ok=True)


@transaction.atomic
def instance_crash(*, instance: Instance, reason: str) -> Action | None:
    """A node reports that a running process died: stop it, and restart it if it may.

    ``auto_restart`` restarts at most ``CRASH_LOOP_LIMIT`` times in ``CRASH_LOOP_WINDOW_SECONDS``;
    after that the instance stays stopped with the reason saying so. Returns the restart action.
    """
    instance = instance_locked(instance)
    if instance.status != S.RUNNING:
        return None
    instance_status_set(instance, S.STOPPED, actor=SYSTEM, reason=f"Crashed: {reason}"[:500])
    instance_event_record(instance, "crashed", SYSTEM)
    if not instance.auto_restart:
        return None
    since = timezone.now() - timedelta(seconds=transitions.CRASH_LOOP_WINDOW_SECONDS)
    recent_restarts = Action.objects.filter(
        **{instance.kind: instance},
        type="start",
        requested_by_user=None,
        requested_by_key=None,
        created_at__gte=since,
    ).count()
    if recent_restarts >= transitions.CRASH_LOOP_LIMIT:
        instance.status_reason = (
            f"Crashed: {reason} — not restarted: {recent_restarts} automatic restarts in the "
            "last 10 minutes (crash loop)."
        )[:500]
        instance.save(update_fields=["status_reason", "updated_at"])
        return None
    return action_request(instance=instance, action_type="start", actor=SYSTEM)


@transaction.atomic
def instance_responding(*, instance: Instance, responding: bool, reason: str) -> Action | None:
    """A node reports that a running server stopped answering its game query (or answers
    again) while its process runs (``agent/query.py``): ``<kind>.not_responding`` (or
    ``<kind>.responding``) is recorded. A server whose ``restart_when_not_responding`` is on is
    restarted then, as a crash would be (the same crash-loop limit); returns that action.
    """
    instance = instance_locked(instance)
    if instance.status != S.RUNNING:
        return None
    instance_event_record(instance, "responding" if responding else "not_responding", SYSTEM)
    if responding or not getattr(instance, "restart_when_not_responding", False):
        return None
    since = timezone.now() - timedelta(seconds=transitions.CRASH_LOOP_WINDOW_SECONDS)
    recent_restarts = Action.objects.filter(
        **{instance.kind: instance},
        type__in=("start", "restart"),
        requested_by_user=None,
        requested_by_key=None,
        created_at__gte=since,
    ).count()
    if recent_restarts >= transitions.CRASH_LOOP_LIMIT:
        instance.status_reason = (
            f"Not responding: {reason} — not restarted: {recent_restarts} automatic restarts "
            "in the last 10 minutes."
        )[:500]
        instance.save(update_fields=["status_reason", "updated_at"])
        return None
    try:
        return action_request(instance=instance, action_type="restart", actor=SYSTEM)
    except (ActionInProgress, InvalidState):
        return None  # someone's action is under way: it decides what the server does next


# A stale action leaves the instance where a failure of its current step would have.
_RESTING_STATUS: dict[str, str] = {
    S.PROVISIONING: S.INSTALL_FAILED,
    S.INSTALLING: S.INSTALL_FAILED,
    S.STARTING: S.STOPPED,
    S.STOPPING: S.STOPPED,
}


def actions_recover_stale(*, now: datetime | None = None) -> dict[str, int]:
    """Find actions a dead worker left behind and settle them (run this every minute).

    A running action whose heartbeat is older than ``STALE_ACTION_SECONDS`` is failed and its
    instance moved to a resting status, except deletions, which are resumed. A pending action
    that old whose task is no longer waiting in the queue (lost, or failed before it could claim
    the action) is queued again; one still waiting is left alone, so a backlog is not doubled.
    ``STALE_ACTION_SECONDS`` must be longer than the slowest single driver call, since the
    heartbeat is written between steps.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.STALE_ACTION_SECONDS)
    counts = {"failed": 0, "resumed": 0, "requeued": 0}
    # Listed before the deletions below are resumed (pending again, and queued there), so that
    # an old deletion is not queued twice.
    old_pending = list(Action.objects.filter(status=ActionStatus.PENDING, created_at__lt=cutoff))
    for action_id in Action.objects.filter(
        status=ActionStatus.RUNNING, heartbeat_at__lt=cutoff
    ).values_list("id", flat=True):
        with transaction.atomic():
            action = Action.objects.select_for_update().get(pk=action_id)
            heartbeat = action.heartbeat_at  # a running action's is set when it starts
            if action.status != ActionStatus.RUNNING or heartbeat is None or heartbeat >= cutoff:
                continue
            target = type(action.target).objects.select_for_update().get(pk=action.target_id)
            if action.type == "delete":
                action.status = ActionStatus.PENDING
                action.save(update_fields=["status"])
                action_enqueue(action)
                counts["resumed"] += 1
                continue
            resting = _RESTING_STATUS.get(target.status)
            if resting is not None and target.deleted_at is None:
                instance_status_set(
                    target, resting, actor=SYSTEM, reason="The worker stopped mid-action."
                )
            _finish(action, ok=False, error="The worker stopped while carrying out this action.")
            counts["failed"] += 1
    waiting = {
        str(task_id)
        for task_id in DBTaskResult.objects.filter(
            id__in=[action.task_id for action in old_pending if action.task_id],
            status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING],
        ).values_list("id", flat=True)
    }
    for action in old_pending:
        if action.task_id in waiting:
            continue
        with transaction.atomic():
            action_enqueue(action)
        counts["requeued"] += 1
    return counts

"""Write-side operations on game servers, Discord bots and their actions.

Every status change goes through ``_set_status``, which refuses anything outside
``servers.transitions.EDGES`` and records exactly one ``<kind>.status_changed`` event in the same
transaction. Requests run inside one transaction that locks the instance row; the worker's steps
call the driver outside any transaction and then re-check, under lock, that their action is still
the one in charge before writing.
"""

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from accounts.models import Account
from events.services import SYSTEM, Actor, changed_attributes, record_event
from hosting.errors import (
    ActionInProgress,
    InvalidState,
    NotFound,
    QuotaExceeded,
    ValidationFailed,
)
from hosting.secrets_box import encrypt_secret
from servers import transitions
from servers.api.serializers import ActionSerializer, BotSerializer, ServerDetailSerializer
from servers.drivers import DriverError, get_driver
from servers.models import (
    ACTIVE_ACTION,
    DISCORD_TOKEN,
    ENV_NAME,
    RESOURCE_LIMITS,
    Action,
    ActionStatus,
    Bot,
    BotRuntime,
    Game,
    Instance,
    Region,
    Server,
)
from servers.models import ServerStatus as S
from servers.tasks import run_action

# Changing these on a live process only takes effect after a restart.
NEEDS_RESTART = {"variables", "memory_mb", "cpu_percent", "disk_mb", "start_command", "environment",
                 "token", "runtime"}  # fmt: skip
DEFAULT_SERVER_RESOURCES = {"memory_mb": 2048, "cpu_percent": 100, "disk_mb": 10240}
DEFAULT_BOT_RESOURCES = {"memory_mb": 512, "cpu_percent": 50, "disk_mb": 2048}
_UNSET: Any = object()


def _field_error(name: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        message, details={"fields": [{"name": name, "code": code, "message": message}]}
    )


def representation(instance: Instance) -> dict:
    serializer = ServerDetailSerializer if isinstance(instance, Server) else BotSerializer
    return dict(serializer(instance).data)


def _record(instance: Instance, event: str, actor: Actor, previous: dict | None = None) -> None:
    record_event(
        type=f"{instance.kind}.{event}", account=instance.account, object_type=instance.kind,
        obj=representation(instance), actor=actor, previous_attributes=previous,
    )  # fmt: skip


def _record_action(action: Action, event: str, actor: Actor = SYSTEM) -> None:
    record_event(
        type=f"action.{event}", account=action.account, object_type="action",
        obj=dict(ActionSerializer(action).data), actor=actor, related_id=action.target_id,
    )  # fmt: skip


def _set_status(instance: Instance, new: str, *, actor: Actor, reason: str | None = None) -> None:
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
    _record(instance, "status_changed", actor, {"status": old})


def _locked(instance: Instance) -> Instance:
    """The instance re-read under a row lock; deleted ones are gone (404)."""
    fresh = type(instance).objects.select_for_update().filter(pk=instance.pk).first()
    if fresh is None or fresh.deleted_at is not None:
        raise NotFound()
    return fresh


# --- Validation ----------------------------------------------------------------------------


def validate_resources(values: dict[str, Any]) -> dict[str, int]:
    cleaned = {}
    for name, value in values.items():
        low, high = RESOURCE_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _field_error(
                f"resources.{name}",
                "out_of_range",
                f"{name} must be an integer from {low} to {high}.",
            )
        cleaned[name] = value
    return cleaned


def validate_variables(game: Game, values: dict[str, Any], *, current: dict | None = None) -> dict:
    """Check values against the game's definitions; returns every variable with defaults filled.

    ``current`` holds the server's present values when only some are being changed.
    """
    if not isinstance(values, dict):
        raise _field_error("variables", "invalid", "variables must be an object.")
    definitions = {definition["key"]: definition for definition in game.variables}
    errors = []

    def error(key: str, code: str, message: str) -> None:
        errors.append({"name": f"variables.{key}", "code": code, "message": message})

    for key in values:
        if key not in definitions:
            error(key, "unknown_variable", f"{game.name} has no variable {key}.")
    result = {}
    for key, definition in definitions.items():
        if key in values:
            value = values[key]
        elif current is not None and key in current:
            value = current[key]
        elif "default" in definition:
            value = definition["default"]
        else:
            if definition.get("required"):
                error(key, "required", f"{definition['name']} is required.")
            continue
        kind = definition["type"]
        if kind == "boolean" and not isinstance(value, bool):
            error(key, "invalid", f"{definition['name']} must be true or false.")
        elif kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            error(key, "invalid", f"{definition['name']} must be an integer.")
        elif kind == "integer" and not definition.get("min", value) <= value <= definition.get(
            "max", value
        ):
            low, high = definition.get("min"), definition.get("max")
            error(key, "out_of_range", f"{definition['name']} must be from {low} to {high}.")
        elif kind == "string" and not isinstance(value, str):
            error(key, "invalid", f"{definition['name']} must be a string.")
        elif kind == "string" and not (
            definition.get("min_length", 0) <= len(value) <= definition.get("max_length", 255)
        ):
            error(key, "invalid_length", f"{definition['name']} has the wrong length.")
        elif kind == "enum" and value not in definition["choices"]:
            choices = ", ".join(definition["choices"])
            error(key, "invalid_choice", f"{definition['name']} must be one of {choices}.")
        elif "must_be" in definition and value != definition["must_be"]:
            must_be = json.dumps(definition["must_be"])
            error(key, "must_accept", f"{definition['name']} must be {must_be}.")
        result[key] = value
    if errors:
        message = (
            errors[0]["message"] if len(errors) == 1 else f"{len(errors)} variables are invalid."
        )
        raise ValidationFailed(message, details={"fields": errors})
    return result


def _check_quota(
    account: Account, kind: type[Instance], *, memory_delta: int, adding: bool
) -> None:
    """Refuse what would take the account past its instance count or total memory."""
    account = Account.objects.select_for_update().get(pk=account.pk)  # serializes the counts
    if adding:
        limit = account.max_servers if kind is Server else account.max_bots
        if kind.objects.filter(account=account, deleted_at=None).count() >= limit:
            noun = "servers" if kind is Server else "bots"
            raise QuotaExceeded(
                f"The account may have {limit} {noun}; delete one or ask for a higher limit.",
                details={"limit": limit, "quota": noun},
            )
    if memory_delta > 0:
        used = sum(
            model.objects.filter(account=account, deleted_at=None).aggregate(
                total=Sum("memory_mb")
            )["total"]
            or 0
            for model in (Server, Bot)
        )
        if used + memory_delta > account.max_memory_mb:
            raise QuotaExceeded(
                f"This would use {used + memory_delta} MB of memory; the account may use "
                f"{account.max_memory_mb} MB.",
                details={"limit": account.max_memory_mb, "quota": "memory_mb", "used": used},
            )


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise _field_error("name", "required", "A name is required.")
    if len(name.strip()) > 100:
        raise _field_error("name", "max_length", "A name has at most 100 characters.")
    return name.strip()


def _region(slug: Any) -> Region:
    region = Region.objects.filter(slug=slug).first() if isinstance(slug, str) else None
    if region is None:
        raise _field_error("region", "invalid_choice", "Unknown region; choose one of the regions.")
    return region


def _clean_environment(environment: Any) -> dict[str, str]:
    if not isinstance(environment, dict) or len(environment) > 100:
        raise _field_error(
            "environment", "invalid", "environment must be an object of at most 100 variables."
        )
    for key, value in environment.items():
        if not ENV_NAME.fullmatch(key) or not isinstance(value, str) or len(value) > 4096:
            raise _field_error(
                f"environment.{key}", "invalid",
                "Names are letters, digits and _; values are strings of at most 4096 characters.",
            )  # fmt: skip
    return environment


def _clean_token(token: Any) -> str:
    if not isinstance(token, str) or not DISCORD_TOKEN.fullmatch(token):
        raise _field_error(
            "token", "invalid",
            "token must be the bot's Discord token (20 to 200 printable ASCII characters, no "
            "spaces).",
        )  # fmt: skip
    return token


# --- Creating and changing -----------------------------------------------------------------


def _start_create_action(instance: Instance, actor: Actor) -> Action:
    action = Action.objects.create(
        account=instance.account, type="create", **{instance.kind: instance},
        requested_by_user=actor.user, requested_by_key=actor.api_key,
    )  # fmt: skip
    _enqueue(action)
    return action


def _enqueue(action: Action) -> None:
    # The task row is written in this transaction: the action and its work commit together.
    action.task_id = str(run_action.enqueue(action.id).id)
    action.save(update_fields=["task_id"])


@transaction.atomic
def server_create(
    *,
    account: Account,
    name: Any,
    game: Any,
    region: Any,
    resources: dict[str, Any] | None = None,
    variables: dict[str, Any] | None = None,
    auto_restart: bool = True,
    start_on_install: bool = False,
    actor: Actor,
) -> Server:
    """Create a server in ``provisioning``; the worker provisions and installs it."""
    name = _clean_name(name)
    game_obj = Game.objects.filter(slug=game).first() if isinstance(game, str) else None
    if game_obj is None:
        raise _field_error("game", "invalid_choice", "Unknown game; choose one from the catalogue.")
    region_obj = _region(region)
    cleaned_resources = validate_resources(DEFAULT_SERVER_RESOURCES | (resources or {}))
    cleaned_variables = validate_variables(game_obj, variables or {})
    _check_quota(account, Server, memory_delta=cleaned_resources["memory_mb"], adding=True)
    server = Server.objects.create(
        account=account, name=name, game=game_obj, region=region_obj, variables=cleaned_variables,
        auto_restart=auto_restart, start_on_install=start_on_install, **cleaned_resources,
    )  # fmt: skip
    _record(server, "created", actor)
    _start_create_action(server, actor)
    return server


@transaction.atomic
def bot_create(
    *,
    account: Account,
    name: Any,
    region: Any,
    runtime: Any,
    start_command: Any,
    token: Any,
    environment: dict[str, Any] | None = None,
    resources: dict[str, Any] | None = None,
    auto_restart: bool = True,
    actor: Actor,
) -> Bot:
    """Create a bot in ``provisioning``; its Discord token is encrypted and never shown again."""
    name = _clean_name(name)
    region_obj = _region(region)
    if runtime not in BotRuntime.values:
        raise _field_error(
            "runtime", "invalid_choice", f"runtime must be one of {', '.join(BotRuntime.values)}."
        )
    if not isinstance(start_command, str) or not 0 < len(start_command.strip()) <= 500:
        raise _field_error("start_command", "required", "start_command is required (≤ 500).")
    token = _clean_token(token)
    cleaned_resources = validate_resources(DEFAULT_BOT_RESOURCES | (resources or {}))
    environment = _clean_environment(environment or {})
    _check_quota(account, Bot, memory_delta=cleaned_resources["memory_mb"], adding=True)
    bot = Bot.objects.create(
        account=account, name=name, region=region_obj, runtime=runtime,
        start_command=start_command.strip(), environment=environment,
        token_encrypted=encrypt_secret(token), token_last4=token[-4:], auto_restart=auto_restart,
        **cleaned_resources,
    )  # fmt: skip
    _record(bot, "created", actor)
    _start_create_action(bot, actor)
    return bot


@transaction.atomic
def instance_update(
    *, instance: Instance, actor: Actor, **changes: Any
) -> tuple[Instance, list[str]]:
    """Change a server's or bot's settings; returns it with the changed fields that need a restart.

    Servers take ``name``, ``variables``, ``resources``, ``auto_restart``; bots also
    ``start_command``, ``environment``, ``token`` and ``runtime``.
    """
    instance = _locked(instance)
    if instance.status == S.DELETING:
        raise InvalidState(
            f"A {instance.kind} being deleted cannot be changed.",
            details={"status": instance.status, "allowed_actions": []},
        )
    before = representation(instance)
    changed: list[str] = []
    if "name" in changes:
        instance.name = _clean_name(changes["name"])
    if "auto_restart" in changes:
        instance.auto_restart = bool(changes["auto_restart"])
    if "resources" in changes:
        resources = validate_resources(changes["resources"] or {})
        delta = resources.get("memory_mb", instance.memory_mb) - instance.memory_mb
        _check_quota(instance.account, type(instance), memory_delta=delta, adding=False)
        for field, value in resources.items():
            if getattr(instance, field) != value:
                setattr(instance, field, value)
                changed.append(field)
    if isinstance(instance, Server) and "variables" in changes:
        variables = validate_variables(
            instance.game, changes["variables"], current=instance.variables
        )
        if variables != instance.variables:
            instance.variables = variables
            changed.append("variables")
    if isinstance(instance, Bot):
        if "start_command" in changes:
            command = changes["start_command"]
            if not isinstance(command, str) or not 0 < len(command.strip()) <= 500:
                raise _field_error("start_command", "required", "start_command is required.")
            if command.strip() != instance.start_command:
                instance.start_command = command.strip()
                changed.append("start_command")
        if "environment" in changes:
            environment = _clean_environment(changes["environment"])
            if environment != instance.environment:
                instance.environment = environment
                changed.append("environment")
        if "runtime" in changes:
            if changes["runtime"] not in BotRuntime.values:
                raise _field_error("runtime", "invalid_choice", "Unknown runtime.")
            if changes["runtime"] != instance.runtime:
                instance.runtime = changes["runtime"]
                changed.append("runtime")
        if "token" in changes:
            token = _clean_token(changes["token"])
            instance.token_encrypted = encrypt_secret(token)
            instance.token_last4 = token[-4:]
            changed.append("token")
    instance.save()
    after = representation(instance)
    previous = changed_attributes(before, after)
    previous.pop("updated_at", None)
    if previous or "token" in changed:
        _record(instance, "updated", actor, previous)
    live = instance.status in {S.RUNNING, S.STARTING}
    return instance, [field for field in changed if live and field in NEEDS_RESTART]


# --- Actions -------------------------------------------------------------------------------


def _check_allowed(instance: Instance, action_type: str) -> None:
    spec = transitions.ACTIONS[action_type]
    if instance.status not in spec.allowed_from:
        allowed = transitions.allowed_actions(instance.status)
        raise InvalidState(
            f"Cannot {action_type} a {instance.kind} that is {instance.status}"
            + (f"; allowed: {', '.join(allowed)}." if allowed else "."),
            details={"status": instance.status, "allowed_actions": allowed},
        )


@transaction.atomic
def action_request(*, instance: Instance, action_type: str, actor: Actor) -> Action:
    """Accept an action: check the table, set the first status at once, queue the rest.

    The instance row is locked for the whole check, so of two simultaneous requests exactly one
    is accepted; the database's one-active-action constraint backs this up.
    """
    instance = _locked(instance)
    _check_allowed(instance, action_type)
    active = Action.objects.filter(ACTIVE_ACTION, **{instance.kind: instance})
    if action_type in transitions.PREEMPTING_ACTIONS:
        for cut_short in active.exclude(type=action_type):
            _finish(cut_short, ok=False, error=f"Interrupted by {action_type}.")
    elif current := active.first():
        raise ActionInProgress(
            f"The {current.type} action {current.id} is still {current.status}.",
            details={"action_id": current.id},
        )
    try:
        with transaction.atomic():
            action = Action.objects.create(
                account=instance.account, type=action_type, **{instance.kind: instance},
                requested_by_user=actor.user, requested_by_key=actor.api_key,
            )  # fmt: skip
    except IntegrityError:
        current = active.first()
        raise ActionInProgress(details={"action_id": current.id if current else None}) from None
    spec = transitions.ACTIONS[action_type]
    _set_status(
        instance, spec.first_status, actor=actor, reason="" if action_type != "suspend" else None
    )
    if action_type == "suspend":
        _record(instance, "suspended", actor)
    elif action_type == "unsuspend":
        instance.suspended_reason = ""
        instance.save(update_fields=["suspended_reason", "updated_at"])
        _record(instance, "unsuspended", actor)
    if spec.steps:
        _enqueue(action)
    else:
        _finish(action, ok=True)
    return action


def instance_suspend(*, instance: Instance, reason: str, actor: Actor) -> Action:
    """Suspend (staff and billing): the process is killed and nothing but unsuspend/delete works."""
    with transaction.atomic():
        locked = _locked(instance)
        locked.suspended_reason = reason.strip()[:500] or "Suspended by the hosting provider."
        locked.save(update_fields=["suspended_reason", "updated_at"])
        return action_request(instance=locked, action_type="suspend", actor=actor)


def _finish(action: Action, *, ok: bool, error: str = "", actor: Actor = SYSTEM) -> None:
    action.status = ActionStatus.SUCCEEDED if ok else ActionStatus.FAILED
    action.error = error[:500]
    action.completed_at = timezone.now()
    action.save(update_fields=["status", "error", "completed_at"])
    _record_action(action, "succeeded" if ok else "failed", actor)


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
    driver = get_driver()
    target = action.target
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
                    _set_status(instance, step.on_failure, actor=SYSTEM, reason=str(failure))
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
                _record(instance, "deleted", SYSTEM)
            elif step.on_success is not None:
                _set_status(instance, step.on_success, actor=SYSTEM, reason="")
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
    instance = _locked(instance)
    if instance.status != S.RUNNING:
        return None
    _set_status(instance, S.STOPPED, actor=SYSTEM, reason=f"Crashed: {reason}"[:500])
    _record(instance, "crashed", SYSTEM)
    if not instance.auto_restart:
        return None
    since = timezone.now() - timedelta(seconds=transitions.CRASH_LOOP_WINDOW_SECONDS)
    recent_restarts = Action.objects.filter(
        **{instance.kind: instance}, type="start", requested_by_user=None,
        requested_by_key=None, created_at__gte=since,
    ).count()  # fmt: skip
    if recent_restarts >= transitions.CRASH_LOOP_LIMIT:
        instance.status_reason = (
            f"Crashed: {reason} — not restarted: {recent_restarts} automatic restarts in the "
            "last 10 minutes (crash loop)."
        )[:500]
        instance.save(update_fields=["status_reason", "updated_at"])
        return None
    return action_request(instance=instance, action_type="start", actor=SYSTEM)


# A stale action leaves the instance where a failure of its current step would have.
_RESTING_STATUS = {
    S.PROVISIONING: S.INSTALL_FAILED,
    S.INSTALLING: S.INSTALL_FAILED,
    S.STARTING: S.STOPPED,
    S.STOPPING: S.STOPPED,
}


def actions_recover_stale(*, now=None) -> dict[str, int]:
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
            if action.status != ActionStatus.RUNNING or action.heartbeat_at >= cutoff:
                continue
            target = type(action.target).objects.select_for_update().get(pk=action.target_id)
            if action.type == "delete":
                action.status = ActionStatus.PENDING
                action.save(update_fields=["status"])
                _enqueue(action)
                counts["resumed"] += 1
                continue
            resting = _RESTING_STATUS.get(target.status)
            if resting is not None and target.deleted_at is None:
                _set_status(target, resting, actor=SYSTEM, reason="The worker stopped mid-action.")
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
            _enqueue(action)
        counts["requeued"] += 1
    return counts

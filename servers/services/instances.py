"""Creating and changing servers and bots (their actions are in ``actions``)."""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models.fields.files import FieldFile
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import Account
from events.services import changed_attributes
from hosting.changes import UNSET, Changes, Unset
from hosting.errors import InvalidState, PlanLimit, ValidationFailed
from hosting.secrets_box import encrypt_secret
from servers.models import Bot, BotRuntime, Game, Instance, Server
from servers.models import ServerStatus as S
from servers.representations import instance_representation
from servers.services.actions import create_action_start
from servers.services.nodes import instance_place, instance_resize_check
from servers.services.records import instance_event_record, instance_locked
from servers.services.validation import (
    DEFAULT_BOT_RESOURCES,
    DEFAULT_SERVER_RESOURCES,
    clean_environment,
    clean_name,
    clean_source,
    clean_token,
    quota_check,
    region_of,
    unbilled_check,
    validate_resources,
    validate_variables,
)

# Changing these on a live process only takes effect after a restart.
NEEDS_RESTART = {
    "variables",
    "memory_mb",
    "cpu_percent",
    "disk_mb",
    "start_command",
    "environment",
    "token",
    "runtime",
}


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
    restart_when_not_responding: bool = False,
    plan: dict[str, Any] | None = None,
    actor: Actor,
) -> Server:
    """Create a server in ``provisioning``; the worker provisions and installs it."""
    name = clean_name(name)
    game_obj = Game.objects.filter(slug=game).first() if isinstance(game, str) else None
    if game_obj is None:
        raise ValidationFailed.field(
            "game", "invalid_choice", _("Unknown game; choose one from the catalogue.")
        )
    region_obj = region_of(region)
    cleaned_resources = validate_resources(DEFAULT_SERVER_RESOURCES | (resources or {}))
    cleaned_variables = validate_variables(game_obj, variables or {})
    locked = quota_check(account, Server, memory_delta=cleaned_resources["memory_mb"], adding=True)
    if plan is None and billing_binds(actor):
        unbilled_check(locked, cleaned_resources, adding=True)
    server = Server.objects.create(
        account=account,
        name=name,
        game=game_obj,
        region=region_obj,
        variables=cleaned_variables,
        auto_restart=auto_restart,
        start_on_install=start_on_install,
        restart_when_not_responding=restart_when_not_responding,
        plan=plan,
        **cleaned_resources,
    )
    instance_place(server, preferred_port=game_obj.default_port)
    instance_event_record(server, "created", actor)
    create_action_start(server, actor)
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
    source: dict[str, Any] | None = None,
    archive: tuple[str, bytes] | None = None,
    plan: dict[str, Any] | None = None,
    actor: Actor,
) -> Bot:
    """Create a bot in ``provisioning``; its Discord token is encrypted and never shown again."""
    name = clean_name(name)
    region_obj = region_of(region)
    if runtime not in BotRuntime.values:
        raise ValidationFailed.field(
            "runtime",
            "invalid_choice",
            _("runtime must be one of %(runtimes)s.") % {"runtimes": ", ".join(BotRuntime.values)},
        )
    if not isinstance(start_command, str) or not 0 < len(start_command.strip()) <= 500:
        raise ValidationFailed.field(
            "start_command", "required", _("start_command is required (≤ 500).")
        )
    token = clean_token(token)
    cleaned_resources = validate_resources(DEFAULT_BOT_RESOURCES | (resources or {}))
    environment = clean_environment(environment or {})
    source = clean_source(source)
    locked = quota_check(account, Bot, memory_delta=cleaned_resources["memory_mb"], adding=True)
    if plan is None and billing_binds(actor):
        unbilled_check(locked, cleaned_resources, adding=True)
    bot = Bot.objects.create(
        account=account,
        name=name,
        region=region_obj,
        runtime=runtime,
        start_command=start_command.strip(),
        environment=environment,
        token_encrypted=encrypt_secret(token),
        token_last4=token[-4:],
        auto_restart=auto_restart,
        source_type=source.get("type", ""),
        source_url=source.get("url", ""),
        source_ref=source.get("ref", ""),
        plan=plan,
        **cleaned_resources,
    )
    instance_place(bot)
    instance_event_record(bot, "created", actor)
    if archive is not None:  # ``(filename, content)``: its code, uploaded with it
        bot = bot_source_upload(bot=bot, filename=archive[0], content=archive[1], actor=actor)
    create_action_start(bot, actor)
    return bot


PLAN_BOUND = ("memory_mb", "cpu_percent", "disk_mb")


def billing_binds(actor: Actor) -> bool:
    """Plans and the unbilled allowance bind customers (people and their API keys); staff and
    the system (billing applying a plan, the worker) are not bound."""
    if actor.user is not None:
        return not actor.user.is_staff
    return actor.api_key is not None


def plan_check(instance: Instance, resources: dict[str, int], actor: Actor) -> None:
    """A customer sets a plan-bound instance's resources up to its plan, not beyond: more comes
    with a bigger plan (a plan change, prorated); a plan-less one's within the account's
    unbilled allowance."""
    plan = instance.plan
    if not billing_binds(actor):
        return
    if not plan:
        unbilled_check(instance.account, resources, adding=False, instance=instance)
        return
    for field in PLAN_BOUND:
        limit = plan.get(field)
        if limit is not None and resources.get(field, getattr(instance, field)) > limit:
            raise PlanLimit(
                # Translators: field is the API's name of a resource (memory_mb, disk_mb…).
                _(
                    "Its plan (%(product)s) gives at most %(limit)s for %(field)s: change the "
                    "plan for more."
                )
                % {"product": plan.get("product", _("the plan")), "limit": limit, "field": field},
                details={"limit": limit, "field": field, "subscription": plan.get("subscription")},
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceChanges(Changes):
    """What one edit of a server or bot sets, as its readers (the API's update serializers, the
    dashboard's edit forms, billing's plan change) have already checked it: a name trimmed and
    of 1 to 100 characters, a start command trimmed and of 1 to 500, a runtime of
    ``BotRuntime``. What needs the instance, the game, the account or the settings to decide
    (resource limits and quotas, the game's variables, environment names, the token's shape,
    where code may come from) is checked by ``instance_update``.

    Servers take ``name``, ``variables``, ``resources``, ``auto_restart``,
    ``restart_when_not_responding``; bots also
    ``start_command``, ``environment``, ``token``, ``runtime``, ``source`` (None removes it)
    and ``archive`` (``(filename, content)`` of uploaded code; both taken at the next
    reinstall). ``plan`` is billing's own, with a plan change: the new bounds.
    """

    name: str | Unset = UNSET
    auto_restart: bool | Unset = UNSET
    restart_when_not_responding: bool | Unset = UNSET
    plan: dict[str, Any] | Unset | None = UNSET
    resources: dict[str, int] | Unset = UNSET
    variables: dict[str, Any] | Unset = UNSET
    start_command: str | Unset = UNSET
    environment: dict[str, str] | Unset = UNSET
    runtime: str | Unset = UNSET
    source: dict[str, str] | Unset | None = UNSET
    token: str | Unset = UNSET
    archive: tuple[str, bytes] | Unset = UNSET


@transaction.atomic
def instance_update(
    *, instance: Instance, changes: InstanceChanges, actor: Actor
) -> tuple[Instance, list[str]]:
    """Change a server's or bot's settings; returns it with the changed fields that need a
    restart."""
    instance = instance_locked(instance)
    if instance.status == S.DELETING:
        raise InvalidState(
            _("A server being deleted cannot be changed.")
            if instance.kind == "server"
            else _("A bot being deleted cannot be changed."),
            details={"status": instance.status, "allowed_actions": []},
        )
    before = instance_representation(instance)
    if not isinstance(changes.name, Unset):
        instance.name = changes.name
    if not isinstance(changes.auto_restart, Unset):
        instance.auto_restart = changes.auto_restart
    if not isinstance(changes.plan, Unset):
        instance.plan = changes.plan
    changed = _resources_set(instance, changes, actor)
    if isinstance(instance, Server):
        changed += _server_settings_set(instance, changes)
    if isinstance(instance, Bot):
        changed += _bot_settings_set(instance, changes)
    instance.save()
    after = instance_representation(instance)
    previous = changed_attributes(before, after)
    previous.pop("updated_at", None)
    if previous or "token" in changed:
        instance_event_record(instance, "updated", actor, previous)
    if isinstance(instance, Bot) and not isinstance(changes.archive, Unset):
        filename, content = changes.archive
        instance = bot_source_upload(bot=instance, filename=filename, content=content, actor=actor)
    live = instance.status in {S.RUNNING, S.STARTING}
    return instance, [field for field in changed if live and field in NEEDS_RESTART]


def _resources_set(instance: Instance, changes: InstanceChanges, actor: Actor) -> list[str]:
    """The resources asked for, within their limits, the account's quota, the plan and the
    node's room; returns the ones that changed."""
    if isinstance(changes.resources, Unset):
        return []
    resources = validate_resources(changes.resources)
    delta = resources.get("memory_mb", instance.memory_mb) - instance.memory_mb
    instance.account = quota_check(
        instance.account, type(instance), memory_delta=delta, adding=False
    )
    plan_check(instance, resources, actor)
    instance_resize_check(
        instance,
        memory_mb=resources.get("memory_mb", instance.memory_mb),
        disk_mb=resources.get("disk_mb", instance.disk_mb),
    )
    changed = []
    for field, value in resources.items():
        if getattr(instance, field) != value:
            setattr(instance, field, value)
            changed.append(field)
    return changed


def _server_settings_set(server: Server, changes: InstanceChanges) -> list[str]:
    """The game's variables, the given ones over the present ones; ``["variables"]`` if they
    changed (the crash policy for not responding needs no restart)."""
    if not isinstance(changes.restart_when_not_responding, Unset):
        server.restart_when_not_responding = changes.restart_when_not_responding
    if isinstance(changes.variables, Unset):
        return []
    variables = validate_variables(server.game, changes.variables, current=server.variables)
    if variables == server.variables:
        return []
    server.variables = variables
    return ["variables"]


def _bot_settings_set(bot: Bot, changes: InstanceChanges) -> list[str]:
    """A bot's own settings; returns the ones that changed (a new token always does)."""
    changed = []
    if not isinstance(changes.start_command, Unset) and changes.start_command != bot.start_command:
        bot.start_command = changes.start_command
        changed.append("start_command")
    if not isinstance(changes.environment, Unset):
        environment = clean_environment(changes.environment)
        if environment != bot.environment:
            bot.environment = environment
            changed.append("environment")
    if not isinstance(changes.runtime, Unset) and changes.runtime != bot.runtime:
        bot.runtime = changes.runtime
        changed.append("runtime")
    if not isinstance(changes.source, Unset) and _source_set(bot, clean_source(changes.source)):
        changed.append("source")
    if not isinstance(changes.token, Unset):
        token = clean_token(changes.token)
        bot.token_encrypted = encrypt_secret(token)
        bot.token_last4 = token[-4:]
        changed.append("token")
    return changed


def _source_set(bot: Bot, source: dict[str, str]) -> bool:
    """Point the bot at another code source (an uploaded archive it replaces goes once this
    holds); whether it changed."""
    current = (bot.source_type, bot.source_url, bot.source_ref)
    wanted = (source.get("type", ""), source.get("url", ""), source.get("ref", ""))
    if wanted == current:
        return False
    if bot.source_type == "upload":
        _remove_file_after_commit(bot.source_archive)
        bot.source_archive = ""
    bot.source_type, bot.source_url, bot.source_ref = wanted
    return True


ARCHIVE_MAGIC = (b"PK\x03\x04", b"\x1f\x8b")  # zip, gzip (a .tar.gz)


def _remove_file_after_commit(file: FieldFile) -> None:
    """Files are not transactional: an old archive goes once the change that replaced it holds."""
    if file.name:
        name, storage = file.name, file.storage
        transaction.on_commit(lambda: storage.delete(name))


def bot_source_upload(*, bot: Bot, filename: str, content: bytes, actor: Actor) -> Bot:
    """Keep an uploaded .tar.gz or .zip as the bot's code; its node fetches it at the next
    (re)install. Refused: another kind of file, or more than ``BOT_ARCHIVE_MAX_BYTES``."""
    if len(content) > settings.BOT_ARCHIVE_MAX_BYTES:
        raise ValidationFailed.field(
            "file",
            "too_large",
            _("The archive is larger than %(size)s MB.")
            % {"size": settings.BOT_ARCHIVE_MAX_BYTES // 2**20},
        )
    if not filename.lower().endswith((".tar.gz", ".tgz", ".zip")) or not content.startswith(
        ARCHIVE_MAGIC
    ):
        raise ValidationFailed.field(
            "file", "invalid", _("Upload the code as a .tar.gz, .tgz or .zip archive.")
        )
    saved_name = default_storage.save(
        f"bot-sources/{bot.pk}/{timezone.now():%Y%m%d%H%M%S}{_suffix(filename)}",
        ContentFile(content),
    )
    try:
        with transaction.atomic():
            bot = instance_locked(bot)
            if bot.status == S.DELETING:
                raise InvalidState(
                    _("A bot being deleted cannot be changed."),
                    details={"status": bot.status, "allowed_actions": []},
                )
            before = instance_representation(bot)
            _remove_file_after_commit(bot.source_archive)
            bot.source_type, bot.source_url, bot.source_ref = "upload", "", ""
            bot.source_archive.name = saved_name
            bot.save()
            instance_event_record(
                bot, "updated", actor, changed_attributes(before, instance_representation(bot))
            )
    except BaseException:
        default_storage.delete(saved_name)
        raise
    return bot


def _suffix(filename: str) -> str:
    lower = filename.lower()
    return ".tar.gz" if lower.endswith(".tar.gz") else lower[lower.rfind(".") :]

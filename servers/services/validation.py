"""The checks every server and bot setting goes through, and the account's quotas."""

import json
import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Sum
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import Account
from accounts.services import account_locked
from hosting.errors import PlanRequired, QuotaExceeded, ValidationFailed
from servers.models import (
    DISCORD_TOKEN,
    ENV_NAME,
    RESOURCE_LIMITS,
    Bot,
    Game,
    Instance,
    Region,
    Server,
)
from servers.selectors import unbilled_used

DEFAULT_SERVER_RESOURCES = {"memory_mb": 2048, "cpu_percent": 100, "disk_mb": 10240}
DEFAULT_BOT_RESOURCES = {"memory_mb": 512, "cpu_percent": 50, "disk_mb": 2048}


def validate_resources(values: dict[str, Any]) -> dict[str, int]:
    """Each given resource within ``RESOURCE_LIMITS`` (field ``resources.<name>``)."""
    cleaned = {}
    for name, value in values.items():
        low, high = RESOURCE_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValidationFailed.field(
                f"resources.{name}",
                "out_of_range",
                _("%(name)s must be an integer from %(low)s to %(high)s.")
                % {"name": name, "low": low, "high": high},
            )
        cleaned[name] = value
    return cleaned


def variable_open(definition: dict[str, Any]) -> bool:
    """May customers see and change this variable of a game? (An egg's ``user_viewable`` /
    ``user_editable``: a variable they cannot see they cannot change either.)"""
    return definition.get("visible", True) and definition.get("editable", True)


def validate_variables(game: Game, values: dict[str, Any], *, current: dict | None = None) -> dict:
    """Check values against the game's definitions; returns every variable with defaults filled.

    ``current`` holds the server's present values when only some are being changed.
    """
    if not isinstance(values, dict):
        raise ValidationFailed.field("variables", "invalid", _("variables must be an object."))
    definitions = {definition["key"]: definition for definition in game.variables}
    errors = []

    def error(key: str, code: str, message: str) -> None:
        errors.append({"name": f"variables.{key}", "code": code, "message": message})

    for key in values:
        if key not in definitions:
            error(
                key,
                "unknown_variable",
                _("%(game)s has no variable %(key)s.") % {"game": game.name, "key": key},
            )
    result = {}
    for key, definition in definitions.items():
        named = {"name": definition["name"]}
        if key in values and not variable_open(definition):
            settled = (current or {}).get(key, definition.get("default"))
            if values[key] != settled:
                error(key, "variable_locked", _("%(name)s is set by the host.") % named)
                continue
        if key in values:
            value = values[key]
        elif current is not None and key in current:
            value = current[key]
        elif "default" in definition:
            value = definition["default"]
        else:
            if definition.get("required"):
                error(key, "required", _("%(name)s is required.") % named)
            continue
        kind = definition["type"]
        if kind == "boolean" and not isinstance(value, bool):
            error(key, "invalid", _("%(name)s must be true or false.") % named)
        elif kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            error(key, "invalid", _("%(name)s must be an integer.") % named)
        elif kind == "integer" and not definition.get("min", value) <= value <= definition.get(
            "max", value
        ):
            low, high = definition.get("min"), definition.get("max")
            error(
                key,
                "out_of_range",
                _("%(name)s must be from %(low)s to %(high)s.")
                % {**named, "low": low, "high": high},
            )
        elif kind == "string" and not isinstance(value, str):
            error(key, "invalid", _("%(name)s must be a string.") % named)
        elif kind == "string" and not (
            definition.get("min_length", 0) <= len(value) <= definition.get("max_length", 255)
        ):
            error(key, "invalid_length", _("%(name)s has the wrong length.") % named)
        elif (
            kind == "string"
            and value
            and "pattern" in definition
            and not re.search(definition["pattern"], value)
        ):
            error(key, "invalid_format", _("%(name)s does not have the form it needs.") % named)
        elif kind == "enum" and value not in definition["choices"]:
            choices = ", ".join(definition["choices"])
            error(
                key,
                "invalid_choice",
                _("%(name)s must be one of %(choices)s.") % {**named, "choices": choices},
            )
        elif "must_be" in definition and value != definition["must_be"]:
            must_be = json.dumps(definition["must_be"])
            error(
                key, "must_accept", _("%(name)s must be %(value)s.") % {**named, "value": must_be}
            )
        result[key] = value
    if errors:
        message = (
            errors[0]["message"]
            if len(errors) == 1
            else ngettext(
                "%(count)s variable is invalid.", "%(count)s variables are invalid.", len(errors)
            )
            % {"count": len(errors)}
        )
        raise ValidationFailed(message, details={"fields": errors})
    return result


def quota_check(
    account: Account, kind: type[Instance], *, memory_delta: int, adding: bool
) -> Account:
    """Refuse what would take the account past its instance count or total memory; returns the
    account, locked (which serializes the counts of concurrent creations)."""
    account = account_locked(account.pk)
    if adding:
        limit = account.max_servers if kind is Server else account.max_bots
        if kind._default_manager.filter(account=account, deleted_at=None).count() >= limit:
            noun = "servers" if kind is Server else "bots"
            raise QuotaExceeded(
                (
                    _(
                        "The account may have %(limit)s servers; delete one or ask for a higher "
                        "limit."
                    )
                    if kind is Server
                    else _(
                        "The account may have %(limit)s bots; delete one or ask for a higher limit."
                    )
                )
                % {"limit": limit},
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
                _("This would use %(wanted)s MB of memory; the account may use %(limit)s MB.")
                % {"wanted": used + memory_delta, "limit": account.max_memory_mb},
                details={"limit": account.max_memory_mb, "quota": "memory_mb", "used": used},
            )
    return account


UNBILLED = ("memory_mb", "cpu_percent", "disk_mb")


def unbilled_check(
    account: Account, resources: dict[str, int], *, adding: bool, instance: Instance | None = None
) -> None:
    """Refuse a plan-less server or bot (or more resources for one) beyond the account's
    unbilled allowance: servers and bots together, and their resources together. Call it with
    the account's row locked (``quota_check``), so that two creations cannot both fit."""
    order = _(
        "Order a plan for it (POST /v1/subscriptions) or ask your host for a larger allowance."
    )
    if adding:
        count = unbilled_used(account)
        if count + 1 > account.unbilled_instances:
            raise PlanRequired(
                # Translators: "order" is the sentence "Order a plan for it …".
                _(
                    "The account may run %(limit)s servers and bots without a plan and runs "
                    "%(count)s. %(order)s"
                )
                % {"limit": account.unbilled_instances, "count": count, "order": order},
                details={
                    "allowance": "instances",
                    "limit": account.unbilled_instances,
                    "used": count,
                },
            )
    for field in UNBILLED:
        wanted = resources.get(field, getattr(instance, field, 0))
        delta = wanted - (getattr(instance, field) if instance is not None else 0)
        if delta <= 0:
            continue
        used = unbilled_used(account, field)
        limit = getattr(account, f"unbilled_{field}")
        if used + delta > limit:
            raise PlanRequired(
                _(
                    "Without a plan the account may use %(limit)s for %(field)s in all and uses "
                    "%(used)s; this needs %(delta)s more. %(order)s"
                )
                % {"limit": limit, "field": field, "used": used, "delta": delta, "order": order},
                details={"allowance": field, "limit": limit, "used": used},
            )


def clean_name(name: Any) -> str:
    """A name, trimmed: required, at most 100 characters."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed.field("name", "required", _("A name is required."))
    if len(name.strip()) > 100:
        raise ValidationFailed.field("name", "max_length", _("A name has at most 100 characters."))
    return name.strip()


def region_of(slug: Any) -> Region:
    """The region of that slug, or a field error."""
    region = Region.objects.filter(slug=slug).first() if isinstance(slug, str) else None
    if region is None:
        raise ValidationFailed.field(
            "region", "invalid_choice", _("Unknown region; choose one of the regions.")
        )
    return region


def clean_environment(environment: Any) -> dict[str, str]:
    """A bot's environment: at most 100 variables with valid names and string values."""
    if not isinstance(environment, dict) or len(environment) > 100:
        raise ValidationFailed.field(
            "environment",
            "invalid",
            _("environment must be an object of at most 100 variables."),
        )
    for key, value in environment.items():
        if not ENV_NAME.fullmatch(key) or not isinstance(value, str) or len(value) > 4096:
            raise ValidationFailed.field(
                f"environment.{key}",
                "invalid",
                _(
                    "Names are letters, digits and _; values are strings of at most 4096 "
                    "characters."
                ),
            )
    return environment


def clean_token(token: Any) -> str:
    """A Discord bot token as Discord issues them."""
    if not isinstance(token, str) or not DISCORD_TOKEN.fullmatch(token):
        raise ValidationFailed.field(
            "token",
            "invalid",
            _(
                "token must be the bot's Discord token (20 to 200 printable ASCII characters, no "
                "spaces)."
            ),
        )
    return token


GIT_REF = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._/-]{0,99}$")  # never an option ("-…")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


def clean_source(source: Any) -> dict[str, str]:
    """Where a bot's code comes from: ``{"type": "git", "url", "ref"?}`` or ``{"type":
    "archive", "url"}`` (a .tar.gz or .zip), from the schemes and hosts that
    ``BOT_SOURCE_SCHEMES`` and ``BOT_SOURCE_HOSTS`` allow; ``{}`` for none."""
    if source is None:
        return {}
    if not isinstance(source, dict) or source.get("type") not in {"git", "archive"}:
        raise ValidationFailed.field(
            "source.type", "invalid_choice", _("source.type must be git or archive.")
        )
    unknown = set(source) - {"type", "url", "ref"}
    if unknown:
        raise ValidationFailed.field(
            f"source.{sorted(unknown)[0]}", "unknown_field", _("This field is not accepted here.")
        )
    url = source.get("url")
    parts = urlsplit(url) if isinstance(url, str) and len(url) <= 500 else None
    hosts = settings.BOT_SOURCE_HOSTS
    if parts is None or parts.scheme not in settings.BOT_SOURCE_SCHEMES:
        raise ValidationFailed.field(
            "source.url",
            "not_allowed",
            _("source.url must be a URL of %(schemes)s.")
            % {"schemes": " or ".join(settings.BOT_SOURCE_SCHEMES)},
        )
    if parts.scheme != "file" and (
        not parts.hostname or ("*" not in hosts and parts.hostname not in hosts)
    ):
        raise ValidationFailed.field(
            "source.url",
            "not_allowed",
            _("Code may come from these hosts only: %(hosts)s.") % {"hosts": ", ".join(hosts)},
        )
    if parts.username or parts.password:
        raise ValidationFailed.field(
            "source.url", "invalid", _("Credentials in the URL are not accepted.")
        )
    cleaned = {"type": source["type"], "url": url}
    if source["type"] == "archive":
        if not parts.path.lower().endswith(ARCHIVE_SUFFIXES):
            raise ValidationFailed.field(
                "source.url", "invalid", _("An archive is a .tar.gz, .tgz or .zip file.")
            )
        if "ref" in source:
            raise ValidationFailed.field("source.ref", "invalid", _("Only git sources take a ref."))
    elif source.get("ref") is not None:
        if not isinstance(source["ref"], str) or not GIT_REF.fullmatch(source["ref"]):
            raise ValidationFailed.field(
                "source.ref", "invalid", _("A branch or tag name (letters, digits, . _ / -).")
            )
        cleaned["ref"] = source["ref"]
    return cleaned

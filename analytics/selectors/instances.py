"""The servers and bots analytics speaks of, and which of them a caller may see by name.

History keeps deleted instances: their day rows and recorded uptime stay for ever, so a past
range still lists a server deleted since, under its last name and marked deleted
(``deleted_at``). Deleted instances are read here, not through ``servers.selectors``, whose
account lists are the live ones the API shows.

Figures of one instance, and lists of instances by name, are shown only to a caller who may
read instances of that kind (``servers:read``, ``bots:read``): a billing key reads the
account's totals, not its servers.
"""

from collections.abc import Iterable, Set
from datetime import datetime

from django.db.models import Q

from servers.models import Bot, Instance, Server

KIND_SCOPES = {"server": "servers:read", "bot": "bots:read"}
KINDS = frozenset(KIND_SCOPES)
_MODELS: dict[str, type[Instance]] = {"server": Server, "bot": Bot}
# What analytics reads of an instance (not its variables, environment or token).
_FIELDS = ("id", "account_id", "name", "status", "created_at", "deleted_at")


def kinds_readable(scopes: Set[str]) -> frozenset[str]:
    """The kinds of instance ``scopes`` (a key's effective scopes, or a role's) may read."""
    return frozenset(kind for kind, scope in KIND_SCOPES.items() if scope in scopes)


def usage_readable(scopes: Set[str], kind: str) -> bool:
    """Whether ``scopes`` may read the usage of one instance of ``kind``: ``analytics:read``
    and the read scope of its kind."""
    return "analytics:read" in scopes and kind in kinds_readable(scopes)


def instances_ever(*, account_id: str, kinds: Iterable[str] = KINDS) -> list[Instance]:
    """The account's servers and bots of ``kinds``, deleted ones included; servers first."""
    wanted = set(kinds)
    return [
        instance
        for kind in ("server", "bot")
        if kind in wanted
        for instance in _MODELS[kind].objects.filter(account_id=account_id).only(*_FIELDS)
    ]


def instances_during(*, start: datetime, end: datetime) -> list[Instance]:
    """Every account's servers and bots that existed at some time in ``[start, end)``:
    created before its end and not deleted before its start."""
    during = Q(created_at__lt=end) & (Q(deleted_at=None) | Q(deleted_at__gte=start))
    return [
        instance
        for kind in ("server", "bot")
        for instance in _MODELS[kind].objects.filter(during).only(*_FIELDS)
    ]

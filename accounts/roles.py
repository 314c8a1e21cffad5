"""Roles, what each may do in the dashboard, and which API scopes each may hold (CONTRACT §5).

This module is the one place where roles, rights and scopes meet: a key's effective rights are
its own scopes intersected with what its user's current role allows, evaluated on every request;
a dashboard page asks ``role_can(role, Right.X)``.
"""

from collections.abc import Iterable

from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    DEVELOPER = "developer", "Developer"
    BILLING = "billing", "Billing"
    SUPPORT = "support", "Support"
    VIEWER = "viewer", "Viewer"


# Scope name -> what it lets a key do. Order is the order shown to people.
SCOPES: dict[str, str] = {
    "servers:read": "List and read game servers",
    "servers:write": "Create, configure and delete game servers",
    "servers:power": "Start, stop, restart and kill game servers",
    "bots:read": "List and read Discord bots",
    "bots:write": "Create, configure and delete Discord bots",
    "bots:power": "Start, stop, restart and kill Discord bots",
    "billing:read": "Read plans, subscriptions, invoices and payments",
    "billing:write": "Change subscriptions and payment methods",
    "tickets:read": "Read support tickets",
    "tickets:write": "Open, answer and close support tickets",
    "analytics:read": "Read usage data, metrics and reports",
    "webhooks:read": "Read webhook endpoints and deliveries",
    "webhooks:write": "Create, change and delete webhook endpoints",
    "account:read": "Read the account and its members",
    "account:write": "Change the account, its members and their roles",
    "api_keys:read": "List and read API keys",
    "api_keys:write": "Create, rotate and revoke API keys",
}
# Only keys of staff users may hold these; they open the cross-account staff API.
STAFF_SCOPES: dict[str, str] = {
    "admin:read": "Read every customer account (hosting staff only)",
    "admin:write": "Create, change and suspend customer accounts (hosting staff only)",
}
ALL_SCOPES: dict[str, str] = SCOPES | STAFF_SCOPES

_READ_ONLY = {scope for scope in SCOPES if scope.endswith(":read")}

ROLE_SCOPES: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(SCOPES),
    Role.ADMIN: frozenset(SCOPES),
    Role.DEVELOPER: frozenset(
        "servers:read servers:write servers:power bots:read bots:write bots:power "
        "tickets:read tickets:write analytics:read webhooks:read webhooks:write "
        "account:read api_keys:read api_keys:write".split()
    ),
    Role.BILLING: frozenset(
        "billing:read billing:write tickets:read tickets:write analytics:read "
        "account:read api_keys:read api_keys:write".split()
    ),
    Role.SUPPORT: frozenset(
        "servers:read servers:power bots:read bots:power tickets:read tickets:write "
        "account:read api_keys:read api_keys:write".split()
    ),
    Role.VIEWER: frozenset(_READ_ONLY - {"api_keys:read"}),
}


def expand_implied(scopes: Iterable[str]) -> frozenset[str]:
    """Add the read scope that every write or power scope implies."""
    expanded = set(scopes)
    for scope in scopes:
        area, _, action = scope.partition(":")
        if action in {"write", "power"}:
            expanded.add(f"{area}:read")
    return frozenset(expanded)


def scopes_allowed_for(role: str | None, *, is_staff: bool) -> frozenset[str]:
    """Every scope a user with this role may exercise (staff also get the staff scopes)."""
    allowed = set(ROLE_SCOPES.get(role, frozenset())) if role else set()
    if is_staff:
        allowed |= set(STAFF_SCOPES)
    return frozenset(allowed)


def effective_scopes(
    key_scopes: Iterable[str], role: str | None, *, is_staff: bool
) -> frozenset[str]:
    """A key's rights right now: its (implied) scopes within what the user's role allows."""
    return expand_implied(key_scopes) & expand_implied(scopes_allowed_for(role, is_staff=is_staff))


def unknown_scopes(scopes: Iterable[str]) -> list[str]:
    return sorted(set(scopes) - set(ALL_SCOPES))


class Right(models.TextChoices):
    """Dashboard rights that are not simply "holds scope X"."""

    MANAGE_ACCOUNT = "manage_account", "Rename the account and change its settings"
    MANAGE_TEAM = "manage_team", "Invite members, change roles below owner, remove members"
    MANAGE_OWNERS = "manage_owners", "Make, demote and remove owners"
    MANAGE_ALL_KEYS = "manage_all_keys", "See and revoke every API key of the account"
    VIEW_ACTIVITY = "view_activity", "Read the account's activity log"


ROLE_RIGHTS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(Right),
    Role.ADMIN: frozenset(Right) - {Right.MANAGE_OWNERS},
    Role.DEVELOPER: frozenset(),
    Role.BILLING: frozenset(),
    Role.SUPPORT: frozenset(),
    Role.VIEWER: frozenset(),
}


def role_can(role: str | None, right: str) -> bool:
    return role is not None and right in ROLE_RIGHTS.get(role, frozenset())


def grantable_scopes(role: str | None, *, is_staff: bool) -> list[str]:
    """Scopes a user may put on a key, in display order."""
    allowed = expand_implied(scopes_allowed_for(role, is_staff=is_staff))
    return [scope for scope in ALL_SCOPES if scope in allowed]

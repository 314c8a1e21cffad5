"""Roles, what each may do in the dashboard, and which API scopes each may hold (CONTRACT §5).

This module is the one place where roles, rights and scopes meet: a key's effective rights are
its own scopes intersected with what its user's current role allows, evaluated on every request;
a dashboard page asks ``role_can(role, Right.X)``.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from django.db import models
from django.utils.translation import gettext_lazy as _


class Role(models.TextChoices):
    OWNER = "owner", _("Owner")
    ADMIN = "admin", _("Admin")
    DEVELOPER = "developer", _("Developer")
    BILLING = "billing", _("Billing")
    SUPPORT = "support", _("Support")
    VIEWER = "viewer", _("Viewer")
    # Invited for one server or bot: the role opens nothing of the account; what a guest may do
    # comes from their per-server grants (servers/permissions.py).
    GUEST = "guest", _("Guest")


# Scope name -> what it lets a key do. Order is the order shown to people.
SCOPES: dict[str, str] = {
    "servers:read": _("List and read game servers"),
    "servers:write": _("Create, configure and delete game servers"),
    "servers:power": _("Start, stop, restart and kill game servers"),
    "bots:read": _("List and read Discord bots"),
    "bots:write": _("Create, configure and delete Discord bots"),
    "bots:power": _("Start, stop, restart and kill Discord bots"),
    "files:read": _("List, read and download the files of servers and bots"),
    "files:write": _("Upload, edit, move and delete the files of servers and bots"),
    "backups:read": _("List and download the backups of servers and bots"),
    "backups:write": _("Back up, restore, lock and delete the backups of servers and bots"),
    "databases:read": _("List the databases of servers and bots and their connection details"),
    "databases:write": _("Create and delete the databases of servers and bots, rotate passwords"),
    "schedules:read": _("List and read the schedules of servers and bots and their runs"),
    "schedules:write": _("Create, change, pause, run and delete the schedules of servers and bots"),
    "billing:read": _("Read plans, subscriptions, invoices and payments"),
    "billing:write": _("Change subscriptions and payment methods"),
    "tickets:read": _("Read support tickets"),
    "tickets:write": _("Open, answer and close support tickets"),
    "analytics:read": _("Read usage data, metrics and reports"),
    "webhooks:read": _("Read webhook endpoints and deliveries"),
    "webhooks:write": _("Create, change and delete webhook endpoints"),
    "account:read": _("Read the account and its members"),
    "account:write": _("Change the account, its members and their roles"),
    "api_keys:read": _("List and read API keys"),
    "api_keys:write": _("Create, rotate and revoke API keys"),
    "profile:read": _("Read your own profile and SSH keys (never another member's)"),
    "profile:write": _("Change your own SSH keys, SFTP password and SFTP login"),
}
# The key's own user's profile: every role may grant these, as they open nothing of the account.
_PROFILE = frozenset({"profile:read", "profile:write"})
# Only keys of staff users may hold these; they open the cross-account staff API
# (``/v1/admin/...``). ``admin:read`` and ``admin:write`` cover every staff area (what staff keys
# held before staff roles, and what administrators hold); ``admin:<area>:read|write`` one area.
STAFF_SCOPES: dict[str, str] = {
    "admin:read": _("Read everything staff may read (hosting staff only)"),
    "admin:write": _("Change everything staff may change (hosting staff only)"),
    "admin:customers:read": _("Read every customer account and its members (hosting staff only)"),
    "admin:customers:write": _("Create, change and suspend customer accounts (hosting staff only)"),
    "admin:billing:read": _(
        "Read invoices, subscriptions, balances and the catalogue (staff only)"
    ),
    "admin:billing:write": _(
        "Mark paid, void, credit, and change the catalogue (hosting staff only)"
    ),
    "admin:support:read": _("Read every ticket of the desk (hosting staff only)"),
    "admin:support:write": _("Answer, assign and change tickets (hosting staff only)"),
    "admin:nodes:read": _("Read nodes, their allocations and the fleet (hosting staff only)"),
    "admin:nodes:write": _("Add, change and remove nodes and allocations (hosting staff only)"),
}
ALL_SCOPES: dict[str, str] = SCOPES | STAFF_SCOPES
# What each staff scope of every area stands for: admin:read is admin:<each area>:read.
STAFF_UMBRELLA: dict[str, frozenset[str]] = {
    f"admin:{verb}": frozenset(
        scope for scope in STAFF_SCOPES if scope.count(":") == 2 and scope.endswith(f":{verb}")
    )
    for verb in ("read", "write")
}

_READ_ONLY = {scope for scope in SCOPES if scope.endswith(":read")}

ROLE_SCOPES: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(SCOPES),
    Role.ADMIN: frozenset(SCOPES),
    Role.DEVELOPER: frozenset(
        "servers:read servers:write servers:power bots:read bots:write bots:power "
        "files:read files:write backups:read backups:write schedules:read schedules:write "
        "databases:read databases:write tickets:read tickets:write "
        "analytics:read webhooks:read webhooks:write account:read api_keys:read "
        "api_keys:write".split()
    )
    | _PROFILE,
    Role.BILLING: frozenset(
        "billing:read billing:write tickets:read tickets:write analytics:read "
        "account:read api_keys:read api_keys:write".split()
    )
    | _PROFILE,
    Role.SUPPORT: frozenset(
        "servers:read servers:power bots:read bots:power files:read backups:read "
        "databases:read schedules:read tickets:read tickets:write account:read api_keys:read "
        "api_keys:write".split()
    )
    | _PROFILE,
    # Not the files: a server's configuration holds its secrets (RCON and database passwords).
    # Nor the backups: they are the files, downloadable. Nor the databases: where and as whom
    # to sign in to them is half of a credential.
    Role.VIEWER: frozenset(
        _READ_ONLY - {"api_keys:read", "files:read", "backups:read", "databases:read"}
    )
    | _PROFILE,
    # Their own keys only (no MANAGE_ALL_KEYS); the servers' scopes come from their grants.
    Role.GUEST: frozenset({"api_keys:read", "api_keys:write"}) | _PROFILE,
}

# The scopes of what one server or bot lets do: per-server grants stand for them (a grant's
# permissions need these scopes on a key), so a guest may put them on a key although the role
# itself holds none of them. ``schedules`` and ``databases`` count once their scopes exist.
INSTANCE_SCOPE_AREAS = ("servers", "bots", "files", "backups", "schedules", "databases")


def expand_implied(scopes: Iterable[str]) -> frozenset[str]:
    """Add what each scope implies: the read scope of every write or power scope, and every
    staff area's scope of ``admin:read`` / ``admin:write``."""
    # A pure function of a handful of scope sets (the roles', each key's), asked several times
    # on every API request: answered from a memo.
    return _expanded(frozenset(scopes))


@lru_cache(maxsize=4096)
def _expanded(scopes: frozenset[str]) -> frozenset[str]:
    expanded = set(scopes)
    for scope in scopes:
        expanded |= STAFF_UMBRELLA.get(scope, frozenset())
    for scope in list(expanded):
        area, _colon, action = scope.rpartition(":")
        if action in {"write", "power"}:
            expanded.add(f"{area}:read")
    return frozenset(expanded)


def scopes_allowed_for(
    role: str | None, *, is_staff: bool, staff_role: str | None = None
) -> frozenset[str]:
    """Every scope a user with this role may exercise; staff add their staff role's scopes."""
    allowed = set(ROLE_SCOPES.get(role, frozenset())) if role else set()
    if is_staff and (rights := staff_rights(staff_role)) is not None:
        allowed |= rights.scopes
    return frozenset(allowed)


def effective_scopes(
    key_scopes: Iterable[str], role: str | None, *, is_staff: bool, staff_role: str | None = None
) -> frozenset[str]:
    """A key's rights right now: its (implied) scopes within what the user's roles allow."""
    allowed = scopes_allowed_for(role, is_staff=is_staff, staff_role=staff_role)
    return expand_implied(key_scopes) & expand_implied(allowed)


def unknown_scopes(scopes: Iterable[str]) -> list[str]:
    return sorted(set(scopes) - set(ALL_SCOPES))


class Right(models.TextChoices):
    """Dashboard rights that are not simply "holds scope X"."""

    MANAGE_ACCOUNT = "manage_account", _("Rename the account and change its settings")
    MANAGE_TEAM = "manage_team", _("Invite members, change roles below owner, remove members")
    MANAGE_OWNERS = "manage_owners", _("Make, demote and remove owners")
    MANAGE_ALL_KEYS = "manage_all_keys", _("See and revoke every API key of the account")
    VIEW_ACTIVITY = "view_activity", _("Read the account's activity log")
    SET_SIGN_IN_POLICY = "set_sign_in_policy", _("Require a second factor of every member")


ROLE_RIGHTS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(Right),
    Role.ADMIN: frozenset(Right) - {Right.MANAGE_OWNERS, Right.SET_SIGN_IN_POLICY},
    Role.DEVELOPER: frozenset(),
    Role.BILLING: frozenset(),
    Role.SUPPORT: frozenset(),
    Role.VIEWER: frozenset(),
    Role.GUEST: frozenset(),
}


def role_can(role: str | None, right: str) -> bool:
    return role is not None and right in ROLE_RIGHTS.get(role, frozenset())


def grantable_scopes(
    role: str | None, *, is_staff: bool, staff_role: str | None = None
) -> list[str]:
    """Scopes a user may put on a key, in display order. A guest may put the servers' scopes:
    their key works only on the servers and bots their grants name, for what the grants allow."""
    allowed = expand_implied(scopes_allowed_for(role, is_staff=is_staff, staff_role=staff_role))
    if role == Role.GUEST:
        allowed |= {scope for scope in SCOPES if scope.split(":")[0] in INSTANCE_SCOPE_AREAS}
    return [scope for scope in ALL_SCOPES if scope in allowed]


# --- Staff roles ---------------------------------------------------------------------------------
#
# What a member of the hosting company's staff may do follows from their job, in one table: the
# ``admin:*`` scopes their API keys may hold (held scopes beyond them stop working the moment
# the role shrinks, as customers' keys do), the Django admin pages they may view or change, and
# whether they work the support desk (which queues then is their departments' business).
# Superusers are administrators whatever their role says; users who are not staff have none.
# A staff user without a role keeps what every staff user had before roles (every staff scope and
# the desk; in Django admin only what Django's own permissions give): installs and code that make
# staff users without a role go on working. Admin's user form asks for a role.


class StaffRole(models.TextChoices):
    SUPPORT_AGENT = "support_agent", _("Support agent")
    BILLING = "billing", _("Billing")
    FLEET = "fleet", _("Fleet and nodes")
    ADMINISTRATOR = "administrator", _("Administrator")


class StaffArea(models.TextChoices):
    """The parts of the staff API; a staff endpoint's area names the scopes it needs."""

    CUSTOMERS = "customers", _("Customer accounts")
    BILLING = "billing", _("Billing back office")
    SUPPORT = "support", _("Support desk")
    NODES = "nodes", _("Nodes and the fleet")


# Django admin access: "view" lets a role read a model's pages, "manage" also add, change and
# delete there (each page still refuses what its own rules forbid, such as deleting an invoice).
VIEW, MANAGE = "view", "manage"
ALL_MODELS = "*"


@dataclass(frozen=True)
class StaffRights:
    scopes: frozenset[str]
    # "app_label.model_name" (or "app_label.*", or "*") -> VIEW or MANAGE
    admin: dict[str, str]
    works_desk: bool


NO_STAFF_ROLE = ""

STAFF_ROLE_RIGHTS: dict[str, StaffRights] = {
    NO_STAFF_ROLE: StaffRights(
        scopes=frozenset({"admin:read", "admin:write"}), admin={}, works_desk=True
    ),
    StaffRole.SUPPORT_AGENT: StaffRights(
        scopes=frozenset({"admin:customers:read", "admin:support:write"}),
        admin={
            "accounts.account": VIEW,
            "accounts.membership": VIEW,
            "servers.server": VIEW,
            "servers.bot": VIEW,
            "servers.action": VIEW,
            "support.ticket": VIEW,
            "support.department": VIEW,
            "support.slapolicy": VIEW,
            "support.macro": MANAGE,
        },
        works_desk=True,
    ),
    # Billing questions arrive as tickets of the Billing department: billing staff answer them.
    StaffRole.BILLING: StaffRights(
        scopes=frozenset({"admin:customers:read", "admin:billing:write", "admin:support:write"}),
        admin={
            "accounts.account": VIEW,
            "accounts.membership": VIEW,
            "billing.*": MANAGE,
            "stripe_gateway.*": VIEW,
            "analytics.*": VIEW,
            "support.ticket": VIEW,
            "support.macro": MANAGE,
        },
        works_desk=True,
    ),
    StaffRole.FLEET: StaffRights(
        scopes=frozenset({"admin:customers:read", "admin:nodes:write"}),
        admin={"accounts.account": VIEW, "accounts.membership": VIEW, "servers.*": MANAGE},
        works_desk=False,
    ),
    StaffRole.ADMINISTRATOR: StaffRights(
        scopes=frozenset({"admin:read", "admin:write"}),
        admin={ALL_MODELS: MANAGE},
        works_desk=True,
    ),
}

# The staff business reports (API and staff pages) and the area whose read scope each needs.
STAFF_REPORT_AREAS: dict[str, str] = {
    "mrr": StaffArea.BILLING,
    "revenue": StaffArea.BILLING,
    "churn": StaffArea.BILLING,
    "ar-aging": StaffArea.BILLING,
    "tickets": StaffArea.SUPPORT,
    "fleet": StaffArea.NODES,
    "nodes": StaffArea.NODES,
}

# Which area each staff endpoint belongs to, by its path under /v1 (the first match wins). An
# endpoint declares ``admin:read`` or ``admin:write``; it needs that verb in its area.
STAFF_API_AREAS: tuple[tuple[str, str], ...] = (
    (
        r"admin/customers/[^/]+/(balance-transactions|billing-clock|billing-profile)(/|$)",
        StaffArea.BILLING,
    ),
    (r"admin/customers(/|$)", StaffArea.CUSTOMERS),
    (
        r"admin/(invoices|credit-notes|subscriptions|products|prices|tax-rates|coupons"
        r"|promotion-codes)(/|$)",
        StaffArea.BILLING,
    ),
    # A report and its downloads (``mrr.csv``).
    *((rf"admin/reports/{name}(\.\w+)?/?$", area) for name, area in STAFF_REPORT_AREAS.items()),
    (r"admin/tickets(/|$)", StaffArea.SUPPORT),
    # The fleet: nodes, the database hosts beside them, and the games they run.
    (r"admin/(nodes|database-hosts|games)(/|$)", StaffArea.NODES),
)


def staff_rights(staff_role: str | None) -> StaffRights | None:
    """The row of a staff role (``None``: not staff, so no staff rights at all)."""
    return None if staff_role is None else STAFF_ROLE_RIGHTS.get(staff_role)


def staff_area_scope(area: str, verb: str) -> str:
    """The scope of ``verb`` ("read" or "write") in a staff area: ``admin:billing:write``."""
    return f"admin:{area}:{verb}"


def staff_role_can_see(staff_role: str | None, area: str) -> bool:
    """May this staff role read the area (its reports, its pages)?"""
    rights = staff_rights(staff_role)
    return rights is not None and staff_area_scope(area, "read") in expand_implied(rights.scopes)


def staff_role_works_desk(staff_role: str | None) -> bool:
    rights = staff_rights(staff_role)
    return rights is not None and rights.works_desk


def staff_role_admin_access(staff_role: str | None, app_label: str, model_name: str) -> str | None:
    """VIEW, MANAGE or None: what the role may do with a model's Django admin pages."""
    rights = staff_rights(staff_role)
    if rights is None:
        return None
    admin = rights.admin
    return (
        admin.get(f"{app_label}.{model_name}")
        or admin.get(f"{app_label}.*")
        or admin.get(ALL_MODELS)
    )


def staff_role_has_perm(staff_role: str | None, perm: str) -> bool:
    """Django's model permission ``app_label.<action>_<model>`` by the table: VIEW grants the
    view permission, MANAGE all four; other permissions only to administrators."""
    app_label, _, codename = perm.partition(".")
    action, _, model_name = codename.partition("_")
    rights = staff_rights(staff_role)
    if rights is not None and rights.admin.get(ALL_MODELS) == MANAGE:
        return True
    access = staff_role_admin_access(staff_role, app_label, model_name)
    if action not in {"view", "add", "change", "delete"} or access is None:
        return False
    return access == MANAGE or action == "view"


def staff_role_has_module_perms(staff_role: str | None, app_label: str) -> bool:
    """Does the role see anything of the app in Django admin (its index)?"""
    rights = staff_rights(staff_role)
    if rights is None:
        return False
    return any(key == ALL_MODELS or key.partition(".")[0] == app_label for key in rights.admin)

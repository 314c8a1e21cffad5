"""Who may do what on one server or bot: the one place that answers it.

A person's permissions on an instance are what their account role allows there (each role scope
stands for some permissions, ``PERMISSION_SCOPES``) together with their grant on that instance
(``ServerGrant``, a sub-user's), and for an API key only those whose scope the key holds. A guest
(``Role.GUEST``) has nothing from the role: everything comes from grants, and they see only the
servers and bots they have a grant on.

Every API endpoint on an instance, the console token, SFTP and the file and backup URLs ask
``instance_permissions`` (or ``instance_may``); a list asks ``instances_visible_q`` and, for
what each row may show, ``grants_by_instance`` (one query for the whole page).

The hot path costs nothing more for a role that covers the request: ``instance_may`` reads a
grant only when the role falls short.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import JSONField, OuterRef, Q, QuerySet, Subquery
from django.utils.translation import gettext
from django.utils.translation import gettext_noop as N_

from accounts.key_cache import cached_extra
from accounts.models import ApiKey, User
from accounts.roles import INSTANCE_SCOPE_AREAS, ROLE_SCOPES, Role, expand_implied
from hosting.errors import PermissionDenied
from servers.models import Instance, ServerGrant

# Permission -> what it lets do, in the order people see them: English here (the API's words),
# marked for translation; the dashboard shows gettext(text) (permission_groups).
PERMISSIONS: dict[str, str] = {
    "console.view": N_("See the console's output"),
    "console.command": N_("Type commands into the console"),
    "power.start": N_("Start"),
    "power.stop": N_("Stop"),
    "power.restart": N_("Restart"),
    "power.kill": N_("Kill (stop at once, unsaved data is lost)"),
    "settings.read": N_("See the configuration: the variables (a bot's environment)"),
    "settings.write": N_(
        "Rename, change variables and resources within the plan, upload a bot's code"
    ),
    "settings.reinstall": N_("Reinstall (runs the installer again over the files)"),
    "activity.read": N_("See the activity log and the actions"),
    "files.read": N_("List, read and download files"),
    "files.write": N_("Upload, edit, move, compress and delete files"),
    "sftp": N_("Sign in with SFTP (changing files there also needs files.write)"),
    "backups.read": N_("List and download backups"),
    "backups.create": N_("Make backups"),
    "backups.restore": N_("Restore a backup over the files"),
    "backups.delete": N_("Delete, lock and unlock backups, change the retention rules"),
    "schedules.read": N_("See the schedules and their runs"),
    "schedules.write": N_("Create, change, run and delete schedules"),
    "databases.read": N_("See the databases and their connection details"),
    "databases.write": N_("Create, rotate the password of and delete databases"),
}
PERMISSION_NAMES = list(PERMISSIONS)

# The scope a key (and a role) needs for each permission; "{kind}" is "server" or "bot".
PERMISSION_SCOPES: dict[str, str] = {
    "console.view": "{kind}s:power",
    "console.command": "{kind}s:power",
    "power.start": "{kind}s:power",
    "power.stop": "{kind}s:power",
    "power.restart": "{kind}s:power",
    "power.kill": "{kind}s:power",
    "settings.read": "{kind}s:read",
    "settings.write": "{kind}s:write",
    "settings.reinstall": "{kind}s:power",
    "activity.read": "{kind}s:read",
    "files.read": "files:read",
    "files.write": "files:write",
    "sftp": "files:read",
    "backups.read": "backups:read",
    "backups.create": "backups:write",
    "backups.restore": "backups:write",
    "backups.delete": "backups:write",
    "schedules.read": "schedules:read",
    "schedules.write": "schedules:write",
    "databases.read": "databases:read",
    "databases.write": "databases:write",
}
# Deleting the server or bot is never granted: it takes a role that may write servers.
DELETE = "delete"

PRESETS: dict[str, tuple[str, list[str]]] = {
    "moderator": (
        N_("Moderator"),
        ["console.view", "console.command", "power.start", "power.stop", "power.restart"],
    ),
    "console_only": (N_("Console (read only)"), ["console.view"]),
    "files_only": (N_("Files only"), ["files.read", "files.write", "sftp"]),
    "full": (N_("Full"), list(PERMISSIONS)),
}


# The permissions' groups, in the order of PERMISSIONS (SFTP goes with the files): how pages
# show them, as boxes by group and as a summary.
PERMISSION_GROUPS = (
    "console",
    "power",
    "settings",
    "activity",
    "files",
    "backups",
    "schedules",
    "databases",
)
# Each group's name on the dashboard (marked; translated when shown).
GROUP_LABELS = {
    "console": N_("Console"),
    "power": N_("Power"),
    "settings": N_("Settings"),
    "activity": N_("Activity"),
    "files": N_("Files"),
    "backups": N_("Backups"),
    "schedules": N_("Schedules"),
    "databases": N_("Databases"),
}


def _group_of(permission: str) -> str:
    return "files" if permission == "sftp" else permission.split(".")[0]


def permission_groups() -> list[tuple[str, list[tuple[str, str]]]]:
    """Each group's name and its permissions with what they let do, in the active language."""
    return [
        (
            gettext(GROUP_LABELS[group]),
            [
                (name, gettext(text))
                for name, text in PERMISSIONS.items()
                if _group_of(name) == group
            ],
        )
        for group in PERMISSION_GROUPS
    ]


def preset_choices() -> list[tuple[str, str]]:
    """The presets' keys and names, in the active language."""
    return [(key, gettext(label)) for key, (label, _names) in PRESETS.items()]


def permissions_summary(permissions: Iterable[str]) -> str:
    """``Console (2), Files (all)``: each group with how many of its permissions are given."""
    counts: dict[str, int] = {}
    for name in permissions:
        if name in PERMISSIONS:
            counts[_group_of(name)] = counts.get(_group_of(name), 0) + 1
    total = {
        group: sum(1 for name in PERMISSIONS if _group_of(name) == group)
        for group in PERMISSION_GROUPS
    }
    return ", ".join(
        gettext("%(group)s (%(count)s)")
        % {
            "group": gettext(GROUP_LABELS[group]),
            "count": gettext("all") if counts[group] == total[group] else counts[group],
        }
        for group in PERMISSION_GROUPS
        if group in counts
    )


def scope_of(permission: str, kind: str) -> str:
    return PERMISSION_SCOPES[permission].format(kind=kind)


def permissions_of_scopes(scopes: Iterable[str], kind: str) -> frozenset[str]:
    """The permissions ``scopes`` stand for on a ``kind``; nothing without its read scope."""
    held = expand_implied(scopes)
    if f"{kind}s:read" not in held:
        return frozenset()
    found = {name for name in PERMISSIONS if scope_of(name, kind) in held}
    if f"{kind}s:write" in held:
        found.add(DELETE)
    return frozenset(found)


def unknown_permissions(permissions: Iterable[str]) -> list[str]:
    return sorted(set(permissions) - set(PERMISSIONS))


@dataclass(frozen=True)
class Caller:
    """Who asks: a user with their role in the account, and the scopes of the API key they
    use (``None``: the dashboard, where only the role bounds them)."""

    user: User
    account_id: str
    role: str | None
    key_scopes: frozenset[str] | None = None
    # Every grant of the user in the account (instance id -> permissions), when this request
    # has read them already (``user_grants``); None: read one instance's when asked.
    grants: dict[str, list[str]] | None = field(default=None, compare=False)

    @classmethod
    def of_principal(cls, principal: Any, grants: dict[str, list[str]] | None = None) -> "Caller":
        return cls(
            user=principal.user,
            account_id=principal.account.pk,
            role=principal.role,
            key_scopes=expand_implied(principal.api_key.scopes),
            grants=grants,
        )

    def role_scopes(self) -> frozenset[str]:
        scopes = expand_implied(ROLE_SCOPES.get(self.role, frozenset()) if self.role else ())
        return scopes if self.key_scopes is None else scopes & self.key_scopes

    def from_role(self, kind: str) -> frozenset[str]:
        return permissions_of_scopes(self.role_scopes(), kind)

    def role_sees_all(self, kind: str) -> bool:
        """Does the role (and key) read every ``kind`` of the account, grants aside?"""
        return f"{kind}s:read" in self.role_scopes()

    def within_key(self, permissions: Iterable[str], kind: str) -> frozenset[str]:
        named = frozenset(name for name in permissions if name in PERMISSION_SCOPES)
        if self.key_scopes is None:
            return named
        return frozenset(name for name in named if scope_of(name, kind) in self.key_scopes)


def _granted(caller: Caller, instance: Instance) -> list[str]:
    if caller.grants is not None:
        return caller.grants.get(instance.pk, [])
    found = (
        ServerGrant.objects.filter(**{instance.kind: instance}, user=caller.user)
        .values_list("permissions", flat=True)
        .first()
    )
    return found or []


def user_grants(*, user: User, account_id: str) -> dict[str, list[str]]:
    """Every grant of ``user`` in the account: instance id -> permissions. One query."""
    rows = ServerGrant.objects.filter(user=user, account_id=account_id).values_list(
        "server_id", "bot_id", "permissions"
    )
    return {server_id or bot_id: permissions for server_id, bot_id, permissions in rows}


def instance_permissions(
    caller: Caller, instance: Instance, *, grant: ServerGrant | bool | None = True
) -> frozenset[str]:
    """Everything ``caller`` may do on ``instance`` now: the role's and the grant's, within the key.

    ``grant``: the caller's grant when already read (``grants_by_instance``), None when they
    have none, True (the default) to read it here.
    """
    if instance.account_id != caller.account_id or caller.role is None:
        return frozenset()
    found = caller.from_role(instance.kind)
    if isinstance(grant, ServerGrant):
        found |= caller.within_key(grant.permissions, instance.kind)
    elif grant is True:
        found |= caller.within_key(_granted(caller, instance), instance.kind)
    return found


def instance_may(caller: Caller, instance: Instance, permission: str) -> bool:
    """May ``caller`` do ``permission`` on ``instance``? Reads no grant when the role allows it."""
    if instance.account_id != caller.account_id or caller.role is None:
        return False
    if permission in caller.from_role(instance.kind):
        return True
    return permission in instance_permissions(caller, instance)


def permission_check(caller: Caller, instance: Instance, permission: str | None) -> None:
    """403 ``permission_denied`` unless ``caller`` may do ``permission`` on ``instance``
    (None: only seeing it, which the caller's queryset has already decided)."""
    if permission is not None and not instance_may(caller, instance, permission):
        raise PermissionDenied(
            # Translators: permission is the permission's code (power.start, files.read…).
            (
                gettext(
                    "You may not do this on this server: it needs the %(permission)s permission."
                )
                if instance.kind == "server"
                else gettext(
                    "You may not do this on this bot: it needs the %(permission)s permission."
                )
            )
            % {"permission": permission},
            details={"required_permission": permission},
        )


def instances_visible_q(caller: Caller, kind: str, *, user: object = None) -> Q:
    """The ``kind``s of the account the caller sees: all when the role reads them, otherwise
    those they have a grant on (a guest's, or a member's whose role does not read them).
    ``user``: the caller's user as the query takes it (a compiled list's placeholder)."""
    if caller.role_sees_all(kind):
        return Q()
    return Q(grants__user=caller.user if user is None else user)


def dashboard_visible_q(caller: Caller, kind: str) -> Q:
    """The dashboard's ``kind``s for the caller: a guest's are those of their grants; every
    member reads every page as before (what they may do there is ``instance_permissions``')."""
    if caller.role == Role.GUEST:
        return Q(grants__user=caller.user)
    return Q()


def power_permission(action_type: str) -> str:
    """The permission of a power action (``reinstall`` is a setting's)."""
    return "settings.reinstall" if action_type == "reinstall" else f"power.{action_type}"


def with_own_permissions(instances: QuerySet, caller: Caller, kind: str) -> QuerySet:
    """``instances`` each with ``own_permissions``: what the caller's own grant there gives
    (None without one), read in the same query as the rows (a list page's)."""
    granted = ServerGrant.objects.filter(**{kind: OuterRef("pk")}, user=caller.user).values(
        "permissions"
    )[:1]
    return instances.annotate(own_permissions=Subquery(granted, output_field=JSONField()))


def grants_by_instance(caller: Caller, instances: Iterable[Instance]) -> dict[str, ServerGrant]:
    """The caller's grants on these instances, by instance id, in one query."""
    ids = [instance.pk for instance in instances]
    if not ids:
        return {}
    grants = ServerGrant.objects.filter(user=caller.user).filter(
        Q(server_id__in=ids) | Q(bot_id__in=ids)
    )
    return {grant.instance_id: grant for grant in grants}


def grant_scopes(*, grants: dict[str, list[str]], key_scopes: Iterable[str]) -> frozenset[str]:
    """The scopes that let a person with grants in the account reach the endpoints on one
    server or bot: the key's scopes of those areas (``INSTANCE_SCOPE_AREAS``), once the
    person holds any grant there; each endpoint then asks that instance's permissions, and
    says ``permission_denied`` for what the grant lacks."""
    if not grants:
        return frozenset()
    return frozenset(
        scope for scope in expand_implied(key_scopes) if scope.split(":")[0] in INSTANCE_SCOPE_AREAS
    )


def grant_key_scopes(user: User, account_id: str) -> frozenset[str]:
    """The scopes a key of ``user`` needs for what their grants in the account allow: each
    permission's scope on its server or bot, and that kind's read scope (registered with the
    API keys in apps.py, so that a sub-user may put these, and only these, on a key)."""
    rows = ServerGrant.objects.filter(user=user, account_id=account_id).values_list(
        "server_id", "permissions"
    )
    found: set[str] = set()
    for server_id, permissions in rows:
        kind = "server" if server_id else "bot"
        found.add(f"{kind}s:read")
        found |= {scope_of(name, kind) for name in permissions if name in PERMISSION_SCOPES}
    return frozenset(found)


def key_grants_read(api_key: ApiKey) -> dict[str, list[str]]:
    """What the API key cache keeps with a key's entry (registered in apps.py): its user's
    grants in its account. Changing a grant invalidates the entries (servers/signals.py), as
    a role change does. An owner's or admin's role holds every permission a grant could add,
    and a key whose user is no member reaches nothing: neither reads them."""
    if getattr(api_key, "role", None) in {None, Role.OWNER, Role.ADMIN}:
        return {}
    return user_grants(user=api_key.user, account_id=api_key.account_id)


def key_grants_check(value: Any) -> dict[str, list[str]]:
    """A cached ``key_grants_read`` value as it was written, or ValueError."""
    if type(value) is not dict:
        raise ValueError("not an object")
    for instance_id, permissions in value.items():
        if type(permissions) is not list or any(type(name) is not str for name in permissions):
            raise ValueError(f"the permissions of {instance_id} are not a list of names")
    return value


def principal_grant_scopes(principal: Any, request: Any) -> frozenset[str]:
    """``grant_scopes`` for an API key's principal (registered with the scope check). The
    grants come with the key from the shared cache, else are read here (one query); they stay
    with the request (``request_grants``) for the endpoint's own checks, so the request reads
    them once at most."""
    api_key = getattr(principal, "api_key", None)
    if api_key is None:
        return frozenset()
    grants = request_grants(request)
    if grants is None:
        grants = cached_extra(api_key, "grants")
    if grants is None:
        grants = user_grants(user=principal.user, account_id=principal.account.pk)
    request.instance_grants = grants
    return grant_scopes(grants=grants, key_scopes=api_key.scopes)


def request_grants(request: Any) -> dict[str, list[str]] | None:
    """The caller's grants when the scope check read them for this request, else None."""
    return getattr(request, "instance_grants", None)

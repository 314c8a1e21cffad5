"""Sub-users: grants of permissions on one server or bot to one person.

Owners and admins (the team right) manage them. A grant goes to a member of the account, or, for
an e-mail address that is no member, to an invitation: accepting it makes the person a member
with the ``guest`` role (which opens nothing of the account) and the grant theirs. Every change
is an event (``server.user_added``, ``server.user_updated``, ``server.user_removed``, or
``bot.…``), which is the account's audit log, and takes effect on the next request: nothing is
cached (servers/services/permissions.py reads the grants live).
"""

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.key_cache import api_keys_of_member_invalidate
from accounts.models import Invitation, Membership, User
from accounts.roles import Right, Role, role_can
from accounts.selectors import role_in
from accounts.services import invitation_create
from events.models import Event
from events.services import changed_attributes, record_event
from hosting.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from servers.models import Instance, ServerGrant
from servers.representations import grant_representation
from servers.services.permissions import PERMISSIONS, unknown_permissions


def grants_of(instance: Instance) -> QuerySet[ServerGrant]:
    """An instance's sub-users, newest first, with what their representation reads."""
    return ServerGrant.objects.filter(**{instance.kind: instance}).select_related(
        "user", "invitation"
    )


def grant_of(instance: Instance, grant_id: str) -> ServerGrant:
    grant = grants_of(instance).filter(pk=grant_id).first()
    if grant is None:
        raise NotFound(_("No such user on this server."))
    return grant


def _require_manager(instance: Instance, actor: Actor) -> None:
    role = role_in(account=instance.account, user=actor.user)
    if not role_can(role, Right.MANAGE_TEAM):
        raise PermissionDenied(_("Only owners and admins can manage a server's users."))


def _clean_permissions(permissions: Iterable[str]) -> list[str]:
    permissions = list(permissions)
    if not permissions:
        raise ValidationFailed.field(
            "permissions", "required", _("Choose at least one permission.")
        )
    if unknown := unknown_permissions(permissions):
        raise ValidationFailed.field(
            "permissions",
            "invalid_choice",
            _("Unknown permissions: %(names)s.") % {"names": ", ".join(unknown)},
        )
    return sorted(set(permissions))


def _record(grant: ServerGrant, change: str, actor: Actor, previous: dict | None = None) -> None:
    kind = "server" if grant.server_id else "bot"
    record_event(
        type=f"{kind}.user_{change}",
        account=grant.account,
        object_type="server_user",
        obj=grant_representation(grant),
        actor=actor,
        previous_attributes=previous,
        related_id=grant.instance_id,
    )


@transaction.atomic
def grant_create(
    *, instance: Instance, email: str, permissions: Iterable[str], actor: Actor
) -> ServerGrant:
    """Give ``email`` these permissions on ``instance``: a member's grant at once, or an
    e-mailed invitation (the guest role) for someone who is not a member. A second grant for
    the same person is a 409 ``conflict`` (change the first)."""
    _require_manager(instance, actor)
    permissions = _clean_permissions(permissions)
    email = email.strip().lower()
    account = instance.account
    member = (
        Membership.objects.filter(account=account, user__email__iexact=email)
        .select_related("user")
        .first()
    )
    grant = ServerGrant(
        account=account,
        **{instance.kind: instance},
        permissions=permissions,
        created_by=actor.user,
    )
    if member is not None:
        if grants_of(instance).filter(user=member.user).exists():
            raise Conflict(
                (
                    _("%(email)s is already a user of this server; change them.")
                    if instance.kind == "server"
                    else _("%(email)s is already a user of this bot; change them.")
                )
                % {"email": email}
            )
        grant.user = member.user
    else:
        grant.invitation = _invitation_for(instance, email, actor)
    try:
        with transaction.atomic():
            grant.save()
    except IntegrityError:  # the same person added twice at once
        raise Conflict(
            (
                _("%(email)s is already a user of this server.")
                if instance.kind == "server"
                else _("%(email)s is already a user of this bot.")
            )
            % {"email": email}
        ) from None
    _record(grant, "added", actor)
    return grant


def _invitation_for(instance: Instance, email: str, actor: Actor) -> Invitation:
    """The pending invitation of ``email`` that the grant waits on: one already sent to join
    the account (with whichever role), or a new guest invitation, which also carries the
    person's grants on other servers still waiting (a new invitation replaces the old)."""
    pending = list(Invitation.objects.pending().filter(account=instance.account, email=email))
    if any(grants_of(instance).filter(invitation=invitation).exists() for invitation in pending):
        raise Conflict(
            (
                _("%(email)s is already invited to this server.")
                if instance.kind == "server"
                else _("%(email)s is already invited to this bot.")
            )
            % {"email": email}
        )
    joining = next((each for each in pending if each.role != Role.GUEST), None)
    if joining is not None:
        return joining
    invitation, _created = invitation_create(
        account=instance.account, email=email, role=Role.GUEST, actor=actor
    )
    ServerGrant.objects.filter(invitation__in=pending).update(invitation=invitation)
    return invitation


@transaction.atomic
def grant_update(
    *, grant: ServerGrant, actor: Actor, permissions: Iterable[str] | None = None
) -> ServerGrant:
    """Replace a sub-user's permissions; they apply from their next request. Nothing given or
    nothing different changes nothing (no event)."""
    _require_manager(grant.instance, actor)
    if permissions is None:
        return grant
    permissions = _clean_permissions(permissions)
    if permissions == sorted(grant.permissions):
        return grant
    before = grant_representation(grant)
    grant.permissions = permissions
    grant.save(update_fields=["permissions", "updated_at"])
    after = grant_representation(grant)
    _record(grant, "updated", actor, changed_attributes(before, after))
    return grant


@transaction.atomic
def grant_delete(*, grant: ServerGrant, actor: Actor) -> None:
    """Take a sub-user off a server or bot, at once. A guest invitation that waits for no
    other grant is withdrawn with it; a guest who joined stays a member (with nothing left,
    until the team page removes them)."""
    _require_manager(grant.instance, actor)
    _record(grant, "removed", actor)
    invitation = grant.invitation
    grant.delete()
    if (
        invitation is not None
        and grant.user_id is None
        and invitation.role == Role.GUEST
        and invitation.status == "pending"
        and not invitation.server_grants.exists()
    ):
        Invitation.objects.filter(pk=invitation.pk).update(revoked_at=timezone.now())


def grants_bind_on_join(event: Event) -> None:
    """When someone joins an account (``member.added``), by whichever route, the grants waiting
    for their e-mail address there become theirs (an event consumer, in the same transaction):
    those of the invitation they accepted, and those of an earlier invitation to the same
    address that a later one replaced (a guest invitation, then one to the team)."""
    if (
        event.type != "member.added"
        or event.object_type != "member"
        or not event.object_id
        or not event.account_id
    ):
        return
    user_id = event.object_id  # a membership is identified by its user's id
    email = User.objects.filter(pk=user_id).values_list("email", flat=True).first()
    if email is None:
        return
    ServerGrant.objects.filter(
        Q(invitation__accepted_by_id=user_id) | Q(invitation__email__iexact=email),
        account_id=event.account_id,
        user=None,
    ).update(user_id=user_id)
    # update() sends no signal: the keys' cached grants are refreshed here (servers/signals.py).
    api_keys_of_member_invalidate(account_id=event.account_id, user_id=user_id)


def invitation_grants_described(invitation: Invitation) -> list[str]:
    """A line for each server or bot an invitation's grants open, with what they allow there:
    the invitation e-mail names them (registered with accounts in apps.py)."""
    grants = (
        ServerGrant.objects.filter(invitation=invitation)
        .select_related("server", "bot")
        .order_by("created_at", "id")
    )
    lines = []
    for grant in grants:
        instance = grant.instance
        allowed = "; ".join(
            _(PERMISSIONS[name]) for name in PERMISSIONS if name in grant.permissions
        )
        line = (
            _("the server “%(name)s”: %(allowed)s")
            if instance.kind == "server"
            else _("the bot “%(name)s”: %(allowed)s")
        )
        lines.append(line % {"name": instance.name, "allowed": allowed})
    return lines

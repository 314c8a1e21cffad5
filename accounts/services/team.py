"""The team: invitations, members' roles and removals, under the last-owner rule."""

import hashlib
import secrets
from collections.abc import Callable
from contextlib import nullcontext
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.actors import Actor
from accounts.models import Account, ApiKey, Invitation, Membership, User
from accounts.representations import (
    invitation_representation,
    member_representation,
)
from accounts.roles import (
    Right,
    Role,
    role_can,
)
from accounts.selectors import role_in
from accounts.services.api_keys import api_key_revoke
from events.services import changed_attributes, record_event
from hosting.errors import (
    Conflict,
    NotFound,
    PermissionDenied,
    ValidationFailed,
)
from hosting.i18n import in_language_of

INVITATION_LIFETIME = timedelta(days=7)
# An invitation's status as a refusal says it (the API's ``status`` field keeps the code).
INVITATION_STATUS_LABELS = {
    "pending": gettext_lazy("pending"),
    "accepted": gettext_lazy("accepted"),
    "revoked": gettext_lazy("revoked"),
    "expired": gettext_lazy("expired"),
}


def _require_team_right(account: Account, actor: Actor, *roles_touched: str) -> str:
    """The actor's role, if it may manage the team for these roles; raise otherwise."""
    role = role_in(account=account, user=actor.user)
    if role is None or not role_can(role, Right.MANAGE_TEAM):
        raise PermissionDenied(_("Only owners and admins can manage the team."))
    if Role.OWNER in roles_touched and not role_can(role, Right.MANAGE_OWNERS):
        raise PermissionDenied(_("Only owners can add, change or remove owners."))
    return role


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# What else an invitation opens, a line each, from the apps above that attach things to it (the
# servers and bots a guest's grants name), registered at start-up: accounts imports none of them.
_INVITATION_DETAILS: list[Callable[[Invitation], list[str]]] = []


def invitation_details_register(provider: Callable[[Invitation], list[str]]) -> None:
    """Add ``provider``'s lines to every invitation e-mail (read when the e-mail is sent)."""
    _INVITATION_DETAILS.append(provider)


def _send_invitation(invitation: Invitation, token: str) -> None:
    """In the language of the invited address's user; an address nobody has yet gets the
    language the invitation was sent in (the inviter's)."""
    recipient = User.objects.filter(email__iexact=invitation.email).first()
    language = in_language_of(recipient) if recipient is not None else nullcontext()
    with language:
        details = [line for provider in _INVITATION_DETAILS for line in provider(invitation)]
        context = {
            "invitation": invitation,
            "accept_url": f"{settings.SITE_URL}/invitations/{token}",
            "inviter": invitation.invited_by,
            "details": details,
            "guest": invitation.role == Role.GUEST,
        }
        subject = _("You're invited to %(account)s") % {"account": invitation.account.name}
        message = render_to_string("accounts/email/invitation.txt", context)
    send_mail(subject=subject, message=message, from_email=None, recipient_list=[invitation.email])


@transaction.atomic
def invitation_create(
    *, account: Account, email: str, role: str, actor: Actor
) -> tuple[Invitation, str]:
    """Invite an e-mail address to join with ``role``; the link is e-mailed and valid 7 days.

    Inviting an address that already has a pending invitation replaces it (a resend).
    """
    email = email.strip().lower()
    if role not in Role.values:
        raise ValidationFailed.field(
            "role", "invalid_choice", _("Unknown role %(role)s.") % {"role": repr(role)}
        )
    _require_team_right(account, actor, role)
    if Membership.objects.filter(account=account, user__email__iexact=email).exists():
        raise Conflict(_("%(email)s is already a member of this account.") % {"email": email})
    now = timezone.now()
    Invitation.objects.filter(
        account=account, email__iexact=email, accepted_at=None, revoked_at=None
    ).update(revoked_at=now)
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        account=account,
        email=email,
        role=role,
        token_digest=_token_digest(token),
        invited_by=actor.user,
        expires_at=now + INVITATION_LIFETIME,
    )
    record_event(
        type="member.invited",
        account=account,
        object_type="invitation",
        obj=invitation_representation(invitation),
        actor=actor,
    )
    transaction.on_commit(lambda: _send_invitation(invitation, token))
    return invitation, token


def invitation_for_token(token: str) -> Invitation | None:
    """The pending invitation behind a link, or None if it is unknown, used, revoked or expired."""
    invitation = (
        Invitation.objects.select_related("account", "invited_by")
        .filter(token_digest=_token_digest(token))
        .first()
    )
    if invitation is None or invitation.status != "pending":
        return None
    return invitation


@transaction.atomic
def invitation_accept(*, token: str, user: User, actor: Actor) -> Membership:
    """Join the invitation's account as ``user``, whose e-mail must be the invited one."""
    invitation = invitation_for_token(token)
    if invitation is None:
        raise NotFound(_("This invitation link is invalid or has expired."))
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.email.lower() != user.email.lower():
        raise PermissionDenied(
            _("This invitation is for %(email)s; sign in as that user.")
            % {"email": invitation.email}
        )
    membership, created = Membership.objects.get_or_create(
        account=invitation.account, user=user, defaults={"role": invitation.role}
    )
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    if created:
        record_event(
            type="member.added",
            account=invitation.account,
            object_type="member",
            obj=member_representation(membership),
            actor=actor,
        )
    return membership


@transaction.atomic
def invitation_accept_as_new_user(
    *, token: str, name: str, password: str, actor: Actor
) -> Membership:
    """Create the invited person's user (with the invited e-mail) and join, both or neither."""
    invitation = invitation_for_token(token)
    if invitation is None:
        raise NotFound(_("This invitation link is invalid or has expired."))
    if User.objects.filter(email__iexact=invitation.email).exists():
        raise Conflict(_("A user with this e-mail address exists; sign in to accept."))
    user = User.objects.create_user(email=invitation.email, password=password, name=name.strip())
    return invitation_accept(token=token, user=user, actor=Actor(user=user, ip=actor.ip))


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: Actor) -> Invitation:
    """Withdraw a pending invitation; its link stops working."""
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    _require_team_right(invitation.account, actor, invitation.role)
    if invitation.status != "pending":
        raise Conflict(
            _("The invitation is already %(status)s.")
            % {"status": INVITATION_STATUS_LABELS.get(invitation.status, invitation.status)}
        )
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    record_event(
        type="member.invitation_revoked",
        account=invitation.account,
        object_type="invitation",
        obj=invitation_representation(invitation),
        actor=actor,
    )
    return invitation


def _other_owner_exists(membership: Membership) -> bool:
    return (
        Membership.objects.filter(account_id=membership.account_id, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


@transaction.atomic
def member_change_role(*, membership: Membership, role: str, actor: Actor) -> Membership:
    """Change a member's role; their keys follow at once. The last owner cannot be demoted."""
    if role not in Role.values:
        raise ValidationFailed.field(
            "role", "invalid_choice", _("Unknown role %(role)s.") % {"role": repr(role)}
        )
    # Lock the account's owner rows so two demotions cannot both pass the last-owner check.
    list(
        Membership.objects.select_for_update().filter(
            account_id=membership.account_id, role=Role.OWNER
        )
    )
    membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
    _require_team_right(membership.account, actor, membership.role, role)
    if membership.role == role:
        return membership
    if membership.role == Role.OWNER and not _other_owner_exists(membership):
        raise Conflict(_("An account needs at least one owner; make someone else owner first."))
    before = member_representation(membership)
    membership.role = role
    membership.save(update_fields=["role"])
    after = member_representation(membership)
    record_event(
        type="member.role_changed",
        account=membership.account,
        object_type="member",
        obj=after,
        actor=actor,
        previous_attributes=changed_attributes(before, after),
    )
    return membership


@transaction.atomic
def member_remove(*, membership: Membership, actor: Actor) -> None:
    """Remove a member (or let them leave); their keys of this account are revoked at once."""
    list(
        Membership.objects.select_for_update().filter(
            account_id=membership.account_id, role=Role.OWNER
        )
    )
    membership = (
        Membership.objects.select_for_update()
        .select_related("user", "account")
        .get(pk=membership.pk)
    )
    if actor.user is None or actor.user.pk != membership.user_id:
        _require_team_right(membership.account, actor, membership.role)
    if membership.role == Role.OWNER and not _other_owner_exists(membership):
        raise Conflict(_("The last owner cannot be removed; make someone else owner first."))
    representation = member_representation(membership)
    for api_key in ApiKey.objects.filter(
        account_id=membership.account_id, user_id=membership.user_id
    ).unrevoked():
        api_key_revoke(api_key=api_key, actor=actor)
    membership.delete()
    record_event(
        type="member.removed",
        account=membership.account,
        object_type="member",
        obj=representation,
        actor=actor,
    )

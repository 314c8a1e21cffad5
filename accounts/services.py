"""Write-side operations on users, accounts, members, invitations and API keys.

Every function is keyword-only and atomic, checks the business rules itself, and records its
event in the same transaction; the API, the dashboard, admin actions and management commands call
these, so each rule exists once.
"""

import hashlib
import ipaddress
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from accounts import keys
from accounts.api.serializers import (
    AccountSerializer,
    ApiKeySerializer,
    InvitationSerializer,
    MemberSerializer,
)
from accounts.key_cache import api_key_cache_refresh, api_key_lookup
from accounts.models import Account, ApiKey, Invitation, Membership, User
from accounts.roles import (
    Right,
    Role,
    effective_scopes,
    expand_implied,
    role_can,
    scopes_allowed_for,
    unknown_scopes,
)
from accounts.selectors import role_in
from events.selectors import events_of_object
from events.services import SYSTEM, Actor, changed_attributes, record_event
from hosting.errors import (
    AccountSuspended,
    ApiKeyExpired,
    ApiKeyRevoked,
    AuthenticationRequired,
    Conflict,
    InsufficientScope,
    InvalidApiKey,
    IpNotAllowed,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    ValidationFailed,
)

LAST_USED_WRITE_INTERVAL = timedelta(seconds=60)
INVITATION_LIFETIME = timedelta(days=7)
EXPIRY_NOTICE = timedelta(days=7)
MAX_ROTATION_GRACE = timedelta(hours=24)


def _field_error(name: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        message, details={"fields": [{"name": name, "code": code, "message": message}]}
    )


def _role_of(account: Account, user: User | None) -> str | None:
    return None if user is None else role_in(account=account, user=user)


# --- Accounts ------------------------------------------------------------------------------


@transaction.atomic
def account_create(
    *,
    name: str,
    owner_email: str,
    owner_password: str | None = None,
    owner_name: str = "",
    actor: Actor = SYSTEM,
) -> Account:
    """Create an account with its first owner, reusing the user if the e-mail is known."""
    name = name.strip()
    if not name:
        raise _field_error("name", "required", "An account needs a name.")
    email = owner_email.strip().lower()
    user = User.objects.filter(email__iexact=email).first()
    if user is None:
        user = User.objects.create_user(email=email, password=owner_password, name=owner_name)
    account = Account.objects.create(name=name)
    membership = Membership.objects.create(account=account, user=user, role=Role.OWNER)
    record_event(
        type="account.created", account=account, object_type="account",
        obj=AccountSerializer(account).data, actor=actor,
    )  # fmt: skip
    record_event(
        type="member.added", account=account, object_type="member",
        obj=MemberSerializer(membership).data, actor=actor,
    )  # fmt: skip
    return account


# Limits staff set on an account: the one that may be null falls back to the default.
ACCOUNT_LIMITS = (
    "rate_limit_per_minute",
    "max_api_keys",
    "max_servers",
    "max_bots",
    "max_memory_mb",
)
_NULLABLE_LIMITS = {"rate_limit_per_minute"}


def account_changes_clean(**changes: Any) -> dict[str, Any]:
    """``changes`` to an account's name or limits, checked; every bad field is named at once."""
    unknown = set(changes) - {"name", *ACCOUNT_LIMITS}
    if unknown:
        raise ValueError(f"Not an account setting: {', '.join(sorted(unknown))}")
    problems, clean = [], {}
    for field, value in changes.items():
        if field == "name":
            value = str(value).strip()
            if not value:
                problems.append((field, "required", "An account needs a name."))
        elif value is None and field not in _NULLABLE_LIMITS:
            problems.append((field, "null", f"{field} cannot be empty."))
        elif value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            problems.append((field, "min_value", f"{field} must be a positive integer."))
        clean[field] = value
    if problems:
        fields = [{"name": name, "code": code, "message": text} for name, code, text in problems]
        raise ValidationFailed(problems[0][2], details={"fields": fields})
    return clean


@transaction.atomic
def account_update(*, account: Account, actor: Actor, **changes: Any) -> Account:
    """Change an account's name or (staff only, enforced by callers' scopes) its limits:
    ``rate_limit_per_minute``, ``max_api_keys``, ``max_servers``, ``max_bots``,
    ``max_memory_mb``. The API, the staff API and Django admin all change accounts here."""
    changes = account_changes_clean(**changes)
    account = Account.objects.select_for_update().get(pk=account.pk)
    before = {**AccountSerializer(account).data, **_limits_of(account)}
    for field, value in changes.items():
        setattr(account, field, value)
    account.save()
    after = AccountSerializer(account).data
    previous = changed_attributes(before, {**after, **_limits_of(account)})
    previous.pop("updated_at", None)
    if previous:
        record_event(
            type="account.updated", account=account, object_type="account", obj=after,
            actor=actor, previous_attributes=previous,
        )  # fmt: skip
    return account


def _limits_of(account: Account) -> dict[str, Any]:
    return {field: getattr(account, field) for field in ACCOUNT_LIMITS}


@transaction.atomic
def account_suspend(*, account: Account, reason: str = "", actor: Actor) -> Account:
    """Suspend an account (staff): its keys answer 403 and its dashboard turns read-only."""
    account = Account.objects.select_for_update().get(pk=account.pk)
    if account.is_suspended:
        return account
    before = AccountSerializer(account).data
    account.status = Account.Status.SUSPENDED
    account.suspended_at = timezone.now()
    account.suspended_reason = reason.strip()[:500]
    account.save()
    after = AccountSerializer(account).data
    record_event(
        type="account.suspended", account=account, object_type="account", obj=after,
        actor=actor, previous_attributes=changed_attributes(before, after),
    )  # fmt: skip
    return account


@transaction.atomic
def account_unsuspend(*, account: Account, actor: Actor) -> Account:
    account = Account.objects.select_for_update().get(pk=account.pk)
    if not account.is_suspended:
        return account
    before = AccountSerializer(account).data
    account.status = Account.Status.ACTIVE
    account.suspended_at = None
    account.suspended_reason = ""
    account.save()
    after = AccountSerializer(account).data
    record_event(
        type="account.unsuspended", account=account, object_type="account", obj=after,
        actor=actor, previous_attributes=changed_attributes(before, after),
    )  # fmt: skip
    return account


# --- Members and invitations ---------------------------------------------------------------


def _require_team_right(account: Account, actor: Actor, *roles_touched: str) -> str:
    """The actor's role, if it may manage the team for these roles; raise otherwise."""
    role = _role_of(account, actor.user)
    if not role_can(role, Right.MANAGE_TEAM):
        raise PermissionDenied("Only owners and admins can manage the team.")
    if Role.OWNER in roles_touched and not role_can(role, Right.MANAGE_OWNERS):
        raise PermissionDenied("Only owners can add, change or remove owners.")
    return role


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _send_invitation(invitation: Invitation, token: str) -> None:
    context = {
        "invitation": invitation,
        "accept_url": f"{settings.SITE_URL}/invitations/{token}",
        "inviter": invitation.invited_by,
    }
    send_mail(
        subject=f"You're invited to {invitation.account.name}",
        message=render_to_string("accounts/email/invitation.txt", context),
        from_email=None,
        recipient_list=[invitation.email],
    )


@transaction.atomic
def invitation_create(
    *, account: Account, email: str, role: str, actor: Actor
) -> tuple[Invitation, str]:
    """Invite an e-mail address to join with ``role``; the link is e-mailed and valid 7 days.

    Inviting an address that already has a pending invitation replaces it (a resend).
    """
    email = email.strip().lower()
    if role not in Role.values:
        raise _field_error("role", "invalid_choice", f"Unknown role {role!r}.")
    _require_team_right(account, actor, role)
    if Membership.objects.filter(account=account, user__email__iexact=email).exists():
        raise Conflict(f"{email} is already a member of this account.")
    now = timezone.now()
    Invitation.objects.filter(
        account=account, email__iexact=email, accepted_at=None, revoked_at=None
    ).update(revoked_at=now)
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        account=account, email=email, role=role, token_digest=_token_digest(token),
        invited_by=actor.user, expires_at=now + INVITATION_LIFETIME,
    )  # fmt: skip
    record_event(
        type="member.invited", account=account, object_type="invitation",
        obj=InvitationSerializer(invitation).data, actor=actor,
    )  # fmt: skip
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
        raise NotFound("This invitation link is invalid or has expired.")
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.email.lower() != user.email.lower():
        raise PermissionDenied(f"This invitation is for {invitation.email}; sign in as that user.")
    membership, created = Membership.objects.get_or_create(
        account=invitation.account, user=user, defaults={"role": invitation.role}
    )
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    if created:
        record_event(
            type="member.added", account=invitation.account, object_type="member",
            obj=MemberSerializer(membership).data, actor=actor,
        )  # fmt: skip
    return membership


@transaction.atomic
def invitation_accept_as_new_user(
    *, token: str, name: str, password: str, actor: Actor
) -> Membership:
    """Create the invited person's user (with the invited e-mail) and join, both or neither."""
    invitation = invitation_for_token(token)
    if invitation is None:
        raise NotFound("This invitation link is invalid or has expired.")
    if User.objects.filter(email__iexact=invitation.email).exists():
        raise Conflict("A user with this e-mail address exists; sign in to accept.")
    user = User.objects.create_user(email=invitation.email, password=password, name=name.strip())
    return invitation_accept(token=token, user=user, actor=Actor(user=user, ip=actor.ip))


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: Actor) -> Invitation:
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    _require_team_right(invitation.account, actor, invitation.role)
    if invitation.status != "pending":
        raise Conflict(f"The invitation is already {invitation.status}.")
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    record_event(
        type="member.invitation_revoked", account=invitation.account, object_type="invitation",
        obj=InvitationSerializer(invitation).data, actor=actor,
    )  # fmt: skip
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
        raise _field_error("role", "invalid_choice", f"Unknown role {role!r}.")
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
        raise Conflict("An account needs at least one owner; make someone else owner first.")
    before = MemberSerializer(membership).data
    membership.role = role
    membership.save(update_fields=["role"])
    after = MemberSerializer(membership).data
    record_event(
        type="member.role_changed", account=membership.account, object_type="member", obj=after,
        actor=actor, previous_attributes=changed_attributes(before, after),
    )  # fmt: skip
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
        raise Conflict("The last owner cannot be removed; make someone else owner first.")
    representation = MemberSerializer(membership).data
    for api_key in ApiKey.objects.filter(
        account_id=membership.account_id, user_id=membership.user_id
    ).unrevoked():
        api_key_revoke(api_key=api_key, actor=actor)
    membership.delete()
    record_event(
        type="member.removed", account=membership.account, object_type="member",
        obj=representation, actor=actor,
    )  # fmt: skip


# --- API keys ------------------------------------------------------------------------------


def normalize_allowed_ips(values: Iterable[str]) -> list[str]:
    """Parse CIDR networks (a bare address means that one host); raise on anything else."""
    networks = []
    for index, value in enumerate(values):
        try:
            networks.append(str(ipaddress.ip_network(str(value).strip(), strict=False)))
        except ValueError:
            raise _field_error(
                f"allowed_ips.{index}", "invalid",
                f"{value!r} is not an IP address or CIDR network.",
            ) from None  # fmt: skip
    return networks


def _live_keys(account: Account):
    return ApiKey.objects.filter(account=account).unrevoked()


def _refuse_scopes(denied: list[str], reason: str) -> None:
    if denied:
        message = f"{reason}: {', '.join(denied)}."
        raise InsufficientScope(
            message,
            details={
                "required_scopes": denied,
                "fields": [{"name": "scopes", "code": "not_permitted", "message": message}],
            },
        )


@transaction.atomic
def api_key_create(
    *,
    account: Account,
    user: User,
    name: str,
    scopes: Iterable[str],
    expires_at: datetime | None = None,
    allowed_ips: Iterable[str] = (),
    actor: Actor | None = None,
) -> tuple[ApiKey, str]:
    """Create a key for ``user`` in ``account`` and return it with its token (shown only once).

    A key may only carry scopes that the user's current role allows, and an account holds at
    most ``max_api_keys`` keys that are not revoked.
    """
    actor = actor or Actor(user=user)
    scopes = sorted(set(scopes))
    name = name.strip()
    if not name:
        raise _field_error("name", "required", "A key needs a name.")
    if len(name) > 100:
        raise _field_error("name", "max_length", "A key name has at most 100 characters.")
    if not scopes:
        raise _field_error("scopes", "required", "Choose at least one scope.")
    if unknown := unknown_scopes(scopes):
        raise _field_error("scopes", "invalid_choice", f"Unknown scopes: {', '.join(unknown)}.")
    role = _role_of(account, user)
    if role is None:
        raise _field_error("user", "not_a_member", "The user is not a member of this account.")
    role_allows = expand_implied(scopes_allowed_for(role, is_staff=user.is_staff))
    _refuse_scopes(sorted(set(scopes) - role_allows), f"The role {role!r} may not grant")
    if actor.api_key is not None:
        # A key can only mint keys within its own rights, or a narrow key could widen itself.
        key_allows = effective_scopes(actor.api_key.scopes, role, is_staff=user.is_staff)
        _refuse_scopes(sorted(set(scopes) - key_allows), "The calling API key may not grant")
    if expires_at is not None and expires_at <= timezone.now():
        raise _field_error("expires_at", "in_past", "The expiry must be in the future.")
    allowed_ips = normalize_allowed_ips(allowed_ips)
    Account.objects.select_for_update().filter(pk=account.pk).first()  # serialize the count
    if _live_keys(account).count() >= account.max_api_keys:
        raise QuotaExceeded(
            f"This account already has {account.max_api_keys} API keys, its limit; "
            "revoke one you no longer use first.",
            details={"limit": account.max_api_keys},
        )
    token, key_id = keys.make_token()
    pepper_id = keys.current_pepper_id()
    api_key = ApiKey.objects.create(
        account=account, user=user, name=name, key_id=key_id,
        digest=keys.digest_token(token, pepper_id), pepper_id=pepper_id, scopes=scopes,
        expires_at=expires_at, allowed_ips=allowed_ips, created_by=actor.user or user,
    )  # fmt: skip
    record_event(
        type="api_key.created", account=account, object_type="api_key",
        obj=ApiKeySerializer(api_key).data, actor=actor,
    )  # fmt: skip
    return api_key, token


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, actor: Actor = SYSTEM, at: datetime | None = None) -> ApiKey:
    """Revoke a key, at once or at ``at`` (a rotation's grace period); irreversible.

    Revoking an already revoked key changes nothing.
    """
    api_key = ApiKey.objects.select_for_update().get(pk=api_key.pk)
    now = timezone.now()
    when = max(at or now, now)
    if api_key.status_at(when) == "revoked":
        return api_key
    before = ApiKeySerializer(api_key).data
    api_key.revoked_at = when
    api_key.save(update_fields=["revoked_at"])
    after = ApiKeySerializer(api_key).data
    record_event(
        type="api_key.revoked", account=api_key.account, object_type="api_key", obj=after,
        actor=actor, previous_attributes=changed_attributes(before, after),
    )  # fmt: skip
    return api_key


@transaction.atomic
def api_key_rotate(
    *, api_key: ApiKey, actor: Actor, grace: timedelta = timedelta(0)
) -> tuple[ApiKey, str]:
    """Replace a key with a new token of the same name, scopes and limits.

    The old token keeps working for ``grace`` (at most 24 hours), then is revoked.
    """
    if grace < timedelta(0) or grace > MAX_ROTATION_GRACE:
        raise _field_error(
            "grace_period_seconds", "out_of_range", "The grace period is 0 to 86400 seconds."
        )
    api_key = ApiKey.objects.select_for_update().select_related("user").get(pk=api_key.pk)
    if api_key.status != "active":
        raise Conflict(f"Only an active key can be rotated; this one is {api_key.status}.")
    # The new token acts as the key's user, so rotating must pass the rules of minting it: only
    # that user may do it, and a narrow calling key cannot rotate a broader one to widen itself.
    if actor.user is not None and actor.user.pk != api_key.user_id:
        raise PermissionDenied("Only a key's own user can rotate it; revoke it instead.")
    if actor.api_key is not None:
        role = _role_of(api_key.account, api_key.user)
        key_allows = effective_scopes(actor.api_key.scopes, role, is_staff=api_key.user.is_staff)
        _refuse_scopes(
            sorted(set(api_key.scopes) - key_allows), "The calling API key may not grant"
        )
    token, key_id = keys.make_token()
    pepper_id = keys.current_pepper_id()
    new_key = ApiKey.objects.create(
        account=api_key.account, user=api_key.user, name=api_key.name, key_id=key_id,
        digest=keys.digest_token(token, pepper_id), pepper_id=pepper_id, scopes=api_key.scopes,
        expires_at=api_key.expires_at, allowed_ips=api_key.allowed_ips,
        created_by=actor.user or api_key.user,
    )  # fmt: skip
    record_event(
        type="api_key.rotated", account=api_key.account, object_type="api_key",
        obj=ApiKeySerializer(new_key).data, actor=actor,
        previous_attributes={"id": api_key.id, "prefix": f"hms_{api_key.key_id}"},
    )  # fmt: skip
    api_key_revoke(api_key=api_key, actor=actor, at=timezone.now() + grace)
    return new_key, token


# --- Users ---------------------------------------------------------------------------------


@transaction.atomic
def user_update_profile(*, user: User, name: str, email: str, actor: Actor) -> User:
    """Change a user's name or e-mail; an e-mail change is noted in each of their accounts."""
    email = email.strip().lower()
    if User.objects.filter(email__iexact=email).exclude(pk=user.pk).exists():
        raise _field_error("email", "unique", "Another user has this e-mail address.")
    user = User.objects.select_for_update().get(pk=user.pk)
    before = {"id": user.id, "email": user.email, "name": user.name}
    user.name, user.email = name.strip(), email
    user.save(update_fields=["name", "email"])
    after = {"id": user.id, "email": user.email, "name": user.name}
    if previous := changed_attributes(before, after):
        for account in Account.objects.filter(memberships__user=user):
            record_event(
                type="user.updated", account=account, object_type="user", obj=after,
                actor=actor, previous_attributes=previous,
            )  # fmt: skip
    return user


# --- Sign-in -------------------------------------------------------------------------------


def login_failure_record(*, email: str, ip: str | None) -> None:
    """Note a failed sign-in in the event log of every account the address belongs to."""
    user = User.objects.filter(email__iexact=email.strip()).first()
    subject = {"id": user.id if user else "", "email": email.strip().lower()[:254]}
    accounts = list(Account.objects.filter(memberships__user=user)) if user else []
    for account in accounts or [None]:
        record_event(
            type="user.login_failed", account=account, object_type="user", obj=subject,
            actor=Actor(ip=ip),
        )  # fmt: skip


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """Who a request acts as: the key, its user and account, and its rights right now."""

    api_key: ApiKey
    user: User
    account: Account
    role: str
    scopes: frozenset[str]


def parse_bearer(header: str) -> str:
    """Extract the token from ``Authorization: Bearer <token>`` (scheme case-insensitive)."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        raise AuthenticationRequired()
    if not token or " " in token:
        raise InvalidApiKey()
    return token


def api_key_authenticate(*, header: str) -> ApiKeyPrincipal:
    """Resolve an Authorization header to a principal, or raise the contract's 401 error.

    Malformed tokens, bad checksums, unknown key ids, wrong secrets and keys of users who left
    the account or were deactivated all get the same ``invalid_api_key``, so nothing can be
    learned by probing.
    """
    parsed = keys.parse_token(parse_bearer(header))
    if parsed is None:
        raise InvalidApiKey()
    api_key = api_key_lookup(key_id=parsed.key_id)
    # Digested and compared even for an unknown key id, so that it answers as slowly as a
    # wrong secret of a real key does.
    matches = keys.token_matches(
        parsed.token,
        digest=api_key.digest if api_key else None,
        pepper_id=api_key.pepper_id if api_key else None,
    )
    if api_key is None or not matches:
        raise InvalidApiKey()
    # A key whose user left the account or was deactivated says only "invalid", even if it was
    # also revoked on the way out (CONTRACT §5).
    if api_key.role is None or not api_key.user.is_active:
        raise InvalidApiKey()
    status = api_key.status
    if status == "revoked":
        raise ApiKeyRevoked()
    if status == "expired":
        raise ApiKeyExpired()
    return ApiKeyPrincipal(
        api_key=api_key,
        user=api_key.user,
        account=api_key.account,
        role=api_key.role,
        scopes=effective_scopes(api_key.scopes, api_key.role, is_staff=api_key.user.is_staff),
    )


def api_key_check_access(*, principal: ApiKeyPrincipal, ip: str) -> None:
    """Refuse a valid key used from outside its allowed networks or for a suspended account."""
    networks = principal.api_key.allowed_ips
    if networks:
        address = ipaddress.ip_address(ip)
        if not any(address in ipaddress.ip_network(network) for network in networks):
            raise IpNotAllowed(details={"ip": ip})
    if principal.account.is_suspended:
        raise AccountSuspended()


def api_key_record_use(*, api_key: ApiKey, ip: str) -> None:
    """Note when and from where a key was last used, at most one write per key per minute."""
    now = timezone.now()
    if api_key.last_used_at is not None and now - api_key.last_used_at < LAST_USED_WRITE_INTERVAL:
        return
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now, last_used_ip=ip)
    api_key.last_used_at, api_key.last_used_ip = now, ip
    api_key_cache_refresh(api_key)


# --- Upkeep --------------------------------------------------------------------------------


def api_keys_expiring_notify(*, now: datetime | None = None) -> int:
    """Record ``api_key.expiring`` once per live key that expires within 7 days.

    A key already named by an ``api_key.expiring`` event is skipped, so running this every minute
    says it once; return how many events were recorded.
    """
    now = now or timezone.now()
    # Not a rotated key within its grace either: it is revoked before it could expire.
    expiring = (
        ApiKey.objects.with_status(["active"], now)
        .filter(revoked_at=None, expires_at__lte=now + EXPIRY_NOTICE)
        .select_related("account")
    )
    recorded = 0
    for api_key in expiring.iterator():
        with transaction.atomic():
            # Lock the key so that two runs at once cannot both record its notice.
            ApiKey.objects.select_for_update().filter(pk=api_key.pk).first()
            if (
                events_of_object(account_id=api_key.account_id, object_id=api_key.pk)
                .filter(type="api_key.expiring")
                .exists()
            ):
                continue
            record_event(
                type="api_key.expiring", account=api_key.account, object_type="api_key",
                obj=ApiKeySerializer(api_key).data,
            )  # fmt: skip
            recorded += 1
    return recorded

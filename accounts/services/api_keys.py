"""API keys: creating, revoking and rotating them, and warning before they expire."""

import ipaddress
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import cast

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts import keys
from accounts.actors import SYSTEM, Actor
from accounts.models import Account, ApiKey, ApiKeyQuerySet, User
from accounts.representations import (
    api_key_representation,
)
from accounts.roles import (
    ALL_SCOPES,
    INSTANCE_SCOPE_AREAS,
    STAFF_SCOPES,
    Role,
    expand_implied,
    grantable_scopes,
    unknown_scopes,
)
from accounts.selectors import role_in
from accounts.services.accounts import account_lock
from events.services import changed_attributes, record_event
from hosting.errors import (
    Conflict,
    InsufficientScope,
    PermissionDenied,
    QuotaExceeded,
    ValidationFailed,
)

EXPIRY_NOTICE = timedelta(days=7)
MAX_ROTATION_GRACE = timedelta(hours=24)


def normalize_allowed_ips(values: Iterable[str]) -> list[str]:
    """Parse CIDR networks (a bare address means that one host); raise on anything else."""
    networks = []
    for index, value in enumerate(values):
        try:
            networks.append(str(ipaddress.ip_network(str(value).strip(), strict=False)))
        except ValueError:
            raise ValidationFailed.field(
                f"allowed_ips.{index}",
                "invalid",
                _("%(value)s is not an IP address or CIDR network.") % {"value": repr(value)},
            ) from None
    return networks


def _live_keys(account: Account) -> ApiKeyQuerySet:
    return ApiKey.objects.filter(account=account).unrevoked()


def _refuse_scopes(denied: list[str], sentence: str, **values: str) -> None:
    """Refuse ``denied`` scopes, if any: ``sentence`` (translated, with ``%(scopes)s`` and
    ``values``' placeholders) says who may not grant them."""
    if denied:
        message = sentence % {**values, "scopes": ", ".join(denied)}
        raise InsufficientScope(
            message,
            details={
                "required_scopes": denied,
                "fields": [{"name": "scopes", "code": "not_permitted", "message": message}],
            },
        )


# Scopes a person may put on a key beyond their role's, from what the apps above give them in an
# account (servers: what their per-server grants need), registered at start-up: accounts imports
# none of them.
_GRANTABLE_PROVIDERS: list[Callable[[User, str], Iterable[str]]] = []


def api_key_scopes_register(provider: Callable[[User, str], Iterable[str]]) -> None:
    """``provider(user, account_id)`` names more scopes the user may put on a key there."""
    _GRANTABLE_PROVIDERS.append(provider)


def api_key_scopes_grantable(*, account: Account, user: User) -> list[str]:
    """The scopes ``user`` may put on a key in ``account`` now, in display order: their role's
    (and staff role's; a guest's: every scope of one server's areas, which reaches only what
    their grants allow), and those the registered providers add (a member's grants beyond
    their role); none for someone who is no member."""
    role = role_in(account=account, user=user)
    if role is None:
        return []
    allowed = set(grantable_scopes(role, is_staff=user.is_staff, staff_role=user.staff_role_now))
    for provider in _GRANTABLE_PROVIDERS:
        allowed |= expand_implied(provider(user, account.pk))
    return [scope for scope in ALL_SCOPES if scope in allowed]


def api_key_scopes_offered(*, account: Account, user: User) -> list[str]:
    """The scopes the dashboard's key form offers ``user``: those they may grant, but for a
    guest only those their grants need now (the others would reach nothing yet)."""
    grantable = api_key_scopes_grantable(account=account, user=user)
    if role_in(account=account, user=user) != Role.GUEST:
        return grantable
    needed: set[str] = set()
    for provider in _GRANTABLE_PROVIDERS:
        needed |= expand_implied(provider(user, account.pk))
    return [
        scope
        for scope in grantable
        if scope in needed or scope.split(":")[0] not in INSTANCE_SCOPE_AREAS
    ]


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

    A key may only carry scopes that the user may grant now (``api_key_scopes_grantable``: the
    role's, and those their per-server grants need), and an account holds at most
    ``max_api_keys`` keys that are not revoked.
    """
    actor = actor or Actor(user=user)
    scopes = sorted(set(scopes))
    name = name.strip()
    if not name:
        raise ValidationFailed.field("name", "required", _("A key needs a name."))
    if len(name) > 100:
        raise ValidationFailed.field(
            "name", "max_length", _("A key name has at most 100 characters.")
        )
    if not scopes:
        raise ValidationFailed.field("scopes", "required", _("Choose at least one scope."))
    if unknown := unknown_scopes(scopes):
        raise ValidationFailed.field(
            "scopes",
            "invalid_choice",
            _("Unknown scopes: %(scopes)s.") % {"scopes": ", ".join(unknown)},
        )
    role = role_in(account=account, user=user)
    if role is None:
        raise ValidationFailed.field(
            "user", "not_a_member", _("The user is not a member of this account.")
        )
    staff_role = user.staff_role_now
    role_allows = set(api_key_scopes_grantable(account=account, user=user))
    denied = sorted(set(scopes) - role_allows)
    if staff_role is not None:  # staff: the staff scopes are their staff role's to refuse
        _refuse_scopes(
            [scope for scope in denied if scope in STAFF_SCOPES],
            # Translators: %(role)s is the staff role's code in quotes ('billing');
            # %(scopes)s the scopes' codes (servers:write, billing:read).
            _("The staff role %(role)s may not grant: %(scopes)s."),
            role=repr(staff_role or "none"),
        )
    _refuse_scopes(
        denied,
        # Translators: %(role)s is the role's code in quotes ('developer'); %(scopes)s the
        # scopes' codes (servers:write, billing:read).
        _("The role %(role)s may not grant: %(scopes)s."),
        role=repr(role),
    )
    if actor.api_key is not None:
        # A key can only mint keys within its own rights, or a narrow key could widen itself.
        key_allows = expand_implied(actor.api_key.scopes) & role_allows
        _refuse_scopes(
            sorted(set(scopes) - key_allows),
            # Translators: %(scopes)s is a list of scopes' codes (servers:write, billing:read).
            _("The calling API key may not grant: %(scopes)s."),
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed.field(
            "expires_at", "in_past", _("The expiry must be in the future.")
        )
    allowed_ips = normalize_allowed_ips(allowed_ips)
    account_lock(account.pk)  # serialize the count
    if _live_keys(account).count() >= account.max_api_keys:
        raise QuotaExceeded(
            _(
                "This account already has %(limit)s API keys, its limit; "
                "revoke one you no longer use first."
            )
            % {"limit": account.max_api_keys},
            details={"limit": account.max_api_keys},
        )
    token, key_id = keys.make_token()
    pepper_id = keys.current_pepper_id()
    api_key = ApiKey.objects.create(
        account=account,
        user=user,
        name=name,
        key_id=key_id,
        digest=cast(str, keys.digest_token(token, pepper_id)),  # the current pepper: never None
        pepper_id=pepper_id,
        scopes=scopes,
        expires_at=expires_at,
        allowed_ips=allowed_ips,
        created_by=actor.user or user,
    )
    record_event(
        type="api_key.created",
        account=account,
        object_type="api_key",
        obj=api_key_representation(api_key),
        actor=actor,
    )
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
    before = api_key_representation(api_key)
    api_key.revoked_at = when
    api_key.save(update_fields=["revoked_at"])
    after = api_key_representation(api_key)
    record_event(
        type="api_key.revoked",
        account=api_key.account,
        object_type="api_key",
        obj=after,
        actor=actor,
        previous_attributes=changed_attributes(before, after),
    )
    return api_key


@transaction.atomic
def api_key_rotate(
    *, api_key: ApiKey, actor: Actor, grace: timedelta = timedelta(0)
) -> tuple[ApiKey, str]:
    """Replace a key with a new token of the same name, scopes and limits.

    The old token keeps working for ``grace`` (at most 24 hours), then is revoked.
    """
    if grace < timedelta(0) or grace > MAX_ROTATION_GRACE:
        raise ValidationFailed.field(
            "grace_period_seconds", "out_of_range", _("The grace period is 0 to 86400 seconds.")
        )
    api_key = ApiKey.objects.select_for_update().select_related("user").get(pk=api_key.pk)
    if api_key.status != "active":
        raise Conflict(
            _("Only an active key can be rotated; this one is %(status)s.")
            % {"status": api_key.status_label}
        )
    # The new token acts as the key's user, so rotating must pass the rules of minting it: only
    # that user may do it, and a narrow calling key cannot rotate a broader one to widen itself.
    if actor.user is not None and actor.user.pk != api_key.user_id:
        raise PermissionDenied(_("Only a key's own user can rotate it; revoke it instead."))
    if actor.api_key is not None:
        key_allows = expand_implied(actor.api_key.scopes) & set(
            api_key_scopes_grantable(account=api_key.account, user=api_key.user)
        )
        _refuse_scopes(
            sorted(set(api_key.scopes) - key_allows),
            # Translators: %(scopes)s is a list of scopes' codes (servers:write, billing:read).
            _("The calling API key may not grant: %(scopes)s."),
        )
    token, key_id = keys.make_token()
    pepper_id = keys.current_pepper_id()
    new_key = ApiKey.objects.create(
        account=api_key.account,
        user=api_key.user,
        name=api_key.name,
        key_id=key_id,
        digest=cast(str, keys.digest_token(token, pepper_id)),  # the current pepper: never None
        pepper_id=pepper_id,
        scopes=api_key.scopes,
        expires_at=api_key.expires_at,
        allowed_ips=api_key.allowed_ips,
        created_by=actor.user or api_key.user,
    )
    record_event(
        type="api_key.rotated",
        account=api_key.account,
        object_type="api_key",
        obj=api_key_representation(new_key),
        actor=actor,
        previous_attributes={"id": api_key.id, "prefix": api_key.prefix},
    )
    api_key_revoke(api_key=api_key, actor=actor, at=timezone.now() + grace)
    return new_key, token


def api_keys_expiring_notify(*, now: datetime | None = None) -> int:
    """Record ``api_key.expiring`` once per live key that expires within 7 days.

    ``expiry_notified_at`` remembers the notice on the key itself, so a run every minute reads
    only the keys still to notify (whatever the event log's retention); return how many.
    """
    now = now or timezone.now()
    # Not a rotated key within its grace either: it is revoked before it could expire.
    expiring = ApiKey.objects.with_status(["active"], now).filter(
        revoked_at=None, expires_at__lte=now + EXPIRY_NOTICE, expiry_notified_at=None
    )
    recorded = 0
    for key_id in expiring.values_list("pk", flat=True).iterator():
        with transaction.atomic():
            # Under the key's lock, so that two runs at once cannot both record its notice.
            api_key = (
                ApiKey.objects.select_for_update()
                .select_related("account")
                .filter(pk=key_id, expiry_notified_at=None)
                .first()
            )
            if api_key is None:
                continue
            api_key.expiry_notified_at = now
            api_key.save(update_fields=["expiry_notified_at"])
            record_event(
                type="api_key.expiring",
                account=api_key.account,
                object_type="api_key",
                obj=api_key_representation(api_key),
            )
            recorded += 1
    return recorded

"""Write-side operations on users, accounts and API keys.

Every function is keyword-only and atomic; views, admin actions and management commands call
these so that each rule exists once.
"""

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounts import keys
from accounts.models import Account, ApiKey, Membership, User
from accounts.scopes import (
    Role,
    effective_scopes,
    expand_implied,
    scopes_allowed_for,
    unknown_scopes,
)
from accounts.selectors import api_key_with_context
from hosting.errors import (
    AccountSuspended,
    ApiKeyExpired,
    ApiKeyRevoked,
    AuthenticationRequired,
    InvalidApiKey,
    IpNotAllowed,
    ValidationFailed,
)

LAST_USED_WRITE_INTERVAL = timedelta(seconds=60)


def _field_error(name: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        message, details={"fields": [{"name": name, "code": code, "message": message}]}
    )


@transaction.atomic
def account_create(
    *, name: str, owner_email: str, owner_password: str | None = None, owner_name: str = ""
) -> Account:
    """Create an account with its first owner, reusing the user if the e-mail is known."""
    email = owner_email.strip().lower()
    user = User.objects.filter(email__iexact=email).first()
    if user is None:
        user = User.objects.create_user(email=email, password=owner_password, name=owner_name)
    account = Account.objects.create(name=name)
    Membership.objects.create(account=account, user=user, role=Role.OWNER)
    return account


def normalize_allowed_ips(values: Iterable[str]) -> list[str]:
    """Parse CIDR networks (a bare address means that one host); raise on anything else."""
    networks = []
    for index, value in enumerate(values):
        try:
            networks.append(str(ipaddress.ip_network(str(value).strip(), strict=False)))
        except ValueError:
            raise ValidationFailed(
                "allowed_ips must be a list of IP addresses or CIDR networks.",
                details={
                    "fields": [
                        {
                            "name": f"allowed_ips.{index}",
                            "code": "invalid",
                            "message": f"{value!r} is not an IP address or CIDR network.",
                        }
                    ]
                },
            ) from None
    return networks


@transaction.atomic
def api_key_create(
    *,
    account: Account,
    user: User,
    name: str,
    scopes: Iterable[str],
    expires_at: datetime | None = None,
    allowed_ips: Iterable[str] = (),
    created_by: User | None = None,
) -> tuple[ApiKey, str]:
    """Create a key for ``user`` in ``account`` and return it with its token (shown only once).

    A key may only carry scopes that the user's current role allows.
    """
    scopes = sorted(set(scopes))
    name = name.strip()
    if not name:
        raise _field_error("name", "required", "A key needs a name.")
    if not scopes:
        raise _field_error("scopes", "required", "Choose at least one scope.")
    if unknown := unknown_scopes(scopes):
        raise _field_error("scopes", "invalid_choice", f"Unknown scopes: {', '.join(unknown)}.")
    membership = Membership.objects.filter(account=account, user=user).first()
    if membership is None:
        raise _field_error("user", "not_a_member", "The user is not a member of this account.")
    allowed = expand_implied(scopes_allowed_for(membership.role, is_staff=user.is_staff))
    if denied := sorted(set(scopes) - allowed):
        raise _field_error(
            "scopes",
            "not_permitted",
            f"The role {membership.role!r} may not grant: {', '.join(denied)}.",
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise _field_error("expires_at", "in_past", "The expiry must be in the future.")
    token, key_id = keys.make_token()
    pepper_id = keys.current_pepper_id()
    api_key = ApiKey.objects.create(
        account=account,
        user=user,
        name=name,
        key_id=key_id,
        digest=keys.digest_token(token, pepper_id),
        pepper_id=pepper_id,
        scopes=scopes,
        expires_at=expires_at,
        allowed_ips=normalize_allowed_ips(allowed_ips),
        created_by=created_by or user,
    )
    return api_key, token


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key at once and for good; revoking a revoked key changes nothing."""
    api_key = ApiKey.objects.select_for_update().get(pk=api_key.pk)
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


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
    api_key = api_key_with_context(key_id=parsed.key_id)
    if api_key is None or not keys.token_matches(
        parsed.token, digest=api_key.digest, pepper_id=api_key.pepper_id
    ):
        raise InvalidApiKey()
    if api_key.revoked_at is not None:
        raise ApiKeyRevoked()
    if api_key.expires_at is not None and api_key.expires_at <= timezone.now():
        raise ApiKeyExpired()
    if api_key.role is None or not api_key.user.is_active:
        raise InvalidApiKey()
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

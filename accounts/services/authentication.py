"""Bearer API keys: from the header to a principal, its access checks and its last use."""

import ipaddress
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from django.utils import timezone

from accounts import keys
from accounts.key_cache import (
    SentLookup,
    api_key_cache_refresh,
    api_key_expected,
    api_key_lookup_counting,
    api_key_lookup_sent,
)
from accounts.models import Account, ApiKey, User
from accounts.roles import (
    effective_scopes,
)
from hosting.errors import (
    AccountSuspended,
    ApiKeyExpired,
    ApiKeyRevoked,
    ApplicationError,
    AuthenticationRequired,
    InvalidApiKey,
    IpNotAllowed,
)

LAST_USED_WRITE_INTERVAL = timedelta(seconds=60)


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """Who a request acts as: the key, its user and account, and its rights right now."""

    api_key: ApiKey
    user: User
    account: Account
    role: str
    scopes: frozenset[str]
    # The key's requests in the rate-limit window, this one included, when they were counted
    # with the lookup (api_key_authenticate's ``window``); None when they were not.
    counted: int | None = None


class KeyRequestCounter(Protocol):
    """Where the API counts a key's requests (``accounts.api.authentication``)."""

    ttl: int  # seconds a new counter lives

    def shared_key(self, key_id: str) -> str | None:
        """The Redis key of the key's counter in the request's window; None when the counters
        are not in Redis."""

    def uncount(self, key_id: str) -> None:
        """Take back one request counted against the key."""


def parse_bearer(header: str) -> str:
    """Extract the token from ``Authorization: Bearer <token>`` (scheme case-insensitive)."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        raise AuthenticationRequired()
    if not token or " " in token:
        raise InvalidApiKey()
    return token


@dataclass(frozen=True)
class LookupAnswer:
    """A key lookup's answer read before ``api_key_authenticate`` is called with it (a
    ``SentAuthentication`` whose guess was not confirmed): the key, the request's count in its
    window (None: not counted) and the presented token's digest it was asked with."""

    parsed: keys.ParsedToken
    api_key: ApiKey | None
    counted: int | None
    computed: tuple[str, str] | None
    # The 401 the expected key gave the token, when the answer is that very key: given again,
    # not worked out twice (a wrong secret costs what it costs for an unknown key id).
    refusal: ApplicationError | None = None


class SentAuthentication:
    """An authentication whose key lookup (and count) is on its way to Redis
    (``api_key_authentication_sent``), with the principal it will most likely confirm:
    the one made from the key this process decoded last for the key id."""

    def __init__(self, parsed: keys.ParsedToken, computed: tuple[str, str], lookup: SentLookup):
        self.parsed, self.computed, self.lookup = parsed, computed, lookup

    def principal(self) -> ApiKeyPrincipal:
        """The expected principal (not counted yet); the contract's 401 if the expected key
        refuses the token (``read(refusal=...)`` takes it)."""
        return _principal(self.parsed, self.lookup.kept, None, self.computed)

    def read(self, *, refusal: ApplicationError | None = None) -> tuple[LookupAnswer, bool]:
        """The lookup's answer, and whether it is the expected key (the same entry): then
        ``principal()`` is exactly what ``api_key_authenticate`` would have made from it.
        ``refusal``: what ``principal()`` raised, kept in the answer when it is that key."""
        api_key, counted, same = self.lookup.read()
        answer = LookupAnswer(
            self.parsed, api_key, counted, self.computed, refusal if same else None
        )
        return answer, same

    def abandon(self) -> None:
        """Leave the lookup's answer unread (``SentScript.abandon``)."""
        self.lookup.abandon()


def api_key_authentication_sent(
    *, header: str, counter: KeyRequestCounter
) -> SentAuthentication | None:
    """Send the lookup of the header's key to Redis without waiting for it, when this process
    knows what it will most likely answer (``SentAuthentication``; its ``read()`` must be
    called); None when it cannot (no Bearer token, a malformed one, no shared cache, a key not
    seen here yet): the caller authenticates the ordinary way."""
    try:
        token = parse_bearer(header)
    except ApplicationError:
        return None
    key_id = keys.key_id_named(token)
    if key_id is None or not api_key_expected(key_id):
        return None  # nothing checked or digested: the ordinary way does it once
    parsed = keys.parse_token(token)
    if parsed is None:
        return None
    counter_key = counter.shared_key(parsed.key_id)
    if counter_key is None:
        return None
    computed = keys.token_digest_now(parsed.token)
    if computed is None:
        return None
    lookup = api_key_lookup_sent(
        key_id=parsed.key_id,
        digests=[computed[1]],
        counter_key=counter_key,
        counter_ttl=counter.ttl,
    )
    return None if lookup is None else SentAuthentication(parsed, computed, lookup)


def api_key_authenticate(
    *,
    header: str,
    counter: KeyRequestCounter | None = None,
    answer: LookupAnswer | None = None,
) -> ApiKeyPrincipal:
    """Resolve an Authorization header to a principal, or raise the contract's 401 error.

    Malformed tokens, bad checksums, unknown key ids, wrong secrets and keys of users who left
    the account or were deactivated all get the same ``invalid_api_key``, so nothing can be
    learned by probing.

    With a ``counter``, the request is counted in its key's rate-limit window in the same round
    trip as the cached key is read, when it can be (``principal.counted``); a request refused
    here is taken back out of it: refusals count against the client's address, not the key.

    ``answer``: the lookup's answer already read for this header (``SentAuthentication``),
    used instead of asking again (which would count the request twice).
    """
    token = parse_bearer(header)
    if answer is not None and answer.parsed.token == token:
        parsed = answer.parsed  # checked once, when the lookup was sent
    else:
        answer = None
        parsed_now = keys.parse_token(token)
        if parsed_now is None:
            raise InvalidApiKey()
        parsed = parsed_now
    computed: tuple[str, str] | None
    if answer is not None:
        api_key, counted, computed = answer.api_key, answer.counted, answer.computed
        if answer.refusal is not None:
            if counted is not None and counter is not None:
                counter.uncount(parsed.key_id)
            raise answer.refusal
    else:
        counter_key = counter.shared_key(parsed.key_id) if counter else None
        computed = keys.token_digest_now(parsed.token) if counter_key else None
        api_key, counted = api_key_lookup_counting(
            key_id=parsed.key_id,
            digests=[computed[1]] if computed else [],
            counter_key=counter_key,
            counter_ttl=counter.ttl if counter else 0,
        )
    try:
        return _principal(parsed, api_key, counted, computed)
    except ApplicationError:
        if counted is not None and counter is not None:
            counter.uncount(parsed.key_id)
        raise


def _principal(
    parsed: keys.ParsedToken,
    api_key: ApiKey | None,
    counted: int | None,
    computed: tuple[str, str] | None,
) -> ApiKeyPrincipal:
    # Digested and compared even for an unknown key id, so that it answers as slowly as a
    # wrong secret of a real key does.
    matches = keys.token_matches(
        parsed.token,
        digest=api_key.digest if api_key else None,
        pepper_id=api_key.pepper_id if api_key else None,
        computed=computed,
    )
    if api_key is None or not matches:
        raise InvalidApiKey()
    # A key whose user left the account or was deactivated says only "invalid", even if it was
    # also revoked on the way out (CONTRACT §5).
    role: str | None = api_key.role  # type: ignore[attr-defined]  # annotated by its lookup
    if role is None or not api_key.user.is_active:
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
        role=role,
        scopes=effective_scopes(
            api_key.scopes,
            role,
            is_staff=api_key.user.is_staff,
            staff_role=api_key.user.staff_role_now,
        ),
        counted=counted,
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

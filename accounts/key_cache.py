"""A shared cache of API key lookups, so the hot path needs no query to authenticate.

Only used when the cache is shared by every process (Redis): a per-process cache could not be
invalidated from another process. Each key has a version number; a change to the key, its
user, its membership or its account bumps the version after commit, and a cached entry carries
the version it was read under, so a lookup racing a revocation can never be served afterwards:
the next request sees a newer version and reads the database again.
"""

from django.conf import settings
from django.core.cache import cache

from accounts.models import ApiKey
from accounts.selectors import api_key_with_context

ENTRY_TTL = 300


def _keys(key_id: str) -> tuple[str, str]:
    return f"apikey:{key_id}", f"apikey-version:{key_id}"


def enabled() -> bool:
    return bool(settings.REDIS_URL)


def api_key_lookup(*, key_id: str) -> ApiKey | None:
    """The key with user, account and role, from the shared cache when it is still current."""
    if not enabled():
        return api_key_with_context(key_id=key_id)
    entry_key, version_key = _keys(key_id)
    found = cache.get_many([entry_key, version_key])
    version = found.get(version_key, 0)
    entry = found.get(entry_key)
    if entry is not None and entry[0] == version:
        return entry[1]
    api_key = api_key_with_context(key_id=key_id)
    if api_key is not None:
        cache.set(entry_key, (version, api_key), ENTRY_TTL)
    return api_key


def api_key_cache_refresh(api_key: ApiKey) -> None:
    """Store a key that was just changed by the request itself (its last use)."""
    if not enabled():
        return
    entry_key, _ = _keys(api_key.key_id)
    entry = cache.get(entry_key)
    if entry is not None:
        cache.set(entry_key, (entry[0], api_key), ENTRY_TTL)


def api_key_cache_invalidate(key_ids) -> None:
    """Make every process read these keys from the database on their next request."""
    if not enabled():
        return
    for key_id in key_ids:
        _, version_key = _keys(key_id)
        try:
            cache.incr(version_key)
        except ValueError:  # no version yet: start one that no cached entry can carry
            cache.set(version_key, 1, None)

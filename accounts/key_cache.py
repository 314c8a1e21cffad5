"""A shared cache of API key lookups, so the hot path needs no query to authenticate.

Only used when the cache is shared by every process (Redis): a per-process cache could not be
invalidated from another process. Each key has a version number; a change to the key, its
user, its membership or its account bumps the version after commit, and a cached entry carries
the version it was read under, so a lookup racing a revocation can never be served afterwards:
the next request sees a newer version and reads the database again.

The entry and the version are read with one ``MGET`` through the shared redis-py client (one
round trip). Versions have no expiry and entries expire after ``ENTRY_TTL``: under a
``volatile-*`` eviction policy Redis can drop an entry but never a version, so an evicted
version cannot bring an outdated entry back.
"""

import pickle

from django.conf import settings

from accounts.models import ApiKey
from accounts.selectors import api_key_with_context
from hosting.shared_redis import redis_client

ENTRY_TTL = 300
PREFIX = "hms:apikey:"


def _keys(key_id: str) -> tuple[str, str]:
    return f"{PREFIX}entry:{key_id}", f"{PREFIX}version:{key_id}"


def enabled() -> bool:
    return bool(settings.REDIS_URL)


def _client():
    return redis_client(settings.REDIS_URL)


def api_key_lookup(*, key_id: str) -> ApiKey | None:
    """The key with user, account and role, from the shared cache when it is still current.

    An unknown key id is cached too (as "no such key"): otherwise a probe of a made-up id
    would cost a database query where a real, cached one costs none, and the time of the
    answer would tell them apart. Creating a key bumps its id's version, so a cached absence
    never hides a new key.
    """
    if not enabled():
        return api_key_with_context(key_id=key_id)
    version, found, cached = _current(key_id)
    if found:
        return cached
    api_key = api_key_with_context(key_id=key_id)
    _store(key_id, version, api_key)
    return api_key


def _current(key_id: str) -> tuple[int, bool, ApiKey | None]:
    """The key's version, whether a current entry was cached, and that entry (one MGET)."""
    raw_entry, raw_version = _client().mget(*_keys(key_id))
    version = int(raw_version or 0)
    if raw_entry is not None:
        entry_version, api_key = pickle.loads(raw_entry)  # noqa: S301 - our own entries
        if entry_version == version:
            return version, True, api_key
    return version, False, None


def _store(key_id: str, version: int, api_key: ApiKey | None) -> None:
    payload = pickle.dumps((version, api_key), protocol=pickle.HIGHEST_PROTOCOL)
    _client().set(_keys(key_id)[0], payload, ex=ENTRY_TTL)


def api_key_cache_refresh(api_key: ApiKey) -> None:
    """Store a key that was just changed by the request itself (its last use).

    Only over an entry that is still current: if the key changed meanwhile, the next request
    must read the database, not this request's copy.
    """
    if not enabled():
        return
    version, _, cached = _current(api_key.key_id)
    if cached is not None:
        _store(api_key.key_id, version, api_key)


def api_key_cache_invalidate(key_ids) -> None:
    """Make every process read these keys from the database on their next request."""
    if not enabled():
        return
    pipe = _client().pipeline(transaction=False)
    for key_id in key_ids:
        pipe.incr(_keys(key_id)[1])
    pipe.execute()

"""A shared cache of API key lookups, so the hot path needs no query to authenticate.

Only used when the cache is shared by every process (Redis): a per-process cache could not be
invalidated from another process. Each key has a version number; a change to the key, its
user, its membership or its account bumps the version after commit, and a cached entry carries
the version it was read under, so a lookup racing a revocation can never be served afterwards:
the next request sees a newer version and reads the database again.

A process keeps the keys it decoded (``_decoded``), each with the bytes and the version it was
decoded from: a request whose entry and version are those bytes and that version gets a copy
of the kept key instead of decoding the entry again (the copy is the request's to change: its
last use, say). Nothing is trusted that the shared cache does not say again on every request.

The entry and the version are read with one ``MGET`` through the shared redis-py client (one
round trip). A request's lookup also counts it in its key's rate-limit window in that same
round trip (``api_key_lookup_counting``): one script reads both and increments the counter
only when the entry is current and holds the digest of the token presented, so that a request
with somebody's key id and a wrong secret never uses up that key's limit.

Versions have no expiry and entries expire after ``ENTRY_TTL``: under a
``volatile-*`` eviction policy Redis can drop an entry but never a version, so an evicted
version cannot bring an outdated entry back.

An entry is a small JSON document of plain field values, never a pickle: whoever can write to
Redis must not be able to run code in the web processes. The rows are rebuilt from it as if
read from the database. An entry that does not parse, has another shape (a field added or
removed by a release, say) or carries an outdated version is treated as absent and the key is
read from the database again. The user's password hash is left out: it is loaded on access.

Apps above this one may keep a small value of their own with the entry (``extra_register``):
read when the entry is filled, checked like the rows when it is read back, and found on the key
(``cached_extra``). The servers app keeps the user's per-server grants there, so that a guest's
request reads them from the same MGET; whoever changes what such a value is read from must
invalidate the keys it belongs to (``api_keys_of_member_invalidate``, signals of that app).
"""

from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, models, transaction
from django.db.models.base import ModelState

from accounts.models import Account, ApiKey, User
from accounts.roles import Role
from accounts.selectors import api_key_context_row, api_key_with_context
from hosting.representations import json_copy
from hosting.shared_redis import KeptScript, SentScript, redis_client

ENTRY_TTL = 300
PREFIX = "hms:apikey:"

_ROLES = frozenset(Role.values)

# name -> (read it for a key being cached, check a cached value: the value or _Malformed)
_extras: dict[str, tuple[Callable[[ApiKey], Any], Callable[[Any], Any]]] = {}


class _Malformed(Exception):
    """A cached entry that is not one this code wrote."""


def _datetime(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _Malformed
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _Malformed from None
    if parsed.tzinfo is None:
        raise _Malformed
    return parsed


def _of_type(kind: type) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        # type() rather than isinstance(): True must not pass for an integer.
        if type(value) is not kind:
            raise _Malformed
        return value

    return parse


def _strings(value: Any) -> list[str]:
    # The only JSON fields cached (scopes, allowed networks) hold lists of strings.
    if type(value) is not list or any(type(item) is not str for item in value):
        raise _Malformed
    return value


def _parser(field: models.Field) -> Callable[[Any], Any]:
    """How to read one field's JSON value back, refusing any other type. A field type not listed
    here fails at import, so a new field cannot quietly make every entry unreadable."""
    if isinstance(field, models.ForeignKey):
        parse = _parser(field.target_field)
    elif isinstance(field, models.DateTimeField):
        parse = _datetime
    elif isinstance(field, models.BooleanField):
        parse = _of_type(bool)
    elif isinstance(field, models.IntegerField):
        parse = _of_type(int)
    elif isinstance(field, models.JSONField):
        parse = _strings
    elif isinstance(field, (models.CharField, models.TextField, models.GenericIPAddressField)):
        parse = _of_type(str)
    else:
        raise TypeError(f"the API key cache cannot store {field!r}")
    if not field.null:
        return parse
    return lambda value: None if value is None else parse(value)


class _Shape:
    """The cached fields of one model, and how to write and rebuild an instance of it."""

    def __init__(self, model: type[models.Model], *, leave_out: tuple[str, ...] = ()):
        self.model = model
        fields = [f for f in model._meta.concrete_fields if f.attname not in leave_out]
        self.names = tuple(f.attname for f in fields)
        self.name_set = frozenset(self.names)
        self.parsers = tuple((f.attname, _parser(f)) for f in fields)
        self.lists = tuple(f.attname for f in fields if isinstance(f, models.JSONField))

    def dump(self, instance: models.Model) -> dict[str, Any]:
        return {name: getattr(instance, name) for name in self.names}

    def load(self, document: Any) -> models.Model:
        if not isinstance(document, dict) or document.keys() != self.name_set:
            raise _Malformed
        values = [parse(document[name]) for name, parse in self.parsers]
        return self.model.from_db(DEFAULT_DB_ALIAS, self.names, values)

    def copy(self, instance: models.Model) -> models.Model:
        """A copy of a loaded instance that shares nothing a request could change: its own
        state (as ``copy.copy`` of it makes it, without copy's generic protocol, a few
        percent of a hot list's time), no cached relations, its own JSON values."""
        copied = self.model.__new__(self.model)
        copied.__dict__.update(instance.__dict__)
        state = ModelState.__new__(ModelState)
        values = instance._state.__dict__.copy()
        values.pop("related_managers_cache", None)  # made again, empty, when first read
        values["fields_cache"] = {}
        state.__dict__.update(values)
        copied._state = state
        for name in self.lists:
            value = copied.__dict__.get(name)
            if value is not None:
                copied.__dict__[name] = json_copy(value)
        return copied


_KEY = _Shape(ApiKey)
_USER = _Shape(User, leave_out=("password",))
_ACCOUNT = _Shape(Account)


def extra_register(
    name: str, *, read: Callable[[ApiKey], Any], check: Callable[[Any], Any]
) -> None:
    """Keep ``read(api_key)`` (a JSON value) with each cached entry under ``name``; ``check``
    returns a cached value as it was read or raises ``ValueError`` (or ``TypeError``) when it
    is not one ``read`` could have made, which makes the entry absent."""
    _extras[name] = (read, check)


def cached_extra(api_key: ApiKey, name: str) -> Any:
    """The value kept under ``name`` with the key's cached entry; None when the key was read
    from the database (no cache, or a miss), where the caller reads it itself."""
    return getattr(api_key, "cached_extras", {}).get(name)


def _encode(version: int, api_key: ApiKey | None) -> bytes:
    if api_key is None:
        return orjson.dumps({"version": version, "key": None})
    extras = getattr(api_key, "cached_extras", None)
    if extras is None or extras.keys() != _extras.keys():
        # Kept on the key too: the request that fills the entry uses them as a hit would.
        extras = api_key.cached_extras = {
            name: read(api_key) for name, (read, _) in _extras.items()
        }
    return orjson.dumps(
        {
            "version": version,
            "key": _KEY.dump(api_key),
            "user": _USER.dump(api_key.user),
            "account": _ACCOUNT.dump(api_key.account),
            "role": api_key.role,
            "extras": extras,
        }
    )


def _extras_load(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict) or document.keys() != _extras.keys():
        raise _Malformed
    try:
        return {name: check(document[name]) for name, (_, check) in _extras.items()}
    except (TypeError, ValueError):
        raise _Malformed from None


def _decode(raw: bytes, *, key_id: str, version: int) -> ApiKey | None:
    """The key an entry holds (``None``: cached as absent); ``_Malformed`` if it is not ours or
    was read under another version."""
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _Malformed from None
    if not isinstance(document, dict) or type(document.get("version")) is not int:
        raise _Malformed
    if document["version"] != version:
        raise _Malformed
    if document.keys() == {"version", "key"} and document["key"] is None:
        return None
    if document.keys() != {"version", "key", "user", "account", "role", "extras"}:
        raise _Malformed
    role = document["role"]
    if role is not None and (type(role) is not str or role not in _ROLES):
        raise _Malformed
    api_key = _KEY.load(document["key"])
    user, account = _USER.load(document["user"]), _ACCOUNT.load(document["account"])
    if api_key.key_id != key_id or (api_key.user_id, api_key.account_id) != (user.pk, account.pk):
        raise _Malformed
    api_key.user, api_key.account, api_key.role = user, account, role
    api_key.cached_extras = _extras_load(document["extras"])
    return api_key


# Keys this process decoded, by key id: (the entry's bytes, its version, the key). Bounded, so
# a process's memory stays flat however many keys it serves.
_decoded: dict[str, tuple[bytes, int, ApiKey | None]] = {}
DECODED_LIMIT = 1024


def _decode_kept(raw: bytes, *, key_id: str, version: int) -> ApiKey | None:
    """``_decode``, from the key this process decoded from the same bytes under the same
    version when there is one; always a copy the request may change."""
    kept = _decoded.get(key_id)
    if kept is not None and kept[1] == version and kept[0] == raw:
        return _copy(kept[2])
    api_key = _decode(raw, key_id=key_id, version=version)
    if len(_decoded) >= DECODED_LIMIT:
        _decoded.clear()
    _decoded[key_id] = (raw, version, api_key)
    return _copy(api_key)


def _copy(api_key: ApiKey | None) -> ApiKey | None:
    if api_key is None:
        return None
    copied = _key_copy(api_key)
    copied.cached_extras = json_copy(api_key.cached_extras)
    return copied


def _key_copy(api_key: ApiKey) -> ApiKey:
    """A copy of a key with its user, account and role that shares nothing a request could
    change with ``api_key``."""
    copied = _KEY.copy(api_key)
    assert isinstance(copied, ApiKey)
    copied.user, copied.account = _USER.copy(api_key.user), _ACCOUNT.copy(api_key.account)
    copied.role = api_key.role
    return copied


# Without the shared cache: the key last built from each key id's row (bounded), with that row.
# A request whose row reads exactly the same (every column of the key, its user and its account,
# and the role: any change to any of them, a revocation or a demotion, is another row) gets a
# copy of it instead of three model instances built again (issue 35). The row is still read
# on every request.
_built: dict[str, tuple[tuple, ApiKey]] = {}


def _database_lookup(key_id: str) -> ApiKey | None:
    found = api_key_context_row(key_id=key_id)
    if found is None:
        return None
    kept = _built.get(key_id)
    if kept is not None and found.values is not None and kept[0] == found.values:
        return _key_copy(kept[1])
    api_key = found.instance()
    if found.values is not None:
        if len(_built) >= DECODED_LIMIT:
            _built.clear()
        _built[key_id] = (found.values, _key_copy(api_key))
    return api_key


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
        return _database_lookup(key_id)
    version, found, cached = _current(key_id)
    if found:
        return cached
    api_key = api_key_with_context(key_id=key_id)
    _store(key_id, version, api_key)
    return api_key


# GET the entry and the version; when the entry is current (its version is the stored one) and
# its key's digest is one of ARGV[2..] (the presented token's, under the current pepper), also
# INCR the rate-limit counter KEYS[3] (EXPIRE ARGV[1] when new). Answers {entry, version,
# count or false}. An entry that is not JSON or not one of ours counts nothing: Python reads
# the key from the database and counts it on its own.
_LOOKUP_AND_COUNT = """
local entry = redis.call('GET', KEYS[1])
local version = redis.call('GET', KEYS[2])
local count = false
if entry then
    local ok, document = pcall(cjson.decode, entry)
    if ok and type(document) == 'table' and type(document.key) == 'table'
            and document.version == tonumber(version or '0') then
        local digest = document.key.digest
        for i = 2, #ARGV do
            if digest == ARGV[i] then
                count = redis.call('INCR', KEYS[3])
                if count == 1 then redis.call('EXPIRE', KEYS[3], ARGV[1]) end
                break
            end
        end
    end
end
return {entry, version, count}
"""


@cache
def _lookup_script(url: str) -> KeptScript:
    return KeptScript(redis_client(url), _LOOKUP_AND_COUNT)


def api_key_lookup_counting(
    *, key_id: str, digests: list[str], counter_key: str | None, counter_ttl: int
) -> tuple[ApiKey | None, int | None]:
    """``api_key_lookup`` that also counts the request in ``counter_key`` (a rate-limit counter
    in Redis) in the same round trip, when the cached key is current and its digest is one of
    ``digests``: ``(key, count)``. The count is None when nothing was counted (no shared cache,
    no counter key, a miss or another secret): the caller counts the request itself."""
    if not enabled() or counter_key is None or not digests:
        return api_key_lookup(key_id=key_id), None
    raw_entry, raw_version, count = _lookup_script(settings.REDIS_URL)(
        keys=[*_keys(key_id), counter_key], args=[counter_ttl, *digests]
    )
    return _answered(key_id, raw_entry, raw_version, count)


def _answered(key_id: str, raw_entry, raw_version, count) -> tuple[ApiKey | None, int | None]:
    """The key and the count of the lookup script's answer (``api_key_lookup_counting``)."""
    version, counted = int(raw_version or 0), (int(count) if count else None)
    if raw_entry is not None:
        try:
            return _decode_kept(raw_entry, key_id=key_id, version=version), counted
        except _Malformed:
            pass  # one an older release wrote, say: the request may have been counted already
    api_key = api_key_with_context(key_id=key_id)
    _store(key_id, version, api_key)
    return api_key, counted


class SentLookup:
    """``api_key_lookup_counting`` sent to Redis and not read yet (``api_key_lookup_sent``).

    ``kept`` is a copy of the key this process last decoded for the key id: what the answer
    will most likely hold. ``read()`` answers as the lookup would have, and whether the answer
    is the very entry (the same bytes, the same version) ``kept`` was decoded from: then
    ``kept`` is the key the lookup would have given (a copy of it), nothing decided from it is
    out of date, and nobody changed the key, its user, membership or account in between."""

    def __init__(self, key_id: str, sent: SentScript, entry: tuple[bytes, int], kept: ApiKey):
        self.key_id, self.sent, self.entry, self.kept = key_id, sent, entry, kept

    def read(self) -> tuple[ApiKey | None, int | None, bool]:
        """``(key, count, same)``: ``same`` when the answer is the entry ``kept`` was decoded
        from; ``kept`` is confirmed when it is the same and the request was counted."""
        raw_entry, raw_version, count = self.sent.read()
        if raw_entry == self.entry[0] and int(raw_version or 0) == self.entry[1]:
            # ``kept`` itself (not a second copy): the request answered ahead holds it, and a
            # list's answer changes nothing on it.
            return self.kept, (int(count) if count else None), True
        api_key, counted = _answered(self.key_id, raw_entry, raw_version, count)
        return api_key, counted, False

    def abandon(self) -> None:
        """Leave the answer unread (``SentScript.abandon``)."""
        self.sent.abandon()


def api_key_expected(key_id: str) -> bool:
    """Whether this process can say what the shared cache most likely holds for the key id (a
    key it decoded before), so that its lookup may be sent ahead (``api_key_lookup_sent``)."""
    if not enabled():
        return False
    kept = _decoded.get(key_id)
    return kept is not None and kept[2] is not None


def api_key_lookup_sent(
    *, key_id: str, digests: list[str], counter_key: str | None, counter_ttl: int
) -> SentLookup | None:
    """``api_key_lookup_counting`` sent without waiting for its answer, for a key this process
    has decoded before (``SentLookup``); None when there is nothing to expect (no shared
    cache, no counter, a key id not kept here or kept as absent) or it could not be sent:
    the caller looks the key up the ordinary way. Whoever gets one must ``read()`` it."""
    if not enabled() or counter_key is None or not digests:
        return None
    kept = _decoded.get(key_id)
    if kept is None or kept[2] is None:
        return None
    sent = _lookup_script(settings.REDIS_URL).send(
        keys=[*_keys(key_id), counter_key], args=[counter_ttl, *digests]
    )
    if sent is None:
        return None
    expected = _copy(kept[2])
    assert expected is not None
    return SentLookup(key_id, sent, (kept[0], kept[1]), expected)


def _current(key_id: str) -> tuple[int, bool, ApiKey | None]:
    """The key's version, whether a current entry was cached, and that entry (one MGET)."""
    raw_entry, raw_version = _client().mget(*_keys(key_id))
    version = int(raw_version or 0)
    if raw_entry is not None:
        try:
            return version, True, _decode_kept(raw_entry, key_id=key_id, version=version)
        except _Malformed:
            pass
    return version, False, None


def _store(key_id: str, version: int, api_key: ApiKey | None) -> None:
    raw = _encode(version, api_key)
    _client().set(_keys(key_id)[0], raw, ex=ENTRY_TTL)
    # This process knows what the entry now holds: kept decoded, so that the next request
    # with the key expects it (a lookup sent ahead, ``api_key_lookup_sent``) and is not
    # answered twice.
    _keep(key_id, raw, version)


def _keep(key_id: str, raw: bytes, version: int) -> None:
    try:
        _decode_kept(raw, key_id=key_id, version=version)
    except _Malformed:  # never for an entry this code wrote
        _decoded.pop(key_id, None)


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


def api_keys_of_member_invalidate(*, account_id: str, user_id: str) -> None:
    """Make every process read the member's keys in the account afresh: at once and again after
    commit, which defeats a request that read the old rows between the change and its commit."""
    if not enabled():
        return
    key_ids = list(
        ApiKey.objects.filter(account_id=account_id, user_id=user_id).values_list(
            "key_id", flat=True
        )
    )
    if key_ids:
        api_key_cache_invalidate(key_ids)
        transaction.on_commit(lambda: api_key_cache_invalidate(key_ids))

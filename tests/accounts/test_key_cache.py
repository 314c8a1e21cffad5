"""The shared (Redis) API key cache holds plain JSON and never trusts what it reads back."""

import os
import pickle
from datetime import UTC, datetime

import orjson
import pytest

from accounts import key_cache, keys
from accounts.models import Account, ApiKey, User
from accounts.selectors import api_key_with_context
from tests.redis_faults import skip_without_redis

SERVERS = "/v1/servers"


@pytest.fixture(autouse=True)
def _needs_redis():
    skip_without_redis("the shared key cache needs Redis")


class _RunsCode:
    """Unpickling this runs a shell command: what an attacker who can write to Redis would try."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _hostile_entries(marker, key_id: str) -> dict[str, bytes]:
    version = _version(key_id)
    return {
        "pickle": pickle.dumps((version, _RunsCode(marker))),
        "garbage": b"\x80\x04\xff not json \x00",
        "wrong shape": orjson.dumps({"version": version, "key": {"key_id": key_id}}),
        "a list": orjson.dumps([version, None]),
    }


def _entry_key(key_id: str) -> str:
    return key_cache._keys(key_id)[0]


def _version(key_id: str) -> int:
    return int(key_cache._client().get(key_cache._keys(key_id)[1]) or 0)


def _write_entry(key_id: str, raw: bytes) -> None:
    key_cache._client().set(_entry_key(key_id), raw, ex=key_cache.ENTRY_TTL)


def _read_entry(key_id: str) -> dict:
    return orjson.loads(key_cache._client().get(_entry_key(key_id)))


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def _unknown_token(key_id: str) -> str:
    body = f"hms_{key_id}{'A' * 32}"
    return body + keys._checksum(body)


def test_a_cached_key_is_rebuilt_with_every_field_as_read_from_the_database(
    owner, account, make_token, django_assert_num_queries
):
    make_token(
        owner,
        account,
        expires_at=datetime(2099, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        allowed_ips=["127.0.0.0/8", "2001:db8::/32"],
    )
    key_id = ApiKey.objects.get().key_id
    from_database = api_key_with_context(key_id=key_id)
    key_cache.api_key_lookup(key_id=key_id)

    with django_assert_num_queries(0):  # every field came back from the entry, none refused
        cached = key_cache.api_key_lookup(key_id=key_id)

    assert cached is not from_database
    assert _fields(cached) == _fields(from_database)
    assert cached.expires_at == datetime(2099, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert cached.role == from_database.role == "owner"
    user_fields = _fields(from_database.user)
    del user_fields["password"]
    assert {k: v for k, v in _fields(cached.user).items() if k != "password"} == user_fields
    assert _fields(cached.account) == _fields(from_database.account)
    assert isinstance(cached.user, User) and isinstance(cached.account, Account)
    assert cached._state.adding is False  # as if loaded: save() updates, never inserts


def test_the_password_hash_is_not_cached_but_loads_on_access(
    owner, account, make_token, django_assert_num_queries
):
    make_token(owner, account)
    key_id = ApiKey.objects.get().key_id
    key_cache.api_key_lookup(key_id=key_id)

    assert "password" not in _read_entry(key_id)["user"]
    cached = key_cache.api_key_lookup(key_id=key_id)
    with django_assert_num_queries(1):
        assert cached.user.check_password("correct-horse-battery")


def test_the_hostile_pickle_would_run_code_if_it_were_unpickled(tmp_path):
    marker = tmp_path / "ran"
    pickle.loads(_hostile_entries(marker, "Q" * 12)["pickle"])  # noqa: S301 - the point
    assert marker.exists()


@pytest.mark.parametrize("kind", ["pickle", "garbage", "wrong shape", "a list"])
def test_a_hostile_entry_for_an_unknown_key_id_is_ignored_and_never_run(
    db, client, tmp_path, kind, django_assert_num_queries
):
    marker = tmp_path / "ran"
    key_id = "Q" * 12
    _write_entry(key_id, _hostile_entries(marker, key_id)[kind])

    with django_assert_num_queries(1):  # read from the database again
        response = client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {_unknown_token(key_id)}")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert not marker.exists()
    assert _read_entry(key_id) == {"version": _version(key_id), "key": None}


@pytest.mark.parametrize("kind", ["pickle", "garbage", "wrong shape", "a list"])
def test_a_hostile_entry_for_a_real_key_is_replaced_from_the_database(
    owner, account, make_token, client_for, tmp_path, kind
):
    marker = tmp_path / "ran"
    api = client_for(make_token(owner, account))
    key_id = ApiKey.objects.get().key_id
    _write_entry(key_id, _hostile_entries(marker, key_id)[kind])

    assert api.get(SERVERS).status_code == 200
    assert not marker.exists()
    assert _read_entry(key_id)["key"]["key_id"] == key_id


def _valid_entry(key_id: str) -> dict:
    key_cache.api_key_lookup(key_id=key_id)
    return _read_entry(key_id)


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda e: e.update(version=e["version"] - 1), id="an older version"),
        pytest.param(lambda e: e["user"].update(is_active="yes"), id="a string for a boolean"),
        pytest.param(lambda e: e["key"].update(revoked_at="yesterday"), id="not a datetime"),
        pytest.param(lambda e: e["key"].update(revoked_at="2020-01-01T00:00:00"), id="naive"),
        pytest.param(lambda e: e["key"].update(scopes="servers:read"), id="scopes not a list"),
        pytest.param(lambda e: e["account"].pop("status"), id="a field missing"),
        pytest.param(lambda e: e["account"].update(extra=1), id="a field too many"),
        pytest.param(lambda e: e.update(role=["owner"]), id="an unknown role"),
        pytest.param(lambda e: e["key"].update(key_id="Z" * 12), id="another key's entry"),
    ],
)
def test_an_entry_of_the_wrong_shape_or_version_is_read_again_from_the_database(
    owner, account, make_token, tamper, django_assert_num_queries
):
    make_token(owner, account)
    key_id = ApiKey.objects.get().key_id
    entry = _valid_entry(key_id)
    tamper(entry)
    _write_entry(key_id, orjson.dumps(entry))

    with django_assert_num_queries(1):
        api_key = key_cache.api_key_lookup(key_id=key_id)

    assert _fields(api_key) == _fields(ApiKey.objects.get())
    assert _read_entry(key_id) == _valid_entry(key_id)


def test_a_process_decodes_an_unchanged_entry_once_and_gives_each_request_its_own_copy(
    owner, account, make_token, monkeypatch, django_assert_num_queries
):
    make_token(owner, account, allowed_ips=["127.0.0.0/8"])
    key_id = ApiKey.objects.get().key_id
    key_cache.api_key_lookup(key_id=key_id)  # the entry filled from the database, and kept
    key_cache._decoded.pop(key_id)  # as in a process that did not fill it
    decoded = []
    real_decode = key_cache._decode

    def counting_decode(raw, **kwargs):
        decoded.append(raw)
        return real_decode(raw, **kwargs)

    monkeypatch.setattr(key_cache, "_decode", counting_decode)
    with django_assert_num_queries(0):
        first = key_cache.api_key_lookup(key_id=key_id)
        second = key_cache.api_key_lookup(key_id=key_id)
    assert len(decoded) == 1
    assert first is not second
    assert first.user is not second.user and first.account is not second.account
    assert _fields(first) == _fields(second)

    # What one request changes on its copy, the next request never sees.
    untouched = _fields(second), _fields(second.account), second.cached_extras
    first.last_used_at = datetime(2020, 1, 1, tzinfo=UTC)
    first.allowed_ips.append("10.0.0.0/8")
    first.account.name = "Changed in memory"
    for value in first.cached_extras.values():
        if isinstance(value, dict):
            value["srv_made_up"] = ["files:read"]
    third = key_cache.api_key_lookup(key_id=key_id)
    assert (_fields(third), _fields(third.account), third.cached_extras) == untouched
    assert len(decoded) == 1

    # A change to the key bumps its version: the old entry is found outdated (decoded to
    # compare its version), the key read from the database and stored, and the next request
    # decodes the new entry.
    ApiKey.objects.filter(key_id=key_id).update(name="Renamed")
    key_cache.api_key_cache_invalidate([key_id])
    assert key_cache.api_key_lookup(key_id=key_id).name == "Renamed"
    assert key_cache.api_key_lookup(key_id=key_id).name == "Renamed"
    assert key_cache.api_key_lookup(key_id=key_id).name == "Renamed"
    assert len(decoded) == 3

"""With Redis, authentication and rate limiting cost one round trip together (issue 35).

The key lookup's script reads the cached key and counts the request in the key's window; the
limit's headers stay exact, a refused request is counted against the client's address only,
and a wrong secret for somebody's key id never uses up that key's limit.
"""

from unittest import mock

import pytest
import redis
from redis.connection import AbstractConnection

from accounts import key_cache
from accounts.models import ApiKey
from hosting.shared_redis import redis_client
from tests.redis_faults import key_count, reply_lost_once, skip_without_redis

SERVERS = "/v1/servers"


@pytest.fixture(autouse=True)
def _needs_redis(settings):
    skip_without_redis("one round trip is the Redis path")


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """Every test here counts within one window."""


@pytest.fixture
def small_limits(settings):
    settings.RATE_LIMIT_PER_MINUTE = 5
    settings.RATE_LIMIT_ANON_PER_MINUTE = 3


def _round_trips():
    """Count what is written to Redis: one packed write per round trip (a script's call is
    one: EVALSHA), whichever way it is sent."""
    return mock.patch.object(
        AbstractConnection,
        "send_packed_command",
        autospec=True,
        side_effect=AbstractConnection.send_packed_command,
    )


def _command_name(packed) -> bytes:
    """The first command's name in a packed write (``*3\\r\\n$7\\r\\nEVALSHA\\r\\n...``)."""
    data = packed if isinstance(packed, bytes) else b"".join(packed)
    return data.split(b"\r\n")[2]


def _wrong_secret(token: str) -> str:
    from accounts import keys

    body = token[: -keys.CHECKSUM_LENGTH - 32] + "A" * 32
    return body + keys._checksum(body)


def test_a_cached_key_is_authenticated_and_counted_in_one_round_trip(
    owner, account, make_token, client_for, settings
):
    api = client_for(make_token(owner, account))
    api.get(SERVERS)  # fills the cache (and notes the key's first use)
    with _round_trips() as writes:
        responses = [api.get(SERVERS) for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert writes.call_count == 3
    assert {_command_name(call.args[1]) for call in writes.call_args_list} == {b"EVALSHA"}
    assert [r["X-RateLimit-Remaining"] for r in responses] == ["598", "597", "596"]


def test_the_limit_is_exact_and_refuses_over_it(owner_api, small_limits):
    remaining = [owner_api.get(SERVERS)["X-RateLimit-Remaining"] for _ in range(5)]
    assert remaining == ["4", "3", "2", "1", "0"]
    response = owner_api.get(SERVERS)
    assert response.status_code == 429
    assert response["X-RateLimit-Remaining"] == "0"


def test_a_wrong_secret_for_a_real_key_id_counts_against_the_address_not_the_key(
    owner, account, make_token, client_for, client, small_limits
):
    token = make_token(owner, account)
    api = client_for(token)
    assert api.get(SERVERS)["X-RateLimit-Remaining"] == "4"  # cached from here on
    key_id = ApiKey.objects.get().key_id
    guesses = [
        client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {_wrong_secret(token)}").status_code
        for _ in range(4)
    ]
    assert guesses == [401, 401, 401, 429]
    assert key_count(key_id) == 1
    assert api.get(SERVERS)["X-RateLimit-Remaining"] == "3"


@pytest.mark.parametrize("refusal", ["revoked", "ip_not_allowed", "suspended"])
def test_a_refused_key_with_its_right_secret_is_not_counted_against_the_key(
    owner, account, make_token, client_for, small_limits, refusal
):
    token = make_token(owner, account)
    api = client_for(token)
    api.get(SERVERS)
    api_key = ApiKey.objects.get()
    if refusal == "revoked":
        ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=api_key.created_at)
        key_cache.api_key_cache_invalidate([api_key.key_id])
        expected = 401
    elif refusal == "ip_not_allowed":
        ApiKey.objects.filter(pk=api_key.pk).update(allowed_ips=["192.0.2.0/24"])
        key_cache.api_key_cache_invalidate([api_key.key_id])
        expected = 403
    else:
        account.status = account.Status.SUSPENDED
        account.save()
        key_cache.api_key_cache_invalidate([api_key.key_id])
        expected = 403
    api.get(SERVERS)  # read afresh and cached again
    before = key_count(api_key.key_id)
    response = api.get(SERVERS)  # answered from the cache: counted, then taken back
    assert response.status_code == expected
    assert key_count(api_key.key_id) == before
    assert response["RateLimit-Policy"] == '"anonymous";q=3;w=60'


def test_a_key_under_an_older_pepper_is_still_counted_exactly(
    owner, account, make_token, client_for, settings
):
    token = make_token(owner, account)
    peppers = dict(settings.API_KEY_PEPPERS)
    older = next(iter(peppers))
    # A new pepper is put first: the key was made under what is now the older one.
    settings.API_KEY_PEPPERS = {"new": "a-new-pepper-for-this-test-only-0123456789", **peppers}
    api = client_for(token)
    remaining = [api.get(SERVERS)["X-RateLimit-Remaining"] for _ in range(3)]
    assert remaining == ["599", "598", "597"]
    assert ApiKey.objects.get().pepper_id == older


def test_an_entry_another_release_wrote_is_read_again_and_the_request_counted_once(
    owner, account, make_token, client_for
):
    import orjson

    api = client_for(make_token(owner, account))
    assert api.get(SERVERS)["X-RateLimit-Remaining"] == "599"
    key_id = ApiKey.objects.get().key_id
    entry_key = key_cache._keys(key_id)[0]
    client = key_cache._client()
    document = orjson.loads(client.get(entry_key))
    document["key"]["a_field_of_a_newer_release"] = True  # current, its digest right: counted
    client.set(entry_key, orjson.dumps(document), ex=key_cache.ENTRY_TTL)
    response = api.get(SERVERS)
    assert response.status_code == 200
    assert response["X-RateLimit-Remaining"] == "598"  # once, not again after the re-read
    assert key_count(key_id) == 2


SCRIPT = "return {redis.call('INCRBY', KEYS[1], ARGV[1]), ARGV[2], false}"


def test_the_kept_script_answers_as_redis_pys_script_and_loads_itself_after_a_flush(settings):
    from hosting.shared_redis import KeptScript

    client = redis_client(settings.REDIS_URL)
    client.delete("hms-test:kept")
    kept, theirs = KeptScript(client, SCRIPT), client.register_script(SCRIPT)
    assert kept.sha == theirs.sha
    client.script_flush()  # Redis restarted, say: the next call loads the script itself
    assert kept(keys=["hms-test:kept"], args=[2, "x"]) == [2, b"x", None]
    assert theirs(keys=["hms-test:kept"], args=[3, "x"]) == [5, b"x", None]
    assert kept(keys=["hms-test:kept"], args=[1, "é"]) == [6, "é".encode(), None]
    with pytest.raises(redis.exceptions.ResponseError):
        kept(keys=["hms-test:kept"], args=["not a number", "x"])
    assert kept(keys=["hms-test:kept"], args=[1, "x"]) == [7, b"x", None]
    client.delete("hms-test:kept")


def test_a_kept_script_call_whose_connection_broke_fails_as_redis_pys_and_the_next_works(
    settings,
):
    """Under the connection's own retry policy (redis-py's, which retries nothing unless told
    to): the error reaches the caller, the broken connection is closed, the next call runs on
    a fresh one."""
    from hosting.shared_redis import KeptScript

    client = redis_client(settings.REDIS_URL)
    client.delete("hms-test:kept")
    kept = KeptScript(client, SCRIPT)
    with reply_lost_once() as broke:  # the script ran, its answer never came
        with pytest.raises(redis.exceptions.ConnectionError):
            kept(keys=["hms-test:kept"], args=[1, "x"])
        assert broke[0]._sock is None  # closed, not handed back to the pool half-read
        assert kept(keys=["hms-test:kept"], args=[1, "x"]) == [2, b"x", None]
    client.delete("hms-test:kept")

"""A hot list does not wait for its key's lookup before its statement (issue 35).

With Redis, a list's ``GET`` by a key this process has decoded before sends the lookup (and
count) script, runs the list's statement for the key it expects, then reads the script's
answer: the two waits overlap. An answer that is not the expected entry (revoked, demoted,
removed, suspended, its networks or a guest's grants changed) or puts the key over its limit
throws the page away, and the request is answered the ordinary way from that same answer:
what the caller sees, and what is counted, is what it was before.
"""

import hmac
from unittest import mock

import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext
from redis.connection import AbstractConnection

from accounts import key_cache, keys
from accounts.actors import SYSTEM, Actor
from accounts.api.authentication import KeySpeculation
from accounts.models import ApiKey, Membership
from accounts.roles import Role
from accounts.services import account_suspend, api_key_revoke, member_change_role, member_remove
from hosting.shared_redis import KeptScript, redis_client
from servers.models import ServerGrant
from tests.envelopes import error_of
from tests.factories import MembershipFactory, ServerFactory
from tests.redis_faults import key_count, reply_lost_once, skip_without_redis

pytestmark = pytest.mark.django_db

SERVERS = "/v1/servers"


@pytest.fixture(autouse=True)
def _needs_redis():
    skip_without_redis("the lookup is sent ahead on the Redis path only")


@pytest.fixture(autouse=True)
def _one_window(rate_limit_clock):
    """Every test here counts within one window."""


@pytest.fixture
def settled(monkeypatch):
    """What each speculation's ``settle()`` answered, in order."""
    answers: list[bool] = []
    settle = KeySpeculation.settle

    def recorded(self):
        answers.append(settle(self))
        return answers[-1]

    monkeypatch.setattr(KeySpeculation, "settle", recorded)
    return answers


def test_the_lookup_is_sent_before_the_statement_and_read_after_it(
    owner, account, make_token, client_for, settled
):
    ServerFactory(account=account)
    api = client_for(make_token(owner, account))
    api.get(SERVERS)  # decodes the key in this process (and notes its first use)
    api.get(SERVERS)
    order: list[str] = []
    send, read = AbstractConnection.send_packed_command, AbstractConnection.read_response

    def sent(self, command, *args, **kwargs):
        data = command if isinstance(command, bytes) else b"".join(command)
        order.append("redis: " + data.split(b"\r\n")[2].decode())
        return send(self, command, *args, **kwargs)

    def answered(self, *args, **kwargs):
        order.append("redis: answer")
        return read(self, *args, **kwargs)

    def statement(execute, sql, params, many, context):
        order.append("sql: " + sql.split()[0])
        return execute(sql, params, many, context)

    with (
        mock.patch.object(AbstractConnection, "send_packed_command", sent),
        mock.patch.object(AbstractConnection, "read_response", answered),
        connection.execute_wrapper(statement),
    ):
        response = api.get(SERVERS)
    assert response.status_code == 200
    assert len(response.json()["data"]["servers"]) == 1
    assert order == ["redis: EVALSHA", "sql: SELECT", "redis: answer"]
    assert settled[-1] is True
    assert response["X-RateLimit-Remaining"] == "597"


def test_a_key_seen_for_the_first_time_is_looked_up_first(
    owner, account, make_token, client_for, settled
):
    key_cache._decoded.clear()
    response = client_for(make_token(owner, account)).get(SERVERS)
    assert response.status_code == 200
    assert settled == []  # nothing expected yet: the ordinary way


def _owner(account) -> Actor:
    return Actor(user=Membership.objects.get(account=account, role=Role.OWNER).user)


def _revoke(api_key, membership, account):
    api_key_revoke(api_key=api_key, actor=SYSTEM)
    return 401, "api_key_revoked"


def _demote(api_key, membership, account):
    member_change_role(membership=membership, role=Role.BILLING, actor=_owner(account))
    return 403, "insufficient_scope"


def _remove(api_key, membership, account):
    member_remove(membership=membership, actor=_owner(account))
    return 401, "invalid_api_key"


def _suspend(api_key, membership, account):
    account_suspend(account=account, actor=SYSTEM)
    return 403, "account_suspended"


def _networks(api_key, membership, account):
    ApiKey.objects.filter(pk=api_key.pk).update(allowed_ips=["192.0.2.0/24"])
    key_cache.api_key_cache_invalidate([api_key.key_id])
    return 403, "ip_not_allowed"


@pytest.mark.parametrize("change", [_revoke, _demote, _remove, _suspend, _networks])
def test_a_change_since_the_key_was_decoded_is_answered_at_once_and_counted_as_before(
    account, make_token, client_for, settled, change
):
    membership = MembershipFactory(account=account, role=Role.ADMIN)
    MembershipFactory(account=account, role=Role.OWNER)  # the last owner is never the one changed
    ServerFactory(account=account)
    api = client_for(make_token(membership.user, account))
    for _ in range(2):  # the first reads the key and keeps the entry it fills
        assert api.get(SERVERS).status_code == 200
    assert settled == [True]
    api_key = ApiKey.objects.get(account=account)
    status, code = change(api_key, Membership.objects.get(pk=membership.pk), account)
    before = key_count(api_key.key_id)
    response = api.get(SERVERS)
    error_of(response, status, code)
    assert settled[-1] is False  # the page of the decoded key was thrown away
    if status == 401 or code != "insufficient_scope":
        # Refused by the key's lookup: counted against the address, not the key.
        assert key_count(api_key.key_id) == before
        assert response["RateLimit-Policy"].startswith('"anonymous"')
    else:
        assert key_count(api_key.key_id) == before + 1  # a 403 of the key's scope counts
        assert response["RateLimit-Policy"].startswith('"default"')


def test_a_guests_removed_grant_hides_the_server_at_once(account, make_token, client_for, settled):
    guest = MembershipFactory(account=account, role=Role.GUEST).user
    granted, kept = (
        ServerFactory(account=account),
        ServerFactory(account=account),
    )
    grants = [
        ServerGrant.objects.create(
            account=account, server=server, user=guest, permissions=["console.view"]
        )
        for server in (granted, kept)
    ]
    api = client_for(make_token(guest, account, ["servers:read"]))
    api.get(SERVERS)
    api.get(SERVERS)
    listed = api.get(SERVERS).json()["data"]["servers"]
    assert {row["id"] for row in listed} == {granted.id, kept.id}
    assert settled[-1] is True
    grants[0].delete()  # as grant_delete does; the grants' signal renews the guest's keys
    listed = api.get(SERVERS).json()["data"]["servers"]
    assert [row["id"] for row in listed] == [kept.id]
    assert settled[-1] is False


def test_a_member_made_a_guest_sees_only_their_grants_at_once(
    account, make_token, client_for, settled
):
    """The page answered again is the guest's: nothing the thrown-away answer worked out for
    the admin (the view's caller, the request's grants) is used again."""
    membership = MembershipFactory(account=account, role=Role.ADMIN)
    MembershipFactory(account=account, role=Role.OWNER)
    granted, other = ServerFactory(account=account), ServerFactory(account=account)
    ServerGrant.objects.create(
        account=account, server=granted, user=membership.user, permissions=["console.view"]
    )
    api = client_for(make_token(membership.user, account, ["servers:read"]))
    for _ in range(3):
        listed = api.get(SERVERS).json()["data"]["servers"]
    assert {row["id"] for row in listed} == {granted.id, other.id}
    assert settled[-1] is True
    member_change_role(membership=membership, role=Role.GUEST, actor=_owner(account))
    listed = api.get(SERVERS).json()["data"]["servers"]
    assert [row["id"] for row in listed] == [granted.id]
    assert settled[-1] is False


def test_over_the_limit_the_page_is_thrown_away_for_the_429_and_nothing_is_counted_twice(
    owner, account, make_token, client_for, settings, settled
):
    settings.RATE_LIMIT_PER_MINUTE = 4
    api = client_for(make_token(owner, account))
    answers = [api.get(SERVERS) for _ in range(6)]
    assert [r.status_code for r in answers] == [200, 200, 200, 200, 429, 429]
    assert [r["X-RateLimit-Remaining"] for r in answers] == ["3", "2", "1", "0", "0", "0"]
    error_of(answers[4], 429, "rate_limited")
    assert answers[4]["Retry-After"]
    assert key_count(ApiKey.objects.get().key_id) == 6
    assert True in settled and settled[-2:] == [False, False]


def test_an_entry_another_process_rewrote_is_answered_again_and_counted_once(
    owner, account, make_token, client_for, settled
):
    api = client_for(make_token(owner, account))
    assert api.get(SERVERS)["X-RateLimit-Remaining"] == "599"
    key_id = ApiKey.objects.get().key_id
    api_key = key_cache.api_key_lookup(key_id=key_id)
    version = int(key_cache._client().get(key_cache._keys(key_id)[1]) or 0)
    api_key.last_used_at = None  # another worker noted a use: the same version, other bytes
    key_cache._client().set(key_cache._keys(key_id)[0], key_cache._encode(version, api_key))
    assert api.get(SERVERS)["X-RateLimit-Remaining"] == "598"
    assert settled == [False]
    assert api.get(SERVERS)["X-RateLimit-Remaining"] == "597"
    assert settled == [False, True]
    assert key_count(key_id) == 3


def test_a_wrong_secret_for_a_kept_key_costs_what_an_unknown_key_id_costs(
    owner, account, make_token, client_for, client, settled
):
    """The token is checked and digested once, whichever way it is authenticated: a key id
    this process holds (its lookup sent ahead) answers a wrong secret with the same work as
    an unknown one."""
    api = client_for(make_token(owner, account))
    api.get(SERVERS)
    real_key_id = ApiKey.objects.get().key_id
    assert key_cache.api_key_expected(real_key_id)
    work = {}
    for probe, key_id in (("wrong secret", real_key_id), ("unknown key id", "Y" * 12)):
        body = f"hms_{key_id}{'A' * 32}"
        candidate = body + keys._checksum(body)
        with (
            mock.patch("accounts.keys.digest_token", wraps=keys.digest_token) as digests,
            mock.patch("accounts.keys.hmac.compare_digest", wraps=hmac.compare_digest) as compares,
        ):
            response = client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {candidate}")
        error_of(response, 401, "invalid_api_key")
        work[probe] = (digests.call_count, compares.call_count)
    assert work["wrong secret"] == work["unknown key id"] == (1, 2)
    assert settled == []  # refused before anything was answered ahead


def test_a_key_under_an_older_pepper_is_answered_ahead_and_counted_exactly(
    owner, account, make_token, client_for, settings, settled
):
    """The script cannot compare the digest of a key made under a pepper that is no longer
    the first (it counts nothing): the request is counted in a second trip, as the ordinary
    way does, and its page is not thrown away."""
    ServerFactory(account=account)
    token = make_token(owner, account)
    peppers = dict(settings.API_KEY_PEPPERS)
    settings.API_KEY_PEPPERS = {"new": "a-new-pepper-for-this-test-only-0123456789", **peppers}
    api = client_for(token)
    api.get(SERVERS)
    with CaptureQueriesContext(connection) as queries:
        remaining = [api.get(SERVERS)["X-RateLimit-Remaining"] for _ in range(3)]
    assert remaining == ["598", "597", "596"]
    assert settled == [True, True, True]
    assert len(queries) == 3  # the page with its total, once a request: none answered twice
    assert key_count(ApiKey.objects.get().key_id) == 4


def test_other_requests_are_never_answered_ahead(owner, account, make_token, client_for, settled):
    server = ServerFactory(account=account)
    api = client_for(make_token(owner, account))
    api.get(SERVERS)
    assert api.get(f"/v1/servers/{server.id}").status_code == 200
    assert api.get("/v1/servers/" + server.id + "/actions").status_code == 200
    assert (
        api.patch(f"/v1/servers/{server.id}", {"name": "Renamed"}, format="json").status_code == 200
    )
    assert api.get("/v1/games").status_code == 200  # a list that is not a hot one
    assert settled == []
    assert api.get(SERVERS).status_code == 200
    assert settled == [True]


SCRIPT = "return {redis.call('INCRBY', KEYS[1], ARGV[1]), ARGV[2], false}"


def test_a_sent_script_answers_as_a_call_and_gives_its_connection_back(settings):
    client = redis_client(settings.REDIS_URL)
    client.delete("hms-test:sent")
    kept = KeptScript(client, SCRIPT)
    pool = client.connection_pool
    client.script_flush()  # Redis restarted, say: the sent call loads the script when read
    sent = kept.send(keys=["hms-test:sent"], args=[2, "x"])
    assert sent is not None
    assert len(pool._in_use_connections) == 1
    assert sent.read() == [2, b"x", None]
    assert len(pool._in_use_connections) == 0
    with pytest.raises(RuntimeError):
        sent.read()
    assert kept(keys=["hms-test:sent"], args=[1, "y"]) == [3, b"y", None]
    client.delete("hms-test:sent")


def test_a_sent_script_whose_connection_broke_fails_as_a_call_and_the_next_works(settings):
    """Under the connection's own retry policy (redis-py's, which retries nothing unless told
    to), as ``KeptScript``'s call: the error reaches the caller, the broken connection is
    closed and given back, the next call runs on a fresh one."""
    client = redis_client(settings.REDIS_URL)
    client.delete("hms-test:sent")
    kept = KeptScript(client, SCRIPT)
    sent = kept.send(keys=["hms-test:sent"], args=[1, "x"])
    assert sent is not None
    with reply_lost_once() as broke:  # the script ran, its answer never came
        with pytest.raises(redis.exceptions.ConnectionError):
            sent.read()
        assert broke[0]._sock is None
        assert len(client.connection_pool._in_use_connections) == 0
        assert kept(keys=["hms-test:sent"], args=[1, "x"]) == [2, b"x", None]
    client.delete("hms-test:sent")


def test_a_script_that_cannot_be_sent_is_none_and_its_connection_given_back(settings):
    client = redis_client(settings.REDIS_URL)
    kept = KeptScript(client, SCRIPT)

    def refused(connection, *args, **kwargs):
        raise redis.exceptions.ConnectionError("Connection refused.")

    with mock.patch.object(AbstractConnection, "send_packed_command", refused):
        assert kept.send(keys=["hms-test:sent"], args=[1, "x"]) is None
    assert len(client.connection_pool._in_use_connections) == 0


def test_a_request_stopped_midway_leaves_no_connection_behind(
    owner, account, make_token, client_for, monkeypatch, settings
):
    """A worker stopped while its list is answered (its timeout's ``SystemExit``, say) leaves
    the lookup's answer unread: the connection it would come on is closed and given back."""
    from hosting.api.views import EnvelopeListMixin

    pool = redis_client(settings.REDIS_URL).connection_pool
    api = client_for(make_token(owner, account))
    api.get(SERVERS)

    def stopped(self, request):
        assert len(pool._in_use_connections) == 1  # the lookup's, on its way
        raise SystemExit(1)

    with monkeypatch.context() as patched:
        patched.setattr(EnvelopeListMixin, "compiled_pages", stopped)
        with pytest.raises(SystemExit):
            api.get(SERVERS)
    assert len(pool._in_use_connections) == 0
    assert api.get(SERVERS).status_code == 200


def test_a_sent_script_left_unread_closes_its_connection(settings):
    client = redis_client(settings.REDIS_URL)
    sent = KeptScript(client, SCRIPT).send(keys=["hms-test:sent"], args=[1, "x"])
    assert sent is not None
    connection = sent.connection
    sent.abandon()
    assert connection._sock is None
    assert len(client.connection_pool._in_use_connections) == 0
    sent.abandon()  # once is enough
    client.delete("hms-test:sent")

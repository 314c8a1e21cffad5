import hmac
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from accounts import keys
from accounts.models import ApiKey, Membership
from accounts.roles import Role
from accounts.services import api_key_revoke
from hosting.ids import random_base62
from tests.envelopes import error_body

SERVERS = "/v1/servers"


def assert_401(response, code: str) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert error_body(response)["code"] == code


def test_it_requires_a_key(db, client_for):
    assert_401(client_for(None).get(SERVERS), "authentication_required")


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Token abc", "Bearer", "hms_abc"])
def test_it_asks_for_a_bearer_key_when_another_scheme_is_sent(db, client, header):
    response = client.get(SERVERS, HTTP_AUTHORIZATION=header)
    expected = "invalid_api_key" if header == "Bearer" else "authentication_required"
    assert_401(response, expected)


def test_the_scheme_word_is_case_insensitive(owner, account, make_token, client):
    token = make_token(owner, account)
    assert client.get(SERVERS, HTTP_AUTHORIZATION=f"bearer {token}").status_code == 200
    assert client.get(SERVERS, HTTP_AUTHORIZATION=f"BEARER {token}").status_code == 200


def test_unknown_keys_and_wrong_secrets_get_identical_answers(owner, account, make_token, client):
    token = make_token(owner, account)
    api_key = ApiKey.objects.get()

    # A well-formed token with a valid checksum but the wrong secret for a real key id...
    body = f"hms_{api_key.key_id}{'A' * 32}"
    wrong_secret = body + keys._checksum(body)
    # ...and one for a key id that does not exist.
    other_body = f"hms_{'Z' * 12}{'A' * 32}"
    unknown_id = other_body + keys._checksum(other_body)
    answers = []
    bad_checksum = token[:-1] + ("1" if token.endswith("0") else "0")  # never the token itself
    for candidate in (wrong_secret, unknown_id, bad_checksum, "hms_short"):
        response = client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {candidate}")
        assert_401(response, "invalid_api_key")
        error = error_body(response)
        answers.append((error["message"], error.get("details")))
    assert len(set(map(repr, answers))) == 1


def test_an_unknown_key_id_costs_the_same_digest_and_comparisons_as_a_wrong_secret(
    owner, account, make_token, client
):
    make_token(owner, account)
    real_key_id = ApiKey.objects.get().key_id
    work = {}
    for probe, key_id in (("wrong secret", real_key_id), ("unknown key id", "Z" * 12)):
        body = f"hms_{key_id}{'A' * 32}"
        candidate = body + keys._checksum(body)
        with (
            mock.patch("accounts.keys.digest_token", wraps=keys.digest_token) as digests,
            mock.patch("accounts.keys.hmac.compare_digest", wraps=hmac.compare_digest) as compares,
        ):
            response = client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {candidate}")
        assert_401(response, "invalid_api_key")
        work[probe] = (digests.call_count, compares.call_count)

    assert work["unknown key id"] == work["wrong secret"]
    assert work["unknown key id"][0] == 1  # one HMAC of the token
    assert work["unknown key id"][1] == 2  # the checksum, then the digest


def test_an_unknown_key_id_is_looked_up_once_then_answered_from_the_shared_cache(
    owner, account, make_token, client, django_assert_num_queries
):
    """With Redis, a real key is answered from the cache; so is an unknown id after its first
    probe, so repeated probes cannot tell the two apart by a database query's time."""
    from accounts.key_cache import enabled

    if not enabled():
        pytest.skip("the shared key cache needs Redis")
    key_id = random_base62(keys.KEY_ID_LENGTH)  # fresh each run: Redis outlives the test
    body = f"hms_{key_id}{'A' * 32}"
    probe = body + keys._checksum(body)
    with django_assert_num_queries(1):
        assert_401(client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {probe}"), "invalid_api_key")
    with django_assert_num_queries(0):
        assert_401(client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {probe}"), "invalid_api_key")

    # A key made later with that very id is not hidden by the cached absence.
    token = f"hms_{key_id}{'B' * 32}"
    token += keys._checksum(token)
    with mock.patch("accounts.keys.make_token", return_value=(token, key_id)):
        make_token(owner, account)
    assert client.get(SERVERS, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_it_rejects_an_expired_key(owner, account, make_token, client_for):
    token = make_token(owner, account, expires_at=timezone.now() + timedelta(days=1))
    api_key = ApiKey.objects.get()
    api_key.expires_at = timezone.now() - timedelta(seconds=1)
    api_key.save()
    assert_401(client_for(token).get(SERVERS), "api_key_expired")


def test_revocation_takes_effect_on_the_next_request(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account))
    assert api.get(SERVERS).status_code == 200
    api_key_revoke(api_key=ApiKey.objects.get())
    assert_401(api.get(SERVERS), "api_key_revoked")


def test_a_deactivated_users_keys_stop_working(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account))
    owner.is_active = False
    owner.save()
    assert_401(api.get(SERVERS), "invalid_api_key")


def test_a_removed_members_keys_stop_working(teammate, account, make_token, client_for):
    api = client_for(make_token(teammate, account, ["servers:read"]))
    assert api.get(SERVERS).status_code == 200
    Membership.objects.filter(user=teammate).delete()
    assert_401(api.get(SERVERS), "invalid_api_key")


def test_demoting_a_user_demotes_their_keys_at_once(teammate, account, make_token, client_for):
    api = client_for(make_token(teammate, account, ["servers:write"]))
    assert api.get(SERVERS).status_code == 200  # servers:write implies servers:read
    membership = Membership.objects.get(user=teammate)
    membership.role = Role.BILLING
    membership.save()
    response = api.get(SERVERS)
    assert response.status_code == 403
    error = error_body(response)
    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": ["servers:read"]}


def test_a_key_without_the_scope_is_refused(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account, ["billing:read"]))
    response = api.get(SERVERS)
    assert response.status_code == 403
    assert error_body(response)["code"] == "insufficient_scope"
    assert error_body(response)["details"]["required_scopes"] == ["servers:read"]


def test_a_suspended_accounts_keys_get_account_suspended(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account))
    account.status = account.Status.SUSPENDED
    account.save()
    response = api.get(SERVERS)
    assert response.status_code == 403
    assert error_body(response)["code"] == "account_suspended"


def test_allowed_ips_limit_where_a_key_works(owner, account, make_token, client_for):
    inside = client_for(make_token(owner, account, allowed_ips=["127.0.0.0/8"]))
    outside = client_for(make_token(owner, account, allowed_ips=["203.0.113.0/24", "2001:db8::1"]))
    assert inside.get(SERVERS, REMOTE_ADDR="127.0.0.1").status_code == 200
    response = outside.get(SERVERS, REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 403
    assert error_body(response)["code"] == "ip_not_allowed"
    assert outside.get(SERVERS, REMOTE_ADDR="203.0.113.9").status_code == 200


def test_last_use_is_recorded_at_most_once_a_minute(owner, account, make_token, client_for):
    api = client_for(make_token(owner, account))
    api.get(SERVERS, REMOTE_ADDR="198.51.100.7")
    api_key = ApiKey.objects.get()
    first_use = api_key.last_used_at
    assert first_use is not None
    assert api_key.last_used_ip == "198.51.100.7"

    api.get(SERVERS, REMOTE_ADDR="198.51.100.8")
    api_key.refresh_from_db()
    assert (api_key.last_used_at, api_key.last_used_ip) == (first_use, "198.51.100.7")

    a_minute_later = first_use + timedelta(seconds=61)
    with mock.patch("accounts.services.authentication.timezone.now", return_value=a_minute_later):
        api.get(SERVERS, REMOTE_ADDR="198.51.100.8")
    api_key.refresh_from_db()
    assert api_key.last_used_at == a_minute_later
    assert api_key.last_used_ip == "198.51.100.8"


def test_a_key_keeps_working_after_the_pepper_is_rotated(
    owner, account, make_token, client_for, settings
):
    token = make_token(owner, account)
    old_id = ApiKey.objects.get().pepper_id
    settings.API_KEY_PEPPERS = {"fresh": "f" * 40, **settings.API_KEY_PEPPERS}
    assert client_for(token).get(SERVERS).status_code == 200
    make_token(owner, account, name="made after rotation")
    assert ApiKey.objects.get(name="made after rotation").pepper_id == "fresh"
    assert old_id != "fresh"


def test_only_the_digest_is_stored(owner, account, make_token):
    token = make_token(owner, account)
    api_key = ApiKey.objects.get()
    stored = " ".join(str(value) for value in ApiKey.objects.values_list().get())
    assert token not in stored
    assert token[16:48] not in stored  # the secret part
    assert len(api_key.digest) == 64

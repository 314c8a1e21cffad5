"""The API key lookup (every request without Redis) runs SQL the ORM built once, and reads
the same key, user, account and live role as the ORM's own query (hosting/queries.py)."""

from unittest import mock

import pytest
from django.db.models.sql.compiler import SQLCompiler

from accounts.models import ApiKey, Membership, User
from accounts.roles import Role
from accounts.selectors import _key_with_context, api_key_with_context
from hosting import queries

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def _same(found, expected) -> None:
    assert (found is None) == (expected is None)
    if found is None:
        return
    assert _fields(found) == _fields(expected)
    assert _fields(found.account) == _fields(expected.account)
    assert {k: v for k, v in _fields(found.user).items() if k != "password"} == {
        k: v for k, v in _fields(expected.user).items() if k != "password"
    }
    assert found.role == expected.role


def test_the_compiled_lookup_reads_what_the_orm_reads(owner, account, make_token, outsider):
    make_token(owner, account)
    key = ApiKey.objects.get()
    for key_id in (key.key_id, "Z" * 12):
        _same(api_key_with_context(key_id=key_id), _key_with_context(key_id).first())
    # The role is live: a demotion, then leaving the account, are read at the next lookup.
    Membership.objects.filter(account=account, user=owner).update(role=Role.VIEWER)
    assert api_key_with_context(key_id=key.key_id).role == Role.VIEWER
    Membership.objects.filter(account=account, user=owner).delete()
    found = api_key_with_context(key_id=key.key_id)
    assert found.role is None
    _same(found, _key_with_context(key.key_id).first())


def test_a_second_lookup_builds_no_sql(owner, account, make_token, teammate):
    queries.cache_clear()
    make_token(owner, account)
    make_token(teammate, account, ["servers:read"])
    first, second = ApiKey.objects.order_by("created_at")
    api_key_with_context(key_id=first.key_id)
    with mock.patch.object(
        SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql
    ) as sql:
        found = api_key_with_context(key_id=second.key_id)
    assert sql.call_count == 0
    assert found.user == teammate and found.account == account
    assert found.role == Role.DEVELOPER


def test_without_redis_a_key_read_again_from_the_same_row_is_a_copy_not_built_again(
    owner, account, make_token, settings, django_assert_num_queries
):
    """Without the shared cache every request reads the key's row; when it reads exactly the
    row it read before, the request gets a copy of the key built from it then (no three model
    instances built again), which shares nothing a request could change; any change to the
    key, its user, its account or the role is another row, read as new."""
    from accounts import key_cache
    from accounts.services import api_key_revoke

    settings.REDIS_URL = ""
    key_cache._built.clear()
    make_token(owner, account, allowed_ips=["127.0.0.0/8"])
    key_id = ApiKey.objects.get().key_id
    with mock.patch.object(
        queries.CompiledQuery, "built", autospec=True, side_effect=queries.CompiledQuery.built
    ) as built:
        with django_assert_num_queries(2):  # the row is read on every request
            first = key_cache.api_key_lookup(key_id=key_id)
            second = key_cache.api_key_lookup(key_id=key_id)
        assert built.call_count == 1
        _same(first, _key_with_context(key_id).first())
        _same(second, first)
        assert first is not second
        assert first.user is not second.user and first.account is not second.account
        assert first._state is not second._state
        assert first.allowed_ips is not second.allowed_ips

        first.allowed_ips.append("10.0.0.0/8")
        first.account.name = "Changed in memory"
        first.user._state.fields_cache["made_up"] = object()
        third = key_cache.api_key_lookup(key_id=key_id)
        assert third.allowed_ips == ["127.0.0.0/8"] and third.account.name == account.name
        assert "made_up" not in third.user._state.fields_cache
        assert built.call_count == 1

        # A change to any part of the row is read at the next request.
        Membership.objects.filter(account=account, user=owner).update(role=Role.VIEWER)
        assert key_cache.api_key_lookup(key_id=key_id).role == Role.VIEWER
        account.status = "suspended"
        account.save(update_fields=["status"])
        assert key_cache.api_key_lookup(key_id=key_id).account.status == "suspended"
        User.objects.filter(pk=owner.pk).update(name="Renamed")
        assert key_cache.api_key_lookup(key_id=key_id).user.name == "Renamed"
        api_key_revoke(api_key=ApiKey.objects.get())
        assert key_cache.api_key_lookup(key_id=key_id).revoked_at is not None
        assert built.call_count == 5
        ApiKey.objects.filter(key_id=key_id).delete()
        assert key_cache.api_key_lookup(key_id=key_id) is None

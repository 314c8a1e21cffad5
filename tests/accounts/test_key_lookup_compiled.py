"""The API key lookup (every request without Redis) runs SQL the ORM built once, and reads
the same key, user, account and live role as the ORM's own query (hosting/queries.py)."""

from unittest import mock

import pytest
from django.db.models.sql.compiler import SQLCompiler

from accounts.models import ApiKey, Membership
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

"""The kept statements run on a cursor each connection keeps (hosting/queries.py's
``kept_cursor``), which behaves as a cursor Django opens for each query: the execute wrappers
and a test's captured queries see every statement, a broken transaction refuses it, and a
connection opened again gets a cursor of its own."""

import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from accounts.models import Account, ApiKey
from accounts.selectors import api_key_with_context

pytestmark = pytest.mark.django_db

SERVERS = "/v1/servers"
KEY_TABLE = '"accounts_apikey"'


def _lookup(api_key: ApiKey) -> ApiKey | None:
    return api_key_with_context(key_id=api_key.key_id)  # SQL kept by hosting/queries.py


@pytest.fixture
def api_key(owner, account, make_token) -> ApiKey:
    make_token(owner, account)
    return ApiKey.objects.get(account=account)


def test_a_connection_keeps_one_cursor_for_the_kept_statements(api_key, owner_api):
    assert _lookup(api_key).pk == api_key.pk
    kept = connection._kept_cursor
    for _ in range(3):
        assert _lookup(api_key).pk == api_key.pk
        assert owner_api.get(SERVERS).status_code == 200
    assert connection._kept_cursor is kept


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # closed outside one
def test_a_connection_opened_again_gets_a_cursor_of_its_own(api_key):
    assert _lookup(api_key).pk == api_key.pk
    kept, opened = connection._kept_cursor, connection.connection
    connection.close()
    assert _lookup(api_key).pk == api_key.pk
    assert connection._kept_cursor.cursor.connection is connection.connection
    # SQLite's in-memory test database is never closed (Django keeps it open): the same cursor.
    assert (connection._kept_cursor is kept) == (connection.connection is opened)
    if connection.vendor == "postgresql":
        assert connection.connection is not opened


def test_the_execute_wrappers_see_every_kept_statement(api_key):
    seen: list[str] = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    _lookup(api_key)
    with connection.execute_wrapper(wrapper):
        assert _lookup(api_key).pk == api_key.pk
        assert _lookup(api_key).pk == api_key.pk
    assert len(seen) == 2 and all(KEY_TABLE in sql for sql in seen)


def test_captured_queries_see_every_kept_statement(api_key):
    _lookup(api_key)
    with CaptureQueriesContext(connection) as captured:
        assert _lookup(api_key).pk == api_key.pk
    assert [q for q in captured.captured_queries if KEY_TABLE in q["sql"]]


def test_a_broken_transaction_refuses_a_kept_statement_as_any_query(api_key):
    _lookup(api_key)
    with transaction.atomic():
        transaction.set_rollback(True)  # as after an error the block caught and did not undo
        with pytest.raises(TransactionManagementError):
            Account.objects.count()
        with pytest.raises(TransactionManagementError):
            _lookup(api_key)

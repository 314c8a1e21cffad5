"""On PostgreSQL the hot path's queries are prepared once per connection, not planned each time."""

import pytest
from django.db import connection

from servers.models import Server
from tests.factories import ServerFactory

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements: PostgreSQL"
)


def _prepared_statements_on_servers() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement FROM pg_prepared_statements "
            "WHERE statement LIKE %s AND statement NOT LIKE %s",
            ['%"servers_server"%', "%pg_prepared_statements%"],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db
def test_the_list_query_is_prepared_after_a_few_requests_and_still_right(owner_api, account):
    ServerFactory.create_batch(3, account=account)
    assert _prepared_statements_on_servers() == []

    answers = [owner_api.get("/v1/servers?per_page=25") for _ in range(6)]

    assert [answer.status_code for answer in answers] == [200] * 6
    assert {len(answer.json()["data"]["servers"]) for answer in answers} == {3}
    page_query = [sql for sql in _prepared_statements_on_servers() if "LIMIT" in sql]
    assert page_query, "the page query was not prepared"
    assert "$1" in page_query[0]  # parameters bound by the server, not pasted into the text

    # A prepared statement still sees later changes.
    Server.objects.filter(account=account).first().delete()
    assert len(owner_api.get("/v1/servers").json()["data"]["servers"]) == 2

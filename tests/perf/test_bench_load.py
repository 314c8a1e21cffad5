"""The benchmark's bulk load (bench/api.py) on PostgreSQL: rows in, trigger back on, counts right.

The bench itself is run by hand; its loader is the part that touches the schema (it turns the
counting trigger off around a COPY), so it is tested here against the real migrations.
"""

import random

import pytest
from django.db import connection
from psycopg.conninfo import make_conninfo

from bench.api import load_servers
from servers.counts import instance_counts_rebuild, live_instance_count
from servers.models import Server
from tests.factories import AccountFactory

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY and triggers: PostgreSQL"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def _database_url() -> str:
    params = connection.get_connection_params()
    wanted = ("dbname", "user", "password", "host", "port")
    return make_conninfo(**{name: params[name] for name in wanted if params.get(name)})


def _trigger_enabled() -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgenabled FROM pg_trigger WHERE tgname = 'servers_server_count' "
            "AND tgrelid = 'servers_server'::regclass"
        )
        return cursor.fetchone()[0]


def test_load_copies_the_rows_and_turns_the_counting_trigger_back_on():
    small, large = AccountFactory(), AccountFactory()
    owners = [small.pk] * 7 + [large.pk] * 40
    random.Random(3).shuffle(owners)

    load_servers(_database_url(), owners)

    assert Server.objects.filter(account=small).count() == 7
    assert Server.objects.filter(account=large).count() == 40
    assert _trigger_enabled() == "O"  # fires again for ordinary writes

    instance_counts_rebuild()
    assert live_instance_count(account_id=large.pk, kind="server", statuses=None) == 40
    # The trigger counts what comes after the load.
    Server.objects.filter(account=large).first().delete()
    assert live_instance_count(account_id=large.pk, kind="server", statuses=None) == 39

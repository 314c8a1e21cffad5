"""``/v1/admin/database-hosts`` against the real MariaDB and PostgreSQL: staff register a host
(its connection tried first, the admin password write-only and kept encrypted as the admin site
keeps it), list it with filters, search and pages, change it (a new sign-in tried, the rest
kept without the host), and remove it only once it holds no database; the fleet's staff scope,
customers' keys refused; staff events."""

import pytest

from accounts.actors import SYSTEM
from accounts.roles import StaffRole
from databases.models import DatabaseEngine, DatabaseHost, ServerDatabase
from databases.services import database_create
from events.models import Event
from hosting.secrets_box import decrypt_secret
from servers.services.nodes import node_create
from tests.agent.harness import free_port
from tests.databases.conftest import MARIADB, POSTGRESQL, host_of
from tests.envelopes import error_of, field_errors
from tests.factories import MembershipFactory, ServerFactory, UserFactory

pytestmark = pytest.mark.django_db

PATH = "/v1/admin/database-hosts"


def body_of(kind: str, **fields) -> dict:
    where = MARIADB if kind == DatabaseEngine.MARIADB else POSTGRESQL
    return {
        "name": f"{kind} 1",
        "engine": kind,
        "host": where["host"],
        "port": where["port"],
        "admin_user": where["user"],
        "admin_password": where["password"],
    } | fields


@pytest.mark.parametrize("engine", [DatabaseEngine.MARIADB, DatabaseEngine.POSTGRESQL])
def test_staff_register_a_host_whose_connection_works(staff_api, engine):
    answer = staff_api.post(
        PATH, body_of(engine, public_host="db1.example.net", region="eu-central"), format="json"
    )
    assert answer.status_code == 201, answer.content
    database_host = DatabaseHost.objects.get()
    assert answer["Location"].endswith(f"{PATH}/{database_host.id}")
    where = MARIADB if engine == DatabaseEngine.MARIADB else POSTGRESQL
    assert answer.json()["data"] == {
        "database_host": {
            "id": database_host.id,
            "name": f"{engine} 1",
            "engine": engine,
            "host": where["host"],
            "port": where["port"],
            "public_host": "db1.example.net",
            "admin_user": where["user"],
            "region": "eu-central",
            "nodes": [],
            "max_databases": 1000,
            "active": True,
            "databases": 0,
            "created_at": database_host.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    }
    assert decrypt_secret(database_host.admin_password_encrypted) == where["password"]
    event = Event.objects.get(type="database_host.created")
    assert (event.account_id, event.object_id) == (None, database_host.id)
    assert "admin_password" not in event.data["object"]


def test_a_host_that_refuses_the_sign_in_is_400_and_nothing_is_kept(staff_api):
    wrong = staff_api.post(
        PATH, body_of(DatabaseEngine.MARIADB, admin_password="not-the-password"), format="json"
    )
    error = error_of(wrong, 400, "validation_failed")
    [field] = error["details"]["fields"]
    assert (field["name"], field["code"]) == ("host", "connection_failed")
    assert field["message"].startswith("Could not sign in to 127.0.0.1:3306 as root: (1045")
    assert "not-the-password" not in wrong.content.decode()

    port = free_port()
    closed = staff_api.post(PATH, body_of(DatabaseEngine.POSTGRESQL, port=port), format="json")
    error = error_of(closed, 400, "validation_failed")
    assert error["details"]["fields"][0]["code"] == "connection_failed"
    assert f"127.0.0.1:{port}" in error["message"]
    assert not DatabaseHost.objects.exists()
    assert not Event.objects.filter(type__startswith="database_host.").exists()


@pytest.mark.parametrize(
    "fields,name,code",
    [
        ({"engine": "oracle"}, "engine", "invalid_choice"),
        ({"port": 0}, "port", "min_value"),
        ({"host": "two words"}, "host", "invalid"),
        ({"region": "atlantis"}, "region", "does_not_exist"),
        ({"nodes": ["node_nope"]}, "nodes", "does_not_exist"),
        ({"max_databases": -1}, "max_databases", "min_value"),
        ({"surprise": 1}, "surprise", "unknown_field"),
    ],
)
def test_bad_input_is_refused_by_field(staff_api, fields, name, code):
    answer = staff_api.post(PATH, body_of(DatabaseEngine.MARIADB, **fields), format="json")
    assert field_errors(answer) == [(name, code)]
    assert not DatabaseHost.objects.exists()


def test_a_name_taken_is_refused(staff_api):
    host_of(DatabaseEngine.MARIADB)
    answer = staff_api.post(PATH, body_of(DatabaseEngine.MARIADB), format="json")
    assert field_errors(answer) == [("name", "unique")]


def test_the_list_filters_searches_and_pages(staff_api, django_assert_max_num_queries):
    node, _ = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )
    maria = host_of(DatabaseEngine.MARIADB, name="Maria Frankfurt", public_host="db1.example.net")
    database_create(instance=ServerFactory(), name="main", actor=SYSTEM)
    maria.nodes.set([node])
    postgres = host_of(DatabaseEngine.POSTGRESQL, name="Postgres Paris", active=False)

    with django_assert_max_num_queries(6):
        listed = staff_api.get(PATH)
    data = listed.json()["data"]
    assert [h["id"] for h in data["database_hosts"]] == [postgres.id, maria.id]
    assert data["database_hosts"][1]["databases"] == 1
    assert data["database_hosts"][1]["nodes"] == [node.id]
    assert data["pagination"] == {"page": 1, "per_page": 25, "total": 2, "total_pages": 1}

    def ids(query: str) -> list[str]:
        answer = staff_api.get(f"{PATH}?{query}")
        assert answer.status_code == 200, answer.content
        return [h["id"] for h in answer.json()["data"]["database_hosts"]]

    assert ids("engine=postgresql") == [postgres.id]
    assert ids("active=true") == [maria.id]
    assert ids("search=db1.example") == [maria.id]
    assert ids(f"search={postgres.id}") == [postgres.id]
    assert ids("ordering=name") == [maria.id, postgres.id]
    assert ids("per_page=1&page=2") == [maria.id]
    assert ids("region=eu-central") == []
    error_of(staff_api.get(f"{PATH}?engine=oracle"), 400, "invalid_parameter")
    error_of(staff_api.get(f"{PATH}?active=maybe"), 400, "invalid_parameter")


def test_a_change_of_sign_in_is_tried_first_and_the_rest_is_kept_without_the_host(staff_api):
    database_host = host_of(DatabaseEngine.MARIADB)
    before = database_host.admin_password_encrypted
    wrong = staff_api.patch(
        f"{PATH}/{database_host.id}", {"admin_password": "not-it"}, format="json"
    )
    assert field_errors(wrong) == [("host", "connection_failed")]
    moved = staff_api.patch(f"{PATH}/{database_host.id}", {"port": free_port()}, format="json")
    assert field_errors(moved) == [("host", "connection_failed")]
    database_host.refresh_from_db()
    assert (database_host.port, database_host.admin_password_encrypted) == (3306, before)

    # A host that is down can still be renamed and stop taking databases.
    DatabaseHost.objects.filter(pk=database_host.pk).update(port=free_port())
    changed = staff_api.patch(
        f"{PATH}/{database_host.id}",
        {"name": "Maria (retired)", "active": False, "max_databases": 10},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    shown = changed.json()["data"]["database_host"]
    assert (shown["name"], shown["active"], shown["max_databases"]) == (
        "Maria (retired)",
        False,
        10,
    )
    event = Event.objects.get(type="database_host.updated")
    assert event.data["previous_attributes"] == {
        "name": "mariadb 1",
        "active": True,
        "max_databases": 1000,
    }

    fixed = staff_api.patch(
        f"{PATH}/{database_host.id}",
        {"port": MARIADB["port"], "admin_password": MARIADB["password"]},
        format="json",
    )
    assert fixed.status_code == 200, fixed.content
    assert (
        staff_api.get(f"{PATH}/{database_host.id}").json()["data"]["database_host"]
        == (fixed.json()["data"]["database_host"])
    )


def test_a_host_holding_databases_is_not_removed(staff_api):
    database_host = host_of(DatabaseEngine.MARIADB)
    database = database_create(instance=ServerFactory(), name="main", actor=SYSTEM)[0]
    refused = error_of(staff_api.delete(f"{PATH}/{database_host.id}"), 409, "conflict")
    assert refused["details"] == {"databases": 1}

    ServerDatabase.objects.filter(pk=database.pk).delete()  # the conftest drops it on the host
    gone = staff_api.delete(f"{PATH}/{database_host.id}")
    assert gone.json()["data"] == {"id": database_host.id, "deleted": True}
    assert not DatabaseHost.objects.exists()
    assert Event.objects.filter(type="database_host.deleted", object_id=database_host.id).exists()
    error_of(staff_api.get(f"{PATH}/{database_host.id}"), 404, "not_found")


def test_readers_read_customers_and_other_staff_are_refused(
    staff_reader_api, owner_api, make_token, client_for, staff_account
):
    database_host = host_of(DatabaseEngine.MARIADB)
    assert staff_reader_api.get(f"{PATH}/{database_host.id}").status_code == 200
    error_of(
        staff_reader_api.patch(f"{PATH}/{database_host.id}", {"active": False}, format="json"),
        403,
        "insufficient_scope",
    )
    error_of(owner_api.get(PATH), 403, "insufficient_scope")

    def staff_key(role: str, scopes: list[str]):
        user = UserFactory(is_staff=True, staff_role=role)
        MembershipFactory(account=staff_account, user=user)
        return client_for(make_token(user, staff_account, scopes))

    fleet = staff_key(StaffRole.FLEET, ["admin:nodes:write"])
    assert fleet.get(PATH).status_code == 200
    changed = fleet.patch(f"{PATH}/{database_host.id}", {"active": False}, format="json")
    assert changed.status_code == 200, changed.content
    billing = staff_key(StaffRole.BILLING, ["admin:billing:write"])
    error_of(billing.get(PATH), 403, "insufficient_scope")

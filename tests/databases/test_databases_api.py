"""``/v1/servers/{id}/databases`` and ``/v1/bots/{id}/databases`` against the real MariaDB: the
password in the create's and the rotation's answers only, connection details in the rest, the
owner and a teammate with the scopes get through, an outsider gets 404 (and so does another
server's database), a key without the scopes 403, Support reads, a Viewer nothing, bad input
400 by field, the plan's limit and the hosts' troubles by their codes."""

import pymysql
import pytest

from accounts.actors import SYSTEM
from accounts.roles import ROLE_SCOPES, Role
from databases.models import ServerDatabase
from databases.services import database_create
from events.models import Event
from servers.models import ServerGrant
from tests.agent.harness import free_port
from tests.databases.conftest import MARIADB, host_of
from tests.envelopes import error_of, field_errors
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db

READS = [("get", "databases", None, 200), ("get", "databases/{d}", None, 200)]
WRITES = [
    ("post", "databases", {"name": "second"}, 201),
    ("post", "databases/{d}/rotate-password", None, 200),
    ("delete", "databases/{d}", None, 200),
]


@pytest.fixture
def server(account):
    return ServerFactory(account=account)


@pytest.fixture
def bot(account):
    return BotFactory(account=account)


@pytest.fixture(autouse=True)
def _room(settings):
    settings.DATABASE_DEFAULT_LIMIT = 2


def existing(instance, name="main") -> ServerDatabase:
    return database_create(instance=instance, name=name, actor=SYSTEM)[0]


def call(api, instance, method, suffix, body, database):
    path = f"/v1/{instance.kind}s/{instance.pk}/" + suffix.format(d=database.id)
    return getattr(api, method)(path, body, format="json")


def signs_in(database: ServerDatabase, password: str) -> bool:
    try:
        pymysql.connect(
            host=MARIADB["host"],
            port=MARIADB["port"],
            user=database.username,
            password=password,
            database=database.db_name,
        ).close()
    except pymysql.err.OperationalError:
        return False
    return True


def test_the_owner_creates_reads_rotates_and_deletes(owner_api, server, mariadb_host):
    made = owner_api.post(f"/v1/servers/{server.pk}/databases", {"name": "main"}, format="json")
    assert made.status_code == 201, made.content
    shown = made.json()["data"]["database"]
    database = ServerDatabase.objects.get()
    assert made["Location"].endswith(f"/v1/servers/{server.pk}/databases/{database.id}")
    password = shown.pop("password")
    assert len(password) >= 24 and signs_in(database, password)
    assert shown == {
        "id": database.id,
        "name": "main",
        "target": {"type": "server", "id": server.pk},
        "engine": "mariadb",
        "host": "db1.example.net",
        "port": MARIADB["port"],
        "database": database.db_name,
        "username": database.username,
        "remote": "%",
        "url": f"mysql://{database.username}@db1.example.net:{MARIADB['port']}/{database.db_name}",
        "jdbc_url": f"jdbc:mariadb://db1.example.net:{MARIADB['port']}/{database.db_name}"
        f"?user={database.username}",
        "created_at": shown["created_at"],
        "password_rotated_at": None,
    }
    listed = owner_api.get(f"/v1/servers/{server.pk}/databases").json()["data"]
    assert listed["databases"] == [shown]
    assert listed["pagination"]["total"] == 1
    one = owner_api.get(f"/v1/servers/{server.pk}/databases/{database.id}").json()["data"]
    assert one == {"database": shown}
    assert password not in str(listed) + str(one)

    rotated = owner_api.post(f"/v1/servers/{server.pk}/databases/{database.id}/rotate-password")
    assert rotated.status_code == 200
    new = rotated.json()["data"]["database"]["password"]
    assert new != password and signs_in(database, new) and not signs_in(database, password)
    assert rotated.json()["data"]["database"]["password_rotated_at"] is not None

    gone = owner_api.delete(f"/v1/servers/{server.pk}/databases/{database.id}")
    assert gone.json()["data"] == {"id": database.id, "deleted": True}
    assert not ServerDatabase.objects.exists()
    assert not signs_in(database, new)
    types = Event.objects.filter(type__startswith="database.").values_list("type", flat=True)
    assert sorted(types) == ["database.created", "database.deleted", "database.password_rotated"]
    assert not any(password in str(e.data) or new in str(e.data) for e in Event.objects.all())


@pytest.mark.parametrize("method,suffix,body,status", READS + WRITES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_an_outsider_gets_404_and_the_owner_gets_through(
    owner_api, outsider_api, server, bot, mariadb_host, kind, method, suffix, body, status
):
    instance = server if kind == "server" else bot
    database = existing(instance)
    error_of(call(outsider_api, instance, method, suffix, body, database), 404, "not_found")
    assert ServerDatabase.objects.filter(pk=database.pk).exists()
    answer = call(owner_api, instance, method, suffix, body, database)
    assert answer.status_code == status, answer.content


@pytest.mark.parametrize("method,suffix,body,status", [c for c in READS + WRITES if "{d}" in c[1]])
def test_another_servers_database_is_not_found_here(
    owner_api, account, server, mariadb_host, method, suffix, body, status
):
    theirs = existing(ServerFactory(account=account))
    error = error_of(call(owner_api, server, method, suffix, body, theirs), 404, "not_found")
    assert error["message"] == "No such database."
    assert ServerDatabase.objects.filter(pk=theirs.pk, password_rotated_at=None).exists()


@pytest.mark.parametrize("method,suffix,body,status", READS + WRITES)
def test_a_teammate_needs_the_databases_scopes(
    teammate, account, make_token, client_for, server, mariadb_host, method, suffix, body, status
):
    database = existing(server)
    needed = "databases:read" if (method, suffix, body, status) in READS else "databases:write"
    without = client_for(make_token(teammate, account, ["servers:write", "files:write"]))
    error = error_of(
        call(without, server, method, suffix, body, database), 403, "insufficient_scope"
    )
    assert error["details"]["required_scopes"] == ["servers:read", needed]
    only = client_for(make_token(teammate, account, ["databases:write"]))
    error_of(call(only, server, method, suffix, body, database), 403, "insufficient_scope")
    both = client_for(make_token(teammate, account, ["servers:read", "databases:write"]))
    assert call(both, server, method, suffix, body, database).status_code == status


def test_which_roles_may_hold_the_databases_scopes():
    for role in (Role.OWNER, Role.ADMIN, Role.DEVELOPER):
        assert {"databases:read", "databases:write"} <= ROLE_SCOPES[role]
    assert "databases:read" in ROLE_SCOPES[Role.SUPPORT]
    assert "databases:write" not in ROLE_SCOPES[Role.SUPPORT]
    for role in (Role.BILLING, Role.VIEWER):
        assert not {"databases:read", "databases:write"} & ROLE_SCOPES[role]


@pytest.mark.parametrize("role,reads", [(Role.SUPPORT, True), (Role.VIEWER, False)])
def test_support_reads_databases_and_a_viewer_none(
    account, make_token, client_for, server, mariadb_host, role, reads
):
    member = MembershipFactory(account=account, role=role).user
    api = client_for(make_token(member, account, sorted(ROLE_SCOPES[role])))
    assert api.get(f"/v1/servers/{server.pk}/databases").status_code == (200 if reads else 403)
    made = api.post(f"/v1/servers/{server.pk}/databases", {"name": "x"}, format="json")
    error_of(made, 403, "insufficient_scope")


@pytest.mark.parametrize(
    "body,expected",
    [
        ({}, [("name", "required")]),
        ({"name": "Main"}, [("name", "invalid")]),
        ({"name": "a" * 21}, [("name", "max_length")]),
        ({"name": "main", "engine": "oracle"}, [("engine", "invalid_choice")]),
        ({"name": "main", "remote": "localhost"}, [("remote", "invalid")]),
        (
            {"name": "main", "engine": "postgresql", "remote": "10.0.0.1"},
            [("remote", "unsupported")],
        ),
        ({"name": "main", "password": "mine"}, [("password", "unknown_field")]),
        ({"name": 5}, [("name", "invalid")]),
    ],
)
def test_a_bad_body_is_refused_by_field(owner_api, server, mariadb_host, body, expected):
    answer = owner_api.post(f"/v1/servers/{server.pk}/databases", body, format="json")
    assert field_errors(answer) == expected
    assert not ServerDatabase.objects.exists()


def test_the_plan_limit_is_409_with_the_limit(owner_api, server, mariadb_host, settings):
    settings.DATABASE_DEFAULT_LIMIT = 1
    existing(server)
    answer = owner_api.post(f"/v1/servers/{server.pk}/databases", {"name": "b"}, format="json")
    error = error_of(answer, 409, "database_limit_reached")
    assert error["details"] == {"limit": 1}


def test_no_host_is_409_and_a_host_down_503(owner_api, server, db):
    answer = owner_api.post(f"/v1/servers/{server.pk}/databases", {"name": "a"}, format="json")
    error_of(answer, 409, "no_database_host")
    host_of("mariadb", port=free_port())
    answer = owner_api.post(f"/v1/servers/{server.pk}/databases", {"name": "a"}, format="json")
    error = error_of(answer, 503, "database_host_unavailable")
    assert "try again" in error["message"]
    assert not ServerDatabase.objects.exists()


def test_the_list_pins_its_queries(
    owner_api, server, mariadb_host, settings, django_assert_max_num_queries
):
    settings.DATABASE_DEFAULT_LIMIT = 5
    for name in ("a", "b", "c", "d"):
        existing(server, name)
    with django_assert_max_num_queries(6):
        answer = owner_api.get(f"/v1/servers/{server.pk}/databases?per_page=3")
    data = answer.json()["data"]
    assert [d["name"] for d in data["databases"]] == ["d", "c", "b"]
    assert data["pagination"] == {"page": 1, "per_page": 3, "total": 4, "total_pages": 2}


@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_sub_user_reaches_the_databases_through_their_grant(
    account, server, bot, mariadb_host, make_token, client_for, kind
):
    """The instances' one permission function decides: a guest's grant of databases.read lists
    and reads but does not rotate; databases.write does; without a grant here it is 404."""
    instance = server if kind == "server" else bot
    database = existing(instance)
    guest = MembershipFactory(account=account, role=Role.GUEST).user
    api = client_for(
        make_token(guest, account, [f"{kind}s:read", "databases:read", "databases:write"])
    )
    path = f"/v1/{kind}s/{instance.pk}/databases"

    # A grant on another server of the account does not open this one.
    elsewhere = ServerFactory(account=account)
    ServerGrant.objects.create(
        account=account, server=elsewhere, user=guest, permissions=["databases.read"]
    )
    error_of(api.get(path), 404, "not_found")
    grant = ServerGrant.objects.create(
        account=account, **{kind: instance}, user=guest, permissions=["databases.read"]
    )
    listed = api.get(path)
    assert listed.status_code == 200, listed.content
    assert [d["id"] for d in listed.json()["data"]["databases"]] == [database.id]
    denied = error_of(api.post(f"{path}/{database.id}/rotate-password"), 403, "permission_denied")
    assert denied["details"] == {"required_permission": "databases.write"}

    grant.permissions = ["databases.read", "databases.write"]
    grant.save()
    rotated = api.post(f"{path}/{database.id}/rotate-password")
    assert rotated.status_code == 200, rotated.content
    assert signs_in(database, rotated.json()["data"]["database"]["password"])

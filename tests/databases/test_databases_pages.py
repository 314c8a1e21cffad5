"""The Databases tab's pages against the real MariaDB: who sees the tab, reads and changes (the
owner, teammates by role, a sub-user by grant, an outsider's 404); a database created with its
password shown once, rotated (the old password refused) and deleted; the limit, a region no
host serves, bad input and a host that fails said as messages; a bot's tab."""

import pymysql
import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from databases.models import ServerDatabase
from databases.services import database_create
from servers.models import ServerGrant
from tests.agent.harness import free_port
from tests.dashboard import messages_of, signed_in
from tests.databases.conftest import MARIADB, host_of
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(account):
    return ServerFactory(account=account)


@pytest.fixture(autouse=True)
def _room(settings):
    settings.DATABASE_DEFAULT_LIMIT = 2


def member(account, role):
    return MembershipFactory(account=account, role=role).user


def existing(instance, name="main") -> ServerDatabase:
    return database_create(instance=instance, name=name, actor=SYSTEM)[0]


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


def shown_password(html: str) -> str | None:
    marker = '<code id="new-password">'
    if marker not in html:
        return None
    return html.split(marker, 1)[1].split("</code>", 1)[0]


def test_the_owner_creates_sees_the_password_once_rotates_and_deletes(owner, server, mariadb_host):
    client = signed_in(owner)
    page = f"/servers/{server.id}/databases"
    do = f"{page}/do"
    assert 'id="databases-link"' in client.get(f"/servers/{server.id}").content.decode()

    made = client.post(do, {"op": "create", "name": "main", "remote": "%"}, follow=True)
    database = ServerDatabase.objects.get()
    assert messages_of(made) == [f"The database {database.db_name} is created."]
    html = made.content.decode()
    password = shown_password(html)
    assert password and signs_in(database, password)
    row = html[html.index(f'id="database-{database.id}"') :]
    for shown in (database.db_name, database.username, "db1.example.net:3306", "(anywhere)"):
        assert shown in row
    assert "1 of 2 databases used" in html
    again = client.get(page)
    assert shown_password(again.content.decode()) is None
    assert again["Cache-Control"].startswith("max-age=0")

    rotated = client.post(do, {"op": "rotate", "database_id": database.id}, follow=True)
    new_password = shown_password(rotated.content.decode())
    assert new_password and new_password != password
    assert signs_in(database, new_password) and not signs_in(database, password)
    database.refresh_from_db()
    assert database.password_rotated_at is not None

    deleted = client.post(do, {"op": "delete", "database_id": database.id}, follow=True)
    assert messages_of(deleted) == [f"The database {database.db_name} and its user are deleted."]
    assert not ServerDatabase.objects.exists()
    assert not signs_in(database, new_password)


@pytest.mark.parametrize(
    "role,reads,writes",
    [
        (Role.ADMIN, True, True),
        (Role.DEVELOPER, True, True),
        (Role.SUPPORT, True, False),
        (Role.VIEWER, False, False),
        (Role.BILLING, False, False),
    ],
)
def test_teammates_read_and_change_by_their_role(
    account, server, mariadb_host, role, reads, writes
):
    database = existing(server)
    client = signed_in(member(account, role))
    overview = client.get(f"/servers/{server.id}").content.decode()
    assert ('id="databases-link"' in overview) is reads
    listed = client.get(f"/servers/{server.id}/databases", follow=True)
    html = listed.content.decode()
    if reads:
        assert database.username in html
        assert ("Rotate password" in html) is writes
        assert ('id="database-create-form"' in html) is writes
    else:
        assert database.username not in html
        assert messages_of(listed) == [f"As {role.label}, you may not see this server's databases."]
    answer = client.post(
        f"/servers/{server.id}/databases/do",
        {"op": "delete", "database_id": database.id},
        follow=True,
    )
    assert ServerDatabase.objects.filter(pk=database.pk).exists() is not writes
    if not writes:
        refusal = f"As {role.label}, you may not change this server's databases."
        assert refusal in messages_of(answer)


@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_sub_user_reads_or_changes_by_their_grant(account, mariadb_host, kind):
    instance = ServerFactory(account=account) if kind == "server" else BotFactory(account=account)
    database = existing(instance)
    guest = member(account, Role.GUEST)
    client = signed_in(guest)
    page = f"/{kind}s/{instance.id}/databases"
    do = f"{page}/do"
    assert client.get(page).status_code == 404  # no grant here: the instance is not theirs

    grant = ServerGrant.objects.create(
        account=account, **{kind: instance}, user=guest, permissions=["console.view"]
    )
    assert 'id="databases-link"' not in client.get(f"/{kind}s/{instance.id}").content.decode()
    refused = client.get(page)
    assert refused.status_code == 302 and refused["Location"] == f"/{kind}s/{instance.id}"

    grant.permissions = ["databases.read"]
    grant.save()
    assert 'id="databases-link"' in client.get(f"/{kind}s/{instance.id}").content.decode()
    html = client.get(page).content.decode()
    assert database.db_name in html and "Rotate password" not in html
    client.post(do, {"op": "rotate", "database_id": database.id})
    database.refresh_from_db()
    assert database.password_rotated_at is None

    grant.permissions = ["databases.read", "databases.write"]
    grant.save()
    rotated = client.post(do, {"op": "rotate", "database_id": database.id}, follow=True)
    assert signs_in(database, shown_password(rotated.content.decode()))


def test_an_outsider_gets_404_and_changes_nothing(outsider, server, mariadb_host):
    database = existing(server)
    client = signed_in(outsider)
    assert client.get(f"/servers/{server.id}/databases").status_code == 404
    answer = client.post(
        f"/servers/{server.id}/databases/do", {"op": "delete", "database_id": database.id}
    )
    assert answer.status_code == 404
    assert ServerDatabase.objects.filter(pk=database.pk).exists()


def test_another_servers_database_is_not_touched_from_here(owner, account, server, mariadb_host):
    theirs = existing(ServerFactory(account=account))
    answer = signed_in(owner).post(
        f"/servers/{server.id}/databases/do",
        {"op": "delete", "database_id": theirs.id},
        follow=True,
    )
    assert messages_of(answer) == ["No such database."]
    assert ServerDatabase.objects.filter(pk=theirs.pk).exists()


def test_the_limit_is_said_and_the_form_hidden(owner, server, mariadb_host, settings):
    settings.DATABASE_DEFAULT_LIMIT = 1
    existing(server)
    client = signed_in(owner)
    html = client.get(f"/servers/{server.id}/databases").content.decode()
    assert "1 of 1 database used" in html
    assert 'id="database-limit-reached"' in html and 'id="database-create-form"' not in html
    answer = client.post(
        f"/servers/{server.id}/databases/do", {"op": "create", "name": "more"}, follow=True
    )
    assert answer.status_code == 200
    assert "as many as its plan allows" in messages_of(answer)[0]
    assert ServerDatabase.objects.count() == 1


def test_a_region_no_host_serves_is_said(owner, server):
    html = signed_in(owner).get(f"/servers/{server.id}/databases").content.decode()
    assert 'id="database-no-host"' in html and 'id="database-create-form"' not in html
    assert server.region.name in html


def test_bad_input_and_a_failing_host_are_messages_not_errors(owner, server, db):
    client = signed_in(owner)
    do = f"/servers/{server.id}/databases/do"
    host_of("mariadb", port=free_port())  # nothing listens there
    bad = client.post(do, {"op": "create", "name": "Bad Name!"}, follow=True)
    assert messages_of(bad) == [
        "A name is 1 to 20 lowercase letters, digits and underscores, a letter first."
    ]
    down = client.post(do, {"op": "create", "name": "main"}, follow=True)
    assert down.status_code == 200
    assert messages_of(down) == [
        "The database host mariadb 1 did not answer or refused the change; try again in a "
        "few minutes."
    ]
    assert not ServerDatabase.objects.exists()


def test_postgresql_is_offered_when_a_host_serves_it(owner, server, mariadb_host, postgresql_host):
    client = signed_in(owner)
    html = client.get(f"/servers/{server.id}/databases").content.decode()
    assert '<option value="postgresql">PostgreSQL</option>' in html
    made = client.post(
        f"/servers/{server.id}/databases/do",
        {"op": "create", "name": "stats", "remote": "%", "engine": "postgresql"},
        follow=True,
    )
    database = ServerDatabase.objects.get()
    assert database.host == postgresql_host
    assert shown_password(made.content.decode())

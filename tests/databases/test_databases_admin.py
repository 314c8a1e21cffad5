"""Staff's admin pages for database hosts and databases: the admin password is encrypted and
never shown back, the test-connection action reports the version or the refusal, and dropping a
database from the admin drops it on its (real) host first."""

import pytest
from django.contrib.messages import get_messages

from accounts.actors import SYSTEM
from databases.models import DatabaseHost, ServerDatabase
from databases.services import database_create
from events.models import Event
from hosting.secrets_box import decrypt_secret
from tests.accounts.test_admin import admin_url
from tests.databases.conftest import MARIADB
from tests.databases.test_databases_on_real_hosts import on_mariadb
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

FORM = {
    "engine": "mariadb",
    "name": "db1",
    "host": MARIADB["host"],
    "port": MARIADB["port"],
    "public_host": "db1.example.net",
    "admin_user": MARIADB["user"],
    "admin_password": "s3cret-admin-password",
    "max_databases": 100,
    "active": "on",
}


def test_a_host_added_keeps_its_password_encrypted_and_never_shows_it(staff_client):
    response = staff_client.post(admin_url(DatabaseHost, "add"), FORM, follow=True)
    assert response.status_code == 200
    host = DatabaseHost.objects.get()
    assert host.admin_password_encrypted != "s3cret-admin-password"
    assert decrypt_secret(host.admin_password_encrypted) == "s3cret-admin-password"
    page = staff_client.get(admin_url(DatabaseHost, "change", host.pk))
    assert b"s3cret-admin-password" not in page.content
    # An empty password field keeps the one set.
    staff_client.post(admin_url(DatabaseHost, "change", host.pk), FORM | {"admin_password": ""})
    host.refresh_from_db()
    assert decrypt_secret(host.admin_password_encrypted) == "s3cret-admin-password"


def test_the_admins_changes_go_through_the_services_and_are_staff_events(
    staff_client, mariadb_host, account
):
    """Added, changed and removed on its pages as through the staff API: the services check
    the fields, record database_host.* (with the staff member as actor) and refuse to remove
    a host that holds databases."""
    database_create(instance=ServerFactory(account=account), name="kept", actor=SYSTEM)
    staff_client.post(admin_url(DatabaseHost, "add"), FORM, follow=True)
    host = DatabaseHost.objects.get(name="db1")
    refused = staff_client.post(admin_url(DatabaseHost, "add"), FORM | {"admin_password": ""})
    assert "The admin user" in refused.content.decode()  # on its field, nothing added
    staff_client.post(
        admin_url(DatabaseHost, "change", host.pk),
        FORM | {"max_databases": 5, "engine": "", "admin_password": ""},
    )
    host.refresh_from_db()
    assert (host.max_databases, host.engine) == (5, "mariadb")  # the engine stays
    created, updated = Event.objects.filter(
        type__startswith="database_host.", object_id=host.pk
    ).order_by("created_at")
    assert (created.type, updated.type) == ("database_host.created", "database_host.updated")
    assert updated.data["previous_attributes"] == {"max_databases": 100}
    assert created.actor_user is not None and created.account_id is None

    staff_client.post(
        admin_url(DatabaseHost, "changelist"),
        {"action": "remove_empty", "_selected_action": [host.pk, mariadb_host.pk]},
    )
    # The one holding a database stays (its refusal shown), the empty one goes.
    assert list(DatabaseHost.objects.values_list("name", flat=True)) == [mariadb_host.name]
    assert Event.objects.filter(type="database_host.deleted").count() == 1


def test_test_connection_reports_the_version_or_the_refusal(staff_client, mariadb_host):
    wrong = DatabaseHost.objects.create(
        engine="mariadb", name="wrong", host="127.0.0.1", port=1, admin_user="root"
    )
    response = staff_client.post(
        admin_url(DatabaseHost, "changelist"),
        {"action": "test_connection", "_selected_action": [mariadb_host.pk, wrong.pk]},
        follow=True,
    )
    shown = [str(message) for message in get_messages(response.wsgi_request)]
    assert any("MariaDB" in line and line.startswith("mariadb 1:") for line in shown)
    assert any(line.startswith("wrong: The database host wrong did not answer") for line in shown)


def test_dropping_from_the_admin_drops_on_the_host(staff_client, mariadb_host, account):
    database, _ = database_create(instance=ServerFactory(account=account), name="m", actor=SYSTEM)
    staff_client.post(
        admin_url(ServerDatabase, "changelist"),
        {"action": "drop_databases", "_selected_action": [database.pk]},
    )
    assert not ServerDatabase.objects.exists()
    assert on_mariadb(database) == (False, [])

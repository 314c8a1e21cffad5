"""Staff and backups in the Django admin: a node's backup storage (the S3 secret kept encrypted
and never shown again), and the backups' list, read-only, whose actions go through the
services (a locked backup is not deleted)."""

import pytest
from django.contrib.messages import get_messages

from events.models import Event
from servers.models import Backup, Node, ServerStatus
from tests.accounts.test_admin import admin_url
from tests.factories import ServerFactory
from tests.servers.backup_helpers import completed_backup
from tests.servers.test_node_admin import FORM

pytestmark = pytest.mark.django_db

S3 = {
    "storage_kind": "s3",
    "storage_endpoint": "http://127.0.0.1:9000",
    "storage_region": "eu-west-1",
    "storage_bucket": "game-backups",
    "storage_prefix": "fra/",
    "storage_access_key_id": "AKIAEXAMPLE",
    "storage_secret_access_key": "very-secret-value",
}


def storage_events(node) -> list[Event]:
    """The node's events of changed backup storage (its capacity's are node.updated too)."""
    return [
        event
        for event in Event.objects.filter(type="node.updated", object_id=node.id)
        if "backup_storage" in (event.data.get("previous_attributes") or {})
    ]


def change(staff_client, node, **fields):
    form = FORM | {"name": node.name, "add_ip": "", "add_ports": "", "region": ""} | fields
    return staff_client.post(admin_url(Node, "change", node.pk), form)


def test_staff_set_s3_storage_and_the_secret_is_never_shown(staff_client, node):
    answer = change(staff_client, node, **S3)
    assert answer.status_code == 302, answer.content.decode()[:3000]
    node.refresh_from_db()
    assert (node.backup_storage, node.s3_bucket, node.s3_prefix) == ("s3", "game-backups", "fra/")
    assert node.s3_secret_encrypted and "very-secret" not in node.s3_secret_encrypted
    page = staff_client.get(admin_url(Node, "change", node.pk)).content.decode()
    assert "very-secret-value" not in page and "set (never shown)" in page
    assert 'value="game-backups"' in page
    # Saved again without a secret: the one set is kept.
    kept = node.s3_secret_encrypted
    change(staff_client, node, **(S3 | {"storage_secret_access_key": "", "storage_prefix": "par/"}))
    node.refresh_from_db()
    assert node.s3_secret_encrypted == kept and node.s3_prefix == "par/"
    assert len(storage_events(node)) == 2


def test_s3_without_a_bucket_is_refused_on_its_field(staff_client, node):
    answer = change(staff_client, node, **(S3 | {"storage_bucket": ""}))
    assert answer.status_code == 200 and "bucket is required" in answer.content.decode()
    node.refresh_from_db()
    assert node.backup_storage == "node"


def test_saving_a_node_without_storage_changes_leaves_it(staff_client, node):
    change(staff_client, node)
    assert storage_events(node) == []


def test_backups_are_listed_read_only_and_deleted_through_the_service(
    staff_client, account, node, fake_agent
):
    server = ServerFactory(account=account, node=node, status=ServerStatus.STOPPED)
    free, locked = completed_backup(server, name="free"), completed_backup(server, locked=True)
    listing = staff_client.get(admin_url(Backup, "changelist")).content.decode()
    assert free.id in listing and locked.id in listing
    assert staff_client.get(admin_url(Backup, "add")).status_code == 403
    answer = staff_client.post(
        admin_url(Backup, "changelist"),
        {"action": "delete_selected_backups", "_selected_action": [free.id, locked.id]},
        follow=True,
    )
    said = " ".join(str(message) for message in get_messages(answer.wsgi_request))
    assert "Deleted 1 backup" in said and "locked; unlock it first" in said
    assert list(Backup.objects.values_list("id", flat=True)) == [locked.id]
    assert [call[0] for call in fake_agent.calls] == ["DELETE"]
    staff_client.post(
        admin_url(Backup, "changelist"),
        {"action": "unlock_selected", "_selected_action": [locked.id]},
    )
    locked.refresh_from_db()
    assert not locked.locked

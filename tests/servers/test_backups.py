"""Backups on the control plane's side: the agent's calls (a stand-in agent that records them,
tests/servers/backup_helpers.py), the plan's limits and rotation, locks, restores, download
addresses, the agent's reports (once only), their events and webhooks, and the upkeep that
fails what a vanished node never reported."""

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from django.utils import timezone

from accounts.actors import SYSTEM
from accounts.roles import Role
from events.models import Event
from servers.models import Backup, BackupStatus, ServerStatus
from servers.services import action_request
from servers.services.backups import (
    backup_create,
    backups_fail_stale,
    backups_purge,
    backups_purge_left,
    backups_purge_run,
    node_backup_storage_set,
)
from servers.signing import public_key_pem
from tests.envelopes import error_of, field_errors
from tests.factories import MembershipFactory, ServerFactory, WebhookEndpointFactory
from tests.servers.backup_helpers import CHECKSUM, completed_backup
from tests.servers.helpers import run_worker
from tests.servers.test_nodes import NOW
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def report(client_for, token, instance, backup_id, kind="backup_completed", **extra):
    event = {"instance_id": instance.pk, "type": kind, "at": NOW, "backup_id": backup_id}
    if kind == "backup_completed":
        event |= {"size": 4096, "checksum": CHECKSUM, "files": 12}
    answer = client_for(token).post("/v1/agent/events", {"events": [event | extra]}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]


# --- Back up now --------------------------------------------------------------------------


def test_back_up_now_asks_the_node_with_the_games_commands_and_the_patterns(
    owner_api, server, fake_agent
):
    answer = owner_api.post(
        f"/v1/servers/{server.pk}/backups",
        {"name": "Before the update", "ignore": ["logs/", "*.tmp", ""]},
        format="json",
    )
    assert answer.status_code == 202, answer.content
    shown = answer.json()["data"]["backup"]
    assert shown["id"].startswith("bkp_") and shown["status"] == "running"
    assert answer["Location"].endswith(f"/v1/servers/{server.pk}/backups/{shown['id']}")
    assert shown | {"id": "", "created_at": ""} == {
        "id": "",
        "name": "Before the update",
        "status": "running",
        "target": {"type": "server", "id": server.pk},
        "size": None,
        "checksum": None,
        "files": None,
        "locked": False,
        "ignore": ["logs/", "*.tmp"],
        "storage": "node",
        "error": None,
        "restore_status": None,
        "restore_error": None,
        "created_at": "",
        "completed_at": None,
        "restored_at": None,
    }
    [(method, path, body)] = fake_agent.calls
    assert (method, path) == ("POST", f"servers/{server.pk}/backups")
    assert body == {
        "backup_id": shown["id"],
        "storage": {"kind": "node"},
        "ignore": ["logs/", "*.tmp"],
        "commands": {"before": ["save-off", "save-all"], "after": ["save-on"]},
    }
    event = Event.objects.get(type="backup.created")
    assert event.related_id == server.pk and event.data["object"]["id"] == shown["id"]


def test_a_bots_backup_has_no_console_commands_and_a_default_name(owner_api, bot, fake_agent):
    answer = owner_api.post(f"/v1/bots/{bot.pk}/backups", {}, format="json")
    assert answer.status_code == 202, answer.content
    assert answer.json()["data"]["backup"]["name"].startswith("Backup 20")
    [(_, path, body)] = fake_agent.calls
    assert path == f"servers/{bot.pk}/backups" and "commands" not in body


def test_a_node_that_cannot_be_reached_fails_the_backup_with_503(owner_api, server, fake_agent):
    fake_agent.down = True
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"),
        503,
        "service_unavailable",
    )
    assert "cannot be reached" in error["message"]
    backup = Backup.objects.get()
    assert backup.status == "failed" and "cannot be reached" in backup.error
    assert Event.objects.filter(type="backup.failed").count() == 1


def test_an_instance_on_no_node_has_no_backups_to_make(owner_api, account):
    simulated = ServerFactory(account=account, status=ServerStatus.STOPPED)
    error_of(
        owner_api.post(f"/v1/servers/{simulated.pk}/backups", {}, format="json"),
        409,
        "files_unavailable",
    )
    assert not Backup.objects.exists()


@pytest.mark.parametrize("status", [ServerStatus.SUSPENDED, ServerStatus.INSTALLING])
def test_a_suspended_or_installing_server_is_not_backed_up(owner_api, server, fake_agent, status):
    server.status = status
    server.save()
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"), 409, "invalid_state"
    )
    assert error["details"]["status"] == status
    assert fake_agent.calls == []


def test_the_agents_refusals_become_the_contracts(owner_api, server, fake_agent):
    fake_agent.answers[("POST", "servers/{id}/backups")] = (
        409,
        {"error": {"code": "conflict", "message": "A backup of this server is running."}},
    )
    error_of(owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"), 409, "conflict")
    fake_agent.answers[("POST", "servers/{id}/backups")] = (
        409,
        {"error": {"code": "invalid_state", "message": "The server is installing."}},
    )
    error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"), 409, "invalid_state"
    )
    fake_agent.answers[("POST", "servers/{id}/backups")] = (
        404,
        {"error": {"code": "unknown_server", "message": "No such server."}},
    )
    error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"),
        409,
        "files_unavailable",
    )
    assert set(Backup.objects.values_list("status", flat=True)) == {"failed"}


def test_one_backup_or_restore_at_a_time(owner_api, server, fake_agent):
    completed_backup(server, status=BackupStatus.RUNNING)
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"), 409, "conflict"
    )
    assert "already running" in error["message"]
    assert fake_agent.calls == []


# --- Limits and rotation --------------------------------------------------------------------


def test_at_the_count_the_oldest_unlocked_backup_is_rotated_first(
    owner_api, server, fake_agent, settings
):
    settings.BACKUP_DEFAULT_LIMIT = 2
    now = timezone.now()
    oldest = completed_backup(server, at=now - timedelta(days=3), locked=True)
    middle = completed_backup(server, at=now - timedelta(days=2))
    answer = owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json")
    assert answer.status_code == 202, answer.content
    assert not Backup.objects.filter(pk=middle.pk).exists()
    assert Backup.objects.filter(pk=oldest.pk).exists()
    deleted = fake_agent.of("DELETE")
    assert deleted == [
        ("DELETE", f"servers/{server.pk}/backups/{middle.id}", {"storage": {"kind": "node"}})
    ]
    event = Event.objects.get(type="backup.deleted")
    assert event.data["object"]["id"] == middle.id and event.data["object"]["rotated"] is True


def test_the_count_reached_with_nothing_to_rotate_is_409(owner_api, server, fake_agent, settings):
    settings.BACKUP_DEFAULT_LIMIT = 2
    completed_backup(server, locked=True)
    completed_backup(server, locked=True)
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"),
        409,
        "backup_limit_reached",
    )
    assert error["details"] == {"limit": 2}
    assert fake_agent.calls == [] and Backup.objects.count() == 2


def test_failed_backups_do_not_count(owner_api, server, fake_agent, settings):
    settings.BACKUP_DEFAULT_LIMIT = 1
    completed_backup(server, status=BackupStatus.FAILED, size=None)
    answer = owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json")
    assert answer.status_code == 202, answer.content


def test_a_plan_without_backups_refuses_them(owner_api, server, fake_agent):
    server.plan = {"subscription": "sub_x", "backup_limit": 0, "backup_storage_mb": 100}
    server.save()
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"),
        409,
        "backup_limit_reached",
    )
    assert "includes no backups" in error["message"]


def test_backups_over_the_plans_storage_are_409(owner_api, server, fake_agent):
    server.plan = {"subscription": "sub_x", "backup_limit": 10, "backup_storage_mb": 1}
    server.save()
    completed_backup(server, size=600 * 1024)
    completed_backup(server, size=500 * 1024)
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"),
        409,
        "backup_storage_exceeded",
    )
    assert error["details"] == {"limit": 1, "unit": "MB"}
    retention = owner_api.get(f"/v1/servers/{server.pk}/backup-retention").json()["data"]
    assert retention["backup_retention"] == {
        "keep_last": None,
        "daily": None,
        "weekly": None,
        "monthly": None,
        "backup_limit": 10,
        "backup_storage_mb": 1,
        "used_bytes": 1100 * 1024,
    }


def test_an_unbilled_server_has_the_settings_defaults(owner_api, server, settings):
    settings.BACKUP_DEFAULT_LIMIT, settings.BACKUP_DEFAULT_STORAGE_MB = 7, 2048
    retention = owner_api.get(f"/v1/servers/{server.pk}/backup-retention").json()["data"]
    assert retention["backup_retention"]["backup_limit"] == 7
    assert retention["backup_retention"]["backup_storage_mb"] == 2048


# --- Lock, rename, delete -------------------------------------------------------------------


def test_a_locked_backup_cannot_be_deleted_until_unlocked(owner_api, server, fake_agent):
    backup = completed_backup(server)
    url = f"/v1/servers/{server.pk}/backups/{backup.id}"
    locked = owner_api.patch(url, {"locked": True, "name": "Keep me"}, format="json")
    assert locked.json()["data"]["backup"]["locked"] is True
    event = Event.objects.get(type="backup.updated")
    assert event.data["previous_attributes"] == {"locked": False, "name": "A backup"}
    error_of(owner_api.delete(url), 409, "locked")
    assert fake_agent.calls == []
    owner_api.patch(url, {"locked": False}, format="json")
    answer = owner_api.delete(url)
    assert answer.json()["data"] == {"id": backup.id, "deleted": True}
    assert fake_agent.of("DELETE") == [
        ("DELETE", f"servers/{server.pk}/backups/{backup.id}", {"storage": {"kind": "node"}})
    ]
    error_of(owner_api.get(url), 404, "not_found")
    assert Event.objects.get(type="backup.deleted").data["object"]["rotated"] is False


def test_a_backup_is_kept_when_the_node_cannot_delete_it(owner_api, server, fake_agent):
    backup = completed_backup(server)
    fake_agent.down = True
    error_of(owner_api.delete(f"/v1/servers/{server.pk}/backups/{backup.id}"), 503)
    assert Backup.objects.filter(pk=backup.pk).exists()


def test_a_running_backup_is_not_deleted_and_a_failed_one_needs_no_node(
    owner_api, server, fake_agent
):
    running = completed_backup(server, status=BackupStatus.RUNNING)
    error_of(owner_api.delete(f"/v1/servers/{server.pk}/backups/{running.id}"), 409, "conflict")
    failed = completed_backup(server, status=BackupStatus.FAILED)
    fake_agent.down = True
    answer = owner_api.delete(f"/v1/servers/{server.pk}/backups/{failed.id}")
    assert answer.status_code == 200 and fake_agent.calls == []


# --- Restore --------------------------------------------------------------------------------


def test_a_restore_is_asked_with_the_checksum_and_blocks_power_actions(
    owner_api, server, fake_agent, node_with_token, client_for
):
    backup = completed_backup(server)
    answer = owner_api.post(
        f"/v1/servers/{server.pk}/backups/{backup.id}/restore", {"truncate": True}, format="json"
    )
    assert answer.status_code == 202, answer.content
    assert answer.json()["data"]["backup"]["restore_status"] == "running"
    assert fake_agent.calls == [
        (
            "POST",
            f"servers/{server.pk}/backups/{backup.id}/restore",
            {"storage": {"kind": "node"}, "checksum": CHECKSUM, "truncate": True},
        )
    ]
    with pytest.raises(Exception) as refused:
        action_request(instance=server, action_type="start", actor=SYSTEM)
    assert getattr(refused.value, "code", None) == "conflict"
    error_of(owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json"), 409, "conflict")
    # As the agent sends it (PROTOCOL.md): the members unpacked and the links left out.
    report(
        client_for,
        node_with_token[1],
        server,
        backup.id,
        "backup_restored",
        files=3,
        links_skipped=1,
    )
    backup.refresh_from_db()
    assert backup.restore_status == "completed" and backup.restored_at is not None
    assert action_request(instance=server, action_type="start", actor=SYSTEM).type == "start"


@pytest.mark.parametrize("status", ["running", "failed"])
def test_only_a_completed_backup_is_restored_or_downloaded(owner_api, server, fake_agent, status):
    backup = completed_backup(server, status=status)
    base = f"/v1/servers/{server.pk}/backups/{backup.id}"
    error_of(owner_api.post(f"{base}/restore", {}, format="json"), 409, "invalid_state")
    error_of(owner_api.post(f"{base}/download-url"), 409, "invalid_state")


def test_a_server_being_installed_is_not_restored(owner_api, server, fake_agent):
    backup = completed_backup(server)
    server.status = ServerStatus.INSTALLING
    server.save()
    error = error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups/{backup.id}/restore", {}, format="json"),
        409,
        "invalid_state",
    )
    assert error["details"]["status"] == "installing"


def test_a_restore_the_node_refuses_ends_failed(owner_api, server, fake_agent):
    backup = completed_backup(server)
    fake_agent.down = True
    error_of(
        owner_api.post(f"/v1/servers/{server.pk}/backups/{backup.id}/restore", {}, format="json"),
        503,
    )
    backup.refresh_from_db()
    assert backup.restore_status == "failed" and "cannot be reached" in backup.restore_error


# --- Progress and downloads ---------------------------------------------------------------


def test_a_running_backup_shows_the_nodes_progress_or_none(owner_api, server, fake_agent):
    backup = completed_backup(server, status=BackupStatus.RUNNING)
    fake_agent.working_on.add(backup.id)
    url = f"/v1/servers/{server.pk}/backups/{backup.id}"
    shown = owner_api.get(url).json()["data"]["backup"]
    assert shown["progress"] == {"operation": "backup", "bytes": 2048, "files": 7}
    fake_agent.down = True
    assert owner_api.get(url).json()["data"]["backup"]["progress"] is None
    done = completed_backup(server)
    calls = len(fake_agent.calls)
    answer = owner_api.get(f"/v1/servers/{server.pk}/backups/{done.id}")
    assert answer.json()["data"]["backup"]["progress"] is None
    assert len(fake_agent.calls) == calls  # a finished one costs no call to the node


def test_a_node_stored_backup_downloads_with_a_signed_token(owner, owner_api, server, node):
    backup = completed_backup(server)
    answer = owner_api.post(f"/v1/servers/{server.pk}/backups/{backup.id}/download-url")
    transfer = answer.json()["data"]["transfer"]
    url = urlsplit(transfer["url"])
    assert f"{url.scheme}://{url.netloc}" == node.agent_url
    assert url.path == f"/api/servers/{server.pk}/backups/{backup.id}/download"
    assert transfer["method"] == "GET" and transfer["path"] == f"/{backup.id}.tar.gz"
    token = parse_qs(url.query)["token"][0]
    claims = jwt.decode(token, public_key_pem(), algorithms=["EdDSA"], audience=node.id)
    assert claims["permissions"] == ["backups.download"]
    assert (claims["backup_id"], claims["server_id"], claims["sub"]) == (
        backup.id,
        server.pk,
        str(owner.pk),
    )
    assert "path" not in claims and claims["exp"] - claims["iat"] == 900


def test_an_s3_backup_downloads_through_a_presigned_url(owner_api, server, node):
    node_backup_storage_set(
        node=node,
        kind="s3",
        endpoint="http://127.0.0.1:9000/",
        bucket="backups",
        prefix="game/",
        access_key_id="AKIAEXAMPLE",
        secret_access_key="s3cr3t-value",
        actor=SYSTEM,
    )
    backup = completed_backup(server, storage_kind="s3")
    answer = owner_api.post(f"/v1/servers/{server.pk}/backups/{backup.id}/download-url")
    url = urlsplit(answer.json()["data"]["transfer"]["url"])
    assert (url.netloc, url.path) == (
        "127.0.0.1:9000",
        f"/backups/game/{server.pk}/{backup.id}.tar.gz",
    )
    query = parse_qs(url.query)
    assert query["X-Amz-Expires"] == ["900"]
    assert "s3cr3t-value" not in answer.content.decode()


def test_s3_storage_is_sent_with_its_secret_and_the_secret_is_kept_encrypted(
    owner_api, server, node, fake_agent
):
    node_backup_storage_set(
        node=node,
        kind="s3",
        endpoint="http://127.0.0.1:9000",
        region="eu-west-1",
        bucket="backups",
        prefix="game/",
        access_key_id="AKIAEXAMPLE",
        secret_access_key="s3cr3t-value",
        actor=SYSTEM,
    )
    node.refresh_from_db()
    assert "s3cr3t" not in node.s3_secret_encrypted
    owner_api.post(f"/v1/servers/{server.pk}/backups", {}, format="json")
    [(_, _, body)] = fake_agent.calls
    assert body["storage"] == {
        "kind": "s3",
        "endpoint": "http://127.0.0.1:9000",
        "region": "eu-west-1",
        "bucket": "backups",
        "prefix": "game/",
        "access_key_id": "AKIAEXAMPLE",
        "secret_access_key": "s3cr3t-value",
    }
    assert Backup.objects.get().storage_kind == "s3"
    assert "s3cr3t" not in str(list(Event.objects.values_list("data", flat=True)))


@pytest.mark.parametrize(
    "fields,name",
    [
        ({"kind": "ftp"}, "kind"),
        ({"kind": "s3", "endpoint": "s3.example.com", "bucket": "b"}, "endpoint"),
        ({"kind": "s3", "endpoint": "http://s3", "bucket": "", "access_key_id": "a"}, "bucket"),
        (
            {"kind": "s3", "endpoint": "http://s3", "bucket": "b", "access_key_id": "a"},
            "secret_access_key",
        ),
    ],
)
def test_bad_storage_settings_are_refused(node, fields, name):
    from hosting.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as refused:
        node_backup_storage_set(node=node, actor=SYSTEM, **fields)
    assert refused.value.details["fields"][0]["name"] == name


# --- The agent's reports ------------------------------------------------------------------


def test_a_completed_report_is_applied_once_with_its_event_and_webhook(
    account, owner, server, fake_agent, node_with_token, client_for
):
    endpoint = WebhookEndpointFactory(
        account=account, enabled_events=["backup.*"], created_by=owner
    )
    # A Viewer's endpoint gets no backup events: a Viewer may not read backups.
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    WebhookEndpointFactory(account=account, enabled_events=["*"], created_by=viewer)
    backup = backup_create(instance=server, actor=SYSTEM)
    token = node_with_token[1]
    assert report(client_for, token, server, backup.id) == {"accepted": 1, "rejected": 0}
    backup.refresh_from_db()
    assert (backup.status, backup.size, backup.checksum, backup.files) == (
        "completed",
        4096,
        CHECKSUM,
        12,
    )
    report(client_for, token, server, backup.id)  # the agent's retry
    report(client_for, token, server, backup.id, "backup_failed", reason="late")
    backup.refresh_from_db()
    assert backup.status == "completed" and backup.error == ""
    [completed] = Event.objects.filter(type="backup.completed")
    assert completed.data["object"]["size"] == 4096
    assert not Event.objects.filter(type="backup.failed").exists()
    delivered = set(
        WebhookDelivery.objects.filter(endpoint=endpoint).values_list("event__type", flat=True)
    )
    assert delivered == {"backup.created", "backup.completed"}
    assert WebhookDelivery.objects.filter(event__type__startswith="backup.").count() == 2


def test_a_failed_report_keeps_its_reason(server, fake_agent, node_with_token, client_for):
    backup = backup_create(instance=server, actor=SYSTEM)
    report(client_for, node_with_token[1], server, backup.id, "backup_failed", reason="Disk full.")
    backup.refresh_from_db()
    assert (backup.status, backup.error) == ("failed", "Disk full.")
    assert Event.objects.get(type="backup.failed").data["object"]["error"] == "Disk full."


def test_a_restore_failure_is_reported_once(server, fake_agent, node_with_token, client_for):
    backup = completed_backup(server, restore_status="running")
    token = node_with_token[1]
    report(
        client_for, token, server, backup.id, "backup_restore_failed", reason="Checksum differs."
    )
    report(client_for, token, server, backup.id, "backup_restored")
    backup.refresh_from_db()
    assert (backup.restore_status, backup.restore_error) == ("failed", "Checksum differs.")
    assert Event.objects.filter(type="backup.restore_failed").count() == 1
    assert not Event.objects.filter(type="backup.restored").exists()


def test_a_report_about_another_servers_backup_changes_nothing(
    account, server, node, fake_agent, node_with_token, client_for
):
    neighbour = ServerFactory(account=account, node=node, status=ServerStatus.STOPPED)
    theirs = completed_backup(neighbour, status=BackupStatus.RUNNING)
    report(client_for, node_with_token[1], server, theirs.id)
    theirs.refresh_from_db()
    assert theirs.status == "running"


@pytest.mark.parametrize("missing", ["size", "checksum", "files", "backup_id"])
def test_a_report_without_its_details_is_rejected(
    server, fake_agent, node_with_token, client_for, missing
):
    """Counted as rejected, not a reason to refuse the batch (the agent would drop the rest)."""
    backup = backup_create(instance=server, actor=SYSTEM)
    event = {
        "instance_id": server.pk,
        "type": "backup_completed",
        "at": NOW,
        "backup_id": backup.id,
        "size": 1,
        "checksum": CHECKSUM,
        "files": 1,
    }
    del event[missing]
    answer = client_for(node_with_token[1]).post(
        "/v1/agent/events", {"events": [event]}, format="json"
    )
    assert answer.json()["data"] == {"accepted": 0, "rejected": 1}
    backup.refresh_from_db()
    assert backup.status == "running"


@pytest.mark.parametrize(
    "extra,field",
    [
        ({"checksum": "md5:abc"}, "checksum"),
        ({"files": -1}, "files"),
        ({"backup_id": "x"}, "backup_id"),
    ],
)
def test_a_malformed_report_is_400(server, node_with_token, client_for, extra, field):
    event = {"instance_id": server.pk, "type": "backup_failed", "at": NOW, "backup_id": "bkp_a"}
    answer = client_for(node_with_token[1]).post(
        "/v1/agent/events", {"events": [event | extra]}, format="json"
    )
    assert field_errors(answer) == [
        (f"events.0.{field}", "invalid" if field != "files" else "min_value")
    ]


def test_retention_runs_after_a_completed_backup(
    owner_api,
    server,
    fake_agent,
    node_with_token,
    client_for,
    settings,
    django_capture_on_commit_callbacks,
):
    settings.BACKUP_DEFAULT_LIMIT = 10  # room enough: what goes, retention deletes
    owner_api.patch(f"/v1/servers/{server.pk}/backup-retention", {"keep_last": 2}, format="json")
    server.refresh_from_db()
    now = timezone.now()
    old = [completed_backup(server, at=now - timedelta(days=day)) for day in (3, 2)]
    locked = completed_backup(server, at=now - timedelta(days=4), locked=True)
    backup = backup_create(instance=server, actor=SYSTEM)
    assert Backup.objects.count() == 4 and not fake_agent.of("DELETE")
    with django_capture_on_commit_callbacks(execute=True) as queued:
        report(client_for, node_with_token[1], server, backup.id)
    assert len(queued) == 1
    run_worker()
    left = set(Backup.objects.values_list("id", flat=True))
    assert left == {backup.id, old[1].id, locked.id}
    deleted = Event.objects.get(type="backup.deleted").data["object"]
    assert (deleted["id"], deleted["rotated"]) == (old[0].id, True)
    assert [call[1] for call in fake_agent.of("DELETE")] == [
        f"servers/{server.pk}/backups/{old[0].id}"
    ]


# --- Upkeep -------------------------------------------------------------------------------


def test_backups_and_restores_a_vanished_node_never_reported_are_failed(server, settings):
    settings.BACKUP_STALE_HOURS = 12
    long_ago = timezone.now() - timedelta(hours=13)
    stuck = completed_backup(server, status=BackupStatus.RUNNING, at=long_ago)
    recent = completed_backup(server, status=BackupStatus.RUNNING)
    restoring = completed_backup(server, restore_status="running", restore_started_at=long_ago)
    assert backups_fail_stale() == 2
    assert backups_fail_stale() == 0
    stuck.refresh_from_db(), recent.refresh_from_db(), restoring.refresh_from_db()
    assert stuck.status == "failed" and "12 hours" in stuck.error
    assert recent.status == "running"
    assert restoring.restore_status == "failed"


# --- A deleted server's backups -------------------------------------------------------------


def test_a_deleted_servers_backups_go_with_it_from_s3_too(account, node, s3_server):
    bucket = s3_server.new_bucket()
    storage = s3_server.storage(bucket, prefix="gone/")
    node_backup_storage_set(
        node=node,
        kind="s3",
        endpoint=storage["endpoint"],
        bucket=bucket,
        prefix="gone/",
        access_key_id=storage["access_key_id"],
        secret_access_key=storage["secret_access_key"],
        actor=SYSTEM,
    )
    server = ServerFactory(account=account, node=node, status=ServerStatus.STOPPED)
    in_s3 = completed_backup(server, storage_kind="s3")
    on_node = completed_backup(server)
    failed = completed_backup(server, storage_kind="s3", status=BackupStatus.FAILED)
    key = f"gone/{server.pk}/{in_s3.id}.tar.gz"
    s3_server.client().put_object(Bucket=bucket, Key=key, Body=b"archive")
    kept = completed_backup(ServerFactory(account=account, node=node), storage_kind="s3")

    backups_purge_run.call("server", server.pk)  # still live: nothing goes
    assert Backup.objects.count() == 4
    server.deleted_at = timezone.now()
    server.save()
    backups_purge_run.call("server", server.pk)
    assert s3_server.keys(bucket) == []
    assert list(Backup.objects.values_list("id", flat=True)) == [kept.id]
    assert not Backup.objects.filter(pk__in=[on_node.pk, failed.pk]).exists()


def test_an_s3_archive_that_cannot_be_deleted_keeps_its_row(account, node, fake_agent):
    node_backup_storage_set(
        node=node,
        kind="s3",
        endpoint="http://127.0.0.1:9",  # nothing listens
        bucket="b",
        access_key_id="a",
        secret_access_key="s",
        actor=SYSTEM,
    )
    server = ServerFactory(account=account, node=node, deleted_at=timezone.now())
    backup = completed_backup(server, storage_kind="s3")
    assert backups_purge(server) == 0
    assert Backup.objects.filter(pk=backup.pk).exists()
    # The housekeeping loop tries again (here the store is still away; a node-stored one goes).
    on_node = completed_backup(server)
    live = completed_backup(ServerFactory(account=account, node=node))
    assert backups_purge_left() == 1
    assert set(Backup.objects.values_list("id", flat=True)) == {backup.id, live.id}
    assert not Backup.objects.filter(pk=on_node.pk).exists()


def test_deleting_a_server_purges_its_backups_once_it_is_gone(
    owner_api, account, django_capture_on_commit_callbacks
):
    simulated = ServerFactory(account=account, status=ServerStatus.STOPPED)
    backup = completed_backup(simulated)
    answer = owner_api.delete(f"/v1/servers/{simulated.pk}")
    assert answer.status_code == 202, answer.content
    assert Backup.objects.filter(pk=backup.pk).exists()  # not before the node deleted it
    with django_capture_on_commit_callbacks(execute=True) as queued:
        run_worker()  # the delete, which queues the purge once it commits
    assert len(queued) == 1
    run_worker()
    simulated.refresh_from_db()
    assert simulated.deleted_at is not None
    assert not Backup.objects.filter(pk=backup.pk).exists()


def test_a_retention_change_is_the_servers_update_and_the_same_again_nothing(owner_api, server):
    url = f"/v1/servers/{server.pk}/backup-retention"
    answer = owner_api.patch(url, {"daily": 7, "weekly": 4}, format="json")
    shown = answer.json()["data"]["backup_retention"]
    assert (shown["keep_last"], shown["daily"], shown["weekly"], shown["monthly"]) == (
        None,
        7,
        4,
        None,
    )
    owner_api.patch(url, {"daily": 7}, format="json")  # fields left out keep their value
    [event] = Event.objects.filter(type="server.updated", related_id=server.pk)
    assert event.data["object"]["id"] == server.pk
    assert event.data["object"]["backup_retention"] == {
        "keep_last": None,
        "daily": 7,
        "weekly": 4,
        "monthly": None,
    }
    assert event.data["previous_attributes"] == {
        "backup_retention": {"keep_last": None, "daily": None, "weekly": None, "monthly": None}
    }
    owner_api.patch(url, {"weekly": None}, format="json")
    server.refresh_from_db()
    assert (server.backup_daily, server.backup_weekly) == (7, None)


def test_a_failed_installs_folder_may_be_restored(owner_api, server, fake_agent):
    backup = completed_backup(server)
    server.status = ServerStatus.INSTALL_FAILED
    server.save()
    answer = owner_api.post(
        f"/v1/servers/{server.pk}/backups/{backup.id}/restore", {}, format="json"
    )
    assert answer.status_code == 202, answer.content
    assert fake_agent.calls[0][2]["truncate"] is False


def test_an_s3_store_that_refuses_a_delete_is_said_and_the_backup_kept(
    owner_api, server, fake_agent
):
    backup = completed_backup(server)
    fake_agent.answers[("DELETE", "servers/{id}/backups/{backup}")] = (
        502,
        {
            "error": {
                "code": "storage_unavailable",
                "message": "The S3 storage could not be reached (EndpointConnectionError).",
            }
        },
    )
    error = error_of(
        owner_api.delete(f"/v1/servers/{server.pk}/backups/{backup.id}"),
        503,
        "service_unavailable",
    )
    assert error["message"] == "The S3 storage could not be reached (EndpointConnectionError)."
    assert Backup.objects.filter(pk=backup.pk).exists()

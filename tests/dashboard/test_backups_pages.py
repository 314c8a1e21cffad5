"""The Backups tab's pages with a stand-in agent (tests/servers/backup_helpers.py): who sees the
tab, reads and changes; back up now, lock, delete, restore after its confirmation, retention,
download; search, filter and pages; a phone's width. (A real agent and Chromium:
tests/browser/test_backups_flow.py.)"""

import re

import pytest

from accounts.roles import Role
from servers.models import Backup, ServerStatus
from tests.dashboard import messages_of, signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory
from tests.servers.backup_helpers import FakeAgent, completed_backup
from tests.servers.test_nodes import new_node

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(monkeypatch) -> FakeAgent:
    stand_in = FakeAgent()
    monkeypatch.setattr("servers.services.backups.agent_request", stand_in)
    return stand_in


@pytest.fixture
def placed(account):
    node, _ = new_node()
    return ServerFactory(account=account, node=node, status=ServerStatus.STOPPED)


def member(account, role):
    return MembershipFactory(account=account, role=role).user


def test_the_tab_shows_for_readers_of_backups_on_a_node(owner, account, placed):
    page = signed_in(owner).get(f"/servers/{placed.id}").content.decode()
    assert f'href="/servers/{placed.id}/backups"' in page
    for role in (Role.VIEWER, Role.BILLING):
        page = signed_in(member(account, role)).get(f"/servers/{placed.id}").content.decode()
        assert "backups-link" not in page, role
    simulated = ServerFactory(account=account)
    assert "backups-link" not in signed_in(owner).get(f"/servers/{simulated.id}").content.decode()


def test_the_list_shows_size_checksum_status_and_progress(owner, placed, agent):
    done = completed_backup(placed, name="Nightly", size=5 * 1024 * 1024)
    running = completed_backup(placed, name="Now", status="running", size=None)
    agent.working_on.add(running.id)
    failed = completed_backup(placed, name="Broke", status="failed", error="Disk full.")
    html = signed_in(owner).get(f"/servers/{placed.id}/backups").content.decode()
    row = html[html.index(f'id="backup-{done.id}"') :]
    assert "5.0\xa0MB" in row[:2000] and "sha256:abababababab…" in row[:2000]
    assert f"/servers/{placed.id}/backups/{done.id}/download" in row[:3000]
    assert "7 files · 2.0\xa0KB so far" in html  # the node's progress of the running one
    assert 'http-equiv="refresh"' in html
    assert "Disk full." in html and f'id="backup-{failed.id}"' in html
    assert "Back up now" in html and 'id="retention-form"' in html


def test_back_up_now_lock_and_delete_from_the_page(owner, placed, agent):
    client = signed_in(owner)
    base = f"/servers/{placed.id}/backups"
    made = client.post(f"{base}/do", {"op": "create", "name": "Mine", "ignore": "logs/\n*.tmp"})
    assert made.status_code == 302
    backup = Backup.objects.get()
    assert (backup.name, backup.ignore) == ("Mine", ["logs/", "*.tmp"])
    backup.status, backup.size, backup.checksum = "completed", 10, "sha256:" + "0" * 64
    backup.save()
    client.post(f"{base}/do", {"op": "lock", "backup_id": backup.id})
    backup.refresh_from_db()
    assert backup.locked
    refused = client.post(f"{base}/do", {"op": "delete", "backup_id": backup.id}, follow=True)
    assert "locked; unlock it first" in " ".join(messages_of(refused))
    client.post(f"{base}/do", {"op": "unlock", "backup_id": backup.id})
    deleted = client.post(f"{base}/do", {"op": "delete", "backup_id": backup.id}, follow=True)
    assert "“Mine” is deleted." in messages_of(deleted)
    assert not Backup.objects.exists()


def test_a_restore_needs_its_confirmation(owner, placed, agent):
    backup = completed_backup(placed, name="Before")
    client = signed_in(owner)
    url = f"/servers/{placed.id}/backups/{backup.id}/restore"
    page = client.get(url).content.decode()
    assert "Delete everything else in the folder first" in page and backup.checksum in page
    unconfirmed = client.post(url, {"truncate": "on"}, follow=True)
    assert "Confirm the restore" in " ".join(messages_of(unconfirmed))
    assert agent.calls == []
    client.post(url, {"confirm": backup.id, "truncate": "on"})
    [(_, path, body)] = agent.calls
    assert path.endswith(f"/backups/{backup.id}/restore") and body["truncate"] is True
    backup.refresh_from_db()
    assert backup.restore_status == "running"


def test_retention_is_saved_from_the_page_and_a_bad_value_said(owner, placed):
    client = signed_in(owner)
    base = f"/servers/{placed.id}/backups"
    client.post(f"{base}/do", {"op": "retention", "keep_last": "3", "daily": "7", "weekly": ""})
    placed.refresh_from_db()
    assert (placed.backup_keep_last, placed.backup_daily, placed.backup_weekly) == (3, 7, None)
    bad = client.post(f"{base}/do", {"op": "retention", "daily": "-1"}, follow=True)
    assert "whole number" in " ".join(messages_of(bad))
    bad = client.post(f"{base}/do", {"op": "retention", "monthly": "5000"}, follow=True)
    assert "from 1 to 1000" in " ".join(messages_of(bad))


def test_a_download_redirects_to_the_signed_address(owner, placed):
    backup = completed_backup(placed)
    answer = signed_in(owner).get(f"/servers/{placed.id}/backups/{backup.id}/download")
    assert answer.status_code == 302
    assert answer["Location"].startswith(
        f"http://127.0.0.1:9/api/servers/{placed.id}/backups/{backup.id}/download?token="
    )


def test_search_filter_and_pages(owner, placed):
    for number in range(30):
        completed_backup(placed, name=f"Nightly {number:02d}")
    completed_backup(placed, name="Before the update", status="failed")
    client = signed_in(owner)
    base = f"/servers/{placed.id}/backups"
    first = client.get(base).content.decode()
    assert "Page 1 of 2 · 31 in total" in first and 'rel="next"' in first
    found = client.get(f"{base}?q=update").content.decode()
    assert "Before the update" in found and "Nightly" not in found
    failed = client.get(f"{base}?status=failed").content.decode()
    assert failed.count('data-status="failed"') == 1 and 'data-status="completed"' not in failed
    second = client.get(f"{base}?status=completed&page=2").content.decode()
    assert second.count('data-status="completed"') == 5


def test_support_reads_but_may_not_change(account, placed, agent):
    client = signed_in(member(account, Role.SUPPORT))
    backup = completed_backup(placed)
    page = client.get(f"/servers/{placed.id}/backups").content.decode()
    assert "Back up now" not in page and "Restore…" not in page
    refused = client.post(f"/servers/{placed.id}/backups/do", {"op": "create"}, follow=True)
    assert "may not change this server's backups" in " ".join(messages_of(refused))
    restore = client.get(f"/servers/{placed.id}/backups/{backup.id}/restore", follow=True)
    assert "may not change" in " ".join(messages_of(restore))
    assert not Backup.objects.exclude(pk=backup.pk).exists() and agent.calls == []


def test_a_viewer_is_sent_back_and_an_outsider_gets_404(account, outsider, placed):
    refused = signed_in(member(account, Role.VIEWER)).get(
        f"/servers/{placed.id}/backups", follow=True
    )
    assert refused.redirect_chain[-1][0] == f"/servers/{placed.id}"
    backup = completed_backup(placed)
    client = signed_in(outsider)
    for path in ("backups", f"backups/{backup.id}/restore", f"backups/{backup.id}/download"):
        assert client.get(f"/servers/{placed.id}/{path}").status_code == 404, path
    assert client.post(f"/servers/{placed.id}/backups/do", {"op": "create"}).status_code == 404


def test_another_servers_backup_is_404_here(owner, account, placed):
    other = ServerFactory(account=account, node=placed.node, status=ServerStatus.STOPPED)
    theirs = completed_backup(other)
    client = signed_in(owner)
    assert client.get(f"/servers/{placed.id}/backups/{theirs.id}/restore").status_code == 404
    assert client.get(f"/servers/{placed.id}/backups/{theirs.id}/download").status_code == 404


def test_a_bots_tab_works_alike(owner, account, placed, agent):
    bot = BotFactory(account=account, node=placed.node, status=ServerStatus.STOPPED)
    client = signed_in(owner)
    assert f'href="/bots/{bot.id}/backups"' in client.get(f"/bots/{bot.id}").content.decode()
    client.post(f"/bots/{bot.id}/backups/do", {"op": "create"})
    assert Backup.objects.get().bot_id == bot.id


def test_the_page_fits_a_phone(owner, placed):
    """At 390 px the table stacks (table-stack) and nothing is wider than the screen."""
    completed_backup(placed)
    html = signed_in(owner).get(f"/servers/{placed.id}/backups").content.decode()
    assert 'class="table table-stack"' in html
    assert not re.search(r'style="[^"]*width:\s*\d{3,}px', html)

"""Who may reach a server's or bot's backups through the API: the owner and a teammate with the
backups scopes get through, an outsider gets 404 (and so does another server's backup id), a
key without the scopes 403, a Viewer's key 403, and bad input 400. The node is a stand-in
(tests/servers/backup_helpers.py); against a real agent:
tests/agent/test_backups_control_plane.py."""

import pytest

from accounts.roles import ROLE_SCOPES, Role
from servers.models import Backup, ServerStatus
from tests.envelopes import error_of, field_errors, parameter_errors
from tests.factories import MembershipFactory, ServerFactory
from tests.servers.backup_helpers import completed_backup

pytestmark = pytest.mark.django_db

# (method, path after the instance's, body, the status the owner gets); {b}: a backup's id.
READS = [
    ("get", "backups", None, 200),
    ("get", "backups/{b}", None, 200),
    ("post", "backups/{b}/download-url", None, 200),
    ("get", "backup-retention", None, 200),
]
WRITES = [
    ("post", "backups", {"name": "Before the update"}, 202),
    ("patch", "backups/{b}", {"locked": True}, 200),
    ("delete", "backups/{b}", None, 200),
    ("post", "backups/{b}/restore", {"truncate": True}, 202),
    ("patch", "backup-retention", {"keep_last": 3}, 200),
]


def call(api, instance, method, suffix, body, backup: Backup):
    path = f"/v1/{instance.kind}s/{instance.pk}/" + suffix.format(b=backup.id)
    return getattr(api, method)(path, body, format="json")


@pytest.mark.parametrize("method,suffix,body,status", READS + WRITES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_the_owner_gets_through_and_an_outsider_gets_404(
    owner_api, outsider_api, server, bot, fake_agent, kind, method, suffix, body, status
):
    instance = server if kind == "server" else bot
    backup = completed_backup(instance)
    error_of(call(outsider_api, instance, method, suffix, body, backup), 404, "not_found")
    answer = call(owner_api, instance, method, suffix, body, backup)
    assert answer.status_code == status, answer.content


@pytest.mark.parametrize("method,suffix,body,status", [c for c in READS + WRITES if "{b}" in c[1]])
def test_another_servers_backup_is_not_found_here(
    owner_api, account, server, node, fake_agent, method, suffix, body, status
):
    neighbour = ServerFactory(account=account, node=node, status=ServerStatus.STOPPED)
    theirs = completed_backup(neighbour)
    error = error_of(call(owner_api, server, method, suffix, body, theirs), 404, "not_found")
    assert error["message"] == "No such backup."
    assert Backup.objects.filter(pk=theirs.pk, locked=False).exists()
    assert fake_agent.calls == []


@pytest.mark.parametrize("method,suffix,body,status", READS + WRITES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_teammate_needs_the_backups_scopes(
    teammate,
    account,
    make_token,
    client_for,
    server,
    bot,
    fake_agent,
    kind,
    method,
    suffix,
    body,
    status,
):
    instance = server if kind == "server" else bot
    backup = completed_backup(instance)
    read = f"{kind}s:read"
    needed = "backups:read" if (method, suffix, body, status) in READS else "backups:write"
    without = client_for(make_token(teammate, account, [read, f"{kind}s:write", "files:write"]))
    error = error_of(
        call(without, instance, method, suffix, body, backup), 403, "insufficient_scope"
    )
    assert error["details"]["required_scopes"] == [read, needed]
    # backups:write implies backups:read; the instance's own read scope is needed beside it.
    only_backups = client_for(make_token(teammate, account, ["backups:write"]))
    error_of(call(only_backups, instance, method, suffix, body, backup), 403, "insufficient_scope")
    with_backups = client_for(make_token(teammate, account, [read, "backups:write"]))
    answer = call(with_backups, instance, method, suffix, body, backup)
    assert answer.status_code == status, answer.content


def test_which_roles_may_hold_the_backups_scopes():
    for role in (Role.OWNER, Role.ADMIN, Role.DEVELOPER):
        assert {"backups:read", "backups:write"} <= ROLE_SCOPES[role]
    assert "backups:read" in ROLE_SCOPES[Role.SUPPORT]
    assert "backups:write" not in ROLE_SCOPES[Role.SUPPORT]
    for role in (Role.BILLING, Role.VIEWER):
        assert not {"backups:read", "backups:write"} & ROLE_SCOPES[role]


@pytest.mark.parametrize(
    "role,reads,writes", [(Role.SUPPORT, True, False), (Role.VIEWER, False, False)]
)
def test_support_reads_backups_and_a_viewer_none(
    account, make_token, client_for, server, fake_agent, role, reads, writes
):
    member = MembershipFactory(account=account, role=role).user
    api = client_for(make_token(member, account, sorted(ROLE_SCOPES[role])))
    listed = api.get(f"/v1/servers/{server.pk}/backups")
    assert listed.status_code == (200 if reads else 403)
    made = api.post(f"/v1/servers/{server.pk}/backups", {}, format="json")
    assert made.status_code == (202 if writes else 403)


@pytest.mark.parametrize(
    "query,parameter,code",
    [
        ("ordering=checksum", "ordering", "invalid_choice"),
        ("status=done", "status", "invalid_choice"),
        ("locked=yes", "locked", "invalid"),
        ("locked=true&locked=false", "locked", "multiple_values"),
        ("per_page=101", "per_page", "max_value"),
        ("page=0", "page", "min_value"),
    ],
)
def test_a_bad_list_query_is_refused_by_name(owner_api, server, query, parameter, code):
    answer = owner_api.get(f"/v1/servers/{server.pk}/backups?{query}")
    assert parameter_errors(answer) == [(parameter, code)]


@pytest.mark.parametrize(
    "suffix,method,body,expected",
    [
        ("backups", "post", {"name": "x" * 101}, [("name", "max_length")]),
        ("backups", "post", {"ignore": "logs/"}, [("ignore", "not_a_list")]),
        ("backups", "post", {"ignore": ["a"] * 201}, [("ignore", "max_length")]),
        ("backups", "post", {"storage": "s3"}, [("storage", "unknown_field")]),
        ("backups/{b}", "patch", {"locked": "maybe"}, [("locked", "invalid")]),
        ("backups/{b}", "patch", {"status": "failed"}, [("status", "unknown_field")]),
        ("backups/{b}/restore", "post", {"truncate": "all"}, [("truncate", "invalid")]),
        ("backup-retention", "patch", {"daily": 0}, [("daily", "min_value")]),
        ("backup-retention", "patch", {"weekly": 1001}, [("weekly", "max_value")]),
        ("backup-retention", "patch", {"yearly": 2}, [("yearly", "unknown_field")]),
    ],
)
def test_a_bad_body_is_refused_by_field(
    owner_api, server, fake_agent, suffix, method, body, expected
):
    backup = completed_backup(server)
    answer = call(owner_api, server, method, suffix, body, backup)
    assert field_errors(answer) == expected
    assert fake_agent.calls == []


def test_the_list_pins_its_queries_filters_and_orders(
    owner_api, server, fake_agent, django_assert_max_num_queries
):
    for size in (10, 30, 20):
        completed_backup(server, size=size, name=f"size {size}")
    completed_backup(server, locked=True, size=5, name="locked")
    completed_backup(server, status="failed", size=None, name="failed")
    with django_assert_max_num_queries(5):
        answer = owner_api.get(f"/v1/servers/{server.pk}/backups?ordering=-size&status=completed")
    data = answer.json()["data"]
    assert [b["size"] for b in data["backups"]] == [30, 20, 10, 5]
    assert data["pagination"] == {"page": 1, "per_page": 25, "total": 4, "total_pages": 1}
    locked = owner_api.get(f"/v1/servers/{server.pk}/backups?locked=true").json()["data"]
    assert [b["name"] for b in locked["backups"]] == ["locked"]
    paged = owner_api.get(
        f"/v1/servers/{server.pk}/backups?per_page=2&ordering=size&status=completed"
    )
    assert [b["name"] for b in paged.json()["data"]["backups"]] == ["locked", "size 10"]
    assert 'rel="next"' in paged["Link"]

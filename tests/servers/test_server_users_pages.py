"""The dashboard's permission matrix: every page and page action of a server or bot, for a
sub-user holding every permission but the one it needs (refused) and only that one (let
through), for a guest whose grant is on another server and an outsider (404), and for each
member role (their role decides, as before).

A refusal on a page is the dashboard's: a redirect with a "may not" message, or 403
``permission_denied`` for the JSON calls of the page's scripts (console token, files).
"""

import json

import pytest
from django.contrib.messages import get_messages

from accounts.actors import SYSTEM
from accounts.roles import ROLE_SCOPES, Role
from servers.models import ServerGrant
from servers.services.permissions import PERMISSIONS, permissions_of_scopes
from servers.services.schedules import schedule_create
from tests.dashboard import signed_in
from tests.factories import MembershipFactory, ServerFactory
from tests.servers.backup_helpers import completed_backup

pytestmark = pytest.mark.django_db

# (permission, method, path after the instance's page, form data); {b}: a backup's id, {s}: a
# schedule's. A dict body of a "json" method is sent as JSON (the files page's script).
PAGES = [
    ("console.view", "get", "console", None),
    ("console.view", "post", "console/token", {}),
    ("power.start", "post", "actions", {"type": "start"}),
    ("power.stop", "post", "actions", {"type": "stop"}),
    ("power.restart", "post", "actions", {"type": "restart"}),
    ("power.kill", "post", "actions", {"type": "kill"}),
    ("settings.reinstall", "post", "actions", {"type": "reinstall"}),
    ("settings.write", "get", "edit", None),
    ("settings.write", "post", "edit", {"name": "Renamed"}),
    ("activity.read", "get", "activity", None),
    ("files.read", "get", "files?path=/", None),
    ("files.read", "get", "files/edit?path=/server.properties", None),
    ("files.read", "get", "files/download?path=/world.zip", None),
    ("files.write", "json", "files/do", {"op": "upload_url", "path": "/world.zip"}),
    ("files.write", "json", "files/do", {"op": "write", "path": "/a.txt", "content": "x"}),
    ("files.write", "json", "files/do", {"op": "delete", "paths": ["/a.txt"]}),
    ("backups.read", "get", "backups", None),
    ("backups.read", "get", "backups/{b}/download", None),
    ("backups.create", "post", "backups/do", {"op": "create", "name": "Before"}),
    ("backups.restore", "get", "backups/{b}/restore", None),
    ("backups.restore", "post", "backups/{b}/restore", {"confirm": "{b}"}),
    ("backups.delete", "post", "backups/do", {"op": "lock", "backup_id": "{b}"}),
    ("backups.delete", "post", "backups/do", {"op": "delete", "backup_id": "{b}"}),
    ("backups.delete", "post", "backups/do", {"op": "retention", "keep_last": "3"}),
    ("schedules.read", "get", "schedules", None),
    ("schedules.read", "get", "schedules/{s}/runs", None),
    ("schedules.write", "get", "schedules/new", None),
    ("schedules.write", "get", "schedules/{s}", None),
    ("schedules.write", "post", "schedules/do", {"op": "pause", "schedule_id": "{s}"}),
    ("schedules.write", "post", "schedules/do", {"op": "run", "schedule_id": "{s}"}),
    ("databases.read", "get", "databases", None),
    ("databases.write", "post", "databases/do", {"op": "create", "name": "stats"}),
]
# Pages a grant never opens: deleting takes a role that writes servers, the Users tab a member.
MEMBERS_ONLY = [
    ("delete", "get", "delete", None),
    ("delete", "post", "delete", {}),
    (None, "get", "users", None),
    (None, "post", "users/do", {"op": "create", "email": "x@example.com", "preset": "full"}),
]


@pytest.fixture
def guest(account):
    return MembershipFactory(account=account, role=Role.GUEST).user


def grant(instance, user, permissions) -> ServerGrant:
    return ServerGrant.objects.create(
        account=instance.account, **{instance.kind: instance}, user=user, permissions=permissions
    )


def objects(instance) -> dict[str, str]:
    backup = completed_backup(instance)
    schedule = schedule_create(
        instance=instance,
        actor=SYSTEM,
        name="Hourly",
        cron="0 * * * *",
        tasks=[{"action": "command", "payload": "save-all"}],
    )
    return {"b": backup.id, "s": schedule.id}


def fill(value, ids):
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, list):
        return [fill(each, ids) for each in value]
    if isinstance(value, dict):
        return {key: fill(each, ids) for key, each in value.items()}
    return value


def visit(client, instance, method, suffix, data, ids):
    path = f"/{instance.kind}s/{instance.pk}/{fill(suffix, ids)}"
    data = fill(data, ids)
    if method == "json":
        return client.post(path, json.dumps(data), content_type="application/json")
    return getattr(client, method)(path, data)


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def refused(response) -> bool:
    """The dashboard's refusal: 403 from a script's call, or a redirect saying "may not"."""
    if response.status_code == 403:
        return True
    return response.status_code == 302 and any("may not" in message for message in said(response))


def let_through(response) -> bool:
    return response.status_code != 404 and not refused(response)


@pytest.mark.parametrize("permission,method,suffix,data", PAGES)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_sub_user_needs_the_pages_permission_and_no_other(
    guest, server, bot, fake_agent, kind, permission, method, suffix, data
):
    instance = server if kind == "server" else bot
    ids = objects(instance)
    access = grant(instance, guest, sorted(set(PERMISSIONS) - {permission}))
    client = signed_in(guest)
    assert refused(visit(client, instance, method, suffix, data, ids))
    access.permissions = [permission]
    access.save()
    answer = visit(signed_in(guest), instance, method, suffix, data, ids)
    assert let_through(answer), (answer.status_code, said(answer))


@pytest.mark.parametrize("permission,method,suffix,data", MEMBERS_ONLY)
def test_no_grant_opens_deleting_or_the_users_tab(guest, server, permission, method, suffix, data):
    grant(server, guest, list(PERMISSIONS))
    answer = visit(signed_in(guest), server, method, suffix, data, {})
    assert refused(answer)
    server.refresh_from_db()
    assert server.deleted_at is None and server.status != "deleting"
    assert ServerGrant.objects.filter(server=server).count() == 1


@pytest.mark.parametrize("permission,method,suffix,data", PAGES + MEMBERS_ONLY)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_guest_with_a_grant_elsewhere_and_an_outsider_get_404(
    guest, outsider, account, node, server, bot, fake_agent, kind, permission, method, suffix, data
):
    instance = server if kind == "server" else bot
    ids = objects(instance)
    grant(ServerFactory(account=account, node=node), guest, list(PERMISSIONS))
    for person in (guest, outsider):
        answer = visit(signed_in(person), instance, method, suffix, data, ids)
        assert answer.status_code == 404, (person, answer.status_code)
    assert visit(signed_in(guest), instance, "get", "", None, ids).status_code == 404


@pytest.mark.parametrize("permission,method,suffix,data", PAGES)
@pytest.mark.parametrize(
    "role", [Role.OWNER, Role.DEVELOPER, Role.SUPPORT, Role.VIEWER, Role.BILLING]
)
def test_a_member_goes_by_their_role(
    account, server, fake_agent, role, permission, method, suffix, data
):
    member = MembershipFactory(account=account, role=role).user
    ids = objects(server)
    answer = visit(signed_in(member), server, method, suffix, data, ids)
    if permission in permissions_of_scopes(ROLE_SCOPES[role], "server"):
        assert let_through(answer), (answer.status_code, said(answer))
    else:
        assert refused(answer), answer.status_code


# --- What the pages show ----------------------------------------------------------------------

# Each tab or button, the permission that shows it, and how the page names it.
CONTROLS = [
    ("console.view", 'id="console-link"'),
    ("files.read", 'id="files-link"'),
    ("backups.read", 'id="backups-link"'),
    ("schedules.read", 'id="schedules-link"'),
    ("databases.read", 'id="databases-link"'),
    ("activity.read", "/activity"),
    ("settings.write", 'id="edit-link"'),
    ("power.start", 'id="action-start"'),
    ("settings.read", 'id="variables-heading"'),
    ("activity.read", "Recent actions"),
]


@pytest.mark.parametrize("permission,marker", CONTROLS)
def test_the_overview_shows_a_control_only_with_its_permission(
    guest, server, fake_agent, permission, marker
):
    access = grant(server, guest, sorted(set(PERMISSIONS) - {permission}))
    client = signed_in(guest)
    assert marker not in client.get(f"/servers/{server.pk}").content.decode()
    access.permissions = [permission]
    access.save()
    assert marker in client.get(f"/servers/{server.pk}").content.decode()


def test_a_guest_sees_no_users_tab_and_no_delete_even_with_every_permission(guest, server):
    grant(server, guest, list(PERMISSIONS))
    page = signed_in(guest).get(f"/servers/{server.pk}").content.decode()
    assert 'id="users-link"' not in page and 'id="delete-link"' not in page


def test_the_list_says_what_each_grant_gives_and_shows_only_those(guest, account, server, bot):
    ServerFactory(account=account, name="Hidden")
    grant(server, guest, ["console.view", "power.start", "power.stop"])
    client = signed_in(guest)
    page = client.get("/").content.decode()
    assert server.name in page and "Hidden" not in page
    assert "Shared with you: Console (1), Power (2)" in page
    # No bot is shared: the empty list says so, and how access comes.
    assert (
        "No bot of Owner&#x27;s Hosting is shared with you yet"
        in client.get("/bots").content.decode()
    )
    grant(bot, guest, list(PERMISSIONS))
    assert "Shared with you: Console (all), Power (all)" in client.get("/bots").content.decode()


def test_a_members_list_names_only_their_own_grants(owner, teammate, server, bot):
    grant(server, teammate, ["power.start"])
    assert "Shared with you: Power (1)" in signed_in(teammate).get("/").content.decode()
    assert "Shared with you" not in signed_in(owner).get("/").content.decode()


def test_a_sub_users_own_actions_show_in_the_activity(guest, server):
    grant(server, guest, ["power.start", "activity.read"])
    client = signed_in(guest)
    client.post(f"/servers/{server.pk}/actions", {"type": "start"})
    assert server.actions.filter(type="start", requested_by_user=guest).exists()
    page = client.get(f"/servers/{server.pk}/activity").content.decode()
    assert guest.email in page and "start" in page
    overview = client.get(f"/servers/{server.pk}").content.decode()
    assert "Recent actions" in overview and guest.email in overview


def test_a_guest_sees_only_themselves_on_the_team_page_and_may_leave(
    guest, owner, teammate, server, django_capture_on_commit_callbacks
):
    grant(server, guest, ["console.view"])
    with django_capture_on_commit_callbacks(execute=True):
        signed_in(owner).post(
            "/settings/team/invite", {"email": "pending@example.com", "role": "viewer"}
        )
    page = signed_in(guest).get("/settings/team").content.decode()
    assert guest.email in page and "Leave" in page
    assert owner.email not in page and teammate.email not in page
    assert "pending@example.com" not in page and 'id="invitations"' not in page
    # A member still sees the whole team.
    whole = signed_in(teammate).get("/settings/team").content.decode()
    assert owner.email in whole and guest.email in whole and "pending@example.com" in whole

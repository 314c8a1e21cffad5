"""Sub-users: grants of permissions on one server or bot (servers/services/permissions.py).

The matrix: every endpoint on an instance, for a sub-user holding every permission but the one
it needs (403 ``permission_denied``) and holding only that one (let through), for a member of
the account (their role decides, as before) and an outsider (404). Then what a guest sees, their
keys, the console token's input right, SFTP, revocation, and the users API itself."""

import jwt
import pytest
from django.core import mail

from accounts.actors import SYSTEM, Actor
from accounts.models import Invitation, Membership
from accounts.roles import SCOPES, Role
from accounts.services import invitation_accept
from events.models import Event
from servers.models import ServerGrant
from servers.services.allocations import allocation_add
from servers.services.grants import grant_create
from servers.services.permissions import (
    PERMISSION_SCOPES,
    PERMISSIONS,
    PRESETS,
    Caller,
    instance_permissions,
)
from servers.services.schedules import schedule_create
from servers.services.sftp import instance_file_permissions
from servers.signing import public_key_pem
from tests.envelopes import error_of
from tests.factories import BotFactory, MembershipFactory, ServerFactory, UserFactory
from tests.servers.backup_helpers import completed_backup

pytestmark = pytest.mark.django_db

# (permission, method, path after the instance's, body); {b}: a backup's id, {s}: a schedule's.
ENDPOINTS = [
    ("settings.write", "patch", "", {"name": "Renamed"}),
    ("console.view", "post", "console", None),
    ("power.start", "post", "actions", {"type": "start"}),
    ("power.stop", "post", "actions", {"type": "stop"}),
    ("power.restart", "post", "actions", {"type": "restart"}),
    ("power.kill", "post", "actions", {"type": "kill"}),
    ("settings.reinstall", "post", "actions", {"type": "reinstall"}),
    ("activity.read", "get", "actions", None),
    ("activity.read", "get", "activity", None),
    ("files.read", "get", "files?path=/", None),
    ("files.read", "get", "files/stat?path=/", None),
    ("files.read", "get", "files/contents?path=/server.properties", None),
    ("files.read", "post", "files/download-url", {"path": "/world.zip"}),
    ("files.write", "post", "files/upload-url", {"path": "/world.zip"}),
    ("files.write", "put", "files/contents", {"path": "/a.txt", "content": "x"}),
    ("files.write", "post", "files/folders", {"path": "/plugins"}),
    ("files.write", "post", "files/delete", {"paths": ["/a.txt"]}),
    ("backups.read", "get", "backups", None),
    ("backups.read", "get", "backups/{b}", None),
    ("backups.read", "post", "backups/{b}/download-url", None),
    ("backups.read", "get", "backup-retention", None),
    ("backups.create", "post", "backups", {"name": "Before the update"}),
    ("backups.restore", "post", "backups/{b}/restore", {"truncate": False}),
    ("backups.delete", "patch", "backups/{b}", {"locked": True}),
    ("backups.delete", "delete", "backups/{b}", None),
    ("backups.delete", "patch", "backup-retention", {"keep_last": 3}),
    ("schedules.read", "get", "schedules", None),
    ("schedules.read", "get", "schedules/{s}", None),
    ("schedules.read", "get", "schedules/{s}/runs", None),
    (
        "schedules.write",
        "post",
        "schedules",
        {
            "name": "Nightly",
            "cron": "0 4 * * *",
            "tasks": [{"action": "command", "payload": "save-all"}],
        },
    ),
    ("schedules.write", "patch", "schedules/{s}", {"active": False}),
    ("schedules.write", "post", "schedules/{s}/run", None),
    ("schedules.write", "delete", "schedules/{s}", None),
]
# A server's allocations (no bot has any); {a}: an additional allocation's id.
SERVER_ENDPOINTS = [
    ("settings.read", "get", "allocations", None),
    ("settings.write", "post", "allocations", {"note": "Query"}),
    ("settings.write", "patch", "allocations/{a}", {"note": "Voice"}),
    ("settings.write", "delete", "allocations/{a}", None),
]
GATE = {"permission_denied", "not_found", "insufficient_scope"}


def objects_of(instance) -> dict[str, str]:
    """A backup and a schedule of ``instance``, by their ids' placeholders."""
    schedule = schedule_create(
        instance=instance,
        actor=SYSTEM,
        name="Hourly",
        cron="0 * * * *",
        tasks=[{"action": "command", "payload": "save-all"}],
    )
    return {"b": completed_backup(instance).id, "s": schedule.id}


def call(api, instance, method, suffix, body, ids=None):
    path = f"/v1/{instance.kind}s/{instance.pk}"
    if suffix:
        path += "/" + suffix.format(**(ids or {"b": "", "s": ""}))
    return getattr(api, method)(path, body, format="json")


def grant(instance, user, permissions) -> ServerGrant:
    return ServerGrant.objects.create(
        account=instance.account, **{instance.kind: instance}, user=user, permissions=permissions
    )


@pytest.fixture
def guest(account):
    return MembershipFactory(account=account, role=Role.GUEST).user


@pytest.fixture
def guest_api(guest, account, make_token, client_for):
    """A guest's key with every scope a guest may put on one."""
    instance_scopes = [
        scope
        for scope in SCOPES
        if scope.split(":")[0] in {"servers", "bots", "files", "backups", "schedules"}
    ]
    return client_for(make_token(guest, account, instance_scopes))


def _instance(kind, server, bot):
    return server if kind == "server" else bot


def _passed_the_gate(answer) -> bool:
    if answer.status_code < 400:
        return True
    return answer.json()["error"]["code"] not in GATE


@pytest.mark.parametrize("permission,method,suffix,body", ENDPOINTS)
@pytest.mark.parametrize("kind", ["server", "bot"])
def test_a_sub_user_needs_the_endpoints_permission_and_no_other(
    guest, guest_api, server, bot, fake_agent, kind, permission, method, suffix, body
):
    instance = _instance(kind, server, bot)
    ids = objects_of(instance)
    access = grant(instance, guest, sorted(set(PERMISSIONS) - {permission}))
    error = error_of(call(guest_api, instance, method, suffix, body, ids), 403, "permission_denied")
    assert error["details"] == {"required_permission": permission}
    access.permissions = [permission]
    access.save()
    answer = call(guest_api, instance, method, suffix, body, ids)
    assert _passed_the_gate(answer), answer.content


def an_additional_allocation(server) -> str:
    server.plan = {"allocation_limit": 3}
    server.save(update_fields=["plan"])
    return allocation_add(server=server, actor=SYSTEM).public_id


@pytest.mark.parametrize("permission,method,suffix,body", SERVER_ENDPOINTS)
def test_a_sub_user_needs_the_allocations_permission_and_no_other(
    guest, guest_api, server, outsider_api, permission, method, suffix, body
):
    ids = {"a": an_additional_allocation(server)}
    error_of(call(outsider_api, server, method, suffix, body, ids), 404, "not_found")
    access = grant(server, guest, sorted(set(PERMISSIONS) - {permission}))
    error = error_of(call(guest_api, server, method, suffix, body, ids), 403, "permission_denied")
    assert error["details"] == {"required_permission": permission}
    access.permissions = [permission]
    access.save()
    answer = call(guest_api, server, method, suffix, body, ids)
    assert answer.status_code < 300, answer.content


@pytest.mark.parametrize("permission,method,suffix,body", ENDPOINTS)
def test_a_member_goes_by_their_role_and_an_outsider_gets_404(
    owner_api, outsider_api, server, fake_agent, permission, method, suffix, body
):
    ids = objects_of(server)
    error_of(call(outsider_api, server, method, suffix, body, ids), 404, "not_found")
    assert _passed_the_gate(call(owner_api, server, method, suffix, body, ids))


@pytest.mark.parametrize("permission,method,suffix,body", ENDPOINTS)
def test_a_guest_without_a_grant_here_gets_404(
    guest, guest_api, account, node, server, fake_agent, permission, method, suffix, body
):
    elsewhere = ServerFactory(account=account, node=node)
    grant(elsewhere, guest, list(PERMISSIONS))
    ids = objects_of(server)
    error_of(call(guest_api, server, method, suffix, body, ids), 404, "not_found")


def test_the_permissions_are_described_and_mapped_to_scopes():
    assert set(PERMISSIONS) == set(PERMISSION_SCOPES)
    assert {"console.view", "console.command", "schedules.write", "databases.read"} <= set(
        PERMISSIONS
    )
    for _, names in PRESETS.values():
        assert set(names) <= set(PERMISSIONS)


# --- What a guest sees ------------------------------------------------------------------------


def test_a_guest_lists_only_the_servers_and_bots_they_have_a_grant_on(
    guest, guest_api, account, server, bot, django_assert_max_num_queries
):
    other = ServerFactory(account=account)
    BotFactory(account=account)
    grant(server, guest, ["console.view"])
    grant(bot, guest, ["files.read"])
    with django_assert_max_num_queries(12):
        listed = guest_api.get("/v1/servers")
    assert listed.status_code == 200, listed.content
    assert [row["id"] for row in listed.json()["data"]["servers"]] == [server.id]
    assert listed.json()["data"]["pagination"]["total"] == 1
    assert [row["id"] for row in guest_api.get("/v1/bots").json()["data"]["bots"]] == [bot.id]
    assert guest_api.get(f"/v1/servers/{server.id}").status_code == 200
    error_of(guest_api.get(f"/v1/servers/{other.id}"), 404, "not_found")


def test_a_guest_reads_nothing_else_of_the_account(guest_api, server, guest):
    grant(server, guest, list(PERMISSIONS))
    error_of(guest_api.get("/v1/account"), 403, "insufficient_scope")
    error_of(guest_api.get(f"/v1/servers/{server.id}/users"), 403, "insufficient_scope")


def test_a_guest_may_not_delete_even_with_every_permission(guest, guest_api, server):
    grant(server, guest, list(PERMISSIONS))
    error = error_of(guest_api.delete(f"/v1/servers/{server.id}"), 403, "permission_denied")
    assert error["details"] == {"required_permission": "delete"}


def test_a_guests_key_is_limited_to_its_own_scopes(guest, account, server, make_token, client_for):
    grant(server, guest, ["power.start", "files.read"])
    reader = client_for(make_token(guest, account, ["servers:read"]))
    assert reader.get(f"/v1/servers/{server.id}").status_code == 200
    error_of(
        reader.post(f"/v1/servers/{server.id}/actions", {"type": "start"}, format="json"),
        403,
        "insufficient_scope",
    )
    caller = Caller(
        user=guest, account_id=account.pk, role=Role.GUEST, key_scopes=frozenset({"servers:read"})
    )
    assert instance_permissions(caller, server) == frozenset()


def test_revoking_a_grant_takes_effect_at_once(guest, guest_api, account, server, fake_agent):
    other = ServerFactory(account=account)
    access = grant(server, guest, ["backups.read"])
    grant(other, guest, ["console.view"])
    assert guest_api.get(f"/v1/servers/{server.id}/backups").status_code == 200
    access.delete()
    error_of(guest_api.get(f"/v1/servers/{server.id}/backups"), 404, "not_found")
    listed = guest_api.get("/v1/servers").json()["data"]["servers"]
    assert [row["id"] for row in listed] == [other.id]
    ServerGrant.objects.filter(user=guest).delete()
    # With no grant left, a guest's key reaches no server at all.
    error_of(guest_api.get("/v1/servers"), 403, "insufficient_scope")


def test_a_members_grant_adds_to_their_role_on_that_server_only(
    account, node, server, make_token, client_for
):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    grant(server, viewer, ["power.start"])
    other = ServerFactory(account=account, node=node)
    api = client_for(make_token(viewer, account, ["servers:read"]))
    # The key holds no power scope: the grant works within the key's scopes.
    error_of(
        api.post(f"/v1/servers/{server.id}/actions", {"type": "start"}, format="json"),
        403,
        "insufficient_scope",
    )
    caller = Caller(user=viewer, account_id=account.pk, role=Role.VIEWER)
    assert "power.start" in instance_permissions(caller, server)
    assert "power.start" not in instance_permissions(caller, other)
    assert "settings.read" in instance_permissions(caller, other)  # the role's


# --- The console: view vs command --------------------------------------------------------------


@pytest.mark.parametrize(
    "permissions,claimed",
    [
        (["console.view"], ["console.read"]),
        (["console.view", "console.command"], ["console.read", "console.write"]),
    ],
)
def test_the_console_token_carries_input_only_with_console_command(
    guest, guest_api, server, node, permissions, claimed
):
    grant(server, guest, permissions)
    answer = guest_api.post(f"/v1/servers/{server.id}/console")
    assert answer.status_code == 200, answer.content
    console = answer.json()["data"]["console"]
    assert console["can_command"] is ("console.command" in permissions)
    claims = jwt.decode(
        console["token"],
        public_key_pem(),
        algorithms=["EdDSA"],
        audience=node.id,
        options={"verify_iss": False},
    )
    assert claims["permissions"] == claimed and claims["sub"] == str(guest.pk)


# --- SFTP --------------------------------------------------------------------------------------


def test_sftp_follows_the_grant(guest, server):
    assert instance_file_permissions(instance=server, user=guest) == []
    access = grant(server, guest, ["files.read", "files.write"])
    assert instance_file_permissions(instance=server, user=guest) == []  # no sftp permission
    access.permissions = ["sftp"]
    access.save()
    assert instance_file_permissions(instance=server, user=guest) == ["files.read"]
    access.permissions = ["sftp", "files.write"]
    access.save()
    assert instance_file_permissions(instance=server, user=guest) == ["files.read", "files.write"]
    access.delete()
    assert instance_file_permissions(instance=server, user=guest) == []


# --- The users API -----------------------------------------------------------------------------


def test_the_owner_adds_a_member_changes_and_removes_them(owner_api, account, server):
    member = MembershipFactory(account=account, role=Role.BILLING).user
    added = owner_api.post(
        f"/v1/servers/{server.id}/users",
        {"email": member.email.upper(), "permissions": ["console.view", "power.start"]},
        format="json",
    )
    assert added.status_code == 201, added.content
    shown = added.json()["data"]["user"]
    assert shown["status"] == "active" and shown["user_id"] == member.pk
    assert shown["permissions"] == ["console.view", "power.start"]
    assert added["Location"].endswith(f"/v1/servers/{server.id}/users/{shown['id']}")
    listed = owner_api.get(f"/v1/servers/{server.id}/users").json()["data"]
    assert [row["id"] for row in listed["users"]] == [shown["id"]]
    again = owner_api.post(
        f"/v1/servers/{server.id}/users",
        {"email": member.email, "permissions": ["console.view"]},
        format="json",
    )
    error_of(again, 409, "conflict")
    changed = owner_api.patch(
        f"/v1/servers/{server.id}/users/{shown['id']}", {"permissions": ["sftp"]}, format="json"
    )
    assert changed.json()["data"]["user"]["permissions"] == ["sftp"]
    for unchanged in ({}, {"permissions": ["sftp", "sftp"]}):  # a PATCH with nothing new
        same = owner_api.patch(
            f"/v1/servers/{server.id}/users/{shown['id']}", unchanged, format="json"
        )
        assert same.status_code == 200, same.content
        assert same.json()["data"]["user"]["permissions"] == ["sftp"]
    removed = owner_api.delete(f"/v1/servers/{server.id}/users/{shown['id']}")
    assert removed.json()["data"] == {"id": shown["id"], "deleted": True}
    assert not ServerGrant.objects.exists()
    types = list(
        Event.objects.filter(related_id=server.id, type__startswith="server.user_")
        .order_by("created_at", "id")
        .values_list("type", flat=True)
    )
    assert types == ["server.user_added", "server.user_updated", "server.user_removed"]


def test_a_newcomer_is_invited_as_a_guest_and_gets_the_grant_on_joining(
    owner, owner_api, account, server, bot, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        added = owner_api.post(
            f"/v1/servers/{server.id}/users",
            {"email": "mod@example.com", "permissions": ["console.view"]},
            format="json",
        )
    assert added.status_code == 201, added.content
    shown = added.json()["data"]["user"]
    assert shown["status"] == "invited" and shown["email"] == "mod@example.com"
    assert shown["user_id"] is None
    # A second server for the same person: one invitation carries both.
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(
            f"/v1/bots/{bot.id}/users",
            {"email": "mod@example.com", "permissions": ["files.read"]},
            format="json",
        )
    invitation = Invitation.objects.pending().get(email="mod@example.com")
    assert invitation.role == Role.GUEST
    assert set(ServerGrant.objects.values_list("invitation", flat=True)) == {invitation.pk}
    assert len(mail.outbox) == 2
    token = mail.outbox[-1].body.split("/invitations/")[1].split()[0].rstrip("/")
    person = UserFactory(email="mod@example.com")
    invitation_accept(token=token, user=person, actor=Actor(user=person))
    assert Membership.objects.get(account=account, user=person).role == Role.GUEST
    assert set(ServerGrant.objects.values_list("user", flat=True)) == {person.pk}
    caller = Caller(user=person, account_id=account.pk, role=Role.GUEST)
    assert instance_permissions(caller, server) == {"console.view"}
    assert instance_permissions(caller, bot) == {"files.read"}


def test_only_owners_and_admins_manage_users(account, teammate, make_token, client_for, server):
    api = client_for(make_token(teammate, account, ["servers:read", "account:read"]))
    assert api.get(f"/v1/servers/{server.id}/users").status_code == 200
    body = {"email": "x@example.com", "permissions": ["console.view"]}
    error_of(
        api.post(f"/v1/servers/{server.id}/users", body, format="json"), 403, "insufficient_scope"
    )
    with pytest.raises(Exception, match="Only owners and admins"):
        grant_create(
            instance=server, email="x@example.com", permissions=["sftp"], actor=Actor(user=teammate)
        )


@pytest.mark.parametrize(
    "body,field,code",
    [
        (
            {"email": "a@example.com", "permissions": ["console.fly"]},
            "permissions",
            "invalid_choice",
        ),
        ({"email": "a@example.com", "permissions": []}, "permissions", "min_length"),
        ({"email": "not-an-email", "permissions": ["sftp"]}, "email", "invalid"),
        ({"permissions": ["sftp"]}, "email", "required"),
    ],
)
def test_bad_input_is_refused(owner_api, server, body, field, code):
    error = error_of(
        owner_api.post(f"/v1/servers/{server.id}/users", body, format="json"),
        400,
        "validation_failed",
    )
    assert {(each["name"].split(".")[0], each["code"]) for each in error["details"]["fields"]} >= {
        (field, code)
    }


def test_an_outsider_cannot_see_or_manage_the_users(outsider_api, owner_api, server):
    added = owner_api.post(
        f"/v1/servers/{server.id}/users",
        {"email": "mod@example.com", "permissions": ["console.view"]},
        format="json",
    ).json()["data"]["user"]
    error_of(outsider_api.get(f"/v1/servers/{server.id}/users"), 404, "not_found")
    error_of(outsider_api.delete(f"/v1/servers/{server.id}/users/{added['id']}"), 404, "not_found")
    error_of(owner_api.get(f"/v1/servers/{server.id}/users/grant_unknown"), 404, "not_found")


def test_a_guest_may_not_create_servers_or_bots(guest, guest_api, server):
    grant(server, guest, list(PERMISSIONS))
    for kind in ("servers", "bots"):
        error = error_of(
            guest_api.post(f"/v1/{kind}", {}, format="json"), 403, "insufficient_scope"
        )
        assert error["details"] == {"required_scopes": [f"{kind}:write"]}


@pytest.mark.parametrize("kind,field", [("server", "variables"), ("bot", "environment")])
def test_the_configuration_is_shown_only_with_settings_read(
    kind, field, guest, account, server, bot, make_token, client_for, owner_api
):
    """A server's variables and a bot's environment hold passwords and tokens: a sub-user sees
    them with settings.read only, in the instance, its list and a change's answer."""
    instance = _instance(kind, server, bot)
    secret = {"RCON_PASSWORD": "hunter2"} if kind == "server" else {"API_TOKEN": "hunter2"}
    type(instance).objects.filter(pk=instance.pk).update(**{field: secret})
    access = grant(instance, guest, ["console.view", "settings.write"])
    api = client_for(make_token(guest, account, [f"{kind}s:read", f"{kind}s:write"]))
    path = f"/v1/{kind}s/{instance.pk}"

    assert api.get(path).json()["data"][kind][field] == {}
    listed = api.get(f"/v1/{kind}s").json()["data"][f"{kind}s"]
    assert [row.get(field, {}) for row in listed] == [{}]
    changed = api.patch(path, {"name": "Renamed"}, format="json")
    assert changed.status_code == 200 and changed.json()["data"][kind][field] == {}
    assert owner_api.get(path).json()["data"][kind][field] == secret

    access.permissions = ["console.view", "settings.read"]
    access.save()
    assert api.get(path).json()["data"][kind][field] == secret
    if kind == "bot":
        assert api.get("/v1/bots").json()["data"]["bots"][0][field] == secret

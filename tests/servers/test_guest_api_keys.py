"""A sub-user's API keys: a guest makes keys in the dashboard (which offers the scopes their
grants need) and through the API; a member may add to their role's scopes those their grants
need. Whatever a key holds, it reaches only the servers and bots of the person's grants, for
what each grant allows there."""

import re

import pytest

from accounts.roles import INSTANCE_SCOPE_AREAS, Role
from accounts.services import api_key_scopes_grantable, api_key_scopes_offered
from servers.models import ServerGrant
from tests.dashboard import field_errors, signed_in
from tests.envelopes import error_of
from tests.factories import MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def guest(account):
    return MembershipFactory(account=account, role=Role.GUEST).user


def grant(instance, user, permissions) -> ServerGrant:
    return ServerGrant.objects.create(
        account=instance.account, **{instance.kind: instance}, user=user, permissions=permissions
    )


def enabled_scopes(page: str) -> set[str]:
    return {
        found
        for found, disabled in re.findall(r'value="([a-z_:]+)" id="scope-[^"]+"( disabled)?>', page)
        if not disabled
    }


def test_a_guest_may_grant_the_scopes_of_their_grants_and_no_other(guest, account, server, bot):
    alone = set(api_key_scopes_offered(account=account, user=guest))
    assert "api_keys:write" in alone
    assert not {scope for scope in alone if scope.split(":")[0] in INSTANCE_SCOPE_AREAS}
    grant(server, guest, ["console.view", "files.read"])
    grant(bot, guest, ["backups.create"])
    scopes = set(api_key_scopes_offered(account=account, user=guest))
    assert scopes - alone == {
        "servers:read",
        "servers:power",
        "files:read",
        "bots:read",
        "backups:read",
        "backups:write",
    }


def test_the_key_page_offers_a_guest_only_the_scopes_of_their_grants(guest, server):
    grant(server, guest, ["console.view", "files.read"])
    page = signed_in(guest).get("/settings/api-keys/new").content.decode()
    offered = enabled_scopes(page)
    assert {"servers:read", "servers:power", "files:read", "api_keys:write"} <= offered
    assert not offered & {
        "servers:write",
        "files:write",
        "bots:read",
        "backups:read",
        "account:read",
    }


def test_a_guest_makes_a_key_in_the_dashboard_that_reaches_their_server_only(
    guest, account, node, server, client_for
):
    grant(server, guest, ["console.view", "settings.read"])
    other = ServerFactory(account=account, node=node)
    client = signed_in(guest)
    made = client.post(
        "/settings/api-keys/new",
        {"name": "My bot", "scopes": ["servers:read", "servers:power"], "expiry": "30"},
    )
    assert made.status_code == 302, field_errors(made, "scopes")
    token = re.search(r"hms_[A-Za-z0-9_-]+", client.get(made["Location"]).content.decode())
    api = client_for(token.group(0))
    assert api.get(f"/v1/servers/{server.id}").status_code == 200
    listed = api.get("/v1/servers").json()["data"]["servers"]
    assert [row["id"] for row in listed] == [server.id]
    error_of(api.get(f"/v1/servers/{other.id}"), 404, "not_found")
    # The key holds servers:power, the grant only console.view of it: capped by the grant.
    error = error_of(
        api.post(f"/v1/servers/{server.id}/actions", {"type": "start"}, format="json"),
        403,
        "permission_denied",
    )
    assert error["details"] == {"required_permission": "power.start"}
    assert api.post(f"/v1/servers/{server.id}/console").status_code != 403


def test_a_scope_the_grant_does_not_need_reaches_nothing(
    guest, account, server, make_token, client_for, fake_agent
):
    grant(server, guest, ["console.view"])
    api = client_for(make_token(guest, account, ["servers:read", "files:read"]))
    error = error_of(api.get(f"/v1/servers/{server.id}/files?path=/"), 403, "permission_denied")
    assert error["details"] == {"required_permission": "files.read"}


def test_a_guests_key_makes_a_key_for_their_grants_through_the_api(
    guest, account, server, make_token, client_for
):
    grant(server, guest, ["console.view", "files.read"])
    api = client_for(
        make_token(guest, account, ["api_keys:write", "servers:read", "servers:power"])
    )
    made = api.post("/v1/api-keys", {"name": "Narrow", "scopes": ["servers:read"]}, format="json")
    assert made.status_code == 201, made.content
    narrow = client_for(made.json()["data"]["token"])
    assert narrow.get(f"/v1/servers/{server.id}").status_code == 200
    # files:read is the grant's but not the calling key's; files:write is neither's.
    error_of(
        api.post("/v1/api-keys", {"name": "Wider", "scopes": ["files:read"]}, format="json"),
        403,
        "insufficient_scope",
    )
    error_of(
        api.post("/v1/api-keys", {"name": "Wrong", "scopes": ["files:write"]}, format="json"),
        403,
        "insufficient_scope",
    )


def test_a_member_may_put_on_a_key_what_their_grant_adds_to_the_role(
    account, node, server, client_for
):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    assert "servers:power" not in api_key_scopes_grantable(account=account, user=viewer)
    grant(server, viewer, ["power.start"])
    other = ServerFactory(account=account, node=node)
    assert "servers:power" in api_key_scopes_grantable(account=account, user=viewer)
    signed = signed_in(viewer)
    done = signed.post(
        "/settings/api-keys/new",
        {"name": "Start", "scopes": ["servers:read", "servers:power"], "expiry": "30"},
    )
    assert done.status_code == 302, field_errors(done, "scopes")
    token = re.search(r"hms_[A-Za-z0-9_-]+", signed.get(done["Location"]).content.decode())
    starter = client_for(token.group(0))
    answer = starter.post(f"/v1/servers/{server.id}/actions", {"type": "start"}, format="json")
    assert answer.status_code == 202, answer.content
    error = error_of(
        starter.post(f"/v1/servers/{other.id}/actions", {"type": "start"}, format="json"),
        403,
        "permission_denied",
    )
    assert error["details"] == {"required_permission": "power.start"}

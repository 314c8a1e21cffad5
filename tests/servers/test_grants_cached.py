"""A key's per-server grants travel with its entry in the shared API key cache
(``accounts.key_cache.extra_register``; servers/signals.py invalidates): a guest's request reads
no grant once its key is cached, and every change to a grant is seen on the very next request."""

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import key_cache
from accounts.actors import Actor
from accounts.models import ApiKey
from accounts.roles import Role
from servers.models import ServerGrant
from servers.services.grants import grant_delete, grant_update
from tests.envelopes import error_of
from tests.factories import MembershipFactory, ServerFactory
from tests.redis_faults import skip_without_redis

pytestmark = pytest.mark.django_db

GRANTS_TABLE = 'FROM "servers_servergrant"'


@pytest.fixture(autouse=True)
def _needs_redis():
    skip_without_redis("the shared key cache needs Redis")


@pytest.fixture
def guest(account):
    return MembershipFactory(account=account, role=Role.GUEST).user


@pytest.fixture
def guest_api(guest, account, make_token, client_for):
    """The guest's key, made once they hold a grant (call it after the first grant)."""

    def make(scopes=("servers:read",)):
        return client_for(make_token(guest, account, list(scopes)))

    return make


def _grant(server, user, permissions) -> ServerGrant:
    return ServerGrant.objects.create(
        account=server.account, server=server, user=user, permissions=permissions
    )


def _grant_queries(api, path) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        status = api.get(path).status_code
    return status, sum(GRANTS_TABLE in query["sql"] for query in captured)


def test_a_cached_key_brings_its_grants_and_reads_none(guest, guest_api, account):
    server = ServerFactory(account=account)
    _grant(server, guest, ["console.view"])
    guest_api = guest_api()

    assert _grant_queries(guest_api, "/v1/servers") == (200, 1)  # the miss fills the entry
    assert _grant_queries(guest_api, "/v1/servers") == (200, 0)
    assert _grant_queries(guest_api, f"/v1/servers/{server.pk}") == (200, 0)
    entry = orjson.loads(key_cache._client().get(key_cache._keys(ApiKey.objects.get().key_id)[0]))
    assert entry["extras"] == {"grants": {server.pk: ["console.view"]}}


def test_every_change_to_a_grant_is_seen_on_the_next_request(
    guest, guest_api, account, owner, make_token, client_for
):
    server, other = ServerFactory(account=account), ServerFactory(account=account)
    access = _grant(server, guest, ["files.read"])
    guest_api = guest_api(["servers:read", "files:read"])
    owner_actor = Actor(user=owner)
    files = f"/v1/servers/{server.pk}/files?path=/"
    error_of(guest_api.get(f"/v1/servers/{server.pk}/activity"), 403, "permission_denied")
    assert guest_api.get(f"/v1/servers/{other.pk}").status_code == 404

    grant_update(grant=access, actor=owner_actor, permissions=["activity.read"])
    assert guest_api.get(f"/v1/servers/{server.pk}/activity").status_code == 200
    error_of(guest_api.get(files), 403, "permission_denied")

    _grant(other, guest, ["console.view"])  # a new grant elsewhere
    assert guest_api.get(f"/v1/servers/{other.pk}").status_code == 200

    grant_delete(grant=access, actor=owner_actor)
    error_of(guest_api.get(f"/v1/servers/{server.pk}"), 404, "not_found")
    other.delete()  # its grant goes with it (a cascade)
    error_of(guest_api.get("/v1/servers"), 403, "insufficient_scope")


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda e: e["extras"].pop("grants"), id="grants missing"),
        pytest.param(lambda e: e["extras"].update(grants=["x"]), id="grants not an object"),
        pytest.param(lambda e: e["extras"]["grants"].update(x="files.read"), id="not a list"),
        pytest.param(lambda e: e["extras"]["grants"].update(x=[1]), id="not names"),
        pytest.param(lambda e: e.pop("extras"), id="no extras"),
    ],
)
def test_an_entry_with_grants_of_another_shape_is_read_again(guest, guest_api, account, tamper):
    server = ServerFactory(account=account)
    _grant(server, guest, ["console.view"])
    guest_api = guest_api()
    guest_api.get("/v1/servers")
    entry_key = key_cache._keys(ApiKey.objects.get().key_id)[0]
    entry = orjson.loads(key_cache._client().get(entry_key))
    tamper(entry)
    key_cache._client().set(entry_key, orjson.dumps(entry))

    assert _grant_queries(guest_api, "/v1/servers") == (200, 1)
    assert orjson.loads(key_cache._client().get(entry_key))["extras"] == {
        "grants": {server.pk: ["console.view"]}
    }

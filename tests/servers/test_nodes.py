"""Nodes, their tokens and allocation pools, placement, and what agents report."""

from datetime import UTC, datetime, timedelta

import jwt
import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from analytics.models import UsageSample
from events.models import Event
from servers.models import Action, Allocation, Bot, Node, Server
from servers.services import bot_create, server_create
from servers.services.nodes import (
    instance_release,
    node_allocations_add,
    node_create,
    node_token_rotate,
)
from servers.signing import ISSUER, public_key_pem
from tests.factories import MembershipFactory

# Samples older than the raw retention (3 days) are refused, so the tests' time is recent.
MEASURED_AT = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
NOW = MEASURED_AT.isoformat()


def new_node(
    name="fra-1", region="eu-central", memory_mb=8192, disk_mb=102400, ports="25565-25567"
):
    node, token = node_create(
        name=name,
        region=region,
        agent_url="http://127.0.0.1:9",
        memory_mb=memory_mb,
        disk_mb=disk_mb,
        cpu_percent=800,
        actor=SYSTEM,
    )
    if ports:
        node_allocations_add(node=node, ip="127.0.0.1", ports=ports, actor=SYSTEM)
    return node, token


def create_server(account, **overrides):
    fields = {
        "account": account,
        "name": "SMP",
        "game": "minecraft-java",
        "region": "eu-central",
        "variables": {"EULA": True},
        "resources": {"memory_mb": 2048, "disk_mb": 10240},
        "actor": SYSTEM,
    } | overrides
    return server_create(**fields)


def agent_client(client_for, token):
    return client_for(token)


# --- Tokens ---------------------------------------------------------------------------------


def test_a_node_token_is_shown_once_and_kept_as_a_digest(db, client_for):
    node, token = new_node()
    assert token.startswith("hmn_") and len(token) == 54
    assert token not in str(Node.objects.filter(pk=node.pk).values().get())
    answer = client_for(token).post(
        "/v1/agent/hello", {"boot_id": "b1", "version": "1.0", "limits": "rlimit"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["node_id"] == node.id
    assert data["console_public_key"] == public_key_pem()
    node.refresh_from_db()
    assert (node.boot_id, node.agent_limits, node.last_seen_at is not None) == (
        "b1",
        "rlimit",
        True,
    )


@pytest.mark.parametrize("header", ["", "Bearer hmn_nonsense", "Bearer {api_key}", "Basic {node}"])
def test_agent_endpoints_refuse_anything_but_the_node_token(
    db, owner, account, make_token, client, header
):
    _, token = new_node()
    header = header.format(api_key=make_token(owner, account), node=token)
    for path in ("/v1/agent/hello", "/v1/agent/usage", "/v1/agent/events"):
        answer = client.post(path, {}, content_type="application/json", HTTP_AUTHORIZATION=header)
        assert answer.status_code == 401, (path, answer.content)
        assert answer.json()["error"]["code"] == "invalid_token"


def test_a_rotated_token_replaces_the_old_one_at_once(db, client_for):
    node, old = new_node()
    _, new = node_token_rotate(node=node, actor=SYSTEM)
    body = {"boot_id": "b", "version": "1", "limits": "rlimit"}
    assert client_for(old).post("/v1/agent/hello", body, format="json").status_code == 401
    assert client_for(new).post("/v1/agent/hello", body, format="json").status_code == 200


# --- Hello ----------------------------------------------------------------------------------


HELLO = {"boot_id": "b1", "version": "1.0", "limits": "cgroup-v2"}


@pytest.mark.parametrize("isolation", ["sandbox", "none"])
def test_hello_stores_the_isolation_the_agent_applies(db, client_for, staff_api, isolation):
    node, token = new_node()
    answer = client_for(token).post(
        "/v1/agent/hello", HELLO | {"isolation": isolation}, format="json"
    )
    assert answer.status_code == 200, answer.content
    node.refresh_from_db()
    assert node.agent_isolation == isolation
    shown = staff_api.get(f"/v1/admin/nodes/{node.id}").json()["data"]["node"]["agent"]
    assert (shown["isolation"], shown["limits"], shown["version"]) == (
        isolation,
        "cgroup-v2",
        "1.0",
    )


def test_an_agent_that_does_not_say_leaves_the_isolation_unknown(db, client_for, staff_api):
    node, token = new_node()
    client_for(token).post("/v1/agent/hello", HELLO | {"isolation": "sandbox"}, format="json")
    older = client_for(token).post("/v1/agent/hello", HELLO, format="json")  # e.g. downgraded
    assert older.status_code == 200, older.content
    node.refresh_from_db()
    assert node.agent_isolation == ""
    shown = staff_api.get(f"/v1/admin/nodes/{node.id}").json()["data"]["node"]["agent"]
    assert shown["isolation"] is None


def test_a_node_that_never_said_hello_shows_no_agent(db, staff_api):
    node, _ = new_node()
    shown = staff_api.get(f"/v1/admin/nodes/{node.id}").json()["data"]["node"]["agent"]
    assert shown == {"version": None, "limits": None, "isolation": None, "last_seen_at": None}


@pytest.mark.parametrize(
    "body, field, code",
    [
        (HELLO | {"isolation": "chroot"}, "isolation", "invalid_choice"),
        (HELLO | {"isolation": None}, "isolation", "null"),
        (HELLO | {"isolation": 1}, "isolation", "invalid"),
        ({"boot_id": "b1", "version": "1.0"}, "limits", "required"),
        (HELLO | {"limits": "docker"}, "limits", "invalid_choice"),
        (HELLO | {"boot_id": "b" * 65}, "boot_id", "max_length"),
        (HELLO | {"hostname": "n1"}, "hostname", "unknown_field"),
    ],
)
def test_a_hello_its_schema_refuses_is_400_and_changes_nothing(db, client_for, body, field, code):
    node, token = new_node()
    answer = client_for(token).post("/v1/agent/hello", body, format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert answer.json()["success"] is False and error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == [(field, code)]
    assert error["request_id"] == answer["X-Request-Id"]
    node.refresh_from_db()
    assert (node.boot_id, node.agent_isolation, node.last_seen_at) == ("", "", None)


def test_a_hello_that_is_not_an_object_is_400(db, client_for):
    _, token = new_node()
    answer = client_for(token).post("/v1/agent/hello", [HELLO], format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "validation_failed"


# --- Placement ------------------------------------------------------------------------------


def test_a_region_without_nodes_places_nothing(account):
    server = create_server(account)
    assert server.node_id is None and server.address == ""


def test_a_server_takes_its_games_port_on_the_node_with_most_free_memory(account):
    small, _ = new_node("small", memory_mb=4096)
    big, _ = new_node("big", memory_mb=16384, ports="25560-25570")
    first = create_server(account)
    assert (first.node_id, first.address) == (big.id, "127.0.0.1:25565")
    second = create_server(account)
    assert second.node_id == big.id and second.address != first.address
    assert Allocation.objects.get(server=second).address == second.address
    assert small.servers.count() == 0


def test_no_room_is_409_no_capacity_and_writes_nothing(account, owner_api):
    new_node(memory_mb=4096, ports="25565")
    create_server(account)
    answer = owner_api.post(
        "/v1/servers",
        {
            "name": "B",
            "game": "minecraft-java",
            "region": "eu-central",
            "variables": {"EULA": True},
            "resources": {"memory_mb": 1024},
        },
        format="json",
    )
    assert answer.status_code == 409, answer.content
    error = answer.json()["error"]
    assert error["code"] == "no_capacity" and "free port" in error["message"]
    assert Server.objects.count() == 1 and Action.objects.count() == 1
    too_big = owner_api.post(
        "/v1/bots",
        {
            "name": "Bot",
            "region": "eu-central",
            "runtime": "python-3.13",
            "start_command": "python bot.py",
            "token": "x" * 30,
            "resources": {"memory_mb": 4096},
        },
        format="json",
    )
    assert too_big.status_code == 409 and too_big.json()["error"]["code"] == "no_capacity"


def test_nodes_in_maintenance_take_nothing_new(account):
    node, _ = new_node()
    Node.objects.filter(pk=node.pk).update(maintenance=True)
    with pytest.raises(Exception, match="maintenance") as raised:
        create_server(account)
    assert raised.value.code == "no_capacity"


def test_bots_are_placed_without_a_port(account):
    node, _ = new_node(ports="")
    bot = bot_create(
        account=account,
        name="Bot",
        region="eu-central",
        runtime="python-3.13",
        start_command="python bot.py",
        token="t" * 30,
        actor=SYSTEM,
    )
    assert bot.node_id == node.id and bot.address == ""


def test_a_deleted_server_frees_its_allocation(account):
    new_node(ports="25565")
    server = create_server(account)
    Server.objects.filter(pk=server.pk).update(deleted_at=datetime.now(UTC))
    instance_release(server)
    assert Allocation.objects.get().server_id is None
    assert create_server(account).address == "127.0.0.1:25565"


def test_growing_beyond_the_node_is_refused(account, owner_api):
    new_node(memory_mb=4096)
    server = create_server(account)
    answer = owner_api.patch(
        f"/v1/servers/{server.id}", {"resources": {"memory_mb": 8192}}, format="json"
    )
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "no_capacity"
    fine = owner_api.patch(
        f"/v1/servers/{server.id}", {"resources": {"memory_mb": 4096}}, format="json"
    )
    assert fine.status_code == 200, fine.content


# --- Usage and events -----------------------------------------------------------------------


def sample(instance_id, **overrides):
    return {
        "instance_id": instance_id,
        "at": NOW,
        "cpu_percent": 12.5,
        "memory_bytes": 2**28,
        "disk_bytes": 2**30,
        "network_rx_bytes": None,
        "network_tx_bytes": None,
        "uptime_seconds": 60,
    } | overrides


def test_usage_of_the_nodes_own_instances_is_stored(account, client_for):
    _, token = new_node()
    mine = create_server(account)
    other, _ = new_node("other", ports="25570")
    theirs = Server.objects.create(
        account=account, name="x", game_id="minecraft-java", region_id="eu-central", node=other
    )
    answer = client_for(token).post(
        "/v1/agent/usage",
        {
            "samples": [
                sample(mine.id),
                sample(mine.id, at=(MEASURED_AT + timedelta(seconds=5)).isoformat()),
                sample(theirs.id),
            ]
        },
        format="json",
    )
    assert answer.status_code == 202, answer.content
    assert answer.json()["data"] == {"accepted": 2, "rejected": 1}
    stored = UsageSample.objects.order_by("at")
    assert [row.instance_id for row in stored] == [mine.id, mine.id]
    assert stored[1].at == MEASURED_AT + timedelta(seconds=5)
    assert stored[0].memory_bytes == 2**28 and stored[0].network_rx_bytes is None


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"at": "yesterday"}, "samples.0.at"),
        ({"at": "2026-11-24T10:00:00"}, "samples.0.at"),
        ({"memory_bytes": -1}, "samples.0.memory_bytes"),
        ({"cpu_percent": "12"}, "samples.0.cpu_percent"),
        ({"uptime_seconds": True}, "samples.0.uptime_seconds"),
    ],
)
def test_a_bad_sample_refuses_the_whole_batch(account, client_for, bad, field):
    _, token = new_node()
    server = create_server(account)
    answer = client_for(token).post(
        "/v1/agent/usage", {"samples": [sample(server.id, **bad), sample(server.id)]}, format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["details"]["fields"][0]["name"] == field
    assert not UsageSample.objects.exists()


def test_a_crash_report_stops_and_restarts_the_server(account, client_for):
    _, token = new_node()
    server = create_server(account)
    Server.objects.filter(pk=server.pk).update(status="running")
    Action.objects.update(status="succeeded")
    answer = client_for(token).post(
        "/v1/agent/events",
        {
            "events": [
                {
                    "instance_id": server.id,
                    "type": "crashed",
                    "at": NOW,
                    "reason": "killed: out of memory (limit 2048 MB)",
                }
            ]
        },
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"] == {"accepted": 1, "rejected": 0}
    server.refresh_from_db()
    assert server.status == "starting"  # the automatic restart was accepted
    crashed = Event.objects.get(type="server.crashed", object_id=server.id)
    assert "out of memory" in crashed.data["object"]["status_reason"]
    assert Action.objects.filter(server=server, type="start", status="pending").exists()


def test_a_stop_from_the_console_is_not_restarted(account, client_for):
    _, token = new_node()
    server = create_server(account)
    Server.objects.filter(pk=server.pk).update(status="running")
    Action.objects.update(status="succeeded")
    client_for(token).post(
        "/v1/agent/events",
        {
            "events": [
                {
                    "instance_id": server.id,
                    "type": "stopped",
                    "at": NOW,
                    "reason": "exited with code 0",
                }
            ]
        },
        format="json",
    )
    server.refresh_from_db()
    assert server.status == "stopped" and server.status_reason == "Stopped: exited with code 0"
    assert not Action.objects.filter(status="pending").exists()


def test_events_about_another_nodes_server_change_nothing(account, client_for):
    new_node()
    server = create_server(account)
    _, other_token = new_node("other", ports="25570")
    Server.objects.filter(pk=server.pk).update(status="running")
    answer = client_for(other_token).post(
        "/v1/agent/events",
        {"events": [{"instance_id": server.id, "type": "crashed", "at": NOW, "reason": "x"}]},
        format="json",
    )
    assert answer.json()["data"] == {"accepted": 0, "rejected": 1}
    server.refresh_from_db()
    assert server.status == "running"


def test_hello_answers_the_state_to_sync_to(account, client_for):
    _, token = new_node()
    running = create_server(account, name="running")
    stopped = create_server(account, name="stopped")
    Server.objects.filter(pk=running.pk).update(status="running")
    Server.objects.filter(pk=stopped.pk).update(status="stopped")
    bot = bot_create(
        account=account,
        name="Bot",
        region="eu-central",
        runtime="python-3.13",
        start_command="python bot.py",
        token="secret-discord-token-123",
        actor=SYSTEM,
    )
    Bot.objects.filter(pk=bot.pk).update(status="running")
    data = (
        client_for(token)
        .post(
            "/v1/agent/hello",
            {"boot_id": "b", "version": "1", "limits": "cgroup-v1"},
            format="json",
        )
        .json()["data"]
    )
    desired = {spec["id"]: spec["desired"] for spec in data["servers"]}
    assert desired == {running.id: "running", stopped.id: "stopped", bot.id: "running"}
    bot_spec = next(spec for spec in data["servers"] if spec["id"] == bot.id)
    assert bot_spec["environment"]["DISCORD_TOKEN"] == "secret-discord-token-123"
    server_spec = next(spec for spec in data["servers"] if spec["id"] == running.id)
    assert server_spec["allocation"]["ip"] == "127.0.0.1"
    assert server_spec["variables"]["EULA"] == "true"


# --- Console tokens -------------------------------------------------------------------------


def test_the_console_token_is_for_one_user_and_one_server(account, owner, owner_api):
    node, _ = new_node()
    server = create_server(account)
    answer = owner_api.post(f"/v1/servers/{server.id}/console")
    assert answer.status_code == 200, answer.content
    console = answer.json()["data"]["console"]
    assert console["socket_url"] == f"ws://127.0.0.1:9/api/servers/{server.id}/ws"
    claims = jwt.decode(
        console["token"], public_key_pem(), algorithms=["EdDSA"], audience=node.id, issuer=ISSUER
    )
    assert claims["server_id"] == server.id and claims["sub"] == str(owner.pk)
    assert claims["permissions"] == ["console.read", "console.write"]
    assert claims["exp"] - claims["iat"] == 600


def test_console_needs_a_node_and_the_power_scope(
    account, owner, make_token, client_for, outsider_api
):
    server = create_server(account)
    simulated = client_for(make_token(owner, account)).post(f"/v1/servers/{server.id}/console")
    assert simulated.status_code == 409
    assert simulated.json()["error"]["code"] == "console_unavailable"
    new_node()
    placed = create_server(account, name="placed")
    reader = client_for(make_token(owner, account, ["servers:read"]))
    refused = reader.post(f"/v1/servers/{placed.id}/console")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    assert outsider_api.post(f"/v1/servers/{placed.id}/console").status_code == 404


def test_a_teammate_with_power_may_open_the_console_a_viewer_may_not(
    account, teammate, make_token, client_for
):
    new_node()
    server = create_server(account)
    developer = client_for(make_token(teammate, account, ["servers:power"]))
    assert developer.post(f"/v1/servers/{server.id}/console").status_code == 200
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    # A viewer's key cannot even hold servers:power: the role takes it away.
    refused = client_for(make_token(viewer, account, ["servers:read"])).post(
        f"/v1/servers/{server.id}/console"
    )
    assert refused.status_code == 403


# --- Staff API ------------------------------------------------------------------------------


def test_staff_create_a_node_and_its_pool(staff_api, client_for):
    answer = staff_api.post(
        "/v1/admin/nodes",
        {
            "name": "fra-2",
            "region": "eu-central",
            "agent_url": "https://fra-2.example:8443",
            "memory_mb": 65536,
            "disk_mb": 1048576,
            "cpu_percent": 1600,
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    data = answer.json()["data"]
    node_id, token = data["node"]["id"], data["token"]
    assert data["node"]["token_hint"] == token[:16] + "…"
    assert (
        client_for(token)
        .post(
            "/v1/agent/hello", {"boot_id": "b", "version": "1", "limits": "rlimit"}, format="json"
        )
        .status_code
        == 200
    )
    added = staff_api.post(
        f"/v1/admin/nodes/{node_id}/allocations",
        {"ip": "203.0.113.10", "ports": "25565-25574, 27015"},
        format="json",
    )
    assert added.json()["data"] == {"count": 11}
    again = staff_api.post(
        f"/v1/admin/nodes/{node_id}/allocations",
        {"ip": "203.0.113.10", "ports": "25565-25566"},
        format="json",
    )
    assert again.json()["data"] == {"count": 0}
    listed = staff_api.get(f"/v1/admin/nodes/{node_id}").json()["data"]["node"]
    assert listed["allocations"] == {"total": 11, "free": 11}
    assert staff_api.get(f"/v1/admin/nodes/{node_id}/allocations").json()["data"]["pagination"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"ip": "300.1.1.1", "ports": "1"}, "ip"),
        ({"ip": "10.0.0.1", "ports": "70000"}, "ports"),
        ({"ip": "10.0.0.1", "ports": "5-1"}, "ports"),
        ({"ip": "10.0.0.1", "ports": "a"}, "ports"),
        ({"ip": "10.0.0.1", "ports": "1-6000"}, "ports"),
    ],
)
def test_bad_allocations_are_field_errors(staff_api, body, field):
    node, _ = new_node(ports="")
    answer = staff_api.post(f"/v1/admin/nodes/{node.id}/allocations", body, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["details"]["fields"][0]["name"] == field


def test_ports_servers_hold_cannot_be_removed_nor_capacity_cut_below_use(account, staff_api):
    node, _ = new_node(ports="25565-25566")
    create_server(account)
    held = staff_api.post(
        f"/v1/admin/nodes/{node.id}/allocations/remove",
        {"ip": "127.0.0.1", "ports": "25565-25566"},
        format="json",
    )
    assert held.status_code == 409 and held.json()["error"]["details"]["ports"] == [25565]
    cut = staff_api.patch(f"/v1/admin/nodes/{node.id}", {"memory_mb": 1024}, format="json")
    assert cut.status_code == 400
    assert cut.json()["error"]["details"]["fields"][0]["code"] == "below_usage"
    assert staff_api.delete(f"/v1/admin/nodes/{node.id}").status_code == 409


def test_customers_cannot_see_nodes(owner_api, staff_api):
    answer = owner_api.get("/v1/admin/nodes")
    assert answer.status_code == 403
    assert answer.json()["error"]["details"]["required_scopes"] == ["admin:read"]
    assert staff_api.get("/v1/admin/nodes").status_code == 200

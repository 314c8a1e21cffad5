"""Issue 28: server errors that must be 4xx in the envelope, and input that must be refused
(multipart limits, credentials with any bytes, the agent's hello, allocation ports, calendar
edges in what agents report, the billing profile's country, game templates)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from accounts.actors import SYSTEM
from servers.models import Game, Node
from servers.services import bot_create
from servers.services.nodes import node_allocations_add, node_create
from tests.envelopes import error_of
from tests.factories import UserFactory
from tests.servers.test_bots_api import BOT


@pytest.fixture
def node(db):
    node, token = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )
    node_allocations_add(node=node, ip="127.0.0.1", ports="25565-25567", actor=SYSTEM)
    node.token = token
    return node


# --- Multipart limits -----------------------------------------------------------------------


@pytest.fixture
def bot_id(owner, account):
    from accounts.actors import Actor

    bot = bot_create(
        account=account,
        actor=Actor(user=owner),
        **{key: value for key, value in BOT.items() if key != "resources"},
    )
    return bot.id


def multipart(parts: list[tuple[str, str | None, bytes]]) -> tuple[bytes, str]:
    boundary = "hardeningboundary"
    body = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
        body += content + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize(
    "parts",
    [
        [
            ("file", f"f{n}.zip", b"PK\x03\x04") for n in range(101)
        ],  # > DATA_UPLOAD_MAX_NUMBER_FILES
        [(f"field{n}", None, b"x") for n in range(1001)],  # > DATA_UPLOAD_MAX_NUMBER_FIELDS
    ],
    ids=["too-many-files", "too-many-fields"],
)
def test_too_many_parts_in_a_multipart_body_is_413_in_the_envelope(owner_api, bot_id, parts):
    body, content_type = multipart(parts)
    response = owner_api.generic(
        "POST", f"/v1/bots/{bot_id}/source", body, content_type=content_type
    )
    error_of(response, 413, "payload_too_large")


def test_a_ticket_attachment_with_too_many_parts_is_413_too(owner_api):
    body, content_type = multipart([(f"f{n}", None, b"x") for n in range(1001)])
    response = owner_api.generic(
        "POST",
        "/v1/tickets/tkt_aaaaaaaaaaaaaaaaaaaaaaaa/attachments",
        body,
        content_type=content_type,
    )
    assert response.status_code in (404, 413), response.content
    assert response.json()["success"] is False


# --- Credentials with any bytes -------------------------------------------------------------

NON_ASCII = ["hmn_" + "é" * 50, "hmn_" + "\u0663" * 50, "hms_" + "ÿ" * 50, "é", "hmn_\u2028x"]


@pytest.mark.parametrize("token", NON_ASCII)
def test_a_node_token_of_any_characters_is_invalid_token(node, token):
    # The test client sends headers as given; a real server decodes them as latin-1.
    response = Client().post(
        "/v1/agent/hello",
        {},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    error_of(response, 401, "invalid_token")


@pytest.mark.parametrize("token", NON_ASCII)
def test_an_api_key_of_any_characters_is_invalid_api_key(db, token):
    response = Client().get("/v1/servers", HTTP_AUTHORIZATION=f"Bearer {token}")
    error_of(response, 401, "invalid_api_key")


def test_the_token_check_answers_false_for_any_text():
    from accounts.keys import token_matches

    for token in [*NON_ASCII, "\x00", "\udcff"]:
        assert token_matches(token, digest="0" * 64, pepper_id="t1") is False
        assert token_matches(token, digest=None, pepper_id=None) is False


# --- The agent's hello ----------------------------------------------------------------------

HELLO = {"boot_id": "b1", "version": "1.0", "limits": "cgroup-v2", "isolation": "sandbox"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"limits": "junk"}, "limits"),
        ({"limits": ["cgroup-v2"]}, "limits"),
        ({"servers": "all"}, "servers"),
        ({"servers": [1, 2]}, "servers.0"),
        ({"servers": [{"id": 5, "status": "running", "pid": 1}]}, "servers.0.id"),
        ({"servers": [{"id": "srv_x", "status": "flying", "pid": 1}]}, "servers.0.status"),
        ({"servers": [{"id": "srv_x", "status": "running", "pid": -3}]}, "servers.0.pid"),
        ({"servers": [{"id": "srv_x", "status": "running", "pid": 1, "x": 1}]}, "servers.0.x"),
        ({"boot_id": "b" * 65}, "boot_id"),
        ({"isolation": "maybe"}, "isolation"),
    ],
)
def test_hello_refuses_what_its_schema_refuses(node, client_for, changes, field):
    response = client_for(node.token).post("/v1/agent/hello", HELLO | changes, format="json")
    error = error_of(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["name"].startswith(field), error
    node.refresh_from_db()
    assert node.boot_id == ""  # nothing recorded


def test_hello_takes_what_the_agent_sends(node, client_for):
    body = HELLO | {
        "servers": [
            {"id": "srv_x", "status": "running", "pid": 42},
            {"id": "bot_y", "status": "stopped", "pid": None},
        ]
    }
    response = client_for(node.token).post("/v1/agent/hello", body, format="json")
    assert response.status_code == 200, response.content


# --- What agents report at the calendar's edges ---------------------------------------------

EDGES = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-12:00",
    "9999-12-31T23:59:59.999999+00:00",
    "0001-01-01T00:00:00-00:01",
    "0358-08-22T15:07:48Z",  # schema-valid, as the fuzzer sends it: a broken clock, not a 400
]


@pytest.fixture
def placed_bot(node, owner, account):
    from accounts.actors import Actor

    bot = bot_create(
        account=account,
        actor=Actor(user=owner),
        **{key: value for key, value in BOT.items() if key != "resources"},
    )
    assert bot.node_id == node.id
    return bot


@pytest.mark.parametrize("at", EDGES)
def test_a_usage_sample_at_the_calendars_edge_is_refused_not_a_500(
    node, placed_bot, client_for, at
):
    sample = {
        "instance_id": placed_bot.id,
        "at": at,
        "cpu_percent": 1.0,
        "memory_bytes": 1,
        "disk_bytes": 1,
        "uptime_seconds": 1,
    }
    response = client_for(node.token).post("/v1/agent/usage", {"samples": [sample]}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["data"] == {"accepted": 0, "rejected": 1}


@pytest.mark.parametrize("at", EDGES)
def test_an_event_at_the_calendars_edge_is_refused_not_a_500(node, placed_bot, client_for, at):
    event = {"instance_id": placed_bot.id, "type": "stopped", "at": at}
    response = client_for(node.token).post("/v1/agent/events", {"events": [event]}, format="json")
    assert response.status_code == 200, response.content  # its time is only noted


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00", "yesterday", "2026-13-01T00:00:00Z", 5])
def test_a_time_without_an_offset_or_no_time_is_a_field_error(node, placed_bot, client_for, at):
    event = {"instance_id": placed_bot.id, "type": "stopped", "at": at}
    response = client_for(node.token).post("/v1/agent/events", {"events": [event]}, format="json")
    error = error_of(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["name"] == "events.0.at"


# --- Allocation ports -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "ports",
    [
        "٢٥٥٦٥",
        "25565-",
        "-25565",
        "25565--25566",
        "\uff12\uff15\uff15\uff16\uff15",
        "25565-٢٥٥٦٦",
        "²",
        "25565,",
        "0x6400",
        "+25565",
        "25565.0",
    ],
)
def test_allocation_ports_are_ascii_digits_and_whole_ranges(node, staff_api, ports):
    before = node.allocations.count()
    response = staff_api.post(
        f"/v1/admin/nodes/{node.id}/allocations",
        {"ip": "127.0.0.2", "ports": ports},
        format="json",
    )
    error = error_of(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["name"] == "ports"
    assert Node.objects.get(pk=node.pk).allocations.count() == before


def test_good_port_lists_still_work(node, staff_api):
    response = staff_api.post(
        f"/v1/admin/nodes/{node.id}/allocations",
        {"ip": "127.0.0.2", "ports": "27015, 25565-25566"},
        format="json",
    )
    assert response.status_code in (200, 201), response.content


# --- The billing profile's country ----------------------------------------------------------


@pytest.mark.parametrize("country", ["ZZ", "EU", "XX", "UK", "AA", "QM"])
def test_a_billing_country_is_an_iso_3166_1_code(owner_api, country):
    response = owner_api.patch("/v1/billing-profile", {"country": country}, format="json")
    error = error_of(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["name"] == "country"


@pytest.mark.parametrize("country", ["DE", "gb", "US", "BE", "IE"])
def test_real_countries_are_accepted(owner_api, country):
    response = owner_api.patch("/v1/billing-profile", {"country": country}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["billing_profile"]["address"]["country"] == country.upper()


# --- Game templates -------------------------------------------------------------------------


def minecraft() -> Game:
    return Game.objects.get(slug="minecraft-java")


@pytest.mark.parametrize(
    "template",
    [
        "not an object",
        {"start_command": ""},
        {"start_command": "java -jar server.jar", "ready_pattern": "(unclosed"},
        {"start_command": "java", "stop_signal": "SIGSEGV"},
        {"start_command": "java", "stop_timeout_seconds": -1},
        {"start_command": "java", "ready_timeout_seconds": "soon"},
        {"start_command": "java", "unknown_key": 1},
        {"start_command": "java --port {{NO_SUCH_VARIABLE}}"},
        {"start_command": 5},
    ],
)
def test_a_bad_game_template_is_refused_when_saved(db, template):
    game = minecraft()
    game.template = template
    with pytest.raises(ValidationError) as refused:
        game.full_clean()
    assert "template" in refused.value.message_dict


def test_every_catalogue_template_is_valid(db):
    for game in Game.objects.all():
        game.full_clean()


def test_admin_shows_a_bad_template_next_to_its_field(db):
    superuser = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(superuser)
    game = minecraft()
    import json

    response = client.post(
        f"/admin/servers/game/{game.slug}/change/",
        {
            "slug": game.slug,
            "name": game.name,
            "default_port": game.default_port,
            "variables": json.dumps(game.variables),
            "template": json.dumps({"start_command": "x", "ready_pattern": "("}),
        },
        secure=True,
    )
    assert response.status_code == 200, response.status_code
    assert "template" in response.context["adminform"].form.errors
    assert Game.objects.get(slug=game.slug).template == game.template


def test_future_timestamps_still_work_near_now(node, placed_bot, client_for):
    at = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    sample = {
        "instance_id": placed_bot.id,
        "at": at,
        "cpu_percent": 1.0,
        "memory_bytes": 1,
        "disk_bytes": 1,
        "uptime_seconds": 1,
    }
    response = client_for(node.token).post("/v1/agent/usage", {"samples": [sample]}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["data"]["accepted"] == 1


def test_integral_floats_are_integers_as_the_schema_says(node, placed_bot, client_for):
    """The fuzzer's schema-valid sample: 406587775.0 bytes is an integer in JSON Schema."""
    at = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    sample = {
        "instance_id": placed_bot.id,
        "at": at,
        "cpu_percent": 1.5,
        "memory_bytes": 406587775.0,
        "disk_bytes": 128001.0,
        "network_rx_bytes": 753.0,
        "network_tx_bytes": 618.0,
        "players": 3.0,
        "uptime_seconds": 10.0,
    }
    response = client_for(node.token).post("/v1/agent/usage", {"samples": [sample]}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["data"] == {"accepted": 1, "rejected": 0}
    fractional = sample | {"memory_bytes": 1.5}
    response = client_for(node.token).post(
        "/v1/agent/usage", {"samples": [fractional]}, format="json"
    )
    error_of(response, 400, "validation_failed")

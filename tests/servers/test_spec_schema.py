"""Every spec the control plane sends an agent (servers/drivers/spec.py) is one the spec's JSON
Schema (agent/spec.schema.json) accepts, and names every field the schema knows, so nothing it
sends relies on the agent's defaults or is a field the agent would ignore."""

import pytest

from accounts.actors import SYSTEM
from hosting.secrets_box import encrypt_secret
from servers.catalogue import load_catalogue
from servers.drivers.spec import instance_spec
from servers.models import Game, ServerStatus
from servers.services.agent_reports import agent_hello
from servers.services.nodes import node_create
from servers.services.validation import validate_variables
from tests.agent.schema import schema_errors, spec_validator
from tests.factories import BotFactory, ServerFactory

pytestmark = pytest.mark.django_db

TEMPLATES = load_catalogue()
PLAN = {
    "subscription": "sub_TestSubscription0000001",
    "product": "prod_TestProduct000000000001",
    "memory_mb": 4096,
    "cpu_percent": 200,
    "disk_mb": 20480,
}


def required_values(game: Game) -> dict:
    """A value for each variable the game requires without a default (an admin password, the
    EULA): what a customer must type in."""
    values = {}
    for definition in game.variables:
        if "default" in definition or not definition.get("required"):
            continue
        if "must_be" in definition:
            values[definition["key"]] = definition["must_be"]
        elif definition["type"] == "enum":
            values[definition["key"]] = definition["choices"][0]
        elif definition["type"] == "integer":
            values[definition["key"]] = definition.get("min", 1)
        elif definition["type"] == "boolean":
            values[definition["key"]] = True
        else:
            values[definition["key"]] = "s3cret 'quoted' $value"[: definition.get("max_length")]
    return values


def assert_sent_in_full(spec: dict) -> None:
    assert schema_errors(spec) == []
    properties = spec_validator().schema["properties"]
    assert set(spec) == set(properties)
    assert set(spec["template"]) == set(properties["template"]["properties"])
    assert set(spec["limits"]) == set(properties["limits"]["properties"])


@pytest.mark.parametrize("slug", sorted(TEMPLATES))
@pytest.mark.parametrize("plan", [None, PLAN], ids=["unbilled", "plan"])
def test_a_server_of_every_game_of_the_catalogue_sends_a_valid_spec(slug, plan):
    entry = TEMPLATES[slug]  # the test workload is only added to the catalogue of a dev node
    game, _ = Game.objects.get_or_create(
        slug=slug,
        defaults={key: entry[key] for key in ("name", "default_port", "variables", "template")},
    )
    variables = validate_variables(game, required_values(game))
    server = ServerFactory(game=game, variables=variables, address="203.0.113.7:27015", plan=plan)

    spec = instance_spec(server)

    assert_sent_in_full(spec)
    assert spec["allocation"] == {"ip": "203.0.113.7", "port": 27015}


@pytest.mark.parametrize(
    "address", ["", "[2001:db8::7]:25565", "127.0.0.1:1", "198.51.100.2:65535"]
)
def test_a_server_without_or_with_any_address_sends_a_valid_spec(address):
    server = ServerFactory(address=address, variables={"EULA": True, "MOTD": "x\ny", "N": 3})

    spec = instance_spec(server)

    assert schema_errors(spec) == []
    defaults = {
        definition["key"]: str(definition["default"]).lower()
        if isinstance(definition["default"], bool)
        else str(definition["default"])
        for definition in server.game.variables
        if "default" in definition
    }
    # Its own values, over the game's defaults for what it has none of.
    assert spec["variables"] == defaults | {"EULA": "true", "MOTD": "x\ny", "N": "3"}


@pytest.mark.parametrize(
    "source",
    [
        {},
        {"source_type": "git", "source_url": "https://github.com/example/bot.git"},
        {"source_type": "git", "source_url": "https://example.com/b.git", "source_ref": "v1.2"},
        {"source_type": "archive", "source_url": "https://example.com/bot.tar.gz"},
        {"source_type": "upload", "source_archive": "bots/bot.tar.gz"},
    ],
    ids=["no-code", "git", "git-ref", "archive", "upload"],
)
@pytest.mark.parametrize("plan", [None, PLAN], ids=["unbilled", "plan"])
def test_a_bot_of_every_source_sends_a_valid_spec(source, plan):
    bot = BotFactory(
        token_encrypted=encrypt_secret("discord-token"),
        environment={"PREFIX": "!", "SHARDS": 2},
        plan=plan,
        **source,
    )

    spec = instance_spec(bot)

    assert_sent_in_full(spec)
    assert spec["environment"] == {"PREFIX": "!", "SHARDS": "2", "DISCORD_TOKEN": "discord-token"}


@pytest.mark.parametrize("runtime", ["python-3.13", "node-22", "go-1.23", "java-21"])
def test_a_bot_of_every_runtime_sends_a_valid_spec(runtime):
    bot = BotFactory(runtime=runtime, token_encrypted=encrypt_secret("t"))

    assert schema_errors(instance_spec(bot)) == []


def test_the_specs_of_hellos_answer_are_valid_and_say_what_is_desired():
    """Hello's answer (and so the agent's sync) carries each spec with "desired" beside it."""
    node, _ = node_create(
        name="schema-1",
        region="eu-central",
        agent_url="http://127.0.0.1:1",
        memory_mb=65536,
        disk_mb=1048576,
        cpu_percent=800,
        actor=SYSTEM,
    )
    ServerFactory(node=node, status=ServerStatus.RUNNING, address="127.0.0.1:25565")
    ServerFactory(node=node, status=ServerStatus.STOPPED, address="127.0.0.1:25566", plan=PLAN)
    BotFactory(node=node, status=ServerStatus.RUNNING, token_encrypted=encrypt_secret("t"))

    answer = agent_hello(node=node, boot_id="b", version="1.0", limits="rlimit")

    assert sorted(spec["desired"] for spec in answer["servers"]) == [
        "running",
        "running",
        "stopped",
    ]
    for spec in answer["servers"]:
        assert_sent_in_full({key: value for key, value in spec.items() if key != "desired"})

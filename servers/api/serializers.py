from drf_spectacular.utils import OpenApiExample, extend_schema_field
from rest_framework import serializers

from hosting.api.serializers import RepresentedBy, RowListSerializer, StrictInputSerializer
from servers.models import (
    DISCORD_TOKEN,
    ENV_NAME,
    RESOURCE_LIMITS,
    Action,
    Bot,
    BotRuntime,
    Game,
    Region,
    Server,
)
from servers.representations import (
    action_representation,
    bot_representation,
    server_representation,
    server_summary_representation,
)
from servers.transitions import POWER_ACTIONS


class GameSerializer(serializers.ModelSerializer):
    class Meta:
        model = Game
        fields = ["slug", "name", "default_port", "variables"]

    def to_representation(self, instance):
        """The variables customers may see: a game keeps some for the host (``visible: false``,
        an egg's ``user_viewable``)."""
        shown = super().to_representation(instance)
        shown["variables"] = [
            definition
            for definition in shown["variables"]
            if not (isinstance(definition, dict) and definition.get("visible", True) is False)
        ]
        return shown


class ServerSerializer(RepresentedBy, serializers.ModelSerializer):
    """The Server object of the seed: id, name, game, status, created_at."""

    represent = staticmethod(server_summary_representation)

    # Game's primary key is its slug, so no join is needed to show it.
    game = serializers.CharField(source="game_id", read_only=True)

    class Meta:
        model = Server
        fields = ["id", "name", "game", "status", "created_at"]
        read_only_fields = fields
        list_serializer_class = RowListSerializer


def _resource_field(name: str, unit: str) -> serializers.IntegerField:
    """The range is documented here and checked by the service (code ``out_of_range``)."""
    low, high = RESOURCE_LIMITS[name]
    schema = {"type": "integer", "minimum": low, "maximum": high}
    schema["description"] = f"{low} to {high} {unit}."
    field_class = extend_schema_field(schema)(type(name, (serializers.IntegerField,), {}))
    return field_class(required=False)


class ResourcesInputSerializer(StrictInputSerializer):
    """Any of the three; the service checks them again and the account's memory quota."""

    memory_mb = _resource_field("memory_mb", "MB")
    cpu_percent = _resource_field("cpu_percent", "(% of a core)")
    disk_mb = _resource_field("disk_mb", "MB")


class ResourcesSerializer(serializers.Serializer):
    memory_mb = serializers.IntegerField()
    cpu_percent = serializers.IntegerField()
    disk_mb = serializers.IntegerField()


@extend_schema_field(ResourcesSerializer)
class InstanceResourcesField(serializers.Field):
    """``resources`` shown as one object, stored as three columns."""

    def to_representation(self, instance) -> dict:
        return {
            "memory_mb": instance.memory_mb,
            "cpu_percent": instance.cpu_percent,
            "disk_mb": instance.disk_mb,
        }


# The columns ServerSerializer reads: the list endpoint fetches just these as plain rows.
SERVER_LIST_COLUMNS = ("id", "name", "game_id", "status", "created_at")


VARIABLES_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": ["string", "integer", "boolean"]},
    "description": "The game's variables by key, as the catalogue defines them (GET /v1/games).",
}
ENVIRONMENT_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": "Environment variables the bot starts with.",
}


@extend_schema_field(VARIABLES_SCHEMA)
class VariablesField(serializers.JSONField):
    pass


@extend_schema_field(ENVIRONMENT_SCHEMA)
class EnvironmentField(serializers.JSONField):
    pass


class ServerDetailSerializer(ServerSerializer):
    """A server as ``GET /v1/servers/{id}`` shows it, and as events carry it."""

    represent = staticmethod(server_representation)

    region = serializers.CharField(source="region_id", read_only=True)
    resources = InstanceResourcesField(source="*", read_only=True)
    variables = VariablesField(read_only=True)

    class Meta(ServerSerializer.Meta):
        fields = [
            *ServerSerializer.Meta.fields,
            "region",
            "address",
            "resources",
            "variables",
            "auto_restart",
            "restart_when_not_responding",
            "start_on_install",
            "status_reason",
            "suspended_reason",
            "updated_at",
        ]
        read_only_fields = fields


class BotSourceSerializer(StrictInputSerializer):
    """Where a node fetches the bot's code at install: a git repository (``ref``: a branch or
    tag) or a .tar.gz/.zip archive, from the hosts the service allows."""

    type = serializers.ChoiceField(choices=["git", "archive"])
    url = serializers.CharField(max_length=500)
    ref = serializers.CharField(max_length=100, required=False)


class BotSourceOutputSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["git", "archive", "upload"])
    url = serializers.CharField(required=False, help_text="git and archive.")
    ref = serializers.CharField(required=False, help_text="git, when a branch or tag is set.")
    name = serializers.CharField(required=False, help_text="upload: the stored archive.")


class BotSerializer(RepresentedBy, serializers.ModelSerializer):
    """A Discord bot; its token is never shown, only ``token_last4``."""

    represent = staticmethod(bot_representation)

    region = serializers.CharField(source="region_id", read_only=True)
    resources = InstanceResourcesField(source="*", read_only=True)
    environment = EnvironmentField(read_only=True)
    source = BotSourceOutputSerializer(read_only=True, allow_null=True)

    class Meta:
        model = Bot
        fields = [
            "id",
            "name",
            "runtime",
            "status",
            "region",
            "start_command",
            "environment",
            "token_last4",
            "source",
            "resources",
            "auto_restart",
            "status_reason",
            "suspended_reason",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ActionTargetSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["server", "bot"])
    id = serializers.CharField()


class ActionSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(action_representation)
    target = serializers.SerializerMethodField()

    class Meta:
        model = Action
        fields = [
            "id",
            "type",
            "status",
            "error",
            "target",
            "created_at",
            "started_at",
            "completed_at",
        ]
        read_only_fields = fields

    @extend_schema_field(ActionTargetSerializer)
    def get_target(self, action: Action) -> dict:
        kind = "server" if action.server_id else "bot"
        return {"type": kind, "id": action.target_id}


class RegionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Region
        fields = ["slug", "name", "location"]


# --- Request bodies ------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "object",
        "maxProperties": 100,
        "propertyNames": {"pattern": ENV_NAME.pattern},
        "additionalProperties": {"type": "string", "maxLength": 4096},
        "description": "Environment variables: names of letters, digits and `_`, not starting "
        "with a digit; values of at most 4096 characters.",
    }
)
class EnvironmentInputField(serializers.DictField):
    """The bot's environment; the service checks names and values."""


@extend_schema_field(
    {
        "type": "string",
        "pattern": DISCORD_TOKEN.pattern,
        "description": "The bot's Discord token (20 to 200 printable ASCII characters, no "
        "spaces); stored encrypted, never shown.",
    }
)
class DiscordTokenField(serializers.CharField):
    """The bot's Discord token; the service checks its shape."""


@extend_schema_field(VARIABLES_SCHEMA)
class VariablesInputField(serializers.DictField):
    """The game's variables; the service checks them against the game's definitions."""


class ServerCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    game = serializers.CharField(help_text="A slug from GET /v1/games.")
    region = serializers.CharField(help_text="A slug from GET /v1/regions.")
    resources = ResourcesInputSerializer(required=False)
    variables = VariablesInputField(required=False)
    auto_restart = serializers.BooleanField(required=False, default=True)
    start_on_install = serializers.BooleanField(required=False, default=False)
    restart_when_not_responding = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Restart it (as after a crash, within the same crash-loop limit) when its game "
        "stops answering its query while the process runs. Only games with a query.",
    )


class ServerUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    resources = ResourcesInputSerializer(required=False)
    variables = VariablesInputField(required=False)
    auto_restart = serializers.BooleanField(required=False)
    restart_when_not_responding = serializers.BooleanField(
        required=False,
        help_text="Restart it (as after a crash, within the same crash-loop limit) when its game "
        "stops answering its query while the process runs. Only games with a query.",
    )


class BotCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    region = serializers.CharField(help_text="A slug from GET /v1/regions.")
    runtime = serializers.ChoiceField(choices=BotRuntime.choices)
    start_command = serializers.CharField(max_length=500)
    token = DiscordTokenField(write_only=True)
    environment = EnvironmentInputField(
        child=serializers.CharField(allow_blank=True), required=False
    )
    resources = ResourcesInputSerializer(required=False)
    auto_restart = serializers.BooleanField(required=False, default=True)
    source = BotSourceSerializer(required=False, allow_null=True)


class BotUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    runtime = serializers.ChoiceField(choices=BotRuntime.choices, required=False)
    start_command = serializers.CharField(max_length=500, required=False)
    token = DiscordTokenField(write_only=True, required=False)
    environment = EnvironmentInputField(
        child=serializers.CharField(allow_blank=True), required=False
    )
    resources = ResourcesInputSerializer(required=False)
    auto_restart = serializers.BooleanField(required=False)
    source = BotSourceSerializer(
        required=False, allow_null=True, help_text="null removes it; taken at the next reinstall."
    )


class ActionCreateSerializer(StrictInputSerializer):
    type = serializers.ChoiceField(choices=POWER_ACTIONS)


class BulkActionSerializer(StrictInputSerializer):
    type = serializers.ChoiceField(choices=POWER_ACTIONS)


def _bulk_ids() -> serializers.ListField:
    return serializers.ListField(
        # Not trimmed: "\t" is an id that does not exist (its own not_found), like any other.
        child=serializers.CharField(max_length=64, trim_whitespace=False),
        min_length=1,
        max_length=100,
    )


class ServerBulkActionSerializer(BulkActionSerializer):
    server_ids = _bulk_ids()


class BotBulkActionSerializer(BulkActionSerializer):
    bot_ids = _bulk_ids()


class BulkResultSerializer(serializers.Serializer):
    id = serializers.CharField()
    accepted = serializers.BooleanField()
    action = ActionSerializer(required=False)
    error = serializers.DictField(required=False)


# --- Documentation examples -----------------------------------------------------------------


SERVER_EXAMPLE = {
    "id": "srv_8fJ2kLq9ZxW4mN7pR1sT3vYb",
    "name": "Survival SMP",
    "game": "minecraft-java",
    "status": "running",
    "created_at": "2026-11-21T15:04:05Z",
}
SERVER_EXAMPLES = [
    OpenApiExample("A running Minecraft server", value=SERVER_EXAMPLE, response_only=True)
]
SERVER_DETAIL_EXAMPLES = [
    OpenApiExample(
        "A running Minecraft server",
        value={
            "server": {
                **SERVER_EXAMPLE,
                "region": "eu-central",
                "address": "203.0.113.10:25565",
                "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
                "variables": {
                    "EULA": True,
                    "VERSION": "latest",
                    "MAX_PLAYERS": 20,
                    "DIFFICULTY": "normal",
                },
                "auto_restart": True,
                "restart_when_not_responding": False,
                "start_on_install": False,
                "status_reason": "",
                "suspended_reason": "",
                "updated_at": "2026-11-21T16:20:00Z",
            }
        },
        response_only=True,
    )
]
GAME_EXAMPLES = [
    OpenApiExample(
        "Minecraft: Java Edition",
        value={
            "slug": "minecraft-java",
            "name": "Minecraft: Java Edition",
            "default_port": 25565,
            "variables": [
                {
                    "key": "MAX_PLAYERS",
                    "name": "Max players",
                    "type": "integer",
                    "default": 20,
                    "min": 1,
                    "max": 1000,
                },
            ],
        },
        response_only=True,
    )
]


class ConsoleSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="A JWT for this user and this server or bot only.")
    socket_url = serializers.CharField(help_text="The node agent's console WebSocket.")
    expires_at = serializers.DateTimeField()
    can_command = serializers.BooleanField(
        help_text="Whether the token may type into the console (the console.command "
        "permission); without it the agent only streams the output."
    )


CONSOLE_EXAMPLES = [
    OpenApiExample(
        "Console",
        value={
            "console": {
                "token": "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.…",
                "socket_url": "wss://fra-1.nodes.example.com:8443/api/servers/srv_8fK2mQ9xR4tV7wY1zA3bC5dE/ws",
                "expires_at": "2026-11-24T10:10:00Z",
                "can_command": True,
            }
        },
        response_only=True,
    )
]

"""The staff API for the game catalogue (``/v1/admin/games``): list, add, read, change and
remove games, import a Pterodactyl or Pelican egg as one, and export one as an egg.

``admin:read`` / ``admin:write`` in the fleet's area (nodes, database hosts, games). Every write
goes through ``servers.services.games``, which runs ``Game.clean``'s checks: a bad template or
variable is refused when saved, every problem listed by field, never at a customer's create.
"""

from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import DeletedSerializer, RepresentedBy, StrictInputSerializer
from hosting.api.views import (
    ApiViewSet,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    deleted,
    validated,
)
from servers.eggs import MAX_EGG_BYTES
from servers.filters import StaffGameFilter
from servers.models import Game
from servers.representations import game_representation
from servers.selectors import games_with_usage
from servers.services.games import (
    GameChanges,
    game_create,
    game_delete,
    game_export,
    game_import,
    game_update,
)

STAFF_READ, STAFF_WRITE = ["admin:read"], ["admin:write"]
TAG = "Staff: games"
SLUG_PATTERN = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"


class StaffGameSerializer(RepresentedBy, serializers.Serializer):
    """A game of the catalogue as staff see it: its template and variable definitions whole."""

    @staticmethod
    def represent(game: Game) -> dict:
        # The counts: annotated by games_with_usage, which every answer reads through.
        return game_representation(game) | {
            "servers": game.server_count,
            "deleted_servers": game.deleted_server_count,
        }

    id = serializers.CharField(help_text="Its slug, which is its id.")
    slug = serializers.CharField(help_text="Lowercase letters, digits and -.")
    name = serializers.CharField()
    default_port = serializers.IntegerField(help_text="The port its servers are placed on first.")
    template = serializers.DictField(
        help_text="How a node agent installs, starts and stops it (agent/PROTOCOL.md's "
        "template: install_script, start_command, ready_pattern, stop_command, stop_signal, "
        "the timeouts, backup_commands; optional ports, query, config_files, install_shell)."
    )
    variables = serializers.ListField(
        child=serializers.DictField(),
        help_text="The settings its servers take: key, name, type (string, integer, boolean, "
        "enum), default, required, min, max, min_length, max_length, choices, must_be, "
        "pattern, visible, editable, description.",
    )
    origin = serializers.DictField(
        allow_null=True,
        help_text="Where an imported game came from (its egg's format, uuid, author, images "
        "and the import's notes); null for others.",
    )
    servers = serializers.IntegerField(help_text="Servers of it (not deleted).")
    deleted_servers = serializers.IntegerField(
        help_text="Deleted servers whose records keep it (it cannot be removed while any do)."
    )


class GameWriteFields(StrictInputSerializer):
    """What a create and a change share; each is checked again by the service."""

    name = serializers.CharField(max_length=100)
    default_port = serializers.IntegerField(min_value=1, max_value=65535)
    template = serializers.JSONField(help_text="See the game's `template`.")
    variables = serializers.JSONField(help_text="See the game's `variables`.")


class GameCreateSerializer(GameWriteFields):
    slug = serializers.RegexField(
        rf"^{SLUG_PATTERN}$",
        max_length=64,
        help_text="Lowercase letters, digits and -; it stays (servers and plans name it).",
    )


class GameUpdateSerializer(GameWriteFields):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


@extend_schema_field({"oneOf": [{"type": "object"}, {"type": "string"}]})
class EggField(serializers.JSONField):
    """An egg as JSON: the egg's object, or the file's text; no other JSON is one."""

    default_error_messages = {"not_an_egg": "An egg is a JSON object or the file's text."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict | str):
            self.fail("not_an_egg")
        return value


class EggImportSerializer(StrictInputSerializer):
    egg = EggField(
        help_text="The egg: its JSON as an object, or the file's text (JSON or Pelican's "
        f"YAML), at most {MAX_EGG_BYTES // 1024} KiB."
    )
    slug = serializers.RegexField(
        rf"^{SLUG_PATTERN}$",
        max_length=64,
        required=False,
        help_text="The new game's slug; default: made from the egg's name.",
    )
    default_port = serializers.IntegerField(
        min_value=1,
        max_value=65535,
        required=False,
        help_text="The port its servers are placed on first (an egg does not say): required "
        "for a new game; for an egg imported before, given only to change it.",
    )


class EggImportAnswerSerializer(serializers.Serializer):
    game = StaffGameSerializer()
    created = serializers.BooleanField(
        help_text="true: a new game; false: the game imported from this egg before (its "
        "uuid) was updated."
    )
    notes = serializers.ListField(
        child=serializers.CharField(),
        help_text="What was changed on the way or could not be mapped (README, Eggs).",
    )


EXAMPLE = {
    "id": "minecraft-java",
    "slug": "minecraft-java",
    "name": "Minecraft: Java Edition",
    "default_port": 25565,
    "template": {
        "install_script": "curl -fsSL -o server.jar https://example.com/server.jar",
        "start_command": "exec java -Xmx{{SERVER_MEMORY}}M -jar server.jar nogui",
        "ready_pattern": "Done \\(",
        "stop_command": "stop",
        "stop_signal": "SIGTERM",
        "stop_timeout_seconds": 60,
        "ready_timeout_seconds": 300,
        "backup_commands": {"before": ["save-off", "save-all"], "after": ["save-on"]},
        "query": {"protocol": "minecraft", "port": "game"},
    },
    "variables": [
        {
            "key": "MAX_PLAYERS",
            "name": "Max players",
            "type": "integer",
            "default": 20,
            "min": 1,
            "max": 1000,
        }
    ],
    "origin": None,
    "servers": 12,
    "deleted_servers": 3,
}
CREATE_EXAMPLE = {
    key: EXAMPLE[key] for key in ("slug", "name", "default_port", "template", "variables")
} | {"slug": "my-minecraft"}
EGG_EXAMPLE = {
    "meta": {"version": "PTDL_v2", "update_url": None},
    "name": "Paper",
    "author": "eggs@example.com",
    "uuid": "5da37ef6-58da-4169-90a6-e683e1721247",
    "docker_images": {"Java 21": "ghcr.io/pterodactyl/yolks:java_21"},
    "startup": "java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}}",
    "config": {
        "files": '{"server.properties": {"parser": "properties", "find": '
        '{"server-port": "{{server.build.default.port}}"}}}',
        "startup": '{"done": ")! For help, type "}',
        "logs": "{}",
        "stop": "stop",
    },
    "scripts": {
        "installation": {
            "script": "#!/bin/bash\ncd /mnt/server\ncurl -fsSL -o ${SERVER_JARFILE} "
            "https://example.com/paper.jar",
            "container": "ghcr.io/pterodactyl/installers:debian",
            "entrypoint": "bash",
        }
    },
    "variables": [
        {
            "name": "Server Jar File",
            "description": "",
            "env_variable": "SERVER_JARFILE",
            "default_value": "server.jar",
            "user_viewable": True,
            "user_editable": True,
            "rules": "required|regex:/^([\\w\\d._-]+)(\\.jar)$/",
        }
    ],
}
# What only a POST may meet (CONTRACT: the Idempotency-Key header of a create).
KEY_HEADER = " Also `invalid_parameter` (details.parameters) for the `Idempotency-Key` header."


def _invalid(also: str = ""):
    return error_doc(
        400,
        "validation_failed",
        "`validation_failed` by field (`template`, `variables`, `slug`…): every problem the "
        "node agent or the variables' checks would meet, listed; nothing is saved. Also "
        f"`invalid_json`.{also}",
        "The game is not saved: stop_signal is one of SIGTERM, SIGINT, SIGQUIT, SIGHUP, "
        "SIGUSR1, SIGUSR2, SIGKILL.",
        {
            "fields": [
                {
                    "name": "template",
                    "code": "invalid",
                    "message": "stop_signal is one of SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, "
                    "SIGUSR2, SIGKILL.",
                }
            ]
        },
    )


INVALID, INVALID_CREATE = _invalid(), _invalid(KEY_HEADER)
EXISTS = error_doc(
    409,
    "game_exists",
    "`game_exists` (`details.slug`): a game has this slug (or this egg was imported before as "
    "another slug).",
    "A game with the slug my-minecraft exists.",
    {"slug": "my-minecraft"},
)
IN_USE = error_doc(
    409,
    "game_in_use",
    "`game_in_use` (`details.servers`, `details.deleted_servers`, `details.products`): servers, "
    "deleted servers' records or plans name it.",
    "Minecraft: Java Edition is still used by 12 servers and 1 plan.",
    {"servers": 12, "deleted_servers": 0, "products": ["prod_4fG7hJ9kL2mN5pQ8rS1tU3vW"]},
)
BAD_EGG = error_doc(
    400,
    "invalid_egg",
    "`invalid_egg` (`details.problems`, one line each): the egg's format is not one read "
    "(PTDL_v1, PTDL_v2, PLCN_v1 to v3), a part is missing or malformed, or its install needs "
    "packages the nodes do not provide. `validation_failed` on `egg` (`not_an_egg`: neither an "
    "object nor text), or on `default_port` when a new game lacks it; `invalid_json`." + KEY_HEADER,
    "The egg cannot be imported: scripts.installation.script: installs packages the nodes do "
    "not provide: lib32gcc-s1 (…).",
    {"problems": ["scripts.installation.script: installs packages the nodes do not provide: …"]},
)
_ONE = envelope("game", StaffGameSerializer(), name="StaffGameEnvelope")
_IMPORTED = envelope("import", EggImportAnswerSerializer(), name="EggImportEnvelope")
_EGG = envelope("egg", serializers.JSONField(), name="EggEnvelope")


@extend_schema_view(
    list=extend_schema(
        summary="List games",
        description="The catalogue's games by name, each with its template, variables and how "
        "many servers use it. `admin:read` in the fleet's area.",
        tags=[TAG],
        examples=[OpenApiExample("A game", value=EXAMPLE, response_only=True)],
    ),
    retrieve=extend_schema(
        summary="Get a game",
        tags=[TAG],
        responses=_ONE,
        examples=[OpenApiExample("A game", value={"game": EXAMPLE}, response_only=True)],
    ),
    create=extend_schema(
        summary="Add a game",
        description="Checked as the node agent and the variables' checks will read it (every "
        "problem listed, nothing saved); `game.created`, a staff event. Customers see it at "
        "once in `GET /v1/games`.",
        tags=[TAG],
        request=GameCreateSerializer,
        responses={201: _ONE, 400: INVALID_CREATE, 409: EXISTS},
        examples=[
            OpenApiExample("A game", value=CREATE_EXAMPLE, request_only=True),
            OpenApiExample(
                "Added",
                value={
                    "game": EXAMPLE | {"id": "my-minecraft", "slug": "my-minecraft", "servers": 0}
                },
                response_only=True,
            ),
        ],
    ),
    partial_update=extend_schema(
        summary="Change a game",
        description="Name, port, template and variables, checked together as saved; the slug "
        "stays. Servers get a new template at their next start or reinstall. `game.updated`.",
        tags=[TAG],
        request=GameUpdateSerializer,
        responses={200: _ONE, 400: INVALID},
        examples=[
            OpenApiExample("Rename", value={"name": "Minecraft (Java)"}, request_only=True),
        ],
    ),
    destroy=extend_schema(
        summary="Remove a game",
        description="Only a game no server, deleted server's record or plan names: 409 "
        "`game_in_use` otherwise. `game.deleted`.",
        tags=[TAG],
        responses={200: DeletedSerializer, 409: IN_USE},
    ),
)
class StaffGameViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "games"
    resource_key = "game"
    serializer_class = StaffGameSerializer
    filterset_classes = {"list": StaffGameFilter}
    lookup_value_regex = SLUG_PATTERN
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "egg": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "destroy": STAFF_WRITE,
        "import_egg": STAFF_WRITE,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Game.objects.none()
        return games_with_usage()

    def _shown(self, game: Game) -> dict:
        return StaffGameSerializer(games_with_usage().get(pk=game.pk)).data

    def create(self, request):
        body = dict(validated(GameCreateSerializer, request))
        game = game_create(**body, actor=Actor.from_request(request))
        return created(request, {"game": self._shown(game)}, f"/v1/admin/games/{game.slug}")

    def partial_update(self, request, pk: str):
        game = self.get_object()
        if changes := validated(GameUpdateSerializer, request):
            game = game_update(
                game=game, changes=GameChanges.of(changes), actor=Actor.from_request(request)
            )
        return Response({"game": self._shown(game)})

    def destroy(self, request, pk: str):
        game_delete(game=self.get_object(), actor=Actor.from_request(request))
        return deleted(pk)

    @extend_schema(
        summary="Export a game as an egg",
        description="The game as a Pterodactyl `PTDL_v2` egg, which Pterodactyl and Pelican "
        "import: our start script written by its install as `.hms-start.sh` (a panel's "
        "startup is one line), named ports as `<NAME>_PORT` variables, the ready pattern a "
        "`regex:` done string (README, Eggs).",
        tags=[TAG],
        responses={200: _EGG},
        examples=[OpenApiExample("An egg", value={"egg": EGG_EXAMPLE}, response_only=True)],
    )
    @action(detail=True, methods=["get"])
    def egg(self, request, pk: str):
        return Response({"egg": game_export(self.get_object())})

    @extend_schema(
        summary="Import an egg",
        description="A Pterodactyl (`PTDL_v1`, `PTDL_v2`) or Pelican (`PLCN_v1` to `PLCN_v3`, JSON "
        "or YAML) egg as a game: its variables and Laravel rules, startup, install script (run "
        "in the server's sandbox with the node's tools), stop, done strings and configuration "
        "files mapped (README, Eggs); what could not be mapped is listed in `notes`. The egg "
        "of a game imported before (its `uuid`) updates that game (200); otherwise a new game "
        "is added (201). `game.created` / `game.updated`.",
        tags=[TAG],
        request=EggImportSerializer,
        responses={201: _IMPORTED, 200: _IMPORTED, 400: BAD_EGG, 409: EXISTS},
        examples=[
            OpenApiExample(
                "An egg",
                value={"egg": EGG_EXAMPLE, "default_port": 25565},
                request_only=True,
            ),
        ],
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_egg(self, request):
        body = validated(EggImportSerializer, request)
        result = game_import(
            content=body["egg"],
            slug=body.get("slug"),
            default_port=body.get("default_port"),
            actor=Actor.from_request(request),
        )
        answer = {
            "import": {
                "game": self._shown(result.game),
                "created": result.created,
                "notes": result.notes,
            }
        }
        if result.created:
            return created(request, answer, f"/v1/admin/games/{result.game.slug}")
        return Response(answer)

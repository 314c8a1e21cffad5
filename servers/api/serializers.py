from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from servers.models import Game, Server


class GameSerializer(serializers.ModelSerializer):
    class Meta:
        model = Game
        fields = ["slug", "name", "default_port"]


class ServerSerializer(serializers.ModelSerializer):
    """The Server object of the seed: id, name, game, status, created_at."""

    # Game's primary key is its slug, so no join is needed to show it.
    game = serializers.CharField(source="game_id", read_only=True)

    class Meta:
        model = Server
        fields = ["id", "name", "game", "status", "created_at"]
        read_only_fields = fields


class ServerDetailSerializer(ServerSerializer):
    class Meta(ServerSerializer.Meta):
        fields = [*ServerSerializer.Meta.fields, "updated_at"]
        read_only_fields = fields


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
        value={"server": {**SERVER_EXAMPLE, "updated_at": "2026-11-21T16:20:00Z"}},
        response_only=True,
    )
]
GAME_EXAMPLES = [
    OpenApiExample(
        "Minecraft: Java Edition",
        value={"slug": "minecraft-java", "name": "Minecraft: Java Edition", "default_port": 25565},
        response_only=True,
    )
]

"""``POST /v1/agent/usage``: the usage samples a node agent sends, on the terms of every agent
endpoint (the node token; ``servers.api.agent``), stored by analytics."""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from analytics.services.ingest import MAX_PLAYERS, MAX_SAMPLES_PER_BATCH, usage_ingest
from hosting.api.serializers import StrictInputSerializer
from hosting.api.views import validated
from servers.api.agent import BATCH_ACCEPTED, TAG, AgentTimeField, AgentView


def _amount(help_text: str, **kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=2**62, help_text=help_text, **kwargs)


class AgentSampleSerializer(StrictInputSerializer):
    """One measurement of one server or bot, as the agent takes it."""

    instance_id = serializers.CharField(max_length=64, help_text="The server or bot.")
    at = AgentTimeField(help_text="When it was measured.")
    cpu_percent = serializers.FloatField(min_value=0, max_value=2**62)
    memory_bytes = _amount("Resident memory.")
    disk_bytes = _amount("Disk used by its folder.")
    network_rx_bytes = _amount(
        "Bytes received since the last sample.", allow_null=True, required=False
    )
    network_tx_bytes = _amount("Bytes sent since the last sample.", allow_null=True, required=False)
    players = serializers.IntegerField(
        min_value=0,
        max_value=MAX_PLAYERS,
        allow_null=True,
        required=False,
        help_text="Players online, for games whose query protocol says.",
    )
    max_players = serializers.IntegerField(
        min_value=0,
        max_value=MAX_PLAYERS,
        allow_null=True,
        required=False,
        help_text="The most players the game takes, as its query says.",
    )
    game_version = serializers.CharField(
        max_length=100,
        allow_blank=True,
        allow_null=True,
        required=False,
        help_text="The game's version, as its query says.",
    )
    motd = serializers.CharField(
        max_length=200,
        allow_blank=True,
        allow_null=True,
        required=False,
        help_text="The message of the day (Minecraft) or server name (A2S) its query says.",
    )
    responding = serializers.BooleanField(
        allow_null=True,
        required=False,
        help_text="false once the game has failed its query several times in a row while its "
        "process runs (not responding); absent or null for a game without a query.",
    )
    uptime_seconds = serializers.FloatField(min_value=0, max_value=2**62)


class AgentUsageSerializer(StrictInputSerializer):
    samples = serializers.ListField(
        child=AgentSampleSerializer(), min_length=1, max_length=MAX_SAMPLES_PER_BATCH
    )


class AgentUsageView(AgentView):
    @extend_schema(
        operation_id="agent_usage",
        summary="Agent: usage samples",
        description=f"A batch of up to {MAX_SAMPLES_PER_BATCH} samples. Samples of servers and "
        "bots that are not on the node are not stored (`rejected`). 400 `validation_failed` "
        "names the first bad sample; nothing of that batch is stored.",
        tags=[TAG],
        request=AgentUsageSerializer,
        responses={202: BATCH_ACCEPTED},
        examples=[
            OpenApiExample(
                "Samples",
                value={
                    "samples": [
                        {
                            "instance_id": "srv_8fK2mQ9xR4tV7wY1zA3bC5dE",
                            "at": "2026-11-24T10:00:05+00:00",
                            "cpu_percent": 12.5,
                            "memory_bytes": 734003200,
                            "disk_bytes": 1610612736,
                            "network_rx_bytes": None,
                            "network_tx_bytes": None,
                            "uptime_seconds": 3605,
                            "players": 12,
                            "max_players": 20,
                            "game_version": "1.21.4",
                            "motd": "A Minecraft Server",
                            "responding": True,
                        }
                    ]
                },
                request_only=True,
            ),
            OpenApiExample("Stored", value={"accepted": 1, "rejected": 0}, response_only=True),
        ],
    )
    def post(self, request):
        validated(AgentUsageSerializer, request)  # the shape; the service reads the raw values
        accepted, rejected = usage_ingest(node=request.auth, samples=request.data["samples"])
        return Response({"accepted": accepted, "rejected": rejected}, status=202)

"""``POST /v1/agent/usage``: the usage samples a node agent sends, on the terms of every agent
endpoint (the node token; ``servers.api.agent``), stored by analytics."""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from analytics.services.ingest import MAX_SAMPLES_PER_BATCH, usage_ingest
from hosting.api.serializers import StrictInputSerializer
from hosting.api.views import validated
from servers.api.agent import BATCH_ACCEPTED, TAG, AgentView


class AgentUsageSerializer(StrictInputSerializer):
    samples = serializers.ListField(
        child=serializers.DictField(), min_length=1, max_length=MAX_SAMPLES_PER_BATCH
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
                        }
                    ]
                },
                request_only=True,
            ),
            OpenApiExample("Stored", value={"accepted": 1, "rejected": 0}, response_only=True),
        ],
    )
    def post(self, request):
        body = validated(AgentUsageSerializer, request)
        accepted, rejected = usage_ingest(node=request.auth, samples=body["samples"])
        return Response({"accepted": accepted, "rejected": rejected}, status=202)

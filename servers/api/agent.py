"""The endpoints node agents call (``/v1/agent/...``), authenticated with the node token.

Not for API keys: an ``hms_`` key gets 401 ``invalid_token`` here, and a node token gets
nothing anywhere else. See agent/PROTOCOL.md for the whole protocol. Usage samples are
analytics' (``analytics.api.agent_usage``), on these same terms.
"""

from django.http import FileResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from hosting.api.serializers import StrictInputSerializer
from hosting.api.views import API_METHODS, validated
from hosting.errors import ValidationFailed
from servers.models import NodeIsolation
from servers.services.agent_reports import (
    EVENT_TYPES,
    MAX_EVENTS_PER_BATCH,
    agent_events,
    agent_hello,
    report_time,
)
from servers.services.nodes import bot_source_for_node, node_authenticate

TAG = "Node agents"


class NodeTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer hmn_…``: the request's ``auth`` is the node."""

    def authenticate(self, request):
        node = node_authenticate(request.META.get("HTTP_AUTHORIZATION", ""))
        return None, node

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="node-agent"'


class NodeTokenScheme(OpenApiAuthenticationExtension):
    target_class = NodeTokenAuthentication
    name = "NodeToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "hmn_<12 key id><32 secret><6 checksum>",
            "description": "A node's token, given to its agent when the node was created.",
        }


class AgentHelloServerSerializer(StrictInputSerializer):
    """One process the agent runs now, as it reports it."""

    id = serializers.RegexField(r"^(srv|bot)_[A-Za-z0-9]{1,60}$", help_text="Its id.")
    status = serializers.ChoiceField(
        ["installing", "install_failed", "starting", "running", "stopping", "stopped"]
    )
    pid = serializers.IntegerField(min_value=1, max_value=2**22, allow_null=True)


class AgentHelloSerializer(StrictInputSerializer):
    boot_id = serializers.CharField(max_length=64)
    version = serializers.CharField(max_length=64)
    limits = serializers.ChoiceField(["cgroup-v1", "cgroup-v2", "rlimit"])
    isolation = serializers.ChoiceField(
        NodeIsolation.choices,
        required=False,
        help_text="How the agent keeps tenants apart: `sandbox` (each server and bot in a "
        "bubblewrap sandbox of its own: its own uid, mount, PID, IPC and network namespaces) or "
        "`none` (started with `AGENT_ALLOW_UNISOLATED`: tenants are not isolated). Absent from "
        "agents older than the sandbox: the node's isolation is then unknown.",
    )
    servers = serializers.ListField(
        child=AgentHelloServerSerializer(),
        required=False,
        max_length=10_000,
        help_text="What the agent runs now.",
    )


@extend_schema_field(OpenApiTypes.DATETIME)
class AgentTimeField(serializers.Field):
    """An agent's timestamp: ISO 8601 with its UTC offset, any year (``report_time``; an offset
    carrying it past the calendar's edge is that edge, never an overflow)."""

    def to_internal_value(self, data):
        try:
            return report_time(data, self.field_name)
        except ValidationFailed as refused:
            raise serializers.ValidationError(refused.message, code="invalid") from None

    def to_representation(self, value):
        return value.isoformat()


class AgentEventSerializer(StrictInputSerializer):
    """One process event, as the agent reports it."""

    instance_id = serializers.CharField(max_length=64, help_text="The server or bot.")
    type = serializers.ChoiceField(EVENT_TYPES)
    reason = serializers.CharField(
        max_length=4000, required=False, allow_blank=True, help_text="Why, in the agent's words."
    )
    at = AgentTimeField(help_text="When it happened.")
    path = serializers.CharField(
        max_length=4096, required=False, help_text="`files_uploaded`: the file's path."
    )
    size = serializers.IntegerField(
        min_value=0, required=False, help_text="`files_uploaded`: its size in bytes."
    )
    user = serializers.CharField(
        max_length=64, required=False, help_text="`files_uploaded`: who the address was for."
    )


class AgentEventsSerializer(StrictInputSerializer):
    events = serializers.ListField(
        child=AgentEventSerializer(), min_length=1, max_length=MAX_EVENTS_PER_BATCH
    )


class AgentView(APIView):
    authentication_classes = [NodeTokenAuthentication]
    permission_classes: list = []
    http_method_names = API_METHODS


BATCH_ACCEPTED = inline_serializer(
    name="AgentBatchAccepted",
    fields={"accepted": serializers.IntegerField(), "rejected": serializers.IntegerField()},
)


class AgentHelloView(AgentView):
    @extend_schema(
        operation_id="agent_hello",
        summary="Agent: hello",
        description="Sent by a node agent when it starts or reconnects. Answers with the "
        "control plane's public key (for console tokens and the control plane's own calls) and "
        "the full state to sync to: every server and bot of the node with `desired` "
        "`running` or `stopped`. Records the agent's version, limits and `isolation` on the "
        "node. 400 `validation_failed` for a body its schema refuses, 401 `invalid_token` for "
        "a bad node token.",
        tags=[TAG],
        request=AgentHelloSerializer,
        responses=inline_serializer(
            name="AgentHelloAnswer",
            fields={
                "node_id": serializers.CharField(),
                "console_public_key": serializers.CharField(),
                "servers": serializers.ListField(child=serializers.DictField()),
            },
        ),
        examples=[
            OpenApiExample(
                "Hello",
                value={
                    "boot_id": "b1f0c2",
                    "version": "1.0",
                    "limits": "cgroup-v2",
                    "isolation": "sandbox",
                },
                request_only=True,
            ),
            OpenApiExample(
                "State to sync to",
                value={
                    "node_id": "node_8fK2mQ9xR4tV7wY1zA3bC5dE",
                    "console_public_key": "-----BEGIN PUBLIC KEY-----\n…",
                    "servers": [{"id": "srv_…", "kind": "server", "desired": "running"}],
                },
                response_only=True,
            ),
        ],
    )
    def post(self, request):
        body = validated(AgentHelloSerializer, request)
        return Response(
            agent_hello(
                node=request.auth,
                boot_id=body["boot_id"],
                version=body["version"],
                limits=body["limits"],
                isolation=body.get("isolation"),
            )
        )


class AgentEventsView(AgentView):
    @extend_schema(
        operation_id="agent_events",
        summary="Agent: process events",
        description=f"Up to {MAX_EVENTS_PER_BATCH} events, applied in order: `crashed` (an "
        "unexpected exit: the instance stops and is restarted when its `auto_restart` allows), "
        "`stopped` (stopped without being asked, e.g. from its console) and `running`.",
        tags=[TAG],
        request=AgentEventsSerializer,
        responses=BATCH_ACCEPTED,
        examples=[
            OpenApiExample(
                "A crash",
                value={
                    "events": [
                        {
                            "instance_id": "srv_8fK2mQ9xR4tV7wY1zA3bC5dE",
                            "type": "crashed",
                            "reason": "killed: out of memory (limit 1024 MB)",
                            "at": "2026-11-24T10:00:05+00:00",
                        }
                    ]
                },
                request_only=True,
            ),
            OpenApiExample("Applied", value={"accepted": 1, "rejected": 0}, response_only=True),
        ],
    )
    def post(self, request):
        validated(AgentEventsSerializer, request)  # the shape; the service reads the raw values
        accepted, rejected = agent_events(node=request.auth, events=request.data["events"])
        return Response({"accepted": accepted, "rejected": rejected})


class AgentBotSourceView(AgentView):
    @extend_schema(
        operation_id="agent_bot_source",
        summary="Agent: a bot's uploaded code",
        description="The archive a customer uploaded for a bot on this node, as bytes; 404 for "
        "any other bot.",
        tags=[TAG],
        responses={(200, "application/octet-stream"): bytes},
    )
    def get(self, request, pk: str):
        bot = bot_source_for_node(node=request.auth, bot_id=pk)
        return FileResponse(
            bot.source_archive.open("rb"),
            as_attachment=True,
            filename=bot.source_archive.name.rsplit("/", 1)[-1],
            content_type="application/octet-stream",
        )

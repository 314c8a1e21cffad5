"""The endpoints node agents call (``/v1/agent/...``), authenticated with the node token.

Not for API keys: an ``hms_`` key gets 401 ``invalid_token`` here, and a node token gets
nothing anywhere else. See agent/PROTOCOL.md for the whole protocol. Usage samples are
analytics' (``analytics.api.agent_usage``), on these same terms.
"""

from django.conf import settings
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
from hosting.api.throttling import RateLimitExceeded, rate_limit_hit
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
from servers.services.sftp import sftp_authenticate

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
        min_value=0,
        max_value=2**63 - 1,
        required=False,
        help_text="`files_uploaded`: its size in bytes; `backup_completed`: the archive's.",
    )
    user = serializers.CharField(
        max_length=64, required=False, help_text="`files_uploaded`: who the address was for."
    )
    backup_id = serializers.RegexField(
        r"^bkp_[A-Za-z0-9]{1,60}$",
        required=False,
        help_text="`backup_*` events: the backup (or the one restored).",
    )
    checksum = serializers.RegexField(
        r"^sha256:[0-9a-f]{64}$",
        required=False,
        help_text="`backup_completed`: `sha256:<64 hex>` of the archive's bytes.",
    )
    files = serializers.IntegerField(
        min_value=0,
        max_value=2**31 - 1,
        required=False,
        help_text="`backup_completed`: the members archived; `backup_restored`: unpacked.",
    )
    links_skipped = serializers.IntegerField(
        min_value=0,
        max_value=2**31 - 1,
        required=False,
        help_text="`backup_restored`: links out of the folder left out.",
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
        "`stopped` (stopped without being asked, e.g. from its console), `running`, "
        "`not_responding` (a running server failed its game query several times in a row: "
        "restarted when its `restart_when_not_responding` is on) and `responding` (it answers "
        "again).",
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


class AgentSftpAuthSerializer(StrictInputSerializer):
    username = serializers.CharField(
        max_length=64,
        trim_whitespace=False,
        help_text="The login: the SSH user name's part before its last dot.",
    )
    server_id = serializers.RegexField(
        r"^(srv|bot)_[A-Za-z0-9]{1,60}$", help_text="The server or bot the short id named."
    )
    public_key = serializers.CharField(
        max_length=16_384,
        required=False,
        help_text="The key offered, as an OpenSSH public key line (`ssh-ed25519 AAAA…`).",
    )
    password = serializers.CharField(
        max_length=1024, required=False, trim_whitespace=False, help_text="The password typed."
    )

    def validate(self, attrs):
        if ("public_key" in attrs) == ("password" in attrs):
            raise serializers.ValidationError(
                {"public_key": "Send either public_key or password."}, code="required"
            )
        return attrs


def sftp_attempt_over_limit(node, login: str, server_id: str) -> bool:
    """Count one question per login and server, and per node; True once either is over its
    limit (then the answer is no before any credential is looked at, as for sign-in forms)."""
    buckets = (
        (f"sftp:{login}:{server_id}", settings.SFTP_AUTH_ATTEMPTS_PER_MINUTE),
        (f"sftp-node:{node.pk}", settings.SFTP_AUTH_NODE_ATTEMPTS_PER_MINUTE),
    )
    over = False
    for bucket, limit in buckets:
        try:
            rate_limit_hit(bucket=bucket, limit=limit, policy="sftp")
        except RateLimitExceeded:
            over = True
    return over


class AgentSftpAuthView(AgentView):
    @extend_schema(
        operation_id="agent_sftp_auth",
        summary="Agent: may this SFTP sign-in go ahead?",
        description="Asked by a node's agent at every SFTP sign-in attempt (twice for a key: "
        "whether it would do, then with its signature, which the agent checks) and again "
        "every minute of a session; nothing is cached, so a deleted key, a changed password or "
        "a lost role is refused at the next question. `allowed` is true when the login names "
        "an active user, the key is theirs (by its SHA256 fingerprint) or the password is "
        "their SFTP password, and their role in the server's account lets them read its files "
        "(`files.read`; `files.write` with write rights): the server must be on the calling "
        "node, not suspended or being deleted, and its account not suspended. Every question "
        "counts against `SFTP_AUTH_ATTEMPTS_PER_MINUTE` per login and server and "
        "`SFTP_AUTH_NODE_ATTEMPTS_PER_MINUTE` per node; over either, the answer is "
        "`allowed: false`. A no never says why. 400 `validation_failed` for a body its schema "
        "refuses, 401 `invalid_token` for a bad node token.",
        tags=[TAG],
        request=AgentSftpAuthSerializer,
        responses=inline_serializer(
            name="AgentSftpAuthAnswer",
            fields={
                "allowed": serializers.BooleanField(),
                "user_id": serializers.CharField(required=False),
                "permissions": serializers.ListField(
                    child=serializers.ChoiceField(["files.read", "files.write"]), required=False
                ),
            },
        ),
        examples=[
            OpenApiExample(
                "A key",
                value={
                    "username": "sam",
                    "server_id": "srv_8fK2mQ9xR4tV7wY1zA3bC5dE",
                    "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBykAYRV6dxf6qL5BFqi1eC"
                    "hqsFPn0R4lT4eVSuwHsRm",
                },
                request_only=True,
            ),
            OpenApiExample(
                "Allowed",
                value={
                    "allowed": True,
                    "user_id": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
                    "permissions": ["files.read", "files.write"],
                },
                response_only=True,
            ),
            OpenApiExample("Refused", value={"allowed": False}, response_only=True),
        ],
    )
    def post(self, request):
        body = validated(AgentSftpAuthSerializer, request)
        if sftp_attempt_over_limit(request.auth, body["username"], body["server_id"]):
            return Response({"allowed": False})
        grant = sftp_authenticate(
            node=request.auth,
            login=body["username"],
            server_id=body["server_id"],
            public_key=body.get("public_key"),
            password=body.get("password"),
        )
        if grant is None:
            return Response({"allowed": False})
        return Response(
            {"allowed": True, "user_id": grant.user_id, "permissions": grant.permissions}
        )

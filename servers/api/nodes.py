"""The staff API for nodes and their allocation pools (``/v1/admin/nodes``)."""

from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.pagination import PageNumberPagination
from hosting.api.schema import envelope
from hosting.api.serializers import StrictInputSerializer
from hosting.api.views import (
    ApiViewSet,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    deleted,
    paginated,
    validated,
)
from servers.models import Node, NodeIsolation
from servers.selectors import nodes_with_usage
from servers.services.nodes import (
    NodeChanges,
    node_allocations_add,
    node_allocations_remove,
    node_create,
    node_delete,
    node_token_rotate,
    node_update,
)

STAFF_READ, STAFF_WRITE = ["admin:read"], ["admin:write"]
TAG = "Staff: nodes"
NODE_EXAMPLE = {
    "id": "node_8fK2mQ9xR4tV7wY1zA3bC5dE",
    "name": "fra-1",
    "region": "eu-central",
    "agent_url": "https://fra-1.nodes.example.com:8443",
    "memory_mb": 65536,
    "disk_mb": 1048576,
    "cpu_percent": 1600,
    "maintenance": False,
    "token_hint": "hmn_Ab3dEf6hIj9k…",
    "used": {"memory_mb": 12288, "disk_mb": 81920, "cpu_percent": 600},
    "allocations": {"total": 200, "free": 188},
    "agent": {
        "version": "1.0",
        "limits": "cgroup-v2",
        "isolation": "sandbox",
        "last_seen_at": "2026-11-24T10:00:05Z",
    },
    "created_at": "2026-11-01T09:00:00Z",
}


class NodeAgentSerializer(serializers.Serializer):
    """What the node's agent said in its last hello; every field null before it said hello."""

    version = serializers.CharField(allow_null=True)
    limits = serializers.CharField(allow_null=True, help_text="How it enforces limits.")
    isolation = serializers.ChoiceField(
        NodeIsolation.choices,
        allow_null=True,
        help_text="How it keeps tenants apart: `sandbox` (each server and bot in a sandbox of "
        "its own) or `none` (tenants are not isolated: a development agent); null when it did "
        "not say (an agent older than the sandbox) or has not said hello.",
    )
    last_seen_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When its agent last called the control plane (its hello, usage samples, "
        "events), to the minute; null until it first said hello.",
    )


class NodeSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    region = serializers.CharField(source="region_id")
    agent_url = serializers.CharField()
    memory_mb = serializers.IntegerField()
    disk_mb = serializers.IntegerField()
    cpu_percent = serializers.IntegerField()
    maintenance = serializers.BooleanField()
    token_hint = serializers.CharField()
    used = serializers.SerializerMethodField()
    allocations = serializers.SerializerMethodField()
    agent = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_used(self, node) -> dict[str, int]:
        return {
            "memory_mb": node.used_memory_mb,
            "disk_mb": node.used_disk_mb,
            "cpu_percent": node.used_cpu_percent,
        }

    def get_allocations(self, node) -> dict[str, int]:
        return {"total": node.allocation_total, "free": node.allocation_free}

    @extend_schema_field(NodeAgentSerializer)
    def get_agent(self, node) -> dict[str, str | None]:
        seen = node.last_seen_at
        return {
            "version": node.agent_version or None,
            "limits": node.agent_limits or None,
            "isolation": node.agent_isolation or None,
            "last_seen_at": seen.strftime("%Y-%m-%dT%H:%M:%SZ") if seen else None,
        }


class NodeCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    region = serializers.CharField()
    agent_url = serializers.CharField(max_length=200)
    memory_mb = serializers.IntegerField()
    disk_mb = serializers.IntegerField()
    cpu_percent = serializers.IntegerField()
    maintenance = serializers.BooleanField(required=False, default=False)


class NodeUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    agent_url = serializers.CharField(max_length=200, required=False)
    memory_mb = serializers.IntegerField(required=False)
    disk_mb = serializers.IntegerField(required=False)
    cpu_percent = serializers.IntegerField(required=False)
    maintenance = serializers.BooleanField(required=False)


class AllocationChangeSerializer(StrictInputSerializer):
    ip = serializers.CharField(max_length=45)
    ports = serializers.CharField(
        max_length=2000, help_text="Ports and ranges: `25565-25600, 27015`."
    )


class AllocationSerializer(serializers.Serializer):
    ip = serializers.CharField()
    port = serializers.IntegerField()
    server_id = serializers.CharField(allow_null=True)


_TOKEN_ANSWER = inline_serializer(
    name="NodeWithToken",
    fields={"node": NodeSerializer(), "token": serializers.CharField()},
)
_NODE_ENVELOPE = envelope("node", NodeSerializer(), name="NodeEnvelope")
_CHANGED = inline_serializer(
    name="AllocationsChanged", fields={"count": serializers.IntegerField()}
)


@extend_schema_view(
    list=extend_schema(
        summary="List nodes",
        tags=[TAG],
        examples=[OpenApiExample("A node", value=NODE_EXAMPLE, response_only=True)],
    ),
    retrieve=extend_schema(
        summary="Get a node",
        tags=[TAG],
        responses=_NODE_ENVELOPE,
        examples=[OpenApiExample("A node", value={"node": NODE_EXAMPLE}, response_only=True)],
    ),
    create=extend_schema(
        summary="Create a node",
        description="201 with the node and its `token` (`hmn_…`), shown this once: give it to "
        "the node's agent (`AGENT_TOKEN`). Only a digest of it is kept.",
        tags=[TAG],
        request=NodeCreateSerializer,
        responses={201: _TOKEN_ANSWER},
        examples=[
            OpenApiExample(
                "New node",
                value={"node": NODE_EXAMPLE, "token": "hmn_Ab3dEf6hIj9k…"},
                response_only=True,
            )
        ],
    ),
    partial_update=extend_schema(
        summary="Change a node",
        description="Name, agent address, capacity, maintenance. Capacity cannot go below what "
        "the node's servers and bots were given (400 `validation_failed`, `below_usage`).",
        tags=[TAG],
        request=NodeUpdateSerializer,
        responses=_NODE_ENVELOPE,
    ),
    destroy=extend_schema(
        summary="Delete a node",
        description="409 `conflict` while servers or bots live on it.",
        tags=[TAG],
    ),
)
class NodeViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "nodes"
    resource_key = "node"
    serializer_class = NodeSerializer
    required_scopes = {
        "list": STAFF_READ,
        "retrieve": STAFF_READ,
        "create": STAFF_WRITE,
        "partial_update": STAFF_WRITE,
        "destroy": STAFF_WRITE,
        "rotate_token": STAFF_WRITE,
        "allocation_list": STAFF_READ,
        "allocation_add": STAFF_WRITE,
        "allocation_remove": STAFF_WRITE,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Node.objects.none()
        return nodes_with_usage()

    def _answer(self, node: Node, **extra) -> dict:
        return {"node": NodeSerializer(nodes_with_usage().get(pk=node.pk)).data, **extra}

    def create(self, request):
        node, token = node_create(
            actor=Actor.from_request(request), **validated(NodeCreateSerializer, request)
        )
        return created(request, self._answer(node, token=token), f"/v1/admin/nodes/{node.id}")

    def partial_update(self, request, pk: str):
        node = self.get_object()
        if changes := validated(NodeUpdateSerializer, request):
            node = node_update(
                node=node, changes=NodeChanges.of(changes), actor=Actor.from_request(request)
            )
        return Response(self._answer(node))

    def destroy(self, request, pk: str):
        node = self.get_object()
        node_delete(node=node, actor=Actor.from_request(request))
        return deleted(pk)

    @extend_schema(
        summary="Rotate a node's token",
        description="A new token, shown this once; the old one stops working at once.",
        tags=[TAG],
        request=None,
        responses=_TOKEN_ANSWER,
    )
    @action(detail=True, methods=["post"], url_path="rotate-token")
    def rotate_token(self, request, pk: str):
        node, token = node_token_rotate(node=self.get_object(), actor=Actor.from_request(request))
        return Response(self._answer(node, token=token))

    @extend_schema(
        summary="List a node's allocations",
        description="Its `ip:port` pool, with the server holding each.",
        tags=[TAG],
        responses=AllocationSerializer(many=True),
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="allocations",
        pagination_class=PageNumberPagination.for_key("allocations"),
    )
    def allocation_list(self, request, pk: str):
        node = self.get_object()
        return paginated(
            self, node.allocations.order_by("ip", "port"), "allocations", AllocationSerializer
        )

    @extend_schema(
        summary="Add allocations",
        description="Adds `ip` with `ports` to the pool (at most 5,000 at a time); ones already "
        "there are left as they are. Answers how many were new.",
        tags=[TAG],
        request=AllocationChangeSerializer,
        responses=_CHANGED,
    )
    @allocation_list.mapping.post
    def allocation_add(self, request, pk: str):
        count = node_allocations_add(
            node=self.get_object(),
            actor=Actor.from_request(request),
            **validated(AllocationChangeSerializer, request),
        )
        return Response({"count": count})

    @extend_schema(
        summary="Remove allocations",
        description="Removes free `ip:ports`; 409 `conflict` names ports servers hold.",
        tags=[TAG],
        request=AllocationChangeSerializer,
        responses=_CHANGED,
    )
    @action(detail=True, methods=["post"], url_path="allocations/remove")
    def allocation_remove(self, request, pk: str):
        count = node_allocations_remove(
            node=self.get_object(),
            actor=Actor.from_request(request),
            **validated(AllocationChangeSerializer, request),
        )
        return Response({"count": count})

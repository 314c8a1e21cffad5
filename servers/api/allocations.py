"""``/v1/servers/{id}/allocations…``: a server's ports (its primary and additional allocations).

A mixin of the servers' viewset: the server is found as its other actions find it, seeing the
allocations needs ``settings.read`` there and changing them ``settings.write`` (the scopes are
``servers:read`` / ``servers:write``); the work is ``servers.services.allocations``'.
"""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.pagination import PageNumberPagination
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import DeletedSerializer, StrictInputSerializer
from hosting.api.views import validated
from servers.models import Allocation
from servers.services.allocations import (
    NOTE_MAX,
    allocation_add,
    allocation_names,
    allocation_of,
    allocation_remove,
    allocation_representation,
    allocation_update,
    allocations_of,
)

ALLOCATION_ID = r"(?P<allocation_id>alloc_[A-Za-z0-9]{1,60})"


class ServerAllocationSerializer(serializers.Serializer):
    """One ``ip:port`` the server holds."""

    id = serializers.CharField()
    server_id = serializers.CharField()
    ip = serializers.CharField()
    port = serializers.IntegerField()
    address = serializers.CharField(help_text="`ip:port` (`[ip]:port` for IPv6).")
    is_primary = serializers.BooleanField(
        help_text="The game's port (`{{SERVER_PORT}}`); the server's `address`."
    )
    name = serializers.CharField(
        allow_blank=True,
        help_text="`game` for the primary; the name of the game's port it is given to "
        "(`query` is `{{PORT_QUERY}}` in the scripts); empty for one beyond them.",
    )
    note = serializers.CharField(allow_blank=True)
    assigned_at = serializers.CharField(allow_null=True)


class AllocationCreateSerializer(StrictInputSerializer):
    port = serializers.IntegerField(
        min_value=1,
        max_value=65535,
        required=False,
        help_text="A port that is free on the server's node; left out: the lowest free one.",
    )
    note = serializers.CharField(max_length=NOTE_MAX, required=False, allow_blank=True)


class AllocationUpdateSerializer(StrictInputSerializer):
    note = serializers.CharField(max_length=NOTE_MAX, required=False, allow_blank=True)
    is_primary = serializers.BooleanField(
        required=False, help_text="true makes it the primary (from the server's next start)."
    )


ALLOCATION_EXAMPLE = {
    "id": "alloc_7Hq2Lw9Xc4Vb1Nm8Tz3Kp6Rs",
    "server_id": "srv_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs",
    "ip": "203.0.113.7",
    "port": 27016,
    "address": "203.0.113.7:27016",
    "is_primary": False,
    "name": "query",
    "note": "Server list query",
    "assigned_at": "2026-11-21T15:04:05Z",
}
ADD_CONFLICTS = error_doc(
    409,
    "allocation_limit_reached",
    "`allocation_limit_reached` (details.limit): as many allocations as the plan allows; "
    "`port_unavailable` (details.port): the port asked for is not free on the server's node; "
    "`no_capacity`: the node has no free port; `conflict`: the server is not on a node yet.",
    "This server holds 2 allocations, as many as its plan allows; remove one first.",
    {"limit": 2},
)
REMOVE_CONFLICT = error_doc(
    409,
    "primary_allocation",
    "`primary_allocation`: the primary cannot be removed; make another one primary first. "
    "`derived_ports` (details.ports, `{name: port}`): it is a port the game opens itself on the "
    "primary's port + its `offset`, which the server keeps while that is its primary.",
    "The primary allocation cannot be removed; make another one primary first.",
)
UNSET_PRIMARY = error_doc(
    409,
    "primary_allocation",
    "`primary_allocation`: `is_primary: false` on the primary; make another one primary instead. "
    "`derived_ports` (details.ports, `{name: port}`): its game opens ports itself on the game "
    "port + an `offset`, and the server does not hold those ports beside this one (add them "
    "first).",
    "A server always has a primary allocation: make another one primary instead.",
)
NOT_FOUND = error_doc(
    404, "not_found", "`not_found`: no such allocation here.", "No such allocation on this server."
)


def _allocation_envelope(name: str):
    return envelope("allocation", ServerAllocationSerializer(), name=name)


class ServerAllocationsMixin:
    """A server's allocations (``get_object`` of the viewset)."""

    ALLOCATION_READ = ("allocations",)
    ALLOCATION_WRITE = ("allocation_create", "allocation_update", "allocation_destroy")

    @classmethod
    def allocation_scopes(cls, read_scope: str, write_scope: str) -> dict[str, list[str]]:
        return {name: [read_scope] for name in cls.ALLOCATION_READ} | {
            name: [write_scope] for name in cls.ALLOCATION_WRITE
        }

    def _shown(self, server, allocation: Allocation) -> dict:
        names = allocation_names(server, list(allocations_of(server)))
        return ServerAllocationSerializer(
            allocation_representation(allocation, names.get(allocation.pk, ""))
        ).data

    @extend_schema(
        summary="List a server's allocations",
        description="Its primary allocation first (the game's port), then the additional ones "
        "in the order they were taken, each with the name of the game's port it is given to. "
        "Needs settings.read.",
        responses=ServerAllocationSerializer(many=True),
        examples=[OpenApiExample("A query port", value=ALLOCATION_EXAMPLE, response_only=True)],
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="allocations",
        pagination_class=PageNumberPagination.for_key("allocations"),
    )
    def allocations(self, request, pk=None):
        server = self.get_object()
        paginator = PageNumberPagination.for_key("allocations")()
        page = paginator.paginate_queryset(allocations_of(server), request, self)
        # A name depends on the allocation's place among all of them, not only this page's.
        names = allocation_names(server, list(allocations_of(server)))
        return paginator.get_paginated_response(
            [
                ServerAllocationSerializer(allocation_representation(item, names[item.pk])).data
                for item in page
            ]
        )

    @extend_schema(
        summary="Add an allocation",
        description="One more `ip:port` of the server's node: `port` when it is free there, "
        "else the lowest free port (on the primary's address first), up to the plan's "
        "`allocations.limit` (the primary included). The process sees it from its next start. "
        "`server.allocation_added`. Needs settings.write.",
        request=AllocationCreateSerializer,
        responses={201: _allocation_envelope("AllocationCreatedEnvelope"), 409: ADD_CONFLICTS},
        examples=[
            OpenApiExample(
                "A query port", value={"port": 27016, "note": "Query"}, request_only=True
            )
        ],
    )
    @allocations.mapping.post
    def allocation_create(self, request, pk=None):
        body = validated(AllocationCreateSerializer, request)
        server = self.get_object()
        allocation = allocation_add(server=server, actor=Actor.from_request(request), **body)
        return Response(
            {"allocation": self._shown(server, allocation)},
            status=201,
            headers={
                "Location": request.build_absolute_uri(
                    f"/v1/servers/{server.pk}/allocations/{allocation.public_id}"
                )
            },
        )

    @extend_schema(
        summary="Change an allocation",
        description="Its `note`, or `is_primary: true` to make it the primary (the old primary "
        "becomes an additional one; the server's `address` changes and the process listens "
        "there from its next start). A game whose named ports have an `offset` (ports it opens "
        "itself on the game port + offset) moves its primary only to an allocation whose "
        "port + offset the server holds for each of them, and those become its named ports "
        "(409 `derived_ports` otherwise). `server.allocation_updated`. Needs settings.write.",
        request=AllocationUpdateSerializer,
        responses={
            200: _allocation_envelope("AllocationEnvelope"),
            404: NOT_FOUND,
            409: UNSET_PRIMARY,
        },
        examples=[
            OpenApiExample("Make it primary", value={"is_primary": True}, request_only=True),
            OpenApiExample(
                "An allocation",
                value={"allocation": ALLOCATION_EXAMPLE},
                response_only=True,
                status_codes=["200"],
            ),
        ],
    )
    @action(detail=True, methods=["patch"], url_path=f"allocations/{ALLOCATION_ID}")
    def allocation_update(self, request, pk=None, allocation_id=None):
        body = validated(AllocationUpdateSerializer, request)
        server = self.get_object()
        allocation = allocation_update(
            allocation=allocation_of(server, allocation_id),
            actor=Actor.from_request(request),
            **body,
        )
        return Response({"allocation": self._shown(server, allocation)})

    @extend_schema(
        summary="Remove an allocation",
        description="Gives an additional allocation back to the node's pool; the primary never, "
        "nor one its game opens itself on the primary's port + an `offset`. "
        "`server.allocation_removed`. Needs settings.write.",
        request=None,
        responses={200: DeletedSerializer, 404: NOT_FOUND, 409: REMOVE_CONFLICT},
    )
    @allocation_update.mapping.delete
    def allocation_destroy(self, request, pk=None, allocation_id=None):
        server = self.get_object()
        allocation_remove(
            allocation=allocation_of(server, allocation_id), actor=Actor.from_request(request)
        )
        return Response({"id": allocation_id, "deleted": True})

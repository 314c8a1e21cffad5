from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets

from hosting.api.schema import envelope
from hosting.api.views import CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin
from servers.api.serializers import (
    GAME_EXAMPLES,
    SERVER_DETAIL_EXAMPLES,
    SERVER_EXAMPLES,
    GameSerializer,
    ServerDetailSerializer,
    ServerSerializer,
)
from servers.filters import ServerFilter
from servers.models import Server
from servers.selectors import game_catalogue, servers_of_account


@extend_schema_view(
    list=extend_schema(
        summary="List servers",
        description="The account's game servers, newest first, with filters and ordering.",
        examples=SERVER_EXAMPLES,
        tags=["Servers"],
    ),
    retrieve=extend_schema(
        summary="Get a server",
        responses=envelope("server", ServerDetailSerializer()),
        examples=SERVER_DETAIL_EXAMPLES,
        tags=["Servers"],
    ),
)
class ServerViewSet(
    CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, viewsets.GenericViewSet
):
    list_key = "servers"
    resource_key = "server"
    filterset_class = ServerFilter
    required_scopes = {"list": ["servers:read"], "retrieve": ["servers:read"]}

    model = Server

    def caller_queryset(self, principal):
        return servers_of_account(account_id=principal.account.id)

    def get_serializer_class(self):
        return ServerDetailSerializer if self.action == "retrieve" else ServerSerializer


@extend_schema_view(
    list=extend_schema(
        summary="List games",
        description="The game catalogue: every game a server can be created for. Any valid key.",
        examples=GAME_EXAMPLES,
        tags=["Games"],
    )
)
class GameViewSet(EnvelopeListMixin, viewsets.GenericViewSet):
    list_key = "games"
    serializer_class = GameSerializer
    queryset = game_catalogue()
    required_scopes = {"list": []}
    filter_backends: list = []

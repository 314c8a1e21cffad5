from django.urls import path, re_path

from hosting.api.routers import ApiRouter
from hosting.ids import ID_PATTERN
from servers.api.agent import (
    AgentBotSourceView,
    AgentEventsView,
    AgentHelloView,
    AgentSftpAuthView,
)
from servers.api.games import StaffGameViewSet
from servers.api.nodes import NodeViewSet
from servers.api.views import ActionViewSet, BotViewSet, GameViewSet, RegionViewSet, ServerViewSet

router = ApiRouter()
router.register("servers", ServerViewSet, basename="server")
router.register("bots", BotViewSet, basename="bot")
router.register("actions", ActionViewSet, basename="action")
router.register("games", GameViewSet, basename="game")
router.register("regions", RegionViewSet, basename="region")
router.register("admin/nodes", NodeViewSet, basename="node")
router.register("admin/games", StaffGameViewSet, basename="staff-game")

urlpatterns = [
    *router.urls,
    path("agent/hello", AgentHelloView.as_view(), name="agent-hello"),
    path("agent/events", AgentEventsView.as_view(), name="agent-events"),
    path("agent/sftp/auth", AgentSftpAuthView.as_view(), name="agent-sftp-auth"),
    re_path(
        rf"^agent/bots/(?P<pk>{ID_PATTERN})/source$",
        AgentBotSourceView.as_view(),
        name="agent-bot-source",
    ),
]

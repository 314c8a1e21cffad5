from hosting.api.routers import ApiRouter
from servers.api.views import ActionViewSet, BotViewSet, GameViewSet, RegionViewSet, ServerViewSet

router = ApiRouter()
router.register("servers", ServerViewSet, basename="server")
router.register("bots", BotViewSet, basename="bot")
router.register("actions", ActionViewSet, basename="action")
router.register("games", GameViewSet, basename="game")
router.register("regions", RegionViewSet, basename="region")

urlpatterns = router.urls

from rest_framework.routers import SimpleRouter

from servers.api.views import GameViewSet, ServerViewSet

router = SimpleRouter(trailing_slash=False)
router.register("servers", ServerViewSet, basename="server")
router.register("games", GameViewSet, basename="game")

urlpatterns = router.urls

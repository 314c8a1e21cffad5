from databases.api.hosts import DatabaseHostViewSet
from databases.api.views import BotDatabaseViewSet, ServerDatabaseViewSet
from hosting.api.routers import ApiRouter, id_segment

router = ApiRouter()
router.register(
    f"servers/{id_segment('id')}/databases",
    ServerDatabaseViewSet,
    basename="server-database",
)
router.register(f"bots/{id_segment('id')}/databases", BotDatabaseViewSet, basename="bot-database")
router.register("admin/database-hosts", DatabaseHostViewSet, basename="database-host")

urlpatterns = router.urls

from events.api.views import EventViewSet
from hosting.api.routers import ApiRouter

router = ApiRouter()
router.register("events", EventViewSet, basename="event")

urlpatterns = router.urls

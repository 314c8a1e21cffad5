from hosting.api.routers import ApiRouter
from support.api.views import DepartmentViewSet, TicketViewSet

router = ApiRouter()
router.register("departments", DepartmentViewSet, basename="department")
router.register("tickets", TicketViewSet, basename="ticket")
urlpatterns = router.urls

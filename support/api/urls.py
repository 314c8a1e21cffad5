from hosting.api.routers import ApiRouter
from support.api.views import AttachmentViewSet, DepartmentViewSet, TicketViewSet

router = ApiRouter()
router.register("departments", DepartmentViewSet, basename="department")
router.register("tickets", TicketViewSet, basename="ticket")
router.register("attachments", AttachmentViewSet, basename="attachment")
urlpatterns = router.urls

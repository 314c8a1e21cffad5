from hosting.api.routers import ApiRouter
from support.api.views import (
    AttachmentViewSet,
    DepartmentViewSet,
    StaffTicketViewSet,
    TicketViewSet,
)

router = ApiRouter()
router.register("departments", DepartmentViewSet, basename="department")
router.register("tickets", TicketViewSet, basename="ticket")
router.register("attachments", AttachmentViewSet, basename="attachment")
router.register("admin/tickets", StaffTicketViewSet, basename="admin-ticket")
urlpatterns = router.urls

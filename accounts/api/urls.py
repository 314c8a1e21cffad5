from django.urls import path
from rest_framework.routers import SimpleRouter

from accounts.api.views import (
    AccountViewSet,
    ApiKeyViewSet,
    CustomerMemberViewSet,
    CustomerViewSet,
    InvitationViewSet,
    MemberViewSet,
)

router = SimpleRouter(trailing_slash=False)
router.register("account/members", MemberViewSet, basename="member")
router.register("account/invitations", InvitationViewSet, basename="invitation")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("admin/customers", CustomerViewSet, basename="customer")
router.register(
    r"admin/customers/(?P<customer_id>[^/.]+)/members",
    CustomerMemberViewSet,
    basename="customer-member",
)

urlpatterns = [
    path(
        "account",
        AccountViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="account",
    ),
    *router.urls,
]

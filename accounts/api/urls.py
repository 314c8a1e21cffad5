from django.urls import path

from accounts.api.views import (
    AccountViewSet,
    ApiKeyViewSet,
    CustomerMemberViewSet,
    CustomerViewSet,
    InvitationViewSet,
    MemberViewSet,
    ProfileViewSet,
    SftpPasswordViewSet,
    SshKeyViewSet,
)
from hosting.api.routers import ApiRouter, id_segment

router = ApiRouter()
router.register("account/members", MemberViewSet, basename="member")
router.register("account/invitations", InvitationViewSet, basename="invitation")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("profile/ssh-keys", SshKeyViewSet, basename="ssh-key")
router.register("admin/customers", CustomerViewSet, basename="customer")
router.register(
    rf"admin/customers/{id_segment('customer_id')}/members",
    CustomerMemberViewSet,
    basename="customer-member",
)

urlpatterns = [
    path(
        "account",
        AccountViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="account",
    ),
    path(
        "profile",
        ProfileViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="profile",
    ),
    path(
        "profile/sftp-password",
        SftpPasswordViewSet.as_view({"put": "update", "delete": "destroy"}),
        name="profile-sftp-password",
    ),
    *router.urls,
]

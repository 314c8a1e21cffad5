"""The account API: the caller's account, its members, invitations and API keys; the staff API.

Views parse the body with an input serializer, call one service with the request's actor and
serialize the answer; every rule (who may invite whom, the last owner, which scopes a key may
get, the key limit) lives in ``accounts.services``.
"""

from datetime import timedelta

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    extend_schema_view,
)
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from accounts.api.docs import (
    ACCOUNT_DOCS,
    API_KEY_DOCS,
    CUSTOMER_DOCS,
    CUSTOMER_MEMBER_DOCS,
    INVITATION_DOCS,
    MEMBER_DOCS,
    PROFILE_DOCS,
    SFTP_PASSWORD_DOCS,
    SSH_KEY_DOCS,
)
from accounts.api.serializers import (
    AccountSerializer,
    AccountUpdateSerializer,
    ApiKeyCreateSerializer,
    ApiKeyRotateSerializer,
    ApiKeySerializer,
    CustomerCreateSerializer,
    CustomerSerializer,
    CustomerSuspendSerializer,
    CustomerUpdateSerializer,
    InvitationCreateSerializer,
    InvitationSerializer,
    MemberSerializer,
    MemberUpdateSerializer,
    ProfileSerializer,
    ProfileUpdateSerializer,
    SftpPasswordSerializer,
    SshKeyCreateSerializer,
    SshKeySerializer,
)
from accounts.filters import ApiKeyFilter, CustomerFilter, InvitationFilter, MemberFilter
from accounts.models import Account, ApiKey, Invitation, Membership, SshKey
from accounts.selectors import (
    api_keys_visible_to,
    customers_with_owners,
    invitations_of_account,
    members_of_account,
    ssh_keys_of,
)
from accounts.services import (
    ApiKeyPrincipal,
    account_create,
    account_require_second_factor,
    account_suspend,
    account_unsuspend,
    account_update,
    api_key_create,
    api_key_revoke,
    api_key_rotate,
    invitation_create,
    invitation_revoke,
    member_change_role,
    member_remove,
)
from accounts.services.sftp import (
    sftp_login_change,
    sftp_login_of,
    sftp_password_remove,
    sftp_password_set,
    ssh_key_create,
    ssh_key_delete,
)
from hosting.api.serializers import EmptyBodySerializer
from hosting.api.views import (
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
    deleted,
    validated,
)

# --- The account ----------------------------------------------------------------------------


@extend_schema_view(**ACCOUNT_DOCS)
class AccountViewSet(ApiViewSet):
    serializer_class = AccountSerializer
    required_scopes = {"retrieve": ["account:read"], "partial_update": ["account:write"]}

    def retrieve(self, request):
        return Response({"account": AccountSerializer(request.auth.account).data})

    def partial_update(self, request):
        account = request.auth.account
        actor = Actor.from_request(request)
        changes = validated(AccountUpdateSerializer, request)
        with transaction.atomic():
            if "require_second_factor" in changes:
                account = account_require_second_factor(
                    account=account, required=changes.pop("require_second_factor"), actor=actor
                )
            if changes:
                account = account_update(account=account, actor=actor, **changes)
        return Response({"account": AccountSerializer(account).data})


# --- Members and invitations ----------------------------------------------------------------


def _invite(request) -> Response:
    """Shared by ``POST /account/members`` and ``POST /account/invitations``."""
    body = validated(InvitationCreateSerializer, request)
    invitation, _token = invitation_create(
        account=request.auth.account,
        email=body["email"],
        role=body["role"],
        actor=Actor.from_request(request),
    )
    return created(
        request,
        {"invitation": InvitationSerializer(invitation).data},
        f"/v1/account/invitations/{invitation.id}",
    )


@extend_schema_view(**MEMBER_DOCS)
class MemberViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "members"
    resource_key = "member"
    serializer_class = MemberSerializer
    filterset_classes = {"list": MemberFilter}
    lookup_field = "user_id"
    required_scopes = {
        "list": ["account:read"],
        "retrieve": ["account:read"],
        "create": ["account:write"],
        "partial_update": ["account:write"],
        "destroy": ["account:write"],
    }

    model = Membership

    def caller_queryset(self, principal: ApiKeyPrincipal):
        return members_of_account(account=principal.account).order_by("-created_at", "-id")

    def create(self, request):
        return _invite(request)

    def partial_update(self, request, user_id: str):
        membership = self.get_object()
        if changes := validated(MemberUpdateSerializer, request):
            membership = member_change_role(
                membership=membership, actor=Actor.from_request(request), **changes
            )
        return Response({"member": MemberSerializer(membership).data})

    def destroy(self, request, user_id: str):
        membership = self.get_object()
        member_remove(membership=membership, actor=Actor.from_request(request))
        return deleted(membership.user_id)


@extend_schema_view(**INVITATION_DOCS)
class InvitationViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "invitations"
    resource_key = "invitation"
    serializer_class = InvitationSerializer
    filterset_classes = {"list": InvitationFilter}
    required_scopes = {
        "list": ["account:read"],
        "retrieve": ["account:read"],
        "create": ["account:write"],
        "destroy": ["account:write"],
    }

    model = Invitation

    def caller_queryset(self, principal: ApiKeyPrincipal):
        return invitations_of_account(account=principal.account)

    def create(self, request):
        return _invite(request)

    def destroy(self, request, pk: str):
        invitation = invitation_revoke(
            invitation=self.get_object(), actor=Actor.from_request(request)
        )
        return deleted(invitation.id)


# --- API keys -------------------------------------------------------------------------------


@extend_schema_view(**API_KEY_DOCS)
class ApiKeyViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "api_keys"
    resource_key = "api_key"
    serializer_class = ApiKeySerializer
    filterset_classes = {"list": ApiKeyFilter}
    required_scopes = {
        "list": ["api_keys:read"],
        "retrieve": ["api_keys:read"],
        "create": ["api_keys:write"],
        "destroy": ["api_keys:write"],
        "rotate": ["api_keys:write"],
    }

    model = ApiKey

    def caller_queryset(self, principal: ApiKeyPrincipal):
        return api_keys_visible_to(
            account=principal.account, user=principal.user, role=principal.role
        )

    def create(self, request):
        api_key, token = api_key_create(
            account=request.auth.account,
            user=request.auth.user,
            actor=Actor.from_request(request),
            **validated(ApiKeyCreateSerializer, request),
        )
        return created(
            request,
            {"api_key": ApiKeySerializer(api_key).data, "token": token},
            f"/v1/api-keys/{api_key.id}",
        )

    def destroy(self, request, pk: str):
        api_key = api_key_revoke(api_key=self.get_object(), actor=Actor.from_request(request))
        return Response({"api_key": ApiKeySerializer(api_key).data})

    @action(detail=True, methods=["post"])
    def rotate(self, request, pk: str):
        api_key = self.get_object()
        body = validated(ApiKeyRotateSerializer, request)
        new_key, token = api_key_rotate(
            api_key=api_key,
            actor=Actor.from_request(request),
            grace=timedelta(seconds=body["grace_period_seconds"]),
        )
        return created(
            request,
            {"api_key": ApiKeySerializer(new_key).data, "token": token},
            f"/v1/api-keys/{new_key.id}",
        )


# --- The caller's own profile: SSH keys and SFTP ------------------------------------------
#
# A user's own, not the account's: an API key reaches its own user's profile only, and only
# with the profile:read / profile:write scopes (which every role may grant); another user's
# key id is 404 like any id that is not the caller's.


def _profile(user) -> Response:
    sftp_login_of(user)  # given the first time it is shown
    return Response({"profile": ProfileSerializer(user).data})


@extend_schema_view(**PROFILE_DOCS)
class ProfileViewSet(ApiViewSet):
    serializer_class = ProfileSerializer
    required_scopes = {"retrieve": ["profile:read"], "partial_update": ["profile:write"]}

    def retrieve(self, request):
        return _profile(request.auth.user)

    def partial_update(self, request):
        user = request.auth.user
        if changes := validated(ProfileUpdateSerializer, request):
            user = sftp_login_change(
                user=user, login=changes["sftp_login"], actor=Actor.from_request(request)
            )
        return _profile(user)


@extend_schema_view(**SFTP_PASSWORD_DOCS)
class SftpPasswordViewSet(ApiViewSet):
    serializer_class = ProfileSerializer
    required_scopes = {"update": ["profile:write"], "destroy": ["profile:write"]}

    def update(self, request):
        body = validated(SftpPasswordSerializer, request)
        user = sftp_password_set(
            user=request.auth.user, password=body["password"], actor=Actor.from_request(request)
        )
        return _profile(user)

    def destroy(self, request):
        user = sftp_password_remove(user=request.auth.user, actor=Actor.from_request(request))
        return _profile(user)


@extend_schema_view(**SSH_KEY_DOCS)
class SshKeyViewSet(CallerScopedMixin, EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "ssh_keys"
    resource_key = "ssh_key"
    serializer_class = SshKeySerializer
    required_scopes = {
        "list": ["profile:read"],
        "retrieve": ["profile:read"],
        "create": ["profile:write"],
        "destroy": ["profile:write"],
    }

    model = SshKey

    def caller_queryset(self, principal: ApiKeyPrincipal):
        return ssh_keys_of(user=principal.user)

    def create(self, request):
        ssh_key = ssh_key_create(
            user=request.auth.user,
            actor=Actor.from_request(request),
            **validated(SshKeyCreateSerializer, request),
        )
        return created(
            request,
            {"ssh_key": SshKeySerializer(ssh_key).data},
            f"/v1/profile/ssh-keys/{ssh_key.id}",
        )

    def destroy(self, request, pk: str):
        ssh_key = self.get_object()
        ssh_key_delete(ssh_key=ssh_key, actor=Actor.from_request(request))
        return deleted(pk)


# --- Staff ----------------------------------------------------------------------------------


@extend_schema_view(**CUSTOMER_DOCS)
class CustomerViewSet(EnvelopeListMixin, EnvelopeRetrieveMixin, ApiViewSet):
    list_key = "customers"
    resource_key = "customer"
    serializer_class = CustomerSerializer
    filterset_classes = {"list": CustomerFilter}
    required_scopes = {
        "list": ["admin:read"],
        "retrieve": ["admin:read"],
        "create": ["admin:write"],
        "partial_update": ["admin:write"],
        "suspend": ["admin:write"],
        "unsuspend": ["admin:write"],
    }

    def get_queryset(self):
        return customers_with_owners()

    def _answer(self, account: Account) -> Response:
        customer = customers_with_owners().get(pk=account.pk)
        return Response({"customer": CustomerSerializer(customer).data})

    def create(self, request):
        account = account_create(
            actor=Actor.from_request(request), **validated(CustomerCreateSerializer, request)
        )
        customer = customers_with_owners().get(pk=account.pk)
        return created(
            request,
            {"customer": CustomerSerializer(customer).data},
            f"/v1/admin/customers/{account.id}",
        )

    def partial_update(self, request, pk: str):
        account = self.get_object()
        if changes := validated(CustomerUpdateSerializer, request):
            account = account_update(account=account, actor=Actor.from_request(request), **changes)
        return self._answer(account)

    @action(detail=True, methods=["post"])
    def suspend(self, request, pk: str):
        account = account_suspend(
            account=self.get_object(),
            actor=Actor.from_request(request),
            **validated(CustomerSuspendSerializer, request),
        )
        return self._answer(account)

    @action(detail=True, methods=["post"])
    def unsuspend(self, request, pk: str):
        validated(EmptyBodySerializer, request)
        account = account_unsuspend(account=self.get_object(), actor=Actor.from_request(request))
        return self._answer(account)


@extend_schema_view(**CUSTOMER_MEMBER_DOCS)
class CustomerMemberViewSet(EnvelopeListMixin, ApiViewSet):
    list_key = "members"
    serializer_class = MemberSerializer
    filterset_classes = {"list": MemberFilter}
    required_scopes = {"list": ["admin:read"]}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no path
            return Membership.objects.none()
        account = get_object_or_404(Account, pk=self.kwargs["customer_id"])
        return members_of_account(account=account).order_by("-created_at", "-id")

"""The account API: the caller's account, its members, invitations and API keys; the staff API.

Views parse the body with an input serializer, call one service with the request's actor and
serialize the answer; every rule (who may invite whom, the last owner, which scopes a key may
get, the key limit) lives in ``accounts.services``.
"""

from datetime import timedelta

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.api.serializers import (
    ACCOUNT_EXAMPLES,
    API_KEY_EXAMPLES,
    API_KEY_LIST_EXAMPLES,
    CUSTOMER_EXAMPLES,
    CUSTOMER_LIST_EXAMPLES,
    INVITATION_EXAMPLES,
    INVITATION_LIST_EXAMPLES,
    MEMBER_EXAMPLES,
    MEMBER_LIST_EXAMPLES,
    NEW_API_KEY_EXAMPLES,
    REVOKED_API_KEY_EXAMPLES,
    AccountSerializer,
    AccountUpdateSerializer,
    ApiKeyCreateSerializer,
    ApiKeyRotateSerializer,
    ApiKeySerializer,
    CustomerCreateSerializer,
    CustomerSerializer,
    CustomerSuspendSerializer,
    CustomerUpdateSerializer,
    DeletedSerializer,
    EmptyBodySerializer,
    InvitationCreateSerializer,
    InvitationSerializer,
    MemberSerializer,
    MemberUpdateSerializer,
    NewApiKeySerializer,
)
from accounts.filters import ApiKeyFilter, CustomerFilter, InvitationFilter, MemberFilter
from accounts.models import Account, ApiKey, Invitation, Membership
from accounts.selectors import (
    api_keys_visible_to,
    customers_with_owners,
    invitations_of_account,
    members_of_account,
)
from accounts.services import (
    ApiKeyPrincipal,
    account_create,
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
from events.services import Actor
from hosting.api.schema import CONFLICT, envelope, error_doc
from hosting.api.views import (
    ApiViewSet,
    CallerScopedMixin,
    EnvelopeListMixin,
    EnvelopeRetrieveMixin,
    created,
)

# Built once each: every envelope() call makes a new component class of the same name.
ACCOUNT_RESPONSE = envelope("account", AccountSerializer())
MEMBER_RESPONSE = envelope("member", MemberSerializer())
INVITATION_RESPONSE = envelope("invitation", InvitationSerializer())
API_KEY_RESPONSE = envelope("api_key", ApiKeySerializer())
CUSTOMER_RESPONSE = envelope("customer", CustomerSerializer())


def validated(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def deleted(object_id: str) -> Response:
    return Response({"id": object_id, "deleted": True})


# --- The account ----------------------------------------------------------------------------


@extend_schema_view(
    retrieve=extend_schema(
        summary="Get the account",
        description="The account the calling key belongs to.",
        responses=ACCOUNT_RESPONSE,
        examples=ACCOUNT_EXAMPLES,
        tags=["Account"],
    ),
    partial_update=extend_schema(
        summary="Rename the account",
        description="Only the name can be changed here; limits (`rate_limit_per_minute`, "
        "`max_api_keys`) are set by the hosting company, and sending them is a 400 "
        "`validation_failed`.",
        request=AccountUpdateSerializer,
        responses=ACCOUNT_RESPONSE,
        examples=[
            OpenApiExample("Rename", value={"name": "Creeper Hosting"}, request_only=True),
            *ACCOUNT_EXAMPLES,
        ],
        tags=["Account"],
    ),
)
class AccountViewSet(ApiViewSet):
    serializer_class = AccountSerializer
    required_scopes = {"retrieve": ["account:read"], "partial_update": ["account:write"]}

    def retrieve(self, request):
        return Response({"account": AccountSerializer(request.auth.account).data})

    def partial_update(self, request):
        account = request.auth.account
        if changes := validated(AccountUpdateSerializer, request):
            account = account_update(account=account, actor=Actor.from_request(request), **changes)
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


INVITE_DOC = {
    "request": InvitationCreateSerializer,
    "responses": {201: INVITATION_RESPONSE, 409: CONFLICT},
    "examples": [
        OpenApiExample(
            "Invite a developer",
            value={"email": "sam@example.com", "role": "developer"},
            request_only=True,
        ),
        *INVITATION_EXAMPLES,
    ],
}
USER_ID = OpenApiParameter(
    "user_id", str, OpenApiParameter.PATH, description="The member's user id (`usr_...`)."
)


@extend_schema_view(
    list=extend_schema(
        summary="List members",
        description="The account's members with their roles, newest first.",
        examples=MEMBER_LIST_EXAMPLES,
        tags=["Members"],
    ),
    create=extend_schema(
        summary="Add a member (sends an invitation)",
        description="People join an account by accepting an invitation, so this is the same "
        "operation as `POST /v1/account/invitations`: it e-mails a link valid for 7 days and "
        "answers 201 with `data.invitation` (the member appears once they accept). Inviting "
        "an address with a pending invitation replaces it. An existing member is 409 "
        "`conflict`; only owners and admins may invite, and only owners may invite owners "
        "(403 `permission_denied`).",
        tags=["Members"],
        **INVITE_DOC,
    ),
    retrieve=extend_schema(
        summary="Get a member",
        parameters=[USER_ID],
        responses=MEMBER_RESPONSE,
        examples=MEMBER_EXAMPLES,
        tags=["Members"],
    ),
    partial_update=extend_schema(
        summary="Change a member's role",
        description="The member's API keys follow the new role on their next request. Only "
        "owners may make, demote or change owners (403 `permission_denied`); the last owner "
        "cannot be demoted (409 `conflict`).",
        parameters=[USER_ID],
        request=MemberUpdateSerializer,
        responses={200: MEMBER_RESPONSE, 409: CONFLICT},
        examples=[
            OpenApiExample("Make viewer", value={"role": "viewer"}, request_only=True),
            *MEMBER_EXAMPLES,
        ],
        tags=["Members"],
    ),
    destroy=extend_schema(
        summary="Remove a member",
        description="Removes the user from the account and revokes their keys of this account "
        "at once. The last owner cannot be removed (409 `conflict`).",
        parameters=[USER_ID],
        responses={200: DeletedSerializer, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "Removed",
                value={"id": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df", "deleted": True},
                response_only=True,
            )
        ],
        tags=["Members"],
    ),
)
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


@extend_schema_view(
    list=extend_schema(
        summary="List invitations",
        description="Invitations of the account, newest first; filter by `status`.",
        examples=INVITATION_LIST_EXAMPLES,
        tags=["Invitations"],
    ),
    create=extend_schema(
        summary="Invite someone",
        description="E-mails a link that lets the address join with `role`, valid for 7 days; "
        "the link is never returned by the API. Inviting an address with a pending invitation "
        "replaces it. An existing member is 409 `conflict`; only owners and admins may invite, "
        "and only owners may invite owners (403 `permission_denied`).",
        tags=["Invitations"],
        **INVITE_DOC,
    ),
    retrieve=extend_schema(
        summary="Get an invitation",
        responses=INVITATION_RESPONSE,
        examples=INVITATION_EXAMPLES,
        tags=["Invitations"],
    ),
    destroy=extend_schema(
        summary="Revoke an invitation",
        description="The link stops working at once; the invitation stays listed as `revoked`. "
        "Only a pending invitation can be revoked (409 `conflict`).",
        responses={200: DeletedSerializer, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "Revoked",
                value={"id": "ivt_7Hc2Lm9QxT4nW8pR1sK3vZbY", "deleted": True},
                response_only=True,
            )
        ],
        tags=["Invitations"],
    ),
)
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


NEW_KEY_RESPONSE = OpenApiResponse(
    NewApiKeySerializer, description="The key and its token, shown this once."
)


@extend_schema_view(
    list=extend_schema(
        summary="List API keys",
        description="Owners and admins see every key of the account; everyone else only "
        "their own. Revoked and expired keys stay listed; filter by `status`.",
        examples=API_KEY_LIST_EXAMPLES,
        tags=["API keys"],
    ),
    create=extend_schema(
        summary="Create an API key",
        description="Creates a key for the calling user in this account and answers with its "
        "token, the only time it is shown. `expires_at` is an ISO 8601 time in the future "
        "(the dashboard offers 30, 90 or 365 days); null or absent means it never expires. "
        "Scopes beyond the user's role or beyond the calling key are 403 "
        "`insufficient_scope` naming them in `details.required_scopes`; an account at its key "
        "limit gets 422 `quota_exceeded` with `details.limit`.",
        request=ApiKeyCreateSerializer,
        responses={
            201: NEW_KEY_RESPONSE,
            422: error_doc(
                422,
                "quota_exceeded",
                "`quota_exceeded` (details.limit): the account holds its maximum of keys.",
                "This account already has 25 API keys, its limit; revoke one first.",
                {"limit": 25},
            ),
        },
        examples=[
            OpenApiExample(
                "A CI deploy key",
                value={
                    "name": "CI deploy",
                    "scopes": ["servers:read", "servers:power"],
                    "expires_at": "2027-02-19T15:04:05Z",
                    "allowed_ips": ["203.0.113.0/24"],
                },
                request_only=True,
            ),
            *NEW_API_KEY_EXAMPLES,
        ],
        tags=["API keys"],
    ),
    retrieve=extend_schema(
        summary="Get an API key",
        responses=API_KEY_RESPONSE,
        examples=API_KEY_EXAMPLES,
        tags=["API keys"],
    ),
    destroy=extend_schema(
        summary="Revoke an API key",
        description="Revokes the key at once and irreversibly (a key pending revocation after "
        "a rotation is cut off now). The key stays listed with status `revoked`, so this "
        "answers with the key rather than `deleted: true`. Revoking a revoked key changes "
        "nothing.",
        responses={200: API_KEY_RESPONSE},
        examples=REVOKED_API_KEY_EXAMPLES,
        tags=["API keys"],
    ),
    rotate=extend_schema(
        summary="Rotate an API key",
        description="Creates a new key with the same name, scopes, expiry and allowed IPs and "
        "answers with its token; the old token keeps working for `grace_period_seconds` "
        "(default 0: revoked at once), then answers 401 `api_key_revoked`. Only the key's own "
        "user can rotate it (403 `permission_denied`), with a key holding all of its scopes; "
        "only an active key can be rotated (409 `conflict`).",
        request=ApiKeyRotateSerializer,
        responses={201: NEW_KEY_RESPONSE, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "One hour to switch over",
                value={"grace_period_seconds": 3600},
                request_only=True,
            ),
            *NEW_API_KEY_EXAMPLES,
        ],
        tags=["API keys"],
    ),
)
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


# --- Staff ----------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List customers",
        description="Every customer account (staff keys with `admin:read`), newest first.",
        examples=CUSTOMER_LIST_EXAMPLES,
        tags=["Staff"],
    ),
    create=extend_schema(
        summary="Create a customer",
        description="Creates an account with its first owner. A user with `owner_email` is "
        "reused; otherwise one is created without a password (they set one through the "
        "password reset).",
        request=CustomerCreateSerializer,
        responses={201: CUSTOMER_RESPONSE},
        examples=[
            OpenApiExample(
                "A new customer",
                value={"name": "Creeper Hosting", "owner_email": "alex@example.com"},
                request_only=True,
            ),
            *CUSTOMER_EXAMPLES,
        ],
        tags=["Staff"],
    ),
    retrieve=extend_schema(
        summary="Get a customer",
        responses=CUSTOMER_RESPONSE,
        examples=CUSTOMER_EXAMPLES,
        tags=["Staff"],
    ),
    partial_update=extend_schema(
        summary="Change a customer",
        description="The name and the limits: `rate_limit_per_minute` (null: the service "
        "default) and `max_api_keys`.",
        request=CustomerUpdateSerializer,
        responses=CUSTOMER_RESPONSE,
        examples=[
            OpenApiExample(
                "Raise the limits",
                value={"rate_limit_per_minute": 1200, "max_api_keys": 50},
                request_only=True,
            ),
            *CUSTOMER_EXAMPLES,
        ],
        tags=["Staff"],
    ),
    suspend=extend_schema(
        summary="Suspend a customer",
        description="Every key of the account then answers 403 `account_suspended`. "
        "Suspending a suspended customer changes nothing.",
        request=CustomerSuspendSerializer,
        responses=CUSTOMER_RESPONSE,
        examples=[
            OpenApiExample("Unpaid", value={"reason": "Unpaid invoices"}, request_only=True),
            *CUSTOMER_EXAMPLES,
        ],
        tags=["Staff"],
    ),
    unsuspend=extend_schema(
        summary="Unsuspend a customer",
        description="The account's keys work again. No body.",
        request=None,
        responses=CUSTOMER_RESPONSE,
        examples=CUSTOMER_EXAMPLES,
        tags=["Staff"],
    ),
)
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


@extend_schema_view(
    list=extend_schema(
        summary="List a customer's members",
        parameters=[
            OpenApiParameter(
                "customer_id", str, OpenApiParameter.PATH, description="The account id."
            )
        ],
        examples=MEMBER_LIST_EXAMPLES,
        tags=["Staff"],
    ),
)
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

"""The OpenAPI documentation of the account API (summaries, examples, documented errors).

Kept apart from the views, which it would otherwise outweigh; each ``*_DOCS`` is the
``extend_schema_view`` of the viewset of that name.
"""

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)

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
    NEW_SSH_KEY_EXAMPLES,
    PROFILE_EXAMPLES,
    REVOKED_API_KEY_EXAMPLES,
    SSH_KEY_EXAMPLES,
    SSH_KEY_LIST_EXAMPLES,
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
    NewApiKeySerializer,
    ProfileSerializer,
    ProfileUpdateSerializer,
    SftpPasswordSerializer,
    SshKeyCreateSerializer,
    SshKeySerializer,
)
from hosting.api.schema import CONFLICT, envelope, error_doc
from hosting.api.serializers import DeletedSerializer

UNBILLED_EXAMPLE = {"instances": 2, "memory_mb": 8192, "cpu_percent": 400, "disk_mb": 40960}


def _profile_without_password(examples: list[OpenApiExample]) -> list[OpenApiExample]:
    profile = examples[0].value["profile"]
    return [
        OpenApiExample(
            "No SFTP password",
            value={
                "profile": {**profile, "sftp_password_set": False, "sftp_password_set_at": None}
            },
            response_only=True,
        )
    ]


# Built once each: every envelope() call makes a new component class of the same name.
ACCOUNT_RESPONSE = envelope("account", AccountSerializer())


MEMBER_RESPONSE = envelope("member", MemberSerializer())


INVITATION_RESPONSE = envelope("invitation", InvitationSerializer())


API_KEY_RESPONSE = envelope("api_key", ApiKeySerializer())


CUSTOMER_RESPONSE = envelope("customer", CustomerSerializer())


PROFILE_RESPONSE = envelope("profile", ProfileSerializer())


SSH_KEY_RESPONSE = envelope("ssh_key", SshKeySerializer())


# AccountViewSet
ACCOUNT_DOCS = dict(
    retrieve=extend_schema(
        summary="Get the account",
        description="The account the calling key belongs to.",
        responses=ACCOUNT_RESPONSE,
        examples=ACCOUNT_EXAMPLES,
        tags=["Account"],
    ),
    partial_update=extend_schema(
        summary="Rename the account, or require a second factor of its members",
        description="The name, and (owners only) `require_second_factor`: every member then "
        "signs in to the dashboard with a second factor, and one without is sent to set it up. "
        "An owner needs a second factor of their own first (409 `second_factor_missing`); "
        "other roles get 403 `permission_denied`. API keys are not affected. Limits "
        "(`rate_limit_per_minute`, `max_api_keys`) are set by the hosting company, and sending "
        "them is a 400 `validation_failed`.",
        request=AccountUpdateSerializer,
        responses={
            200: ACCOUNT_RESPONSE,
            409: error_doc(
                409,
                "second_factor_missing",
                "The owner requiring a second factor has none of their own.",
                "Set up a second factor of your own (Profile → Security) before requiring one "
                "of every member.",
            ),
        },
        examples=[
            OpenApiExample("Rename", value={"name": "Creeper Hosting"}, request_only=True),
            OpenApiExample(
                "Require a second factor", value={"require_second_factor": True}, request_only=True
            ),
            *ACCOUNT_EXAMPLES,
        ],
        tags=["Account"],
    ),
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


# MemberViewSet
MEMBER_DOCS = dict(
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


# InvitationViewSet
INVITATION_DOCS = dict(
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


NEW_KEY_RESPONSE = OpenApiResponse(
    NewApiKeySerializer, description="The key and its token, shown this once."
)


# ApiKeyViewSet
API_KEY_DOCS = dict(
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


PROFILE_ACCESS = (
    " Your own profile: the calling key's user's (never another member's), with the "
    "`profile:read` / `profile:write` scopes, which every role may grant."
)


PROFILE_DOCS = dict(
    retrieve=extend_schema(
        summary="Get your profile",
        description="The calling key's user: e-mail, name, the SFTP login (given from the "
        "e-mail the first time it is asked for) and whether an SFTP password is set (never "
        "the password)." + PROFILE_ACCESS,
        responses=PROFILE_RESPONSE,
        examples=PROFILE_EXAMPLES,
        tags=["Profile"],
    ),
    partial_update=extend_schema(
        summary="Change your SFTP login",
        description="Only `sftp_login` can be changed here: 3 to 32 characters of lowercase "
        "letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit, "
        "unique (400 `validation_failed`, field codes `invalid` and `unique`). The old login "
        "stops signing in at once; the SSH user name for a server is "
        "`<sftp_login>.<first 8 characters of its id after srv_>`." + PROFILE_ACCESS,
        request=ProfileUpdateSerializer,
        responses=PROFILE_RESPONSE,
        examples=[
            OpenApiExample("A new login", value={"sftp_login": "sam.rivera"}, request_only=True),
            *PROFILE_EXAMPLES,
        ],
        tags=["Profile"],
    ),
)


SFTP_PASSWORD_DOCS = dict(
    update=extend_schema(
        summary="Set your SFTP password",
        description="Sets or replaces the password you sign in to SFTP with (not your "
        "account's password). It must pass the account password's rules: 400 "
        "`validation_failed` with field codes `password_too_short`, `password_too_common`, "
        "`password_entirely_numeric` or `password_too_similar`. It is kept hashed and never "
        "shown; a session signed in with the old one is closed within a minute." + PROFILE_ACCESS,
        request=SftpPasswordSerializer,
        responses=PROFILE_RESPONSE,
        examples=[
            OpenApiExample(
                "A long random password",
                value={"password": "correct-horse-battery-staple"},
                request_only=True,
            ),
            *PROFILE_EXAMPLES,
        ],
        tags=["Profile"],
    ),
    destroy=extend_schema(
        summary="Remove your SFTP password",
        description="From now on only your SSH keys sign in to SFTP. Removing no password "
        "changes nothing." + PROFILE_ACCESS,
        responses={200: PROFILE_RESPONSE},
        examples=_profile_without_password(PROFILE_EXAMPLES),
        tags=["Profile"],
    ),
)


SSH_KEY_DOCS = dict(
    list=extend_schema(
        summary="List your SSH keys",
        description="The keys you sign in to SFTP with, newest first." + PROFILE_ACCESS,
        examples=SSH_KEY_LIST_EXAMPLES,
        tags=["Profile"],
    ),
    create=extend_schema(
        summary="Add an SSH key",
        description="Paste one OpenSSH public key line (a `.pub` file): ed25519, ECDSA "
        "(P-256, P-384, P-521) or RSA of at least 2,048 bits. 400 `validation_failed` on "
        "`public_key` with field codes `invalid` (not a public key), `private_key` (a private "
        "key was pasted), `unsupported_type`, `weak_key` (RSA under 2,048 bits) or `duplicate` "
        "(you have added this key already); 422 `quota_exceeded` past 50 keys." + PROFILE_ACCESS,
        request=SshKeyCreateSerializer,
        responses={
            201: SSH_KEY_RESPONSE,
            422: error_doc(
                422,
                "quota_exceeded",
                "`quota_exceeded` (details.limit): you hold the maximum of SSH keys.",
                "You already have 50 SSH keys, the limit; delete one first.",
                {"limit": 50},
            ),
        },
        examples=[
            OpenApiExample(
                "An ed25519 key",
                value={
                    "name": "sam@laptop",
                    "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBykAYRV6dxf6qL5BFqi1eC"
                    "hqsFPn0R4lT4eVSuwHsRm sam@laptop",
                },
                request_only=True,
            ),
            *NEW_SSH_KEY_EXAMPLES,
        ],
        tags=["Profile"],
    ),
    retrieve=extend_schema(
        summary="Get an SSH key",
        description="One of your keys; another user's key id is 404 `not_found`." + PROFILE_ACCESS,
        responses=SSH_KEY_RESPONSE,
        examples=SSH_KEY_EXAMPLES,
        tags=["Profile"],
    ),
    destroy=extend_schema(
        summary="Delete an SSH key",
        description="Deletes the key at once: the next SFTP sign-in with it is refused, and a "
        "session signed in with it is closed within a minute (the node asks again)."
        + PROFILE_ACCESS,
        responses={200: DeletedSerializer},
        tags=["Profile"],
    ),
)


# CustomerViewSet
CUSTOMER_DOCS = dict(
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
        "default), `max_api_keys` and the unbilled allowance: what the customer may run "
        "without a plan (servers and bots together, and their resources together). New "
        "customers start with the service's `NEW_ACCOUNT_UNBILLED_*` settings (none by "
        "default): beyond the allowance, servers and bots are ordered as plans.",
        request=CustomerUpdateSerializer,
        responses=CUSTOMER_RESPONSE,
        examples=[
            OpenApiExample(
                "Raise the limits",
                value={"rate_limit_per_minute": 1200, "max_api_keys": 50},
                request_only=True,
            ),
            OpenApiExample(
                "Billed elsewhere: two servers without a plan",
                value={"unbilled_allowance": UNBILLED_EXAMPLE},
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


# CustomerMemberViewSet
CUSTOMER_MEMBER_DOCS = dict(
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

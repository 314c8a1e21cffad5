"""API representations of accounts, members, invitations and keys.

These are also what the event log stores as ``data.object`` (CONTRACT §9), so an event shows a
resource exactly as ``GET`` on it would.
"""

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from accounts.models import Account, ApiKey, Invitation, Membership, SshKey, User
from accounts.representations import (
    account_representation,
    api_key_representation,
    invitation_representation,
    member_representation,
    profile_representation,
    ssh_key_representation,
)
from accounts.roles import ALL_SCOPES, Role
from accounts.services import MAX_ROTATION_GRACE
from accounts.services.sftp import (
    LOGIN_MAX,
    LOGIN_RULES,
    MAX_PUBLIC_KEY_LENGTH,
    MAX_SFTP_PASSWORD_LENGTH,
)
from hosting.api.serializers import RepresentedBy, StrictInputSerializer

# The column bound of PositiveIntegerField on every supported database.
POSITIVE_INTEGER_MAX = 2_147_483_647
MAX_ROTATION_GRACE_SECONDS = int(MAX_ROTATION_GRACE.total_seconds())


def _allowance_field(help_text: str, **kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=0, max_value=POSITIVE_INTEGER_MAX, help_text=help_text, **kwargs
    )


_ALLOWANCE_HELP = {
    "instances": "Servers and bots together that may run without a plan.",
    "memory_mb": "Memory of all plan-less servers and bots together, in MB.",
    "cpu_percent": "CPU of all plan-less servers and bots together, in % of one core.",
    "disk_mb": "Disk of all plan-less servers and bots together, in MB.",
}


class UnbilledAllowanceSerializer(serializers.Serializer):
    """What an account may run without a plan; zeros: every server and bot comes with one."""

    instances = _allowance_field(_ALLOWANCE_HELP["instances"], source="unbilled_instances")
    memory_mb = _allowance_field(_ALLOWANCE_HELP["memory_mb"], source="unbilled_memory_mb")
    cpu_percent = _allowance_field(_ALLOWANCE_HELP["cpu_percent"], source="unbilled_cpu_percent")
    disk_mb = _allowance_field(_ALLOWANCE_HELP["disk_mb"], source="unbilled_disk_mb")


class UnbilledAllowanceChangeSerializer(StrictInputSerializer):
    """The allowance's keys to change; those not given stay."""

    instances = _allowance_field(_ALLOWANCE_HELP["instances"], required=False)
    memory_mb = _allowance_field(_ALLOWANCE_HELP["memory_mb"], required=False)
    cpu_percent = _allowance_field(_ALLOWANCE_HELP["cpu_percent"], required=False)
    disk_mb = _allowance_field(_ALLOWANCE_HELP["disk_mb"], required=False)


class AccountSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(account_representation)

    unbilled_allowance = UnbilledAllowanceSerializer(
        source="*",
        read_only=True,
        help_text="What the account may run without a plan (staff set it): servers and bots "
        "beyond it are ordered (`POST /v1/subscriptions`); `POST /v1/servers` answers 422 "
        "`plan_required`.",
    )

    class Meta:
        model = Account
        fields = [
            "id",
            "name",
            "status",
            "suspended_at",
            "suspended_reason",
            "rate_limit_per_minute",
            "max_api_keys",
            "require_second_factor",
            "unbilled_allowance",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class MemberSerializer(RepresentedBy, serializers.ModelSerializer):
    """A membership, identified by its user's id."""

    represent = staticmethod(member_representation)

    id = serializers.CharField(source="user_id", read_only=True)
    email = serializers.EmailField(source="user.email", read_only=True)
    name = serializers.CharField(source="user.name", read_only=True)
    joined_at = serializers.DateTimeField(source="created_at", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "email", "name", "role", "joined_at"]
        read_only_fields = fields


class InvitationSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(invitation_representation)

    invited_by = serializers.CharField(source="invited_by_id", read_only=True, allow_null=True)

    class Meta:
        model = Invitation
        fields = [
            "id",
            "email",
            "role",
            "status",
            "invited_by",
            "created_at",
            "expires_at",
            "accepted_at",
            "revoked_at",
        ]
        read_only_fields = fields


class ApiKeySerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(api_key_representation)

    prefix = serializers.CharField(read_only=True)
    user = serializers.CharField(source="user_id", read_only=True)
    created_by = serializers.CharField(source="created_by_id", read_only=True, allow_null=True)

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "prefix",
            "scopes",
            "status",
            "user",
            "created_by",
            "allowed_ips",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
            "last_used_ip",
        ]
        read_only_fields = fields


class SshKeySerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(ssh_key_representation)

    type = serializers.CharField(
        source="key_type",
        read_only=True,
        help_text="`ssh-ed25519`, `ecdsa-sha2-nistp256` (384, 521) or `ssh-rsa`.",
    )
    bits = serializers.IntegerField(read_only=True)
    fingerprint = serializers.CharField(
        read_only=True, help_text="As `ssh-keygen -l` shows it: `SHA256:` and base64."
    )
    public_key = serializers.CharField(
        read_only=True, help_text="`<type> <base64>`, without the comment."
    )
    user = serializers.CharField(source="user_id", read_only=True)

    class Meta:
        model = SshKey
        fields = [
            "id",
            "name",
            "type",
            "bits",
            "fingerprint",
            "public_key",
            "user",
            "created_at",
            "last_used_at",
        ]
        read_only_fields = fields


class SshKeyCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="A name for the key; absent or blank: the key's comment (`you@laptop`).",
    )
    public_key = serializers.CharField(
        max_length=MAX_PUBLIC_KEY_LENGTH,
        help_text="One OpenSSH public key line (a `.pub` file): ed25519, ECDSA, or RSA of at "
        "least 2,048 bits.",
    )


class ProfileSerializer(RepresentedBy, serializers.ModelSerializer):
    represent = staticmethod(profile_representation)

    sftp_login = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="Your SFTP sign-in name; the SSH user name for a server is "
        "`<sftp_login>.<first 8 characters of its id after srv_>`.",
    )
    sftp_password_set = serializers.BooleanField(
        source="has_sftp_password",
        read_only=True,
        help_text="Whether an SFTP password is set (it is never shown).",
    )
    sftp_password_set_at = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta:
        model = User
        fields = [
            "id",
            "email",
            "name",
            "sftp_login",
            "sftp_password_set",
            "sftp_password_set_at",
        ]
        read_only_fields = fields


class ProfileUpdateSerializer(StrictInputSerializer):
    sftp_login = serializers.CharField(
        max_length=LOGIN_MAX,
        required=False,
        trim_whitespace=False,
        help_text=f"{LOGIN_RULES} Unique.",
    )


class SftpPasswordSerializer(StrictInputSerializer):
    password = serializers.CharField(
        max_length=MAX_SFTP_PASSWORD_LENGTH,
        trim_whitespace=False,
        write_only=True,
        help_text="The account password's rules: at least 8 characters, not common, not all "
        "digits, not like your e-mail address.",
    )


class CustomerSerializer(AccountSerializer):
    """An account as the staff API shows it: with its owners' e-mails and its member count.

    Needs ``member_count`` annotated and ``owner_memberships`` prefetched (see the staff views),
    so a page of customers costs a fixed number of queries.
    """

    owners = serializers.SerializerMethodField()
    member_count = serializers.IntegerField(read_only=True)

    class Meta(AccountSerializer.Meta):
        fields = [*AccountSerializer.Meta.fields, "owners", "member_count"]
        read_only_fields = fields

    def get_owners(self, obj: Account) -> list[str]:
        return [membership.user.email for membership in obj.owner_memberships]

    def to_representation(self, instance: Account) -> dict:
        return {
            **account_representation(instance),
            "owners": self.get_owners(instance),
            "member_count": instance.member_count,
        }


class NewApiKeySerializer(serializers.Serializer):
    """A key just created or rotated, with its token: the only answer that ever shows it."""

    api_key = ApiKeySerializer(read_only=True)
    token = serializers.CharField(read_only=True, help_text="Shown once; store it now.")


# --- Request bodies ------------------------------------------------------------------------


class AccountUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=150, required=False)
    require_second_factor = serializers.BooleanField(
        required=False,
        help_text="Every member signs in to the dashboard with a second factor (owners only; "
        "the owner needs one first). API keys are not affected.",
    )


class InvitationCreateSerializer(StrictInputSerializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=Role.choices)


class MemberUpdateSerializer(StrictInputSerializer):
    role = serializers.ChoiceField(choices=Role.choices, required=False)


class ApiKeyCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=list(ALL_SCOPES)),
        allow_empty=False,
        max_length=len(ALL_SCOPES),
        help_text="Scopes the key holds; a write or power scope implies the read one.",
    )
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When the key stops working (ISO 8601, UTC if no zone); null or absent: never.",
    )
    allowed_ips = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        default=list,
        max_length=100,
        help_text="IP addresses or CIDR networks the key may be used from; empty: any.",
    )


class ApiKeyRotateSerializer(StrictInputSerializer):
    grace_period_seconds = serializers.IntegerField(
        min_value=0,
        max_value=MAX_ROTATION_GRACE_SECONDS,
        default=0,
        help_text="How long the old token keeps working, 0 (default) to 86400 seconds.",
    )


class CustomerCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=150)
    owner_email = serializers.EmailField(
        max_length=254, help_text="The first owner; an existing user with this e-mail is reused."
    )
    owner_name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")


class CustomerUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=150, required=False)
    rate_limit_per_minute = serializers.IntegerField(
        min_value=1,
        max_value=POSITIVE_INTEGER_MAX,
        allow_null=True,
        required=False,
        help_text="Requests per minute for each of the account's keys; null: the default.",
    )
    max_api_keys = serializers.IntegerField(
        min_value=1, max_value=POSITIVE_INTEGER_MAX, required=False
    )
    unbilled_allowance = UnbilledAllowanceChangeSerializer(
        required=False,
        help_text="What the account may run without a plan; the keys given change, the rest stay.",
    )

    def validate(self, attrs):
        """The allowance's keys as the service's account settings (``unbilled_<key>``)."""
        allowance = attrs.pop("unbilled_allowance", None) or {}
        return attrs | {f"unbilled_{key}": value for key, value in allowance.items()}


class CustomerSuspendSerializer(StrictInputSerializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


# --- Documentation examples ----------------------------------------------------------------


def _examples(name: str, key: str | None, value: dict) -> list[OpenApiExample]:
    """A response example: one list item (``key`` None) or one resource under ``data.<key>``."""
    return [OpenApiExample(name, value=value if key is None else {key: value}, response_only=True)]


ACCOUNT_EXAMPLE = {
    "id": "acct_5Gm2Qw8ZrT1xLp4Nc7Vb9KdS",
    "name": "Creeper Hosting",
    "status": "active",
    "suspended_at": None,
    "suspended_reason": "",
    "rate_limit_per_minute": None,
    "max_api_keys": 25,
    "require_second_factor": False,
    "unbilled_allowance": {"instances": 0, "memory_mb": 0, "cpu_percent": 0, "disk_mb": 0},
    "created_at": "2026-11-21T15:04:05Z",
    "updated_at": "2026-11-21T16:20:00Z",
}
MEMBER_EXAMPLE = {
    "id": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
    "email": "sam@example.com",
    "name": "Sam Rivera",
    "role": "developer",
    "joined_at": "2026-11-22T09:30:00Z",
}
INVITATION_EXAMPLE = {
    "id": "ivt_7Hc2Lm9QxT4nW8pR1sK3vZbY",
    "email": "sam@example.com",
    "role": "developer",
    "status": "pending",
    "invited_by": "usr_9Wd4Tb6Nq2Hx8Lc1Zr5Mv3Kp",
    "created_at": "2026-11-21T15:04:05Z",
    "expires_at": "2026-11-28T15:04:05Z",
    "accepted_at": None,
    "revoked_at": None,
}
API_KEY_EXAMPLE = {
    "id": "key_2Pz8Lk4Tq1Wn7Xc5Rb9Mv3Hd",
    "name": "CI deploy",
    "prefix": "hms_a8Kd02LmQx7Z",
    "scopes": ["servers:power", "servers:read"],
    "status": "active",
    "user": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
    "created_by": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
    "allowed_ips": ["203.0.113.0/24"],
    "created_at": "2026-11-21T15:04:05Z",
    "expires_at": "2027-02-19T15:04:05Z",
    "revoked_at": None,
    "last_used_at": "2026-11-21T16:20:00Z",
    "last_used_ip": "203.0.113.7",
}
SSH_KEY_EXAMPLE = {
    "id": "sshk_6Vb3Nq8Tz1Lm4Xc7Rd2Kp9Hw",
    "name": "sam@laptop",
    "type": "ssh-ed25519",
    "bits": 256,
    "fingerprint": "SHA256:z1YsM+hW1NdpHAZzWcy+Vw2NmmxsjD2FPiJcb5LDhiw",
    "public_key": (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBykAYRV6dxf6qL5BFqi1eChqsFPn0R4lT4eVSuwHsRm"
    ),
    "user": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
    "created_at": "2026-11-21T15:04:05Z",
    "last_used_at": "2026-11-21T16:20:00Z",
}
PROFILE_EXAMPLE = {
    "id": "usr_3kTq8ZyW1mLp5Rn2Xv7Bc9Df",
    "email": "sam@example.com",
    "name": "Sam Rivera",
    "sftp_login": "sam",
    "sftp_password_set": True,
    "sftp_password_set_at": "2026-11-21T15:04:05Z",
}
CUSTOMER_EXAMPLE = {
    **ACCOUNT_EXAMPLE,
    "owners": ["alex@example.com"],
    "member_count": 3,
}

ACCOUNT_EXAMPLES = _examples("An active account", "account", ACCOUNT_EXAMPLE)
MEMBER_LIST_EXAMPLES = _examples("A developer", None, MEMBER_EXAMPLE)
MEMBER_EXAMPLES = _examples("A developer", "member", MEMBER_EXAMPLE)
INVITATION_LIST_EXAMPLES = _examples("A pending invitation", None, INVITATION_EXAMPLE)
INVITATION_EXAMPLES = _examples("A pending invitation", "invitation", INVITATION_EXAMPLE)
API_KEY_LIST_EXAMPLES = _examples("A CI deploy key", None, API_KEY_EXAMPLE)
API_KEY_EXAMPLES = _examples("A CI deploy key", "api_key", API_KEY_EXAMPLE)
REVOKED_API_KEY_EXAMPLES = _examples(
    "A revoked key",
    "api_key",
    {**API_KEY_EXAMPLE, "status": "revoked", "revoked_at": "2026-11-22T08:00:00Z"},
)
NEW_API_KEY_EXAMPLES = _examples(
    "A new key and its token",
    None,
    {
        "api_key": {**API_KEY_EXAMPLE, "last_used_at": None, "last_used_ip": None},
        "token": "hms_a8Kd02LmQx7Z" + "Xq3Vt9Lm2Pw7Rb4Nc8Hs1Jd6Kf5Gz0Ya" + "1bC3dE",
    },
)
CUSTOMER_LIST_EXAMPLES = _examples("An active customer", None, CUSTOMER_EXAMPLE)
CUSTOMER_EXAMPLES = _examples("An active customer", "customer", CUSTOMER_EXAMPLE)
SSH_KEY_LIST_EXAMPLES = _examples("An ed25519 key", None, SSH_KEY_EXAMPLE)
SSH_KEY_EXAMPLES = _examples("An ed25519 key", "ssh_key", SSH_KEY_EXAMPLE)
NEW_SSH_KEY_EXAMPLES = _examples(
    "The key added", "ssh_key", {**SSH_KEY_EXAMPLE, "last_used_at": None}
)
PROFILE_EXAMPLES = _examples("Your profile", "profile", PROFILE_EXAMPLE)

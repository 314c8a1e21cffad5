"""API representations of accounts, members, invitations and keys.

These are also what the event log stores as ``data.object`` (CONTRACT §9), so an event shows a
resource exactly as ``GET`` on it would.
"""

from rest_framework import serializers

from accounts.models import Account, ApiKey, Invitation, Membership


class AccountSerializer(serializers.ModelSerializer):
    class Meta:
        model = Account
        fields = [
            "id", "name", "status", "suspended_at", "suspended_reason",
            "rate_limit_per_minute", "max_api_keys", "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


class MemberSerializer(serializers.ModelSerializer):
    """A membership, identified by its user's id."""

    id = serializers.CharField(source="user_id", read_only=True)
    email = serializers.EmailField(source="user.email", read_only=True)
    name = serializers.CharField(source="user.name", read_only=True)
    joined_at = serializers.DateTimeField(source="created_at", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "email", "name", "role", "joined_at"]
        read_only_fields = fields


class InvitationSerializer(serializers.ModelSerializer):
    invited_by = serializers.CharField(source="invited_by_id", read_only=True, allow_null=True)

    class Meta:
        model = Invitation
        fields = [
            "id", "email", "role", "status", "invited_by", "created_at", "expires_at",
            "accepted_at", "revoked_at",
        ]  # fmt: skip
        read_only_fields = fields


class ApiKeySerializer(serializers.ModelSerializer):
    prefix = serializers.SerializerMethodField()
    user = serializers.CharField(source="user_id", read_only=True)
    created_by = serializers.CharField(source="created_by_id", read_only=True, allow_null=True)

    class Meta:
        model = ApiKey
        fields = [
            "id", "name", "prefix", "scopes", "status", "user", "created_by", "allowed_ips",
            "created_at", "expires_at", "revoked_at", "last_used_at", "last_used_ip",
        ]  # fmt: skip
        read_only_fields = fields

    def get_prefix(self, obj: ApiKey) -> str:
        return f"hms_{obj.key_id}"

"""The public representations of accounts, members, invitations, API keys, SSH keys and the
profile.

What the API shows and what events carry (``data.object``), defined once (hosting/representations).
"""

from typing import Any

from accounts.models import Account, ApiKey, Invitation, Membership, SshKey, User
from hosting.representations import json_copy, timestamp


def account_representation(account: Account) -> dict[str, Any]:
    """An account with its limits and, while suspended, when and why."""
    return {
        "id": account.id,
        "name": account.name,
        "status": account.status,
        "suspended_at": timestamp(account.suspended_at),
        "suspended_reason": account.suspended_reason,
        "rate_limit_per_minute": account.rate_limit_per_minute,
        "max_api_keys": account.max_api_keys,
        "require_second_factor": account.require_second_factor,
        "unbilled_allowance": unbilled_allowance_representation(account),
        "created_at": timestamp(account.created_at),
        "updated_at": timestamp(account.updated_at),
    }


def unbilled_allowance_representation(account: Account) -> dict[str, int]:
    """What the account may run without a plan: servers and bots together, and their resources
    together (zeros: every server and bot comes with a plan)."""
    return {
        "instances": account.unbilled_instances,
        "memory_mb": account.unbilled_memory_mb,
        "cpu_percent": account.unbilled_cpu_percent,
        "disk_mb": account.unbilled_disk_mb,
    }


def member_representation(membership: Membership) -> dict[str, Any]:
    """A membership, identified by its user's id."""
    return {
        "id": membership.user_id,
        "email": membership.user.email,
        "name": membership.user.name,
        "role": membership.role,
        "joined_at": timestamp(membership.created_at),
    }


def invitation_representation(invitation: Invitation) -> dict[str, Any]:
    """An invitation without its token, which only the e-mailed link carries."""
    return {
        "id": invitation.id,
        "email": invitation.email,
        "role": invitation.role,
        "status": invitation.status,
        "invited_by": invitation.invited_by_id,
        "created_at": timestamp(invitation.created_at),
        "expires_at": timestamp(invitation.expires_at),
        "accepted_at": timestamp(invitation.accepted_at),
        "revoked_at": timestamp(invitation.revoked_at),
    }


def api_key_representation(api_key: ApiKey) -> dict[str, Any]:
    """A key without its secret: the prefix identifies it, the token is never shown again."""
    return {
        "id": api_key.id,
        "name": api_key.name,
        "prefix": api_key.prefix,
        "scopes": json_copy(api_key.scopes),
        "status": api_key.status,
        "user": api_key.user_id,
        "created_by": api_key.created_by_id,
        "allowed_ips": json_copy(api_key.allowed_ips),
        "created_at": timestamp(api_key.created_at),
        "expires_at": timestamp(api_key.expires_at),
        "revoked_at": timestamp(api_key.revoked_at),
        "last_used_at": timestamp(api_key.last_used_at),
        "last_used_ip": api_key.last_used_ip,
    }


def ssh_key_representation(ssh_key: SshKey) -> dict[str, Any]:
    """An SSH public key: its fingerprint (as ``ssh-keygen -l`` shows it) and the key itself."""
    return {
        "id": ssh_key.id,
        "name": ssh_key.name,
        "type": ssh_key.key_type,
        "bits": ssh_key.bits,
        "fingerprint": ssh_key.fingerprint,
        "public_key": ssh_key.public_key,
        "user": ssh_key.user_id,
        "created_at": timestamp(ssh_key.created_at),
        "last_used_at": timestamp(ssh_key.last_used_at),
    }


def profile_representation(user: User) -> dict[str, Any]:
    """The signed-in user's own profile: never the SFTP password, only whether one is set."""
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "sftp_login": user.sftp_login,
        "sftp_password_set": user.has_sftp_password,
        "sftp_password_set_at": timestamp(user.sftp_password_set_at),
    }

"""Write-side operations on users, accounts, members, invitations and API keys.

Every function is keyword-only and atomic, checks the business rules itself, and records its
event in the same transaction; the API, the dashboard, admin actions and management commands call
these, so each rule exists once. The modules: ``accounts``, ``team`` (invitations and members),
``api_keys``, ``authentication`` (Bearer keys), ``users``, ``sftp`` (a user's SSH keys, SFTP
password and login). Other apps and the API use the names
below.
"""

from accounts.services.accounts import (
    ACCOUNT_LIMITS,
    ACCOUNT_NOTE_LIMIT,
    UNBILLED_ALLOWANCE,
    account_changes_clean,
    account_create,
    account_lock,
    account_locked,
    account_note_add,
    account_require_second_factor,
    account_suspend,
    account_unsuspend,
    account_update,
)
from accounts.services.api_keys import (
    MAX_ROTATION_GRACE,
    api_key_create,
    api_key_revoke,
    api_key_rotate,
    api_key_scopes_grantable,
    api_key_scopes_offered,
    api_key_scopes_register,
    api_keys_expiring_notify,
    normalize_allowed_ips,
)
from accounts.services.authentication import (
    ApiKeyPrincipal,
    LookupAnswer,
    SentAuthentication,
    api_key_authenticate,
    api_key_authentication_sent,
    api_key_check_access,
    api_key_record_use,
    parse_bearer,
)
from accounts.services.sftp import (
    sftp_credential_check,
    sftp_login_change,
    sftp_login_of,
    sftp_password_remove,
    sftp_password_set,
    sftp_user_for_login,
    ssh_key_create,
    ssh_key_delete,
)
from accounts.services.sso import sso_failure_record, sso_link_record
from accounts.services.team import (
    invitation_accept,
    invitation_accept_as_new_user,
    invitation_create,
    invitation_details_register,
    invitation_for_token,
    invitation_revoke,
    member_change_role,
    member_remove,
)
from accounts.services.users import (
    factor_event_record,
    lockout_notify,
    login_failure_record,
    sign_in_record,
    user_update_profile,
)

__all__ = [
    "ACCOUNT_LIMITS",
    "ACCOUNT_NOTE_LIMIT",
    "MAX_ROTATION_GRACE",
    "UNBILLED_ALLOWANCE",
    "ApiKeyPrincipal",
    "LookupAnswer",
    "SentAuthentication",
    "account_changes_clean",
    "account_create",
    "account_lock",
    "account_locked",
    "account_note_add",
    "account_require_second_factor",
    "account_suspend",
    "account_unsuspend",
    "account_update",
    "api_key_authenticate",
    "api_key_authentication_sent",
    "api_key_check_access",
    "api_key_create",
    "api_key_record_use",
    "api_key_revoke",
    "api_key_rotate",
    "api_key_scopes_grantable",
    "api_key_scopes_offered",
    "api_key_scopes_register",
    "api_keys_expiring_notify",
    "factor_event_record",
    "invitation_accept",
    "invitation_accept_as_new_user",
    "invitation_create",
    "invitation_details_register",
    "invitation_for_token",
    "invitation_revoke",
    "lockout_notify",
    "login_failure_record",
    "member_change_role",
    "member_remove",
    "normalize_allowed_ips",
    "parse_bearer",
    "sftp_credential_check",
    "sftp_login_change",
    "sftp_login_of",
    "sftp_password_remove",
    "sftp_password_set",
    "sftp_user_for_login",
    "sign_in_record",
    "ssh_key_create",
    "ssh_key_delete",
    "sso_failure_record",
    "sso_link_record",
    "user_update_profile",
]

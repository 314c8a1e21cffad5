"""Dashboard pages for signing up and in, the current account's keys and team, and the profile
(the account's activity is the event log's page: ``events.views``).

Views parse input, call one service and render; the rules live in accounts/services/. Every
object is looked up through ``request.account`` (set by CurrentAccountMiddleware), so another
account's keys, members and invitations answer 404. The modules: ``auth`` (signing up and in,
the current account), ``api_keys``, ``team``, ``profile``, ``sftp`` (SSH keys and SFTP).
"""

from accounts.views.api_keys import (
    ApiKeyCreatedView,
    ApiKeyCreateView,
    ApiKeyListView,
    ApiKeyRevokeView,
)
from accounts.views.auth import (
    AccountNewView,
    DashboardLoginView,
    PasswordResetView,
    SignupView,
    SwitchAccountView,
)
from accounts.views.profile import ProfileView
from accounts.views.sftp import SftpSettingsView, SshKeyDeleteView
from accounts.views.team import (
    InvitationAcceptView,
    TeamInvitationRevokeView,
    TeamInviteView,
    TeamMemberRemoveView,
    TeamMemberRoleView,
    TeamView,
)

__all__ = [
    "AccountNewView",
    "ApiKeyCreateView",
    "ApiKeyCreatedView",
    "ApiKeyListView",
    "ApiKeyRevokeView",
    "DashboardLoginView",
    "InvitationAcceptView",
    "PasswordResetView",
    "ProfileView",
    "SftpSettingsView",
    "SignupView",
    "SshKeyDeleteView",
    "SwitchAccountView",
    "TeamInvitationRevokeView",
    "TeamInviteView",
    "TeamMemberRemoveView",
    "TeamMemberRoleView",
    "TeamView",
]

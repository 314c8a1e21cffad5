"""Dashboard pages for signing in and the account settings."""

from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views

urlpatterns = [
    path("signup", views.SignupView.as_view(), name="signup"),
    path("login", views.DashboardLoginView.as_view(), name="login"),
    path("logout", auth_views.LogoutView.as_view(), name="logout"),
    path("password/change", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password/change/done",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("password/reset", views.PasswordResetView.as_view(), name="password_reset"),
    path(
        "password/reset/done",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password/reset/complete",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path(
        "password/reset/<uidb64>/<token>",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path("switch", views.SwitchAccountView.as_view(), name="switch_account"),
    path("accounts/new", views.AccountNewView.as_view(), name="account_new"),
    path("settings/api-keys", views.ApiKeyListView.as_view(), name="api_keys"),
    path("settings/api-keys/new", views.ApiKeyCreateView.as_view(), name="api_key_create"),
    path("settings/api-keys/created", views.ApiKeyCreatedView.as_view(), name="api_key_created"),
    path(
        "settings/api-keys/<id:key_id>/revoke",
        views.ApiKeyRevokeView.as_view(),
        name="api_key_revoke",
    ),
    path("settings/team", views.TeamView.as_view(), name="team"),
    path("settings/team/invite", views.TeamInviteView.as_view(), name="team_invite"),
    path(
        "settings/team/<id:user_id>/role",
        views.TeamMemberRoleView.as_view(),
        name="team_member_role",
    ),
    path(
        "settings/team/<id:user_id>/remove",
        views.TeamMemberRemoveView.as_view(),
        name="team_member_remove",
    ),
    path(
        "settings/team/invitations/<id:invitation_id>/revoke",
        views.TeamInvitationRevokeView.as_view(),
        name="team_invitation_revoke",
    ),
    path("invitations/<str:token>", views.InvitationAcceptView.as_view(), name="invitation_accept"),
    path("settings/profile", views.ProfileView.as_view(), name="profile"),
    path("settings/sftp", views.SftpSettingsView.as_view(), name="sftp_settings"),
    path(
        "settings/sftp/keys/<id:key_id>/delete",
        views.SshKeyDeleteView.as_view(),
        name="ssh_key_delete",
    ),
]

"""Dashboard pages for signing in and the account settings."""

from allauth.mfa.totp import views as totp_views
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views
from accounts.views.security import RequireSecondFactorView, last_factor_guard

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
    path(
        "settings/team/second-factor",
        RequireSecondFactorView.as_view(),
        name="team_require_second_factor",
    ),
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

# Removing one's last second factor (allauth's views, at their own addresses, guarded: see
# accounts/views/security.py). Matched before hosting/urls.py includes allauth's.
urlpatterns += [
    path(
        "auth/2fa/totp/deactivate/",
        last_factor_guard("totp")(totp_views.deactivate_totp),
        name="mfa_deactivate_totp",
    ),
]
if "webauthn" in settings.MFA_SUPPORTED_TYPES:
    from allauth.mfa.webauthn import views as webauthn_views

    urlpatterns.append(
        path(
            "auth/2fa/webauthn/keys/<int:pk>/remove/",
            last_factor_guard("webauthn")(webauthn_views.remove_webauthn),
            name="mfa_remove_webauthn",
        )
    )

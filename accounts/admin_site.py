"""Django admin's site: Django's own, with the sign-in limits of every sign-in form."""

from django.contrib import admin

from accounts.forms import AdminLoginForm
from accounts.sign_in import sign_in_limited


class HostingAdminSite(admin.AdminSite):
    """``/admin/login/`` counts attempts in the dashboard's buckets and records failures."""

    login_form = AdminLoginForm

    def login(self, request, extra_context=None):
        return sign_in_limited(super().login)(request, extra_context)

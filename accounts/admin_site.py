"""Django admin's site: Django's own, branded, with the sign-in limits of every sign-in form."""

from django.contrib import admin

from accounts.forms import AdminLoginForm
from accounts.sign_in import sign_in_limited


class HostingAdminSite(admin.AdminSite):
    """``/admin/login/`` counts attempts in the dashboard's buckets and records failures."""

    login_form = AdminLoginForm
    site_header = "Hosting Management · Staff"
    site_title = "Hosting Management staff"
    index_title = "Staff administration"
    site_url = "/"

    def login(self, request, extra_context=None):
        return sign_in_limited(super().login)(request, extra_context)

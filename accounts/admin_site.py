"""Django admin's site: Django's own, branded, with the sign-in limits of every sign-in form."""

from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LoginView
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache

from accounts.forms import AdminLoginForm
from accounts.sign_in import SecondFactorLoginMixin, sign_in_limited


class HostingAdminSite(admin.AdminSite):
    """``/admin/login/`` counts attempts in the dashboard's buckets and records failures."""

    login_form = AdminLoginForm
    site_header = "Hosting Management · Staff"
    site_title = "Hosting Management staff"
    index_title = "Staff administration"
    site_url = "/"

    def login(self, request, extra_context=None):
        return sign_in_limited(self._login)(request, extra_context)

    @method_decorator(never_cache)
    @login_not_required
    def _login(self, request, extra_context=None):
        """Django's ``AdminSite.login``, whose password goes on to the second factor (the
        dashboard's ``SecondFactorLoginMixin``) rather than signing in by itself."""
        redirect_url = LoginView().get_redirect_url(request) or reverse(
            "admin:index", current_app=self.name
        )
        if request.method == "GET" and self.has_permission(request):
            return HttpResponseRedirect(redirect_url)
        context = {
            **self.each_context(request),
            "title": "Log in",
            "subtitle": None,
            "app_path": request.get_full_path(),
            "username": request.user.get_username(),
            REDIRECT_FIELD_NAME: redirect_url,
        }
        context.update(extra_context or {})
        request.current_app = self.name
        return AdminLoginView.as_view(
            extra_context=context,
            authentication_form=self.login_form,
            template_name=self.login_template or "admin/login.html",
        )(request)


class AdminLoginView(SecondFactorLoginMixin, LoginView):
    pass

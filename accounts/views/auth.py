"""Signing up, in and out, resetting a password, and choosing or creating the current account."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import FormView

from accounts.actors import Actor
from accounts.forms import (
    AccountCreateForm,
    LoginForm,
    PasswordResetForm,
    SignupForm,
    SwitchAccountForm,
)
from accounts.middleware import SESSION_ACCOUNT_KEY
from accounts.selectors import (
    accounts_of_user,
)
from accounts.services import (
    account_create,
)
from accounts.sign_in import (
    SecondFactorLoginMixin,
    count_attempt,
    sign_in_limited,
    sign_in_with_new_password,
)
from hosting.dashboard.refusals import ServiceRefusalMixin
from hosting.errors import (
    ApplicationError,
)
from hosting.http import client_ip
from hosting.text import full_stop


def too_many_attempts(view, form, retry_after: int) -> HttpResponse:
    form.add_error(
        None, _("Too many attempts; try again in %(seconds)s seconds.") % {"seconds": retry_after}
    )
    response = view.form_invalid(form)
    response.status_code = 429
    response["Retry-After"] = str(retry_after)
    return response


class SignupView(ServiceRefusalMixin, FormView):
    template_name = "registration/signup.html"
    form_class = SignupForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            return redirect("home")
        return super().dispatch(request, *args, **kwargs)

    def form_valid(self, form):
        if retry_after := count_attempt(f"signup-ip:{client_ip(self.request)}"):
            return too_many_attempts(self, form, retry_after)
        data = form.cleaned_data
        try:
            account = account_create(
                name=data["account_name"],
                owner_email=data["email"],
                owner_password=data["password1"],
                owner_name=data["name"],
                actor=Actor.from_request(self.request),
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        sign_in_with_new_password(self.request, account.members.get())
        self.request.session[SESSION_ACCOUNT_KEY] = account.id
        messages.success(
            self.request, _("Welcome! Your account %(name)s is ready.") % {"name": account.name}
        )
        return redirect("home")


@method_decorator(sign_in_limited, name="dispatch")
class DashboardLoginView(SecondFactorLoginMixin, auth_views.LoginView):
    """Django's sign-in, counted per client address and per e-mail to slow down guessing; a
    checked password goes on to the second factor when the person has one."""

    form_class = LoginForm
    redirect_authenticated_user = True


class PasswordResetView(auth_views.PasswordResetView):
    email_template_name = "registration/password_reset_email.txt"
    form_class = PasswordResetForm

    def form_valid(self, form):
        email = form.cleaned_data["email"].strip().lower()[:254]
        if retry_after := count_attempt(
            f"reset-ip:{client_ip(self.request)}", f"reset-email:{email}"
        ):
            return too_many_attempts(self, form, retry_after)
        return super().form_valid(form)

    @property
    def extra_email_context(self) -> dict:
        # Links point at the public address, never at whatever Host header the request carried.
        return {"site_url": settings.SITE_URL}


class SwitchAccountView(LoginRequiredMixin, View):
    http_method_names = ["post"]

    def post(self, request):
        form = SwitchAccountForm(request.POST)
        if not form.is_valid():
            raise Http404("No such account.")
        account = get_object_or_404(
            accounts_of_user(user=request.user), id=form.cleaned_data["account_id"]
        )
        request.session[SESSION_ACCOUNT_KEY] = account.id
        messages.success(request, _("Switched to %(name)s") % {"name": full_stop(account.name)})
        return redirect("home")


class AccountNewView(ServiceRefusalMixin, LoginRequiredMixin, FormView):
    """Create another account (or a first one) owned by the signed-in user."""

    template_name = "dashboard/no_account.html"
    form_class = AccountCreateForm

    def form_valid(self, form):
        try:
            account = account_create(
                name=form.cleaned_data["account_name"],
                owner_email=self.request.user.email,
                actor=Actor.from_request(self.request),
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        self.request.session[SESSION_ACCOUNT_KEY] = account.id
        messages.success(
            self.request, _("Created the account %(name)s") % {"name": full_stop(account.name)}
        )
        return redirect("home")

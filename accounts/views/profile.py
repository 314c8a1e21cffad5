"""The signed-in person's profile."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.generic import UpdateView

from accounts.actors import Actor
from accounts.forms import (
    ProfileForm,
)
from accounts.models import User
from accounts.second_factor import reauthenticate_redirect, recently_authenticated
from accounts.services import (
    user_update_profile,
)
from hosting.dashboard.refusals import ServiceRefusalMixin
from hosting.errors import (
    ApplicationError,
)


class ProfileView(ServiceRefusalMixin, LoginRequiredMixin, UpdateView):
    template_name = "accounts/profile.html"
    form_class = ProfileForm

    def get_object(self, queryset=None):
        # A copy: a rejected form must not change the user the page header shows.
        return User.objects.get(pk=self.request.user.pk)

    def get_context_data(self, **kwargs):
        from allauth.mfa.utils import is_mfa_enabled

        return super().get_context_data(
            has_second_factor=is_mfa_enabled(self.request.user), **kwargs
        )

    def form_valid(self, form):
        email_changes = form.cleaned_data["email"].lower() != self.request.user.email.lower()
        if email_changes and not recently_authenticated(self.request):
            # A sensitive change: the password (or a factor) first; the form is kept and saved
            # after it.
            return reauthenticate_redirect(self.request)
        try:
            user_update_profile(
                user=self.request.user,
                name=form.cleaned_data["name"],
                email=form.cleaned_data["email"],
                language=form.cleaned_data["language"],
                actor=Actor.from_request(self.request),
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        language = form.cleaned_data["language"]
        # The new language from this answer on (the message below is written in it).
        translation.activate(language or translation.get_language_from_request(self.request))
        messages.success(self.request, _("Your profile has been saved."))
        response = redirect("profile")
        if language:  # signed out, the sign-in page keeps it
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                language,
                max_age=settings.LANGUAGE_COOKIE_AGE,
                samesite="Lax",
            )
        return response

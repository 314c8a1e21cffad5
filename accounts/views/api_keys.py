"""The API keys pages: list, create (the token shown once), revoke."""

from django.contrib import messages
from django.db.models.functions import Lower
from django.shortcuts import get_object_or_404, redirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.generic import FormView, ListView, TemplateView

from accounts.filters import ApiKeyListFilter
from accounts.forms import (
    ApiKeyCreateForm,
    scope_summary,
)
from accounts.mixins import AccountChangeMixin, AccountPageMixin
from accounts.roles import Right, role_can
from accounts.second_factor import RecentSignInRequiredMixin
from accounts.selectors import (
    api_keys_visible_to,
)
from accounts.services import (
    api_key_create,
    api_key_revoke,
    api_key_scopes_offered,
)
from hosting.dashboard.lists import ListControlsMixin
from hosting.dashboard.secrets_once import (
    SHOWN_FOR_SECONDS,
    SecretNoLongerShown,
    secret_hand_over,
    secret_take,
)
from hosting.errors import (
    ApplicationError,
)

NEW_TOKEN_SESSION_KEY = "new_api_key"  # noqa: S105 - a session key's name, not a secret
# How long a new key's token waits (encrypted) in the session for its page to be opened.


class ApiKeyListView(ListControlsMixin, AccountPageMixin, ListView):
    template_name = "accounts/api_keys/list.html"
    context_object_name = "api_keys"
    search_fields = ("name", "user__email")
    search_label = gettext_lazy("Name or member's e-mail")
    filterset_class = ApiKeyListFilter
    sort_fields = {
        "name": Lower("name"),
        "created_at": "created_at",
        "last_used_at": "last_used_at",
        "expires_at": "expires_at",
    }
    default_sort = "-created_at"

    def get_base_queryset(self):
        return api_keys_visible_to(account=self.account, user=self.request.user, role=self.role)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for api_key in context["api_keys"]:
            api_key.scope_summary = scope_summary(api_key.scopes)
        context["sees_all_keys"] = role_can(self.role, Right.MANAGE_ALL_KEYS)
        return context


class ApiKeyCreateView(AccountChangeMixin, RecentSignInRequiredMixin, FormView):
    """A new key: a sensitive action, so its page asks for a recent sign-in first."""

    template_name = "accounts/api_keys/create.html"
    form_class = ApiKeyCreateForm
    refused_url = "api_keys"

    def get_form_kwargs(self):
        grantable = api_key_scopes_offered(account=self.account, user=self.request.user)
        return super().get_form_kwargs() | {
            "grantable": grantable,
            "is_staff": self.request.user.is_staff,
        }

    def form_valid(self, form):
        data = form.cleaned_data
        try:
            api_key, token = api_key_create(
                account=self.account,
                user=self.request.user,
                name=data["name"],
                scopes=data["scopes"],
                expires_at=form.expires_at(),
                allowed_ips=data["allowed_ips"],
                actor=self.actor(),
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        secret_hand_over(self.request, NEW_TOKEN_SESSION_KEY, token, name=api_key.name)
        return redirect("api_key_created")


@method_decorator(never_cache, name="dispatch")
class ApiKeyCreatedView(AccountPageMixin, TemplateView):
    """Shows a new token exactly once: the session entry is gone after this page."""

    template_name = "accounts/api_keys/created.html"

    def get(self, request, *args, **kwargs):
        try:
            created = secret_take(request, NEW_TOKEN_SESSION_KEY)
        except SecretNoLongerShown as late:
            messages.error(
                request,
                _(
                    "The token of the key “%(name)s” is no longer shown: it is shown "
                    "only within %(minutes)s minutes of creating the key. "
                    "Revoke that key and create a new one."
                )
                % {"name": late.context["name"], "minutes": SHOWN_FOR_SECONDS // 60},
            )
            return redirect("api_keys")
        if created is None:
            return redirect("api_keys")
        return self.render_to_response(
            self.get_context_data(created={"token": created["secret"], "name": created["name"]})
        )


class ApiKeyRevokeView(AccountChangeMixin, TemplateView):
    template_name = "accounts/api_keys/revoke.html"
    refused_url = "api_keys"

    def get_api_key(self):
        keys = api_keys_visible_to(account=self.account, user=self.request.user, role=self.role)
        return get_object_or_404(keys, id=self.kwargs["key_id"])

    def get(self, request, *args, **kwargs):
        api_key = self.get_api_key()
        if api_key.status != "active":
            messages.info(
                request,
                _("The key “%(name)s” is already %(status)s.")
                % {"name": api_key.name, "status": api_key.status_label},
            )
            return redirect("api_keys")
        return self.render_to_response(self.get_context_data(api_key=api_key))

    def post(self, request, *args, **kwargs):
        api_key = api_key_revoke(api_key=self.get_api_key(), actor=self.actor())
        messages.success(
            request,
            _("The key “%(name)s” (%(prefix)s) has been revoked.")
            % {"name": api_key.name, "prefix": api_key.display_prefix},
        )
        return redirect("api_keys")

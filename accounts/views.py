"""Dashboard pages for signing up and in, the current account's keys and team, and the profile.

Views parse input, call one service and render; the rules live in accounts/services.py. Every
object is looked up through ``request.account`` (set by CurrentAccountMiddleware), so another
account's keys, members and invitations answer 404.
"""

from urllib.parse import urlencode

from cryptography.fernet import InvalidToken
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.generic import FormView, ListView, TemplateView, UpdateView

from accounts.forms import (
    AccountCreateForm,
    ActivityFilterForm,
    ApiKeyCreateForm,
    InvitationSignupForm,
    InviteForm,
    LoginForm,
    MemberRoleForm,
    ProfileForm,
    SignupForm,
    SwitchAccountForm,
    role_choices,
    scope_summary,
)
from accounts.middleware import SESSION_ACCOUNT_KEY
from accounts.models import User
from accounts.roles import Right, Role, grantable_scopes, role_can
from accounts.selectors import (
    accounts_of_user,
    api_keys_visible_to,
    invitations_of_account,
    members_of_account,
)
from accounts.services import (
    account_create,
    api_key_create,
    api_key_revoke,
    invitation_accept,
    invitation_accept_as_new_user,
    invitation_create,
    invitation_for_token,
    invitation_revoke,
    member_change_role,
    member_remove,
    user_update_profile,
)
from accounts.sign_in import count_attempt, sign_in_limited
from events.models import Event
from events.services import Actor
from hosting.errors import (
    Conflict,
    InsufficientScope,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    ValidationFailed,
)
from hosting.http import client_ip
from hosting.secrets_box import decrypt_secret, encrypt_secret
from hosting.text import full_stop

NEW_TOKEN_SESSION_KEY = "new_api_key"  # noqa: S105 - a session key's name, not a secret
# How long a new key's token waits (encrypted) in the session for its page to be opened.
NEW_TOKEN_MAX_AGE_SECONDS = 300


# --- Access to the current account ---------------------------------------------------------


class AccountPageMixin(LoginRequiredMixin):
    """A page of the current account, optionally only for roles holding ``required_right``.

    A user without any account gets the "create an account" page instead; a missing right is
    a 404, like an object of another account.
    """

    required_right: str | None = None

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if request.account is None:
            return render(request, "dashboard/no_account.html", {"form": AccountCreateForm()})
        if self.required_right and not role_can(request.membership.role, self.required_right):
            raise Http404("No such page.")
        self.account, self.role = request.account, request.membership.role
        if refusal := self.refuse(request):
            return refusal
        return super().dispatch(request, *args, **kwargs)

    def refuse(self, request) -> HttpResponse | None:
        return None

    def actor(self) -> Actor:
        return Actor.from_request(self.request)


class AccountChangeMixin(AccountPageMixin):
    """A page whose POSTs change the account's data: refused while the account is suspended."""

    refused_url = "home"

    def refuse(self, request) -> HttpResponse | None:
        if request.method == "POST" and self.account.is_suspended:
            messages.error(request, "This account is suspended, so its data cannot be changed.")
            return redirect(self.refused_url)
        return None


# --- Signing up, in and out ----------------------------------------------------------------


def too_many_attempts(view, form, retry_after: int) -> HttpResponse:
    form.add_error(None, f"Too many attempts; try again in {retry_after} seconds.")
    response = view.form_invalid(form)
    response.status_code = 429
    response["Retry-After"] = str(retry_after)
    return response


class SignupView(FormView):
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
        except ValidationFailed as error:
            form.add_service_error(error)
            return self.form_invalid(form)
        login(self.request, account.members.get())
        self.request.session[SESSION_ACCOUNT_KEY] = account.id
        messages.success(self.request, f"Welcome! Your account {account.name} is ready.")
        return redirect("home")


@method_decorator(sign_in_limited, name="dispatch")
class DashboardLoginView(auth_views.LoginView):
    """Django's sign-in, counted per client address and per e-mail to slow down guessing."""

    form_class = LoginForm
    redirect_authenticated_user = True


class PasswordResetView(auth_views.PasswordResetView):
    email_template_name = "registration/password_reset_email.txt"

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


# --- The current account -------------------------------------------------------------------


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
        messages.success(request, f"Switched to {full_stop(account.name)}")
        return redirect("home")


class AccountNewView(LoginRequiredMixin, FormView):
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
        except ValidationFailed as error:
            form.add_service_error(error)
            return self.form_invalid(form)
        self.request.session[SESSION_ACCOUNT_KEY] = account.id
        messages.success(self.request, f"Created the account {full_stop(account.name)}")
        return redirect("home")


# --- API keys ------------------------------------------------------------------------------


class ApiKeyListView(AccountPageMixin, ListView):
    template_name = "accounts/api_keys/list.html"
    context_object_name = "api_keys"
    paginate_by = 25

    def get_queryset(self):
        return api_keys_visible_to(account=self.account, user=self.request.user, role=self.role)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        for api_key in context["api_keys"]:
            api_key.scope_summary = scope_summary(api_key.scopes)
        context["sees_all_keys"] = role_can(self.role, Right.MANAGE_ALL_KEYS)
        return context


class ApiKeyCreateView(AccountChangeMixin, FormView):
    template_name = "accounts/api_keys/create.html"
    form_class = ApiKeyCreateForm
    refused_url = "api_keys"

    def get_form_kwargs(self):
        grantable = grantable_scopes(self.role, is_staff=self.request.user.is_staff)
        return super().get_form_kwargs() | {"grantable": grantable}

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
        except (ValidationFailed, InsufficientScope, QuotaExceeded) as error:
            form.add_service_error(error)
            return self.form_invalid(form)
        # Post/redirect/get: the token travels once through the session, never in a URL, and
        # encrypted, so the session table never holds it in clear.
        self.request.session[NEW_TOKEN_SESSION_KEY] = {
            "token": encrypt_secret(token),
            "name": api_key.name,
        }
        return redirect("api_key_created")


@method_decorator(never_cache, name="dispatch")
class ApiKeyCreatedView(AccountPageMixin, TemplateView):
    """Shows a new token exactly once: the session entry is gone after this page."""

    template_name = "accounts/api_keys/created.html"

    def get(self, request, *args, **kwargs):
        created = request.session.pop(NEW_TOKEN_SESSION_KEY, None)
        if created is None:
            return redirect("api_keys")
        try:
            token = decrypt_secret(created["token"], max_age=NEW_TOKEN_MAX_AGE_SECONDS)
        except InvalidToken:
            messages.error(
                request,
                f"The token of the key “{created['name']}” is no longer shown: it is shown only "
                f"within {NEW_TOKEN_MAX_AGE_SECONDS // 60} minutes of creating the key. "
                "Revoke that key and create a new one.",
            )
            return redirect("api_keys")
        return self.render_to_response(
            self.get_context_data(created={"token": token, "name": created["name"]})
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
            messages.info(request, f"The key “{api_key.name}” is already {api_key.status}.")
            return redirect("api_keys")
        return self.render_to_response(self.get_context_data(api_key=api_key))

    def post(self, request, *args, **kwargs):
        api_key = api_key_revoke(api_key=self.get_api_key(), actor=self.actor())
        messages.success(
            request, f"The key “{api_key.name}” ({api_key.display_prefix}) has been revoked."
        )
        return redirect("api_keys")


# --- Team ----------------------------------------------------------------------------------


class TeamView(AccountPageMixin, FormView):
    """Members, pending invitations and the invitation form."""

    template_name = "accounts/team/team.html"
    form_class = InviteForm
    http_method_names = ["get", "head"]

    def get_form_kwargs(self):
        may_grant_owner = role_can(self.role, Right.MANAGE_OWNERS)
        return super().get_form_kwargs() | {"may_grant_owner": may_grant_owner}

    def get_context_data(self, **kwargs):
        manages_team = role_can(self.role, Right.MANAGE_TEAM)
        manages_owners = role_can(self.role, Right.MANAGE_OWNERS)
        members = list(members_of_account(account=self.account))
        for member in members:
            # Which rows get controls; the services decide again when a form is sent.
            member.manageable = manages_owners or (manages_team and member.role != Role.OWNER)
            member.is_me = member.user_id == self.request.user.pk
        invitations = invitations_of_account(account=self.account).pending()
        return super().get_context_data(
            members=members,
            invitations=invitations,
            role_choices=role_choices(may_grant_owner=manages_owners),
            **kwargs,
        )


class TeamInviteView(AccountChangeMixin, TeamView):
    http_method_names = ["get", "head", "post"]
    refused_url = "team"

    def form_valid(self, form):
        try:
            invitation, _ = invitation_create(
                account=self.account,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                actor=self.actor(),
            )
        except (ValidationFailed, Conflict, PermissionDenied) as error:
            form.add_service_error(error)
            return self.form_invalid(form)
        messages.success(
            self.request,
            f"Invitation sent to {invitation.email} as {invitation.get_role_display()}.",
        )
        return redirect("team")


class TeamMemberMixin(AccountChangeMixin):
    refused_url = "team"

    def get_membership(self):
        members = members_of_account(account=self.account)
        return get_object_or_404(members, user_id=self.kwargs["user_id"])


class TeamMemberRoleView(TeamMemberMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        membership = self.get_membership()
        form = MemberRoleForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Choose one of the roles.")
            return redirect("team")
        try:
            membership = member_change_role(
                membership=membership, role=form.cleaned_data["role"], actor=self.actor()
            )
        except (Conflict, PermissionDenied, ValidationFailed) as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request, f"{membership.user.email} is now {membership.get_role_display()}."
            )
        return redirect("team")


class TeamMemberRemoveView(TeamMemberMixin, TemplateView):
    """Confirm, then remove a member, or let the signed-in user leave the account."""

    template_name = "accounts/team/member_remove.html"

    def get(self, request, *args, **kwargs):
        membership = self.get_membership()
        return self.render_to_response(
            self.get_context_data(member=membership, leaving=membership.user == request.user)
        )

    def post(self, request, *args, **kwargs):
        membership = self.get_membership()
        try:
            member_remove(membership=membership, actor=self.actor())
        except (Conflict, PermissionDenied) as error:
            messages.error(request, error.message)
            return redirect("team")
        if membership.user == request.user:
            request.session.pop(SESSION_ACCOUNT_KEY, None)
            messages.success(request, f"You have left {full_stop(self.account.name)}")
            return redirect("home")
        messages.success(request, f"{membership.user.email} was removed from the account.")
        return redirect("team")


class TeamInvitationRevokeView(AccountChangeMixin, View):
    http_method_names = ["post"]
    refused_url = "team"

    def post(self, request, *args, **kwargs):
        invitation = get_object_or_404(
            invitations_of_account(account=self.account), id=self.kwargs["invitation_id"]
        )
        try:
            invitation_revoke(invitation=invitation, actor=self.actor())
        except (Conflict, PermissionDenied) as error:
            messages.error(request, error.message)
        else:
            messages.success(request, f"The invitation of {invitation.email} was revoked.")
        return redirect("team")


class InvitationAcceptView(TemplateView):
    """The page an invitation e-mail links to; works signed in, signed out and for new users."""

    template_name = "accounts/invitation_accept.html"

    def dispatch(self, request, *args, **kwargs):
        self.invitation = invitation_for_token(self.kwargs["token"])
        if self.invitation is None:
            raise Http404("This invitation link is invalid or has expired.")
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        user = self.request.user
        invited = self.invitation.email.lower()
        if user.is_authenticated:
            mode = "accept" if user.email.lower() == invited else "other_user"
        elif User.objects.filter(email__iexact=invited).exists():
            mode = "sign_in"
        else:
            mode = "sign_up"
            kwargs.setdefault("form", self.signup_form())
        login_url = f"{reverse('login')}?{urlencode({'next': self.request.path})}"
        return super().get_context_data(
            invitation=self.invitation, mode=mode, login_url=login_url, **kwargs
        )

    def signup_form(self, data=None) -> InvitationSignupForm:
        return InvitationSignupForm(data, instance=User(email=self.invitation.email))

    def post(self, request, *args, **kwargs):
        context = self.get_context_data()
        if context["mode"] == "accept":
            return self.accept(request.user, self.actor())
        if context["mode"] != "sign_up":
            return self.render_to_response(context, status=403)
        form = self.signup_form(request.POST)
        if not form.is_valid():
            return self.render_to_response(self.get_context_data(form=form))
        try:
            membership = invitation_accept_as_new_user(
                token=self.kwargs["token"],
                name=form.cleaned_data["name"],
                password=form.cleaned_data["password1"],
                actor=self.actor(),
            )
        except (NotFound, Conflict) as error:
            raise Http404(error.message) from None
        login(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
        return self.joined(membership)

    def actor(self) -> Actor:
        return Actor.from_request(self.request)

    def accept(self, user: User, actor: Actor) -> HttpResponse:
        try:
            membership = invitation_accept(token=self.kwargs["token"], user=user, actor=actor)
        except (NotFound, PermissionDenied) as error:
            raise Http404(error.message) from None
        return self.joined(membership)

    def joined(self, membership) -> HttpResponse:
        self.request.session[SESSION_ACCOUNT_KEY] = membership.account_id
        messages.success(
            self.request,
            f"Welcome to {membership.account.name}! You joined as {membership.get_role_display()}.",
        )
        return redirect("home")


# --- Profile and activity ------------------------------------------------------------------


class ProfileView(LoginRequiredMixin, UpdateView):
    template_name = "accounts/profile.html"
    form_class = ProfileForm

    def get_object(self, queryset=None):
        # A copy: a rejected form must not change the user the page header shows.
        return User.objects.get(pk=self.request.user.pk)

    def form_valid(self, form):
        try:
            user_update_profile(
                user=self.request.user,
                name=form.cleaned_data["name"],
                email=form.cleaned_data["email"],
                actor=Actor.from_request(self.request),
            )
        except ValidationFailed as error:
            form.add_service_error(error)
            return self.form_invalid(form)
        messages.success(self.request, "Your profile has been saved.")
        return redirect("profile")


class ActivityView(AccountPageMixin, ListView):
    template_name = "accounts/activity.html"
    context_object_name = "events"
    paginate_by = 50
    required_right = Right.VIEW_ACTIVITY

    def get_queryset(self):
        events = Event.objects.filter(account=self.account)
        types = events.order_by("type").values_list("type", flat=True).distinct()
        self.filter_form = ActivityFilterForm(self.request.GET, types=list(types))
        if self.filter_form.is_valid() and self.filter_form.cleaned_data["type"]:
            events = events.filter(type=self.filter_form.cleaned_data["type"])
        return events.select_related("actor_user", "actor_api_key")

    def get_context_data(self, **kwargs):
        return super().get_context_data(filter_form=self.filter_form, **kwargs)

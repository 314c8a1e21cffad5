"""The team page: members, roles, invitations, and accepting an invitation."""

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import FormView, TemplateView

from accounts.actors import Actor
from accounts.forms import (
    InvitationSignupForm,
    InviteForm,
    MemberRoleForm,
    role_choices,
)
from accounts.middleware import SESSION_ACCOUNT_KEY
from accounts.mixins import AccountChangeMixin, AccountPageMixin
from accounts.models import User
from accounts.roles import Right, Role, role_can
from accounts.selectors import (
    invitations_of_account,
    members_of_account,
    users_with_second_factor,
)
from accounts.services import (
    invitation_accept,
    invitation_accept_as_new_user,
    invitation_create,
    invitation_for_token,
    invitation_revoke,
    member_change_role,
    member_remove,
)
from accounts.sign_in import sign_in_with_new_password
from hosting.errors import (
    ApplicationError,
    Conflict,
    NotFound,
    PermissionDenied,
)
from hosting.text import full_stop


class TeamView(AccountPageMixin, FormView):
    """Members, pending invitations and the invitation form. A guest (invited for single
    servers) sees only their own row, to leave: the account's people are not theirs to see,
    as its API's members are not."""

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
        guest = self.role == Role.GUEST
        if guest:
            members = [member for member in members if member.user_id == self.request.user.pk]
        # Who has a second factor: for those who manage the team (owners and admins).
        with_factor = (
            users_with_second_factor([member.user_id for member in members])
            if manages_team
            else None
        )
        for member in members:
            # Which rows get controls; the services decide again when a form is sent.
            member.manageable = manages_owners or (manages_team and member.role != Role.OWNER)
            member.is_me = member.user_id == self.request.user.pk
            member.has_second_factor = (
                None if with_factor is None else member.user_id in with_factor
            )
        invitations = invitations_of_account(account=self.account).pending()
        return super().get_context_data(
            members=members,
            invitations=None if guest else invitations,
            role_choices=role_choices(may_grant_owner=manages_owners),
            sets_sign_in_policy=role_can(self.role, Right.SET_SIGN_IN_POLICY),
            members_without_factor=(
                None if with_factor is None else len(members) - len(with_factor)
            ),
            **kwargs,
        )


class TeamInviteView(AccountChangeMixin, TeamView):
    http_method_names = ["get", "head", "post"]
    refused_url = "team"

    def form_valid(self, form):
        try:
            invitation, _token = invitation_create(
                account=self.account,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                actor=self.actor(),
            )
        except ApplicationError as error:
            return self.refused(error, form=form)
        messages.success(
            self.request,
            _("Invitation sent to %(email)s as %(role)s.")
            % {"email": invitation.email, "role": invitation.get_role_display()},
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
            messages.error(request, _("Choose one of the roles."))
            return redirect("team")
        try:
            membership = member_change_role(
                membership=membership, role=form.cleaned_data["role"], actor=self.actor()
            )
        except ApplicationError as error:
            return self.refused(error, back_to="team")
        messages.success(
            request,
            _("%(email)s is now %(role)s.")
            % {"email": membership.user.email, "role": membership.get_role_display()},
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
        except ApplicationError as error:
            return self.refused(error, back_to="team")
        if membership.user == request.user:
            request.session.pop(SESSION_ACCOUNT_KEY, None)
            messages.success(
                request, _("You have left %(name)s") % {"name": full_stop(self.account.name)}
            )
            return redirect("home")
        messages.success(
            request,
            _("%(email)s was removed from the account.") % {"email": membership.user.email},
        )
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
        except ApplicationError as error:
            return self.refused(error, back_to="team")
        messages.success(
            request, _("The invitation of %(email)s was revoked.") % {"email": invitation.email}
        )
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
        except (NotFound, Conflict) as error:  # used up or replaced: as if it never existed
            raise Http404(error.message) from None
        sign_in_with_new_password(request, membership.user)
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
            _("Welcome to %(name)s! You joined as %(role)s.")
            % {"name": membership.account.name, "role": membership.get_role_display()},
        )
        return redirect("home")

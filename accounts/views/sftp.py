"""Profile → SSH keys & SFTP: the signed-in person's own keys, SFTP password and login.

They are the person's, not the current account's: the page needs no account and shows the
same in every account (another user's key id is 404). One page with a form per task; each
form posts to the page with its ``task``, and a refused form is shown again in place.
"""

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.generic import TemplateView

from accounts.actors import Actor
from accounts.forms import SftpLoginForm, SftpPasswordForm, SshKeyAddForm
from accounts.selectors import ssh_keys_of
from accounts.services.sftp import (
    LOGIN_RULES,
    sftp_login_change,
    sftp_login_of,
    sftp_password_remove,
    sftp_password_set,
    ssh_key_create,
    ssh_key_delete,
)
from hosting.dashboard.refusals import ServiceRefusalMixin
from hosting.errors import ApplicationError

FORMS = {"add_key": SshKeyAddForm, "password": SftpPasswordForm, "login": SftpLoginForm}


class SftpSettingsView(ServiceRefusalMixin, LoginRequiredMixin, TemplateView):
    template_name = "accounts/sftp.html"

    def get_context_data(self, **kwargs):
        user = self.request.user
        forms = {
            task: kwargs.pop(task, None) or form_class(prefix=task)
            for task, form_class in FORMS.items()
        }
        login = sftp_login_of(user)
        if not forms["login"].is_bound:
            forms["login"] = SftpLoginForm(prefix="login", initial={"sftp_login": login})
        return super().get_context_data(
            ssh_keys=list(ssh_keys_of(user=user)),
            sftp_login=login,
            login_rules=LOGIN_RULES,
            has_sftp_password=user.has_sftp_password,
            sftp_password_set_at=user.sftp_password_set_at,
            **forms,
            **kwargs,
        )

    def post(self, request, *args, **kwargs):
        task = request.POST.get("task", "")
        actor = Actor.from_request(request)
        if task == "remove_password":
            sftp_password_remove(user=request.user, actor=actor)
            messages.success(request, _("Your SFTP password has been removed."))
            return redirect("sftp_settings")
        form_class = FORMS.get(task)
        if form_class is None:
            messages.error(request, _("Unknown request."))
            return redirect("sftp_settings")
        form = form_class(request.POST, prefix=task)
        if not form.is_valid():
            return self.render_to_response(self.get_context_data(**{task: form}))
        data = form.cleaned_data
        try:
            if task == "add_key":
                ssh_key = ssh_key_create(
                    user=request.user,
                    name=data["name"],
                    public_key=data["public_key"],
                    actor=actor,
                )
                message = _("The key “%(name)s” (%(fingerprint)s) has been added.") % {
                    "name": ssh_key.name,
                    "fingerprint": ssh_key.fingerprint,
                }
            elif task == "password":
                sftp_password_set(user=request.user, password=data["password"], actor=actor)
                message = _("Your SFTP password has been set.")
            else:
                user = sftp_login_change(user=request.user, login=data["sftp_login"], actor=actor)
                message = _("Your SFTP login is now “%(login)s”.") % {"login": user.sftp_login}
        except ApplicationError as error:
            form.add_service_error(error)
            return self.render_to_response(self.get_context_data(**{task: form}))
        messages.success(request, message)
        return redirect("sftp_settings")


class SshKeyDeleteView(ServiceRefusalMixin, LoginRequiredMixin, TemplateView):
    template_name = "accounts/ssh_key_delete.html"

    def get_ssh_key(self):
        return get_object_or_404(ssh_keys_of(user=self.request.user), id=self.kwargs["key_id"])

    def get(self, request, *args, **kwargs):
        return self.render_to_response(self.get_context_data(ssh_key=self.get_ssh_key()))

    def post(self, request, *args, **kwargs):
        ssh_key = self.get_ssh_key()
        ssh_key_delete(ssh_key=ssh_key, actor=Actor.from_request(request))
        messages.success(
            request,
            _("The key “%(name)s” (%(fingerprint)s) has been deleted.")
            % {"name": ssh_key.name, "fingerprint": ssh_key.fingerprint},
        )
        return redirect("sftp_settings")

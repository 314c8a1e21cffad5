"""The Backups tab of a server or bot: its backups as a page (search, status filter, pages),
"back up now", lock, download, restore after a confirmation, delete, and the retention rules
(servers/services/backups.py does the work, the node's agent the archives).

Each page and change asks the person's permission on the instance (the role's and their grant's,
servers/services/permissions.py): reading ``backups.read``, making ``backups.create``, restoring
``backups.restore``, deleting, locking and the retention rules ``backups.delete`` (and an account
that is not suspended), as the API's endpoints do. Every change is a plain form
POST that comes back to the list with a message; a download redirects to the signed address.
"""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import TemplateView

from accounts.actors import Actor
from hosting.errors import ApplicationError, ValidationFailed
from servers.models import Backup, BackupStatus
from servers.services.backups import (
    Retention,
    backup_create,
    backup_delete,
    backup_download_url,
    backup_limits,
    backup_of,
    backup_progress,
    backup_restore,
    backup_update,
    backups_of,
    backups_used_bytes,
    retention_set,
)
from servers.views import BotPages, InstanceObjectMixin, ServerPages, area_refusal

PER_PAGE = 25
RULES = ("keep_last", "daily", "weekly", "monthly")
# What each change of the pages needs, as the API's endpoints ask it: locking and the retention
# rules decide what may be deleted, so they are the delete permission's.
OP_PERMISSIONS = {
    "create": "backups.create",
    "lock": "backups.delete",
    "unlock": "backups.delete",
    "delete": "backups.delete",
    "retention": "backups.delete",
}


class InstanceBackupsMixin(InstanceObjectMixin):
    """A backups page: it needs ``backups_permission`` (reading: ``backups.read``), a change
    the permission of that change (``OP_PERMISSIONS``), and an account that is not suspended."""

    backups_permission = "backups.read"

    def needed(self, request) -> str:
        return self.backups_permission

    def may_backups(self, permission: str) -> bool:
        writable = permission == "backups.read" or not self.account.is_suspended
        return writable and permission in self.permissions

    def refuse(self, request):
        permission = self.needed(request)
        if not self.may_backups(permission):
            role = request.membership.get_role_display()
            reading = permission == "backups.read"
            doing = "see" if reading else "change"
            messages.error(request, area_refusal("backups", doing, self.kind, role))
            return redirect(self.url("detail") if reading else self.url("backups"))
        return super().refuse(request)

    def backup(self) -> Backup:
        try:
            return backup_of(self.instance, self.kwargs["backup_id"])
        except ApplicationError:
            raise Http404("No such backup.") from None


class InstanceBackupsView(InstanceBackupsMixin, TemplateView):
    """The backups, newest first, a page at a time; ``?q=`` searches names and ids,
    ``?status=`` filters."""

    template_name = "servers/instance_backups.html"

    def get_context_data(self, **kwargs):
        query = self.request.GET
        search = query.get("q", "").strip()[:100]
        status = query.get("status", "")
        backups = backups_of(self.instance)
        if search:
            backups = backups.filter(name__icontains=search) | backups.filter(id=search)
        if status in BackupStatus.values:
            backups = backups.filter(status=status)
        page = Paginator(backups.order_by("-created_at", "-id"), PER_PAGE).get_page(
            query.get("page")
        )
        rows = list(page.object_list)
        for backup in rows:  # one at a time per server: at most one call to the node
            backup.progress = backup_progress(backup)
        limit, storage_mb = backup_limits(self.instance)
        retention = Retention.of(self.instance)
        params = {key: value for key, value in (("q", search), ("status", status)) if value}

        def page_url(number: int) -> str:
            return f"?{urlencode(params | {'page': number})}"

        return super().get_context_data(
            backups=rows,
            page=page,
            previous_url=page_url(page.previous_page_number()) if page.has_previous() else None,
            next_url=page_url(page.next_page_number()) if page.has_next() else None,
            search=search,
            status=status,
            statuses=BackupStatus.choices,
            running=any(
                backup.status == BackupStatus.RUNNING
                or backup.restore_status == BackupStatus.RUNNING
                for backup in rows
            ),
            limit=limit,
            storage_mb=storage_mb,
            used_bytes=backups_used_bytes(self.instance),
            retention=retention.as_dict(),
            can_create_backups=self.may_backups("backups.create"),
            can_restore_backups=self.may_backups("backups.restore"),
            can_delete_backups=self.may_backups("backups.delete"),
            backups_url=self.url("backups"),
            **kwargs,
        )


class InstanceBackupsDoView(InstanceBackupsMixin, View):
    """``POST op=create|lock|unlock|delete|retention``: one change, then back to the list."""

    http_method_names = ["post"]

    def needed(self, request) -> str:
        return OP_PERMISSIONS.get(request.POST.get("op", ""), "backups.delete")

    def post(self, request, *args, **kwargs):
        self.instance  # noqa: B018 - another account's, or none: 404 before reading the form
        op = request.POST.get("op", "")
        actor = Actor.from_request(request)
        try:
            done = self.perform(op, request.POST, actor)
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, done)
        return redirect(self.url("backups"))

    def perform(self, op: str, form, actor: Actor) -> str:
        if op == "create":
            ignore = form.get("ignore", "").splitlines()
            backup = backup_create(
                instance=self.instance, actor=actor, name=form.get("name", ""), ignore=ignore
            )
            return _("Backing up as “%(name)s”: the list shows when it is done.") % {
                "name": backup.name
            }
        if op == "retention":
            values: dict[str, Any] = {}
            for rule in RULES:
                text = form.get(rule, "").strip()
                if not text:
                    values[rule] = None
                elif text.isdigit():
                    values[rule] = int(text)
                else:
                    raise ValidationFailed.field(
                        rule, "invalid", _("Each rule is a whole number, or empty.")
                    )
            retention_set(instance=self.instance, retention=Retention(**values), actor=actor)
            return _("Retention saved: it applies after the next backup.")
        backup = backup_of(self.instance, form.get("backup_id", ""))
        if op in ("lock", "unlock"):
            backup_update(backup=backup, actor=actor, locked=op == "lock")
            done = _("“%(name)s” is locked.") if op == "lock" else _("“%(name)s” is unlocked.")
            return done % {"name": backup.name}
        if op == "delete":
            backup_delete(backup=backup, actor=actor)
            return _("“%(name)s” is deleted.") % {"name": backup.name}
        raise Http404("No such operation.")


class InstanceBackupRestoreView(InstanceBackupsMixin, TemplateView):
    """``GET``: the confirmation (what is replaced, the truncate box); ``POST``: restore."""

    template_name = "servers/instance_backup_restore.html"
    backups_permission = "backups.restore"

    def get_context_data(self, **kwargs):
        return super().get_context_data(backup=self.backup(), **kwargs)

    def post(self, request, *args, **kwargs):
        backup = self.backup()
        if request.POST.get("confirm") != backup.id:
            messages.error(request, _("Confirm the restore on its page first."))
            return redirect(self.url("backups"))
        try:
            backup_restore(
                backup=backup,
                truncate=request.POST.get("truncate") == "on",
                actor=Actor.from_request(request),
            )
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request,
                (
                    _(
                        "Restoring “%(name)s”: the server is stopped, restored and started again "
                        "if it was running."
                    )
                    if self.kind == "server"
                    else _(
                        "Restoring “%(name)s”: the bot is stopped, restored and started again "
                        "if it was running."
                    )
                )
                % {"name": backup.name},
            )
        return redirect(self.url("backups"))


class InstanceBackupDownloadView(InstanceBackupsMixin, View):
    """``GET``: a redirect to the backup's signed address (the node, or the S3 store)."""

    def get(self, request, *args, **kwargs):
        try:
            transfer = backup_download_url(backup=self.backup(), user_id=request.user.pk)
        except ApplicationError as error:
            messages.error(request, error.message)
            return redirect(self.url("backups"))
        return HttpResponseRedirect(transfer["url"])


class ServerBackupsView(ServerPages, InstanceBackupsView):
    pass


class ServerBackupsDoView(ServerPages, InstanceBackupsDoView):
    pass


class ServerBackupRestoreView(ServerPages, InstanceBackupRestoreView):
    pass


class ServerBackupDownloadView(ServerPages, InstanceBackupDownloadView):
    pass


class BotBackupsView(BotPages, InstanceBackupsView):
    pass


class BotBackupsDoView(BotPages, InstanceBackupsDoView):
    pass


class BotBackupRestoreView(BotPages, InstanceBackupRestoreView):
    pass


class BotBackupDownloadView(BotPages, InstanceBackupDownloadView):
    pass

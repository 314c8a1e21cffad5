"""The Files tab of a server or bot: its folder as a page, the editor, and the JSON calls the
page's script makes (servers/services/files.py does the work through the node's agent).

Reading needs ``files:read`` among the role's scopes, changing ``files:write`` (and an account
that is not suspended), as the API's keys need them. Transfers go between the browser and the
node: a download link redirects to a signed address on the node, an upload asks for one and
sends the file there itself (static/js/files.js).
"""

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views import View
from django.views.generic import TemplateView

from accounts.actors import Actor
from hosting.errors import ApplicationError, ValidationFailed
from servers.services.files import FileCall, file_call, files_delete, transfer_url
from servers.services.sftp import sftp_connection
from servers.views import BotPages, InstanceObjectMixin, ServerPages, area_refusal

PER_PAGE = 50
MAX_PAGE = 1_000_000
# ?sort= of the page's columns -> the agent's sort; "-" sorts descending.
SORTS = {"name": "name", "size": "size", "modified": "modified", "type": "type"}
# The JSON calls of files.js: op -> (the agent's method and operation, the scope it needs).
OPERATIONS = {
    "folder": ("POST", "folders"),
    "rename": ("POST", "rename"),
    "copy": ("POST", "copy"),
    "delete": ("POST", "delete"),
    "chmod": ("POST", "chmod"),
    "write": ("PUT", "contents"),
}


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0] or "/"


def crumbs(path: str) -> list[tuple[str, str]]:
    """``[(name, path)]`` from the server's folder down to ``path``."""
    parts = [part for part in path.split("/") if part]
    return [("/", "/")] + [(part, "/" + "/".join(parts[: i + 1])) for i, part in enumerate(parts)]


class InstanceFilesMixin(InstanceObjectMixin):
    """A files page: the role must hold ``files:<files_needs>``."""

    files_needs = "read"

    def may_files(self, verb: str) -> bool:
        writable = verb == "read" or not self.account.is_suspended
        return writable and f"files.{verb}" in self.permissions

    def refuse(self, request):
        if not self.may_files(self.files_needs):
            doing = "read" if self.files_needs == "read" else "change"
            role = request.membership.get_role_display()
            messages.error(request, area_refusal("files", doing, self.kind, role))
            return redirect(self.url("detail"))
        return super().refuse(request)

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            can_write_files=self.may_files("write"),
            files_urls={
                name: self.url(name)
                for name in ("files", "files_edit", "files_do", "files_download")
            },
            **kwargs,
        )


class InstanceFilesView(InstanceFilesMixin, TemplateView):
    """A folder: breadcrumbs, its entries a page at a time (sortable), or a search by name."""

    template_name = "servers/instance_files.html"

    def get_context_data(self, **kwargs):
        query = self.request.GET
        path = query.get("path") or "/"
        search = query.get("q", "").strip()[:100]
        sort = query.get("sort", "name")
        if sort.lstrip("-") not in SORTS:
            sort = "name"
        try:
            page = max(1, min(MAX_PAGE, int(query.get("page", "1"))))
        except ValueError:
            page = 1
        context: dict[str, Any] = {"path": path, "search": search, "sort": sort, "crumbs": []}
        try:
            if search:
                found, _answered = file_call(
                    self.instance, FileCall("GET", "search", query={"path": path, "query": search})
                )
                context.update(entries=found["entries"], truncated=found["truncated"], total=None)
            else:
                listed, _answered = file_call(
                    self.instance,
                    FileCall(
                        "GET",
                        "list",
                        query={
                            "path": path,
                            "sort": SORTS[sort.lstrip("-")],
                            "order": "desc" if sort.startswith("-") else "asc",
                            "offset": (page - 1) * PER_PAGE,
                            "limit": PER_PAGE,
                        },
                    ),
                )
                path = listed["path"]
                for entry in listed["entries"]:
                    entry["path"] = f"{path.rstrip('/')}/{entry['name']}"
                pages = max(1, -(-listed["total"] // PER_PAGE))
                context.update(
                    path=path,
                    entries=listed["entries"],
                    total=listed["total"],
                    page=page,
                    pages=pages,
                    previous_url=self._link(path, sort, page - 1) if page > 1 else None,
                    next_url=self._link(path, sort, page + 1) if page < pages else None,
                )
        except ApplicationError as error:
            context.update(entries=[], files_error=error.message, total=None)
        for entry in context["entries"]:
            entry["modified"] = datetime.fromtimestamp(entry["modified_at_ns"] / 1e9, UTC)
        context["crumbs"] = crumbs(context["path"])
        context["parent_url"] = (
            self._link(_parent(context["path"]), "name", 1) if context["path"] != "/" else None
        )
        context["sort_urls"] = {
            key: self._link(context["path"], f"-{key}" if sort == key else key, 1) for key in SORTS
        }
        if "files_error" not in context:  # a node that did not answer is not asked again
            context["sftp"] = sftp_connection(instance=self.instance, user=self.request.user)
        return super().get_context_data(**context, **kwargs)

    def _link(self, path: str, sort: str, page: int) -> str:
        params = {"path": path}
        if sort != "name":
            params["sort"] = sort
        if page > 1:
            params["page"] = str(page)
        return f"{self.url('files')}?{urlencode(params)}"


class InstanceFileEditView(InstanceFilesMixin, TemplateView):
    """One text file in the editor (CodeMirror), saved with its version."""

    template_name = "servers/instance_file_edit.html"

    def get_context_data(self, **kwargs):
        path = self.request.GET.get("path", "")
        context: dict[str, Any] = {"path": path, "name": path.rsplit("/", 1)[-1]}
        try:
            read, _answered = file_call(
                self.instance, FileCall("GET", "contents", query={"path": path})
            )
            context.update(file=read)
        except ApplicationError as error:
            # The agent's message (English, like its API) says when the file is one to download.
            context.update(file_error=error.message, offer_download="download" in error.message)
        context["folder_url"] = f"{self.url('files')}?{urlencode({'path': _parent(path)})}"
        return super().get_context_data(**context, **kwargs)


class InstanceFileDownloadView(InstanceFilesMixin, View):
    """``GET ?path=``: a redirect to the file's signed address on the node."""

    def get(self, request, *args, **kwargs):
        path = request.GET.get("path", "")
        try:
            transfer = transfer_url(
                instance=self.instance, user_id=request.user.pk, path=path, direction="download"
            )
        except ApplicationError as error:
            messages.error(request, error.message)
            return redirect(f"{self.url('files')}?{urlencode({'path': _parent(path)})}")
        return HttpResponseRedirect(transfer["url"])


class InstanceFilesDoView(InstanceFilesMixin, View):
    """``POST`` JSON ``{"op", ...}`` from files.js; answers the API's envelope as JSON."""

    files_needs = "write"
    http_method_names = ["post"]

    def refuse(self, request):
        if not self.may_files("write"):
            return JsonResponse(
                {
                    "success": False,
                    "error": {
                        "code": "permission_denied",
                        "message": _("You may not change this server's files.")
                        if self.kind == "server"
                        else _("You may not change this bot's files."),
                    },
                },
                status=403,
            )
        return super().refuse(request)

    def post(self, request, *args, **kwargs):
        self.instance  # noqa: B018 - another account's, or none: 404 before reading the body
        try:
            body = json.loads(request.body or b"{}")
            if not isinstance(body, dict) or not isinstance(body.get("op"), str):
                raise ValidationFailed.field("op", "required", _("Say which operation."))
            data = self.perform(body.pop("op"), body)
        except ValueError:
            return JsonResponse(
                {"success": False, "error": {"code": "invalid_json", "message": _("Not JSON.")}},
                status=400,
            )
        except ApplicationError as error:
            problem: dict[str, Any] = {"code": error.code, "message": error.message}
            if error.details:
                problem["details"] = error.details
            return JsonResponse({"success": False, "error": problem}, status=error.status)
        return JsonResponse({"success": True, "data": data})

    def perform(self, op: str, body: dict[str, Any]) -> Any:
        instance = self.instance
        if op in ("upload_url", "download_url"):
            path = body.get("path")
            if not isinstance(path, str) or not path:
                raise ValidationFailed.field("path", "required", _("Name the file."))
            return transfer_url(
                instance=instance,
                user_id=self.request.user.pk,
                path=path,
                direction=op.removesuffix("_url"),
            )
        if op not in OPERATIONS:
            raise ValidationFailed.field(
                "op", "invalid", _("No operation %(op)s.") % {"op": repr(op)}
            )
        method, operation = OPERATIONS[op]
        headers = {}
        if op == "write" and isinstance(body.get("version"), str):
            headers["If-Match"] = f'"{body.pop("version")}"'
        body.pop("version", None)
        if op == "delete":
            paths = body.get("paths")
            if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
                raise ValidationFailed.field("paths", "invalid", _("Name the files to delete."))
            actor = Actor.from_request(self.request)
            return {"deleted": files_delete(instance=instance, paths=paths, actor=actor)}
        answer, _answered = file_call(
            instance, FileCall(method, operation, body=body, headers=headers or None)
        )
        return answer


class ServerFilesView(ServerPages, InstanceFilesView):
    pass


class ServerFileEditView(ServerPages, InstanceFileEditView):
    pass


class ServerFileDownloadView(ServerPages, InstanceFileDownloadView):
    pass


class ServerFilesDoView(ServerPages, InstanceFilesDoView):
    pass


class BotFilesView(BotPages, InstanceFilesView):
    pass


class BotFileEditView(BotPages, InstanceFileEditView):
    pass


class BotFileDownloadView(BotPages, InstanceFileDownloadView):
    pass


class BotFilesDoView(BotPages, InstanceFilesDoView):
    pass

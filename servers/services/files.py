"""A server's or bot's files, through its node's agent (agent/PROTOCOL.md "Files").

The control plane decides who may do what (the views' scopes, the instance's account); the
agent does it, as the server's own user and confined by the kernel to the server's folder.
Each call here is one call to the agent, whose answer becomes the API's, and whose errors
become the contract's (``agent_error``): nothing of a file passes through here but the text an
editor reads or writes (``AGENT_FILES_MAX_TEXT_BYTES``); transfers go straight to the node.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext, gettext_noop

from accounts.actors import Actor
from events.services import record_event
from hosting.errors import (
    ApplicationError,
    Conflict,
    InvalidState,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    QuotaExceeded,
    ServiceUnavailable,
    ValidationFailed,
)
from servers.drivers import DriverError, DriverTimeout
from servers.drivers.agent import agent_request
from servers.models import Instance, Node
from servers.models import ServerStatus as S
from servers.signing import file_token
from webhooks.services.targets import Unresolvable, UnsafeTarget, public_addresses

# Statuses whose files are closed: a suspended instance's data is kept but not handed out,
# and a deleting one's is being removed (a deleted one is not found at all).
CLOSED = {S.SUSPENDED, S.DELETING}


class FilesUnavailable(ApplicationError):
    status, code = 409, "files_unavailable"
    message = gettext_noop("This server runs on no node, so it has no files to manage.")


class VersionMismatch(ApplicationError):
    status, code = 412, "version_mismatch"
    message = gettext_noop(
        "The file changed since it was read; read it again and reapply the change."
    )


class PullFailed(ApplicationError):
    status, code = 422, "pull_failed"
    message = gettext_noop("The file could not be fetched from that address.")


@dataclass(frozen=True)
class FileCall:
    """One operation: the agent's method and path under ``files/``, its query or body, and
    the request field its paths came from (named in a validation error)."""

    method: str
    operation: str
    field: str = "path"
    query: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    timeout: float | None = None  # seconds; None: AGENT_REQUEST_TIMEOUT_SECONDS


def instance_node(instance: Instance) -> Node:
    """The node whose agent keeps the instance's files (and its backups): 409
    ``invalid_state`` while they are closed, ``files_unavailable`` on no node."""
    if instance.status in CLOSED:
        raise InvalidState(
            # Translators: status is the API's code (installing, deleting…).
            (
                gettext("The files of a %(status)s server are closed.")
                if instance.kind == "server"
                else gettext("The files of a %(status)s bot are closed.")
            )
            % {"status": instance.status},
            details={"status": instance.status, "allowed_actions": []},
        )
    node = instance.node
    if node is None:
        raise FilesUnavailable(
            gettext(
                "This server runs on no node (the simulated driver), so it has no files to manage."
            )
            if instance.kind == "server"
            else gettext(
                "This bot runs on no node (the simulated driver), so it has no files to manage."
            )
        )
    return node


def agent_error(instance: Instance, call: FileCall, status: int, answer: Any) -> ApplicationError:
    """The contract's error for the agent's answer ``status``/``answer``."""
    error = answer.get("error") if isinstance(answer, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    message = message[:500] if isinstance(message, str) and message else None
    if code == "unknown_server":
        return FilesUnavailable(
            gettext(
                "This server is not on its node yet (it is being created); try again when it is "
                "installed."
            )
            if instance.kind == "server"
            else gettext(
                "This bot is not on its node yet (it is being created); try again when it is "
                "installed."
            )
        )
    if status == 400:
        field_code = "outside_server" if code == "outside_server" else "invalid"
        return ValidationFailed.field(
            call.field, field_code, message or gettext("This path is invalid.")
        )
    if status == 403:
        return PermissionDenied(message or gettext("The server's user may not do that."))
    if status == 404:
        return NotFound(message or gettext("No such file or folder."))
    if status == 409:
        return Conflict(message or gettext("Something already has that name."))
    if status == 412:
        return VersionMismatch(message)
    if status == 413:
        return PayloadTooLarge(message or gettext("The file is too large for the editor."))
    if code in ("pull_failed", "pull_timeout"):
        return PullFailed(message)
    if status == 507:
        limit = instance.disk_mb
        return QuotaExceeded(
            message or gettext("That would pass the server's disk limit."),
            details={"limit": limit, "unit": "MB"},
        )
    return ServiceUnavailable(
        # Translators: status is an HTTP status code (500, 502…).
        gettext(
            "The node answered the file operation with an error (%(status)s); try again in a "
            "moment."
        )
        % {"status": status}
    )


def file_call(instance: Instance, call: FileCall) -> tuple[Any, dict[str, str]]:
    """The agent's answer to ``call`` on ``instance``'s files, and its ETag (when it sent one)."""
    node = instance_node(instance)
    path = f"servers/{instance.pk}/files/{call.operation}"
    if call.query:
        path += "?" + urlencode(call.query)
    try:
        status, answer, headers = agent_request(
            node, call.method, path, body=call.body, headers=call.headers, timeout=call.timeout
        )
    except DriverTimeout as error:
        if call.timeout is None:
            raise ServiceUnavailable(str(error)) from None
        raise ServiceUnavailable(
            gettext(
                "The node is still working on it after %(seconds)s seconds; what it makes "
                "appears in the folder when it is done."
            )
            % {"seconds": f"{call.timeout:g}"}
        ) from None
    except DriverError as error:
        raise ServiceUnavailable(str(error)) from None
    if status >= 400:
        raise agent_error(instance, call, status, answer)
    etag = headers.get("etag")
    return answer, ({"ETag": etag} if etag else {})


def files_delete(*, instance: Instance, paths: list[str], actor: Actor) -> list[str]:
    """Delete ``paths`` on the node (each checked first, then each deleted) and record
    ``<kind>.files.deleted``; the paths deleted."""
    answer, _ = file_call(
        instance, FileCall("POST", "delete", field="paths", body={"paths": paths})
    )
    files_changed_record(instance, "deleted", answer["deleted"], actor)
    return answer["deleted"]


def files_changed_record(
    instance: Instance, change: str, paths: list[str], actor: Actor, **extra: Any
) -> None:
    """Record ``<kind>.files.<change>`` (``deleted``, ``uploaded``) in the instance's activity."""
    with transaction.atomic():
        record_event(
            type=f"{instance.kind}.files.{change}",
            account=instance.account,
            object_type="file_change",
            obj={
                "object": "file_change",
                f"{instance.kind}_id": instance.pk,
                "change": change,
                "paths": paths,
                **extra,
            },
            actor=actor,
            related_id=instance.pk,
        )


def _parent_of(path: str) -> str:
    parent = path.rstrip("/").rsplit("/", 1)[0]
    return parent or "/"


def transfer_url(*, instance: Instance, user_id: Any, path: str, direction: str) -> dict[str, Any]:
    """A signed address on the node to download (``GET``) or upload (``PUT``) one file, for
    ``FILE_URL_SECONDS``: ``{"url", "method", "path", "expires_at"}``.

    Checked with the node first, so that a wrong path fails here and not in the browser: a
    download's file must exist and be a file; an upload's folder must exist, and its name must
    not be a folder's.
    """
    if direction == "download":
        found, _ = file_call(instance, FileCall("GET", "stat", query={"path": path}))
        if found["type"] != "file":
            raise ValidationFailed.field(
                "path", "not_a_file", gettext("%(path)s is not a file.") % {"path": path}
            )
    else:
        folder, _ = file_call(instance, FileCall("GET", "stat", query={"path": _parent_of(path)}))
        if folder["type"] != "folder":
            raise ValidationFailed.field(
                "path",
                "not_a_folder",
                gettext("%(path)s is not a folder.") % {"path": _parent_of(path)},
            )
        try:
            found, _ = file_call(instance, FileCall("GET", "stat", query={"path": path}))
        except NotFound:
            found = None
        if found is not None and found["type"] == "folder":
            raise Conflict(
                gettext("%(path)s is a folder; an upload replaces only a file.") % {"path": path}
            )
    node = instance.node
    assert node is not None  # file_call refused an instance on no node
    permission = "files.download" if direction == "download" else "files.upload"
    token, expires = file_token(
        node_id=node.id,
        instance_id=instance.pk,
        user_id=user_id,
        path=found["path"] if found is not None else path,
        permission=permission,
    )
    return {
        "url": f"{node.agent_url}/api/servers/{instance.pk}/files/{direction}?token={token}",
        "method": "GET" if direction == "download" else "PUT",
        "path": found["path"] if found is not None else path,
        "expires_at": datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _host_allowed(host: str) -> bool:
    allowed = settings.FILES_PULL_ALLOWED_HOSTS
    return "*" in allowed or any(
        host == name or host.endswith(f".{name}") for name in (entry.lower() for entry in allowed)
    )


def pull_url_check(url: str) -> str:
    """``url`` if the node may fetch it: http(s), no credentials, a host of
    ``FILES_PULL_ALLOWED_HOSTS`` that resolves to public addresses only (the webhooks'
    ``public_addresses``; ``FILES_PULL_ALLOW_PRIVATE`` lifts it). The node checks again as
    it connects, since a name may resolve elsewhere by then."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValidationFailed.field("url", "invalid", gettext("The URL is not valid.")) from None
    if parts.scheme not in ("http", "https"):
        raise ValidationFailed.field(
            "url", "invalid", gettext("Fetch from an http:// or https:// URL.")
        )
    host = (parts.hostname or "").lower()
    if not host or parts.username or parts.password:
        raise ValidationFailed.field(
            "url", "invalid", gettext("The URL needs a host and must not carry credentials.")
        )
    if not _host_allowed(host):
        raise ValidationFailed.field(
            "url",
            "host_not_allowed",
            gettext("Files may not be fetched from %(host)s here.") % {"host": host},
        )
    try:
        public_addresses(host, port, allow_private=settings.FILES_PULL_ALLOW_PRIVATE)
    except Unresolvable as refused:
        raise ValidationFailed.field("url", "invalid", str(refused)) from None
    except UnsafeTarget as refused:
        raise ValidationFailed.field("url", "unsafe_address", str(refused)) from None
    return url

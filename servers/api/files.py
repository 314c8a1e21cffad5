"""``/v1/servers/{id}/files/…`` and ``/v1/bots/{id}/files/…``: the file manager's API.

A mixin of the instances' viewsets: the instance is found as every other of their actions
finds it (the caller's account), the scopes are ``files:read`` / ``files:write`` beside the
instance's own read scope, and the work is the node's (servers/services/files.py).
"""

from datetime import UTC, datetime

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.pagination import MAX_PAGE, MAX_PER_PAGE, PageNumberPagination
from hosting.api.params import invalid_parameter, single_value
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import StrictInputSerializer
from hosting.api.views import validated
from servers.services.files import (
    FileCall,
    file_call,
    files_delete,
    pull_url_check,
    transfer_url,
)

MAX_PATH = 4096
MAX_PATHS = 1000
# ordering= value -> the agent's sort and direction; folders come first when sorted by name.
ORDERINGS = {
    "name": ("name", "asc"),
    "-name": ("name", "desc"),
    "size": ("size", "asc"),
    "-size": ("size", "desc"),
    "modified_at": ("modified", "asc"),
    "-modified_at": ("modified", "desc"),
    "type": ("type", "asc"),
    "-type": ("type", "desc"),
}

FILE_ERRORS = (
    " 409 `files_unavailable` when it runs on no node (the simulated driver) or is not on it "
    "yet, `invalid_state` while suspended or being deleted; 503 `service_unavailable` when "
    "the node cannot be reached."
)


# --- Serializers --------------------------------------------------------------------------


def _path(**kwargs) -> serializers.CharField:
    kwargs.setdefault("help_text", "A path in the server's folder: `/` is the folder itself.")
    return serializers.CharField(max_length=MAX_PATH, trim_whitespace=False, **kwargs)


class FileEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    path = serializers.CharField()
    type = serializers.ChoiceField(choices=["file", "folder", "link", "other"])
    size = serializers.IntegerField(min_value=0, help_text="Bytes.")
    mode = serializers.CharField(help_text='Permission bits in octal, e.g. "0644".')
    modified_at = serializers.CharField(help_text="ISO 8601, UTC, whole seconds.")
    link_target = serializers.CharField(
        allow_null=True, help_text="Where a link points (never followed); null otherwise."
    )


class FileStatSerializer(FileEntrySerializer):
    version = serializers.CharField(
        required=False, help_text="A file's version, for `If-Match` when writing it."
    )


class FileContentsSerializer(serializers.Serializer):
    path = serializers.CharField()
    content = serializers.CharField(allow_blank=True)
    encoding = serializers.ChoiceField(choices=["utf-8", "utf-16"])
    version = serializers.CharField(help_text="Send it back in `If-Match` when saving.")


class FileWrittenSerializer(serializers.Serializer):
    path = serializers.CharField()
    size = serializers.IntegerField(min_value=0)
    version = serializers.CharField()


class FileWriteSerializer(StrictInputSerializer):
    path = _path()
    content = serializers.CharField(
        allow_blank=True, trim_whitespace=False, help_text="The whole text, saved as UTF-8."
    )


class FilePathSerializer(StrictInputSerializer):
    path = _path()


class FileMoveSerializer(StrictInputSerializer):
    # "from" is a Python keyword: declared through the class namespace.
    locals()["from"] = _path()
    to = _path()


class FilePathsSerializer(StrictInputSerializer):
    paths = serializers.ListField(child=_path(), min_length=1, max_length=MAX_PATHS)


class FileModeSerializer(StrictInputSerializer):
    path = _path()
    mode = serializers.RegexField(
        r"^0?[0-7]{3}$",
        help_text='Permission bits in octal: "644", "0755" (no set-id or sticky bits).',
    )


class FileCompressSerializer(StrictInputSerializer):
    paths = serializers.ListField(child=_path(), min_length=1, max_length=MAX_PATHS)
    format = serializers.ChoiceField(choices=["tar.gz", "zip"], default="tar.gz")
    to = _path(
        required=False,
        help_text="The archive's path; by default archive-<UTC time>.<format> beside the "
        "selection.",
    )


class FileDecompressSerializer(StrictInputSerializer):
    path = _path(help_text="The archive: tar, tar.gz, tar.bz2, tar.xz or zip.")
    to = _path(required=False, help_text="The folder to unpack into; by default the archive's.")
    overwrite = serializers.BooleanField(
        default=False, help_text="Replace files of the same names (folders are merged)."
    )


class FileDecompressedSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="The folder unpacked into.")
    files = serializers.IntegerField(min_value=0, help_text="Entries unpacked.")
    size = serializers.IntegerField(min_value=0, help_text="Bytes written.")


class FilePullSerializer(StrictInputSerializer):
    url = serializers.URLField(max_length=2048, help_text="http:// or https://, public hosts.")
    path = _path(help_text="The new file's path (never over an existing entry).")


class FileTransferSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="The node's address, with its token: send no API key.")
    method = serializers.ChoiceField(choices=["GET", "PUT"])
    path = serializers.CharField()
    expires_at = serializers.CharField(help_text="ISO 8601, UTC, whole seconds.")


class FileDeletedSerializer(serializers.Serializer):
    deleted = serializers.ListField(child=serializers.CharField())


class FileSearchSerializer(serializers.Serializer):
    files = FileEntrySerializer(many=True)
    truncated = serializers.BooleanField(help_text="True when more than 200 matched.")


class FilePaginationSerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1)
    per_page = serializers.IntegerField(min_value=1, max_value=MAX_PER_PAGE)
    total = serializers.IntegerField(min_value=0)
    total_pages = serializers.IntegerField(min_value=1)


class FileListSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="The folder listed.")
    files = FileEntrySerializer(many=True)
    pagination = FilePaginationSerializer()


# The errors a file operation adds to those every operation may get (hosting/api/schema.py).
UNAVAILABLE = error_doc(
    409,
    "files_unavailable",
    "`files_unavailable` when it runs on no node or is not on it yet, `invalid_state` "
    "(details.status) while suspended or being deleted, `conflict` when the name is taken.",
    "This server runs on no node (the simulated driver), so it has no files to manage.",
)
VERSION_MISMATCH = error_doc(
    412,
    "version_mismatch",
    "`version_mismatch`: the file is no longer the version sent in `If-Match`.",
    "The file changed since it was read; read it again and reapply the change.",
)
TOO_LARGE = error_doc(
    413,
    "payload_too_large",
    "`payload_too_large`: larger than the editor takes; download it instead.",
    "/world/level.dat is larger than 2,097,152 bytes.",
)
PULL_FAILED = error_doc(
    422,
    "pull_failed",
    "`pull_failed`: the address answered an error, broke off or took too long; "
    "`quota_exceeded` (details.limit, MB) past the disk limit.",
    "https://example.com/plugin.jar answered 404 Not Found.",
)
QUOTA = error_doc(
    422,
    "quota_exceeded",
    "`quota_exceeded` (details.limit, in MB): it would pass the disk limit.",
    "That would pass the server's disk limit of 10,240 MB.",
    {"limit": 10240, "unit": "MB"},
)
NODE_DOWN = error_doc(
    503,
    "service_unavailable",
    "`service_unavailable`: the node cannot be reached right now.",
    "The node node-fra-1 cannot be reached right now.",
)


def _responses(status: int, body, *extra) -> dict:
    documented = {status: body, 409: UNAVAILABLE, 503: NODE_DOWN}
    for response in extra:
        documented[response.examples[0].status_codes[0]] = response
    return {int(code): response for code, response in documented.items()}


ENTRY_EXAMPLE = {
    "name": "server.properties",
    "path": "/server.properties",
    "type": "file",
    "size": 1187,
    "mode": "0644",
    "modified_at": "2026-11-21T15:04:05Z",
    "link_target": None,
}


# --- From the agent's answers -------------------------------------------------------------


def _iso(nanoseconds: int) -> str:
    return datetime.fromtimestamp(nanoseconds // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(raw: dict, folder: str | None = None) -> dict:
    path = raw.get("path")
    if path is None:
        path = f"{folder.rstrip('/')}/{raw['name']}" if folder is not None else "/"
    entry = {
        "name": raw["name"] or "/",
        "path": path,
        "type": raw["type"],
        "size": raw["size"],
        "mode": raw["mode"],
        "modified_at": _iso(raw["modified_at_ns"]),
        "link_target": raw.get("link_target"),
    }
    if "version" in raw:
        entry["version"] = raw["version"]
    return entry


def _query_path(request, name: str = "path", default: str | None = "/") -> str:
    value = single_value(request.query_params, name)
    if value is None:
        if default is None:
            raise invalid_parameter(name, "required", f"Query parameter '{name}' is required.")
        return default
    if len(value) > MAX_PATH:
        raise invalid_parameter(
            name, "max_length", f"Query parameter '{name}' is longer than {MAX_PATH} characters."
        )
    return value


def _if_match(request) -> dict[str, str]:
    value = request.headers.get("If-Match")
    return {"If-Match": value} if value else {}


PATH_PARAMETER = OpenApiParameter(
    "path", OpenApiTypes.STR, description="A path in the server's folder (`/`: the folder)."
)


class InstanceFilesMixin:
    """The file manager's actions on a server or bot (``get_object`` of the viewset)."""

    FILE_READ = ("files", "file_stat", "file_search", "file_contents", "file_download_url")
    FILE_WRITE = (
        "file_upload_url",
        "file_compress",
        "file_decompress",
        "file_pull",
        "file_write",
        "file_folder",
        "file_rename",
        "file_copy",
        "file_delete",
        "file_chmod",
    )

    @classmethod
    def file_scopes(cls, read_scope: str) -> dict[str, list[str]]:
        """Each file action's scopes: the instance's read scope and files:read or files:write."""
        return {name: [read_scope, "files:read"] for name in cls.FILE_READ} | {
            name: [read_scope, "files:write"] for name in cls.FILE_WRITE
        }

    def _call(self, call: FileCall):
        return file_call(self.get_object(), call)

    @extend_schema(
        summary="List a folder",
        description="The entries of a folder, hidden ones too, a page at a time. `ordering`: "
        "`name` (folders first; the default), `size`, `modified_at` or `type`, with an "
        "optional `-`. Needs files:read. 404 `not_found` for no such folder, 400 "
        "`validation_failed` for a path outside the server's folder." + FILE_ERRORS,
        parameters=[
            PATH_PARAMETER,
            OpenApiParameter("ordering", OpenApiTypes.STR, enum=list(ORDERINGS)),
            OpenApiParameter(
                "page",
                {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
                description="Page number, starting at 1. A page past the end is empty.",
            ),
            OpenApiParameter(
                "per_page",
                {"type": "integer", "minimum": 1, "maximum": MAX_PER_PAGE, "default": 25},
                description="Entries per page, 1 to 100.",
            ),
        ],
        responses=_responses(200, FileListSerializer),
        examples=[
            OpenApiExample(
                "A folder",
                value={
                    "path": "/",
                    "files": [ENTRY_EXAMPLE],
                    "pagination": {"page": 1, "per_page": 25, "total": 1, "total_pages": 1},
                },
                response_only=True,
            )
        ],
    )
    @action(detail=True, methods=["get"], url_path="files")
    def files(self, request, pk=None):
        folder = _query_path(request)
        ordering = single_value(request.query_params, "ordering") or "name"
        if ordering not in ORDERINGS:
            raise invalid_parameter(
                "ordering", "invalid", f"ordering is one of {', '.join(ORDERINGS)}."
            )
        sort, order = ORDERINGS[ordering]
        listed: dict = {}

        def fetch(offset: int, limit: int) -> tuple[int, list]:
            query = {"path": folder, "sort": sort, "order": order, "offset": offset}
            answer, _ = self._call(FileCall("GET", "list", query=query | {"limit": limit}))
            listed.update(answer)
            return answer["total"], answer["entries"]

        paginator = PageNumberPagination.for_key("files")()
        rows = paginator.paginate_fetched(fetch, request)
        shown = listed.get("path", folder)
        response = paginator.get_paginated_response([_entry(raw, shown) for raw in rows])
        response.data["path"] = shown
        return response

    @extend_schema(
        summary="Get a file's or folder's details",
        description="One entry; a file's carries its `version`. Needs files:read." + FILE_ERRORS,
        parameters=[PATH_PARAMETER],
        responses=_responses(200, envelope("file", FileStatSerializer(), name="FileStatEnvelope")),
    )
    @action(detail=True, methods=["get"], url_path="files/stat")
    def file_stat(self, request, pk=None):
        answer, _ = self._call(FileCall("GET", "stat", query={"path": _query_path(request)}))
        return Response({"file": _entry(answer)})

    @extend_schema(
        summary="Search files by name",
        description="Entries beneath `path` whose name contains `query` (not case-sensitive), "
        "at most 200; links are listed, never followed. Needs files:read." + FILE_ERRORS,
        parameters=[
            PATH_PARAMETER,
            OpenApiParameter("query", OpenApiTypes.STR, required=True),
        ],
        responses=_responses(
            200, envelope("search", FileSearchSerializer(), name="FileSearchEnvelope")
        ),
    )
    @action(detail=True, methods=["get"], url_path="files/search")
    def file_search(self, request, pk=None):
        query = _query_path(request, "query", default=None)
        answer, _ = self._call(
            FileCall("GET", "search", query={"path": _query_path(request), "query": query})
        )
        return Response(
            {
                "search": {
                    "files": [_entry(raw) for raw in answer["entries"]],
                    "truncated": answer["truncated"],
                }
            }
        )

    @extend_schema(
        summary="Read a text file",
        description="The text of a file (UTF-8 or UTF-16) up to the node's editor limit (2 MiB "
        "by default) with its `version`, also sent as `ETag`. Needs files:read. 413 "
        "`payload_too_large` for a larger file (download it), 400 `validation_failed` for "
        "what is not text." + FILE_ERRORS,
        parameters=[
            OpenApiParameter(
                "path", OpenApiTypes.STR, required=True, description="The file's path."
            )
        ],
        responses=_responses(
            200,
            envelope("file", FileContentsSerializer(), name="FileContentsEnvelope"),
            TOO_LARGE,
        ),
    )
    @action(detail=True, methods=["get"], url_path="files/contents")
    def file_contents(self, request, pk=None):
        path = _query_path(request, default=None)
        answer, headers = self._call(FileCall("GET", "contents", query={"path": path}))
        return Response({"file": answer}, headers=headers)

    @extend_schema(
        summary="Write a text file",
        description="Saves `content` as the whole file (UTF-8), atomically, keeping its mode; "
        'creates it when missing. With `If-Match: "<version>"` only if the file is still '
        'that version (`"*"`: only if it exists), else 412 `version_mismatch`: two editors '
        "never silently overwrite each other. Needs files:write. 422 `quota_exceeded` over "
        "the disk limit (details.limit, MB)." + FILE_ERRORS,
        parameters=[
            OpenApiParameter(
                "If-Match",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description='The version read, quoted: "1a2b-4a3-17f…".',
            )
        ],
        request=FileWriteSerializer,
        responses=_responses(
            200,
            envelope("file", FileWrittenSerializer(), name="FileWrittenEnvelope"),
            VERSION_MISMATCH,
            QUOTA,
        ),
    )
    @file_contents.mapping.put
    def file_write(self, request, pk=None):
        body = validated(FileWriteSerializer, request)
        answer, headers = self._call(
            FileCall("PUT", "contents", body=body, headers=_if_match(request))
        )
        return Response({"file": answer}, headers=headers)

    @extend_schema(
        summary="Create a folder",
        description="201 with the new folder; 409 `conflict` when the name is taken. Needs "
        "files:write." + FILE_ERRORS,
        request=FilePathSerializer,
        responses=_responses(
            201, envelope("file", FileStatSerializer(), name="FileFolderEnvelope"), QUOTA
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/folders")
    def file_folder(self, request, pk=None):
        body = validated(FilePathSerializer, request)
        answer, _ = self._call(FileCall("POST", "folders", body=body))
        return Response({"file": _entry(answer)}, status=201)

    @extend_schema(
        summary="Rename or move",
        description="Moves `from` to `to`, never over an existing entry (409 `conflict`). "
        "Needs files:write." + FILE_ERRORS,
        request=FileMoveSerializer,
        responses=_responses(200, envelope("file", FileStatSerializer(), name="FileMovedEnvelope")),
    )
    @action(detail=True, methods=["post"], url_path="files/rename")
    def file_rename(self, request, pk=None):
        body = validated(FileMoveSerializer, request)
        answer, _ = self._call(FileCall("POST", "rename", field="to", body=dict(body)))
        return Response({"file": _entry(answer)})

    @extend_schema(
        summary="Copy a file",
        description="Copies the file `from` to `to` (not a folder), never over an existing "
        "entry (409 `conflict`); 201. Needs files:write; 422 `quota_exceeded` over the disk "
        "limit." + FILE_ERRORS,
        request=FileMoveSerializer,
        responses=_responses(
            201, envelope("file", FileStatSerializer(), name="FileCopiedEnvelope"), QUOTA
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/copy")
    def file_copy(self, request, pk=None):
        body = validated(FileMoveSerializer, request)
        answer, _ = self._call(FileCall("POST", "copy", field="to", body=dict(body)))
        return Response({"file": _entry(answer)}, status=201)

    @extend_schema(
        summary="Delete files and folders",
        description="Every path is checked first, then each is deleted (a folder with what it "
        "holds; a link, not what it points at). Recorded as `server.files.deleted` "
        "(`bot.files.deleted`). Needs files:write." + FILE_ERRORS,
        request=FilePathsSerializer,
        responses=_responses(
            200, envelope("files", FileDeletedSerializer(), name="FileDeletedEnvelope")
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/delete")
    def file_delete(self, request, pk=None):
        body = validated(FilePathsSerializer, request)
        deleted = files_delete(
            instance=self.get_object(), paths=body["paths"], actor=Actor.from_request(request)
        )
        return Response({"files": {"deleted": deleted}})

    @extend_schema(
        summary="Change a file's mode",
        description="Permission bits only; a link's mode is never changed (400). Needs "
        "files:write." + FILE_ERRORS,
        request=FileModeSerializer,
        responses=_responses(200, envelope("file", FileStatSerializer(), name="FileModeEnvelope")),
    )
    @action(detail=True, methods=["post"], url_path="files/chmod")
    def file_chmod(self, request, pk=None):
        body = validated(FileModeSerializer, request)
        mode = body["mode"][-3:]
        answer, _ = self._call(FileCall("POST", "chmod", body={"path": body["path"], "mode": mode}))
        return Response({"file": _entry(answer)})

    @extend_schema(
        summary="Get a download address",
        description="A signed address on the node that downloads the file, valid "
        "`FILE_URL_SECONDS` (15 minutes): `GET` it without an API key. It honours `Range` "
        "(one range: 206 with `Content-Range`), so a broken download resumes where it "
        "stopped. Needs files:read. 400 `validation_failed` (`path`: `not_a_file`) for a "
        "folder or link." + FILE_ERRORS,
        request=FilePathSerializer,
        responses=_responses(
            200, envelope("transfer", FileTransferSerializer(), name="FileDownloadEnvelope")
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/download-url")
    def file_download_url(self, request, pk=None):
        return self._transfer(request, "download")

    @extend_schema(
        summary="Get an upload address",
        description="A signed address on the node to `PUT` the file's bytes to (the raw body, "
        "any size up to the node's limit and the disk limit), valid `FILE_URL_SECONDS` (15 "
        "minutes) to start. It replaces a file of that name, never a folder (409 `conflict`). "
        "Restartable: `HEAD` the address for `Upload-Offset` (the bytes the node has), then "
        "`PUT` the rest with `Content-Range: bytes <offset>-<last>/<total>`; the file appears "
        "whole once the last byte arrives, and is recorded as `server.files.uploaded`. Needs "
        "files:write. 404 `not_found` when its folder does not exist." + FILE_ERRORS,
        request=FilePathSerializer,
        responses=_responses(
            200, envelope("transfer", FileTransferSerializer(), name="FileUploadEnvelope")
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/upload-url")
    def file_upload_url(self, request, pk=None):
        return self._transfer(request, "upload")

    def _transfer(self, request, direction: str) -> Response:
        path = validated(FilePathSerializer, request)["path"]
        instance = self.get_object()
        transfer = transfer_url(
            instance=instance, user_id=request.auth.user.pk, path=path, direction=direction
        )
        return Response({"transfer": transfer})

    @extend_schema(
        summary="Compress files into an archive",
        description="A .tar.gz (default) or .zip of the selection (folders with everything in "
        "them; links stored as links, never followed), written beside it as the server's "
        "user; 201 with the archive. Never over an existing entry (409 `conflict`); more "
        "entries than the node allows: 413 `payload_too_large`. The node finishes the archive "
        "even when it takes longer than `FILES_LONG_CALL_SECONDS` (503 then). Needs "
        "files:write; 422 `quota_exceeded` over the disk limit." + FILE_ERRORS,
        request=FileCompressSerializer,
        responses=_responses(
            201,
            envelope("file", FileStatSerializer(), name="FileCompressedEnvelope"),
            TOO_LARGE,
            QUOTA,
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/compress")
    def file_compress(self, request, pk=None):
        body = dict(validated(FileCompressSerializer, request))
        answer, _ = self._call(
            FileCall(
                "POST",
                "compress",
                field="paths",
                body=body,
                timeout=settings.FILES_LONG_CALL_SECONDS,
            )
        )
        return Response({"file": _entry(self._stat(answer["path"]))}, status=201)

    @extend_schema(
        summary="Unpack an archive",
        description="Unpacks a tar, tar.gz, tar.bz2, tar.xz or zip (told by its content) into "
        "`to`, as the server's user, all or nothing. An archive with a member that would land "
        "outside `to` (an absolute name, `..`, a link out), a device or a hard link to "
        "something outside it is refused whole (400 `validation_failed`). Existing files of "
        "the same names: 409 `conflict` unless `overwrite`. More entries or bytes than the "
        "node allows: 413 `payload_too_large`; 422 `quota_exceeded` over the disk limit. Needs "
        "files:write." + FILE_ERRORS,
        request=FileDecompressSerializer,
        responses=_responses(
            200,
            envelope("decompressed", FileDecompressedSerializer(), name="FileUnpackedEnvelope"),
            TOO_LARGE,
            QUOTA,
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/decompress")
    def file_decompress(self, request, pk=None):
        body = dict(validated(FileDecompressSerializer, request))
        answer, _ = self._call(
            FileCall("POST", "decompress", body=body, timeout=settings.FILES_LONG_CALL_SECONDS)
        )
        return Response({"decompressed": answer})

    @extend_schema(
        summary="Fetch a file from a URL",
        description="The node downloads `url` into the new file `path` (a plugin's release, "
        "a map): http or https, no credentials, a host `FILES_PULL_ALLOWED_HOSTS` allows that "
        "resolves to public addresses only (checked here, then again by the node as it "
        "connects and at each redirect): 400 `validation_failed` (`url`: `invalid`, "
        "`host_not_allowed`, `unsafe_address`). 422 `pull_failed` when the remote answers an "
        "error, breaks off or takes too long; 409 `conflict` when `path` exists. Needs "
        "files:write." + FILE_ERRORS,
        request=FilePullSerializer,
        responses=_responses(
            201,
            envelope("file", FileStatSerializer(), name="FilePulledEnvelope"),
            TOO_LARGE,
            PULL_FAILED,
        ),
    )
    @action(detail=True, methods=["post"], url_path="files/pull")
    def file_pull(self, request, pk=None):
        body = dict(validated(FilePullSerializer, request))
        instance = self.get_object()
        pull_url_check(body["url"])
        answer, _ = file_call(
            instance,
            FileCall(
                "POST", "pull", field="url", body=body, timeout=settings.FILES_LONG_CALL_SECONDS
            ),
        )
        return Response({"file": _entry(self._stat(answer["path"]))}, status=201)

    def _stat(self, path: str) -> dict:
        answer, _ = self._call(FileCall("GET", "stat", query={"path": path}))
        return answer

"""OpenAPI generation: Bearer security, success envelopes, documented errors, links of creates."""

import inspect
import json
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import serializers

from hosting.api.serializers import DeletedSerializer, StrictInputSerializer

_STRICT_DOC = inspect.cleandoc(StrictInputSerializer.__doc__ or "")
NOT_ONLY_WHITESPACE = (
    "[^\\t\\n\\x0b\\x0c\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029"
    "\\u202f\\u205f\\u3000]"
)


class AutoSchema(openapi.AutoSchema):
    """Request bodies as strict as the API reads them: ``StrictInputSerializer`` refuses keys it
    does not declare, so its schema says ``additionalProperties: false``. A default is the
    server's business, not the client's: it is said in the description, not as ``default``
    (generated TypeScript clients make a property with a ``default`` required)."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.ListField) and not field.allow_empty:
            schema.setdefault("minItems", 1)
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and schema.get("type") == "string"
            and not any(isinstance(each, RegexValidator) for each in field.validators)
        ):
            # Trimmed, then required not to be empty: it needs a character that is not white
            # space as Python's str.strip() sees it (written out: JSON Schema's \s differs). A
            # field with a regex of its own (RegexField) is documented by that regex instead.
            schema.setdefault("pattern", NOT_ONLY_WHITESPACE)
        return schema

    def _get_response_bodies(self, direction="response"):
        """A ``DELETE`` that documents no answer of its own answers as ``deleted()`` does (CONTRACT
        §3: 200 with ``{"id", "deleted": true}``), not drf-spectacular's bodiless 204."""
        bodies = super()._get_response_bodies(direction)
        if self.method == "DELETE" and list(bodies) == ["204"] and "content" not in bodies["204"]:
            deleted = self._get_response_for_code(DeletedSerializer, "200", direction=direction)
            return {"200": deleted}
        return bodies

    def _map_serializer(self, serializer, direction, bypass_extensions=False):
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, StrictInputSerializer):
            schema["additionalProperties"] = False
            if schema.get("description") == _STRICT_DOC:  # inherited, not the body's own
                del schema["description"]
            for prop in schema.get("properties", {}).values():
                default = prop.pop("default", [])
                if default not in ([], ""):  # an empty default says nothing worth a sentence
                    said = f"Default: `{json.dumps(default)}`."
                    prop["description"] = f"{prop.get('description', '')} {said}".strip()
        return schema


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.api.authentication.ApiKeyAuthentication"
    name = "BearerAuth"

    def get_security_definition(self, auto_schema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "hms_<12 key id><32 secret><6 checksum>",
            "description": "An API key from the dashboard (Settings → API Keys).",
        }


def response_examples(name: str, key: str | None, value: dict) -> list[OpenApiExample]:
    """A response example: one list item (``key`` None) or one resource under ``data.<key>``."""
    return [OpenApiExample(name, value=value if key is None else {key: value}, response_only=True)]


def envelope(key: str, serializer, name: str | None = None):
    """A response body ``{key: <serializer>}`` for ``extend_schema(responses=...)``."""
    component = name or f"{type(serializer).__name__.removesuffix('Serializer')}Envelope"
    return inline_serializer(name=component, fields={key: serializer})


REQUEST_ID_EXAMPLE = "req_4Xb9Qe2LmT0sWc8RkP1nZa7Y"
_PROBLEM = {
    "type": "object",
    "required": ["name", "code", "message"],
    "properties": {
        "name": {"type": "string", "description": "The field (dotted path) or parameter."},
        "code": {"type": "string", "description": "Stable snake_case code of the problem."},
        "message": {"type": "string"},
    },
}
# The error envelope and its parts, as separate components so that generated clients get one
# type per level (CONTRACT §3).
ERROR_COMPONENTS: dict[str, dict[str, Any]] = {
    "ErrorEnvelope": {
        "type": "object",
        "required": ["success", "error"],
        "properties": {
            "success": {"type": "boolean", "const": False},
            "error": {"$ref": "#/components/schemas/Error"},
        },
    },
    "Error": {
        "type": "object",
        "required": ["code", "message", "request_id"],
        "properties": {
            "code": {"type": "string", "description": "Stable snake_case error code."},
            "message": {"type": "string", "description": "Human-readable; may change."},
            "details": {"$ref": "#/components/schemas/ErrorDetails"},
            "request_id": {"type": ["string", "null"], "example": REQUEST_ID_EXAMPLE},
        },
    },
    "ErrorDetails": {
        "type": "object",
        "description": "Present where it helps; which keys appear depends on the code.",
        "properties": {
            "fields": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/FieldProblem"},
                "description": "`validation_failed`: each invalid body field.",
            },
            "parameters": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/FieldProblem"},
                "description": "`invalid_parameter`: each invalid query parameter or header.",
            },
            "required_scopes": {
                "type": "array",
                "items": {"type": "string"},
                "description": "`insufficient_scope`: the scopes the operation needs.",
            },
            "retry_after": {"type": "integer", "description": "`rate_limited`: seconds."},
            "status": {"type": "string", "description": "`invalid_state`: the current status."},
            "allowed_actions": {
                "type": "array",
                "items": {"type": "string"},
                "description": "`invalid_state`: the actions the current status allows.",
            },
            "action_id": {
                "type": ["string", "null"],
                "description": "`action_in_progress`: the action still running.",
            },
            "limit": {"type": "integer", "description": "`quota_exceeded`: the quota."},
            "ip": {"type": "string", "description": "`ip_not_allowed`: the client address."},
        },
        "additionalProperties": True,
    },
    "FieldProblem": _PROBLEM,
}
ERROR = {"$ref": "#/components/schemas/ErrorEnvelope"}


def error_doc(status_code: int, code: str, description: str, message: str, details=None):
    """An error response for ``extend_schema(responses=...)`` the shared hook does not add."""
    example = {"code": code, "message": message}
    if details:
        example["details"] = details
    example["request_id"] = REQUEST_ID_EXAMPLE
    return OpenApiResponse(
        response=ERROR,
        description=description,
        examples=[
            OpenApiExample(
                code,
                value={"success": False, "error": example},
                response_only=True,
                status_codes=[str(status_code)],
            )
        ],
    )


CONFLICT = error_doc(409, "conflict", "`conflict`", "The request conflicts with the current state.")
INSTANCE_CONFLICT = error_doc(
    409,
    "invalid_state",
    "`invalid_state` (details.status, details.allowed_actions) when the status does not allow "
    "the change, `action_in_progress` (details.action_id) while another action runs.",
    "Cannot delete a server that is deleting.",
    {"status": "deleting", "allowed_actions": []},
)


# status -> (description with its codes, one example code, example message, example details)
_ERRORS: dict[str, tuple[str, str, str, dict | None]] = {
    "400": (
        "Bad request: `invalid_json`, `validation_failed` (details.fields), `invalid_parameter` "
        "(details.parameters: a query parameter, or the `Idempotency-Key` header).",
        "invalid_parameter",
        "Query parameter 'per_page' must be at most 100.",
        {
            "parameters": [
                {
                    "name": "per_page",
                    "code": "max_value",
                    "message": "Query parameter 'per_page' must be at most 100.",
                }
            ]
        },
    ),
    "401": (
        "Not authenticated: `authentication_required`, `invalid_api_key`, `api_key_expired`, "
        '`api_key_revoked`. Sent with `WWW-Authenticate: Bearer realm="api"`.',
        "invalid_api_key",
        "The API key is not valid.",
        None,
    ),
    "403": (
        "Forbidden: `insufficient_scope` (details.required_scopes), `ip_not_allowed`, "
        "`account_suspended`, `permission_denied`.",
        "insufficient_scope",
        "This operation needs the scope servers:read.",
        {"required_scopes": ["servers:read"]},
    ),
    "404": (
        "`not_found`: no such resource in this account.",
        "not_found",
        "The requested resource does not exist.",
        None,
    ),
    "409": (
        "`idempotency_request_in_progress`: a request with the same `Idempotency-Key` is still "
        "being processed; retry it shortly.",
        "idempotency_request_in_progress",
        "A request with this Idempotency-Key is still being processed; retry it shortly.",
        None,
    ),
    "415": (
        "`unsupported_media_type`: bodies must be `application/json`.",
        "unsupported_media_type",
        "Send request bodies as 'Content-Type: application/json'.",
        None,
    ),
    "422": (
        "`idempotency_key_reused`: the `Idempotency-Key` was already used with a different "
        "request (method, path or body).",
        "idempotency_key_reused",
        "This Idempotency-Key was already used with a different request.",
        None,
    ),
    "429": (
        "`rate_limited` (details.retry_after), with a `Retry-After` header.",
        "rate_limited",
        "Rate limit of 600 requests per 60 seconds exceeded; retry in 12 seconds.",
        {"retry_after": 12},
    ),
    "500": ("`internal_error`.", "internal_error", "An unexpected error occurred.", None),
}

# Answered by the HTTP server in front of the API (gunicorn: a request line over 4094 bytes), so
# its body is that server's, not the envelope: the request never reaches the service. Said once,
# in the document's description and as a component, not on every operation: a response without a
# body in each operation turns every return type of a generated client into ``Any``.
URI_TOO_LONG_TEXT = (
    "A request line longer than the HTTP server accepts (4094 bytes with the bundled gunicorn "
    "configuration) is answered `414 URI Too Long` by that server, before the API: its body is "
    "not the JSON envelope, and no operation lists it."
)
URI_TOO_LONG = {"description": f"URI Too Long. {URI_TOO_LONG_TEXT}"}
LOCATION_HEADERS = {
    "201": {
        "description": "The address of the created resource, where one has its own.",
        "schema": {"type": "string", "format": "uri"},
    },
    "202": {
        "description": "The address to poll for the accepted work (`/v1/actions/{id}`, ...).",
        "schema": {"type": "string", "format": "uri"},
    },
}
_RATE_LIMIT_HEADERS = {
    "X-RateLimit-Limit": "Requests allowed in the current window.",
    "X-RateLimit-Remaining": "Requests left in the current window.",
    "X-RateLimit-Reset": "When the window resets, in epoch seconds.",
    "RateLimit-Policy": 'IETF policy, e.g. `"default";q=600;w=60`.',
    "RateLimit": 'IETF state, e.g. `"default";r=599;t=42`.',
    "X-Request-Id": "The request id (`req_...`), also in error bodies and logs.",
}


def documented_codes(status: str) -> str:
    """The sentence naming the error codes a status stands for, as the documents say it."""
    return _ERRORS[status][0]


def documented_error(status: str) -> dict[str, Any]:
    """An error response of the document: the envelope, its codes and an example."""
    description, code, message, details = _ERRORS[status]
    example: dict[str, Any] = {"code": code, "message": message}
    if details:
        example["details"] = details
    example["request_id"] = REQUEST_ID_EXAMPLE
    return {
        "description": description,
        "content": {
            "application/json": {
                "schema": ERROR,
                "example": {"success": False, "error": example},
            }
        },
    }


def _wrap_success(content: dict[str, Any]) -> None:
    media = content.get("application/json")
    if not media or "schema" not in media:
        return
    media["schema"] = {
        "type": "object",
        "required": ["success", "data"],
        "properties": {"success": {"type": "boolean", "const": True}, "data": media["schema"]},
    }
    for example in media.get("examples", {}).values():
        example["value"] = {"success": True, "data": example["value"]}


def _non_empty(schema: dict[str, Any]) -> None:
    """A query parameter is never empty, nor has a list an empty item (hosting/api/params.py)."""
    if schema.get("type") == "array":
        schema.setdefault("minItems", 1)
        schema = schema.get("items", {})
    if schema.get("type") == "string" and "enum" not in schema:
        schema.setdefault("minLength", 1)


def _data_keys(response: dict[str, Any], schemas: dict[str, Any]) -> set[str]:
    """The keys of ``data`` in a (wrapped) success response."""
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    data = schema.get("properties", {}).get("data", {})
    if "$ref" in data:
        data = schemas.get(data["$ref"].rsplit("/", 1)[-1], {})
    return set(data.get("properties", {}))


def _link_creates(result: dict[str, Any]) -> None:
    """OpenAPI links from each create (201) to the operations on what it created.

    The resource a create answers (``data.server``, ``data.invitation``...) is the one that
    ``GET .../{id}`` answers under the same key; every operation under that path takes its id
    from the create's answer. Clients and stateful testers follow these as they would the
    ``Location`` header.
    """
    schemas = result["components"]["schemas"]
    paths = result["paths"]
    detail_of: dict[str, tuple[str, str]] = {}
    for path, operations in paths.items():
        get = operations.get("get")
        if get and path.endswith("}") and "200" in get["responses"]:
            name = path.rsplit("{", 1)[1].rstrip("}")
            for key in _data_keys(get["responses"]["200"], schemas):
                detail_of.setdefault(key, (path, name))
    for operations in paths.values():
        create = operations.get("post")
        if not create or "201" not in create["responses"]:
            continue
        keys = _data_keys(create["responses"]["201"], schemas) - {"token", "secret"}
        if len(keys) != 1 or (key := keys.pop()) not in detail_of:
            continue
        detail, name = detail_of[key]
        links = {
            op["operationId"]: {
                "operationId": op["operationId"],
                "parameters": {name: f"$response.body#/data/{key}/id"},
            }
            for path, ops in paths.items()
            if path == detail or path.startswith(detail + "/")
            for op in ops.values()
            if path.count("{") == 1
        }
        create["responses"]["201"]["links"] = links


BINARY_PART = "application/octet-stream"


def _binary_parts(content: dict[str, Any], schemas: dict[str, Any]) -> None:
    """A file part of a ``multipart/form-data`` body is declared binary the OpenAPI 3.1 way
    (``contentMediaType``, and the part's ``encoding``) beside 3.0's ``format: binary``, which
    openapi-python-client reads as a file: generated clients send it as bytes, not text."""
    media = content.get("multipart/form-data")
    if not media or "schema" not in media:
        return
    schema = media["schema"]
    if "$ref" in schema:
        schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
    for name, prop in schema.get("properties", {}).items():
        part = prop.get("items", {}) if prop.get("type") == "array" else prop
        if part.get("format") == "binary":
            part["contentMediaType"] = BINARY_PART
            media.setdefault("encoding", {})[name] = {"contentType": BINARY_PART}


def postprocess_envelopes(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """Wrap 2xx bodies in the success envelope and document the errors every call can get."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(ERROR_COMPONENTS)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for status, response in responses.items():
                if status.startswith("2"):
                    _wrap_success(response.get("content", {}))
                    headers = response.setdefault("headers", {})
                    headers.update(
                        {
                            name: {"description": text, "schema": {"type": "string"}}
                            for name, text in _RATE_LIMIT_HEADERS.items()
                        }
                    )
                    if status in LOCATION_HEADERS:
                        headers["Location"] = LOCATION_HEADERS[status]
            _binary_parts(
                operation.get("requestBody", {}).get("content", {}), result["components"]["schemas"]
            )
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query":
                    _non_empty(parameter["schema"])
            needed = ["401", "403", "429", "500"] if operation.get("security") else ["500"]
            parameters = {param.get("name") for param in operation.get("parameters", [])}
            if "requestBody" in operation:
                needed += ["400", "415"]
            elif method == "get" and "page" in parameters:
                needed.append("400")
            if "{" in path:
                needed.append("404")
            for status in needed:
                responses.setdefault(status, documented_error(status))
    result["components"].setdefault("responses", {})["UriTooLong"] = URI_TOO_LONG
    info = result.setdefault("info", {})
    if URI_TOO_LONG_TEXT not in info.get("description", ""):
        info["description"] = f"{info.get('description', '')}\n\n{URI_TOO_LONG_TEXT}".strip()
    _link_creates(result)
    return result

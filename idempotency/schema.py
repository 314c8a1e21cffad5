"""``Idempotency-Key`` in the OpenAPI document: a drf-spectacular postprocessing hook that runs
after the project's envelope hook (``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``)."""

from typing import Any

from hosting.api.schema import documented_codes, documented_error
from idempotency.middleware import (
    IDEMPOTENCY_KEY_HEADER,
    IDEMPOTENCY_KEY_MAX_LENGTH,
    REPLAYED_HEADER,
)
from idempotency.services import RETENTION

_RETENTION_HOURS = int(RETENTION.total_seconds() // 3600)
IDEMPOTENCY_KEY_PARAMETER = {
    "name": IDEMPOTENCY_KEY_HEADER,
    "in": "header",
    "required": False,
    "description": (
        f"Makes the request safe to retry: 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII "
        f"characters, unique per operation (a UUID, say). For {_RETENTION_HOURS} hours the same "
        "key with the same request, from the same API key, gets the first answer again (status, "
        f"body and `Location`, with `{REPLAYED_HEADER}: true` and a fresh `X-Request-Id`) and "
        "changes nothing. The same key with another request is 422 `idempotency_key_reused`; "
        "while the first request runs, 409 `idempotency_request_in_progress`. Answers of 500 and "
        "above, 401, 403 and 429 are not kept, so a retry runs the request again."
    ),
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": IDEMPOTENCY_KEY_MAX_LENGTH,
        "pattern": "^[\\x20-\\x7E]+$",
    },
    "example": "5f1c3a52-2d6e-4b8e-9c1a-0c6f0e7d9a11",
}


def _document(operation: dict[str, Any]) -> None:
    """Every POST takes ``Idempotency-Key`` and may answer its 409 and 422."""
    operation.setdefault("parameters", []).append(IDEMPOTENCY_KEY_PARAMETER)
    responses = operation["responses"]
    for status, response in responses.items():
        if status.startswith("2"):
            response.setdefault("headers", {})[REPLAYED_HEADER] = {
                "description": "`true` when this is the kept answer to an earlier request with "
                f"the same `{IDEMPOTENCY_KEY_HEADER}`.",
                "schema": {"type": "string", "enum": ["true"]},
            }
    responses.setdefault("400", documented_error("400"))  # the header itself may be invalid
    for status in ("409", "422"):
        if status in responses:
            # The operation documents its own codes for this status: add ours to them.
            responses[status]["description"] += "\n\n" + documented_codes(status)
        else:
            responses[status] = documented_error(status)


def document_idempotency(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """Every POST under /v1 called with an API key takes ``Idempotency-Key``
    (idempotency/middleware.py keeps answers per API key). The node agent's endpoints (their own
    token) and anonymous ones (providers' webhooks) do not: the header is not read there, so it is
    not documented there."""
    for operations in result.get("paths", {}).values():
        post = operations.get("post")
        if post and any("BearerAuth" in each for each in post.get("security", [])):
            _document(post)
    return result

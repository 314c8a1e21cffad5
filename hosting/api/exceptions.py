"""The one place where an error becomes an HTTP response (CONTRACT §3).

DRF calls ``exception_handler`` for errors raised in API views; the middleware and the catch-all
route call ``error_response`` for errors that happen outside DRF under ``/v1/``.
"""

import logging
from typing import Any

from django.core.exceptions import (
    ObjectDoesNotExist,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from hosting import errors
from hosting.http import WWW_AUTHENTICATE

logger = logging.getLogger(__name__)

_DRF_ERRORS: list[tuple[type[Exception], type[errors.ApplicationError]]] = [
    (drf.ParseError, errors.InvalidJson),
    (drf.UnsupportedMediaType, errors.UnsupportedMediaType),
    (drf.NotAuthenticated, errors.AuthenticationRequired),
    (drf.AuthenticationFailed, errors.InvalidApiKey),
    (drf.PermissionDenied, errors.PermissionDenied),
    (DjangoPermissionDenied, errors.PermissionDenied),
    (drf.NotFound, errors.NotFound),
    (Http404, errors.NotFound),
    # A row that was there when the view found it and gone when the service locked it (a
    # concurrent delete): the object does not exist, which is a 404, not a server error.
    (ObjectDoesNotExist, errors.NotFound),
    (drf.MethodNotAllowed, errors.MethodNotAllowed),
    # Django's own limits on a body (DATA_UPLOAD_MAX_MEMORY_SIZE, DATA_UPLOAD_MAX_NUMBER_FIELDS,
    # DATA_UPLOAD_MAX_NUMBER_FILES), raised while a parser reads it.
    (RequestDataTooBig, errors.PayloadTooLarge),
    (TooManyFieldsSent, errors.PayloadTooLarge),
    (TooManyFilesSent, errors.PayloadTooLarge),
    # Any other request Django finds suspicious (a malformed multipart body, say) is the
    # client's fault, as Django's own handler says for pages (400).
    (SuspiciousOperation, errors.ValidationFailed),
]
_BY_STATUS = {
    cls.status: cls
    for cls in (
        errors.NotFound,
        errors.MethodNotAllowed,
        errors.Conflict,
        errors.ServiceUnavailable,
    )
}


def _flatten_field_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """Turn DRF's nested ``{"field": [{"message", "code"}]}`` into a flat list of fields."""
    if isinstance(detail, dict) and {"message", "code"} <= detail.keys():
        return [{"name": prefix or "non_field_errors", **detail}]
    if isinstance(detail, dict):
        items = detail.items()
    elif isinstance(detail, list):
        if all(isinstance(item, dict) and "message" in item for item in detail):
            return [{"name": prefix or "non_field_errors", **item} for item in detail]
        items = ((str(index), item) for index, item in enumerate(detail))
    else:
        return [{"name": prefix or "non_field_errors", "code": "invalid", "message": str(detail)}]
    fields = []
    for key, value in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        fields.extend(_flatten_field_errors(value, name))
    return fields


def as_application_error(exc: Exception) -> errors.ApplicationError:
    """Map any exception to the contract error it shows as; unknown ones are internal errors."""
    if isinstance(exc, errors.ApplicationError):
        return exc
    if isinstance(exc, drf.ValidationError):
        fields = _flatten_field_errors(exc.get_full_details())
        first = fields[0] if fields else {"name": "body", "message": "is invalid."}
        return errors.ValidationFailed(
            f"Invalid value for '{first['name']}': {first['message']}"
            if len(fields) == 1
            else f"{len(fields)} fields are invalid.",
            details={"fields": fields},
        )
    if isinstance(exc, drf.Throttled):
        wait = int(exc.wait or 1)
        return errors.RateLimited(details={"retry_after": wait})
    for source, target in _DRF_ERRORS:
        if isinstance(exc, source):
            message = str(getattr(exc, "detail", "")) or None
            if target in (errors.InvalidJson, errors.MethodNotAllowed):
                return target(message)
            if target is errors.ValidationFailed:
                return target("The request body is malformed.")
            return target()
    if isinstance(exc, drf.APIException) and exc.status_code in _BY_STATUS:
        return _BY_STATUS[exc.status_code]()
    return errors.InternalError()


def error_body(error: errors.ApplicationError, request_id: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details:
        body["details"] = error.details
    body["request_id"] = request_id
    return {"success": False, "error": body}


def error_headers(error: errors.ApplicationError) -> dict[str, str]:
    headers = {}
    if error.status == 401:
        headers["WWW-Authenticate"] = WWW_AUTHENTICATE
    if error.status == 429 and error.details and "retry_after" in error.details:
        headers["Retry-After"] = str(error.details["retry_after"])
    return headers


def _log_if_internal(exc: Exception, error: errors.ApplicationError) -> None:
    if error.status >= 500:
        logger.error("Unhandled error: %s", type(exc).__name__, exc_info=exc)


def exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's hook: every exception from an API view ends here."""
    error = as_application_error(exc)
    _log_if_internal(exc, error)
    set_rollback()
    request = context.get("request")
    request_id = getattr(request, "request_id", None) if request is not None else None
    return Response(
        error_body(error, request_id), status=error.status, headers=error_headers(error)
    )


def error_response(exc: Exception, request) -> JsonResponse:
    """The same envelope for errors raised outside DRF (routing, middleware)."""
    error = as_application_error(exc)
    _log_if_internal(exc, error)
    response = JsonResponse(
        error_body(error, getattr(request, "request_id", None)),
        status=error.status,
        json_dumps_params={"separators": (",", ":")},
    )
    for name, value in error_headers(error).items():
        response[name] = value
    return response

"""Request ids: every response carries one, and every log line written while serving it.

Kept free of DRF imports because the logging configuration loads it before apps are ready.
"""

import contextvars
import logging
import re

from hosting.ids import new_id

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestIdLogFilter(logging.Filter):
    """Put the current request id on every log record (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current_request_id.get()
        return True


class RequestIdMiddleware:
    """Echo a safe incoming ``X-Request-Id`` or make a ``req_`` one; errors and logs carry it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = incoming if _SAFE_REQUEST_ID.match(incoming) else new_id("req")
        token = _current_request_id.set(request.request_id)
        try:
            response = self.get_response(request)
        finally:
            _current_request_id.reset(token)
        response["X-Request-Id"] = request.request_id
        return response

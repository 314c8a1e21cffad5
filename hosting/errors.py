"""Application errors with their stable contract code and HTTP status (CONTRACT §3).

Services, selectors and the API plumbing raise these; only hosting/api/exceptions.py turns them
into responses. No DRF import here, so services stay usable from commands, admin and tasks.
"""

from typing import Any

from django.utils.translation import gettext, gettext_noop


class ApplicationError(Exception):
    """Base class: ``code`` is the snake_case contract clients branch on."""

    status: int = 400
    code: str = "bad_request"
    message: str = gettext_noop("The request could not be processed.")

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None):
        # A class's own message is marked with gettext_noop and translated here, in the language of
        # the request (always English under /v1, the page's on the dashboard).
        self.message = message or gettext(self.message)
        self.details = details
        super().__init__(self.message)


class InvalidJson(ApplicationError):
    status, code, message = 400, "invalid_json", gettext_noop("The request body is not valid JSON.")


class ValidationFailed(ApplicationError):
    status, code, message = (
        400,
        "validation_failed",
        gettext_noop("The request body has invalid fields."),
    )

    @classmethod
    def field(cls, name: str, code: str, message: str) -> "ValidationFailed":
        """One invalid field, named by its path (``resources.memory_mb``) as the envelope's
        ``details.fields`` lists it; dashboard forms show it on that field."""
        return cls(message, details={"fields": [{"name": name, "code": code, "message": message}]})


class InvalidParameter(ApplicationError):
    status, code, message = 400, "invalid_parameter", gettext_noop("A query parameter is invalid.")

    @classmethod
    def named(cls, name: str, code: str, message: str) -> "InvalidParameter":
        """One invalid query parameter, as the envelope's ``details.parameters`` lists it."""
        return cls(
            message, details={"parameters": [{"name": name, "code": code, "message": message}]}
        )


class AuthenticationRequired(ApplicationError):
    status = 401
    code = "authentication_required"
    message = gettext_noop("Send an API key as 'Authorization: Bearer <API_KEY>'.")


class InvalidApiKey(ApplicationError):
    status, code, message = 401, "invalid_api_key", gettext_noop("The API key is not valid.")


class ApiKeyExpired(ApplicationError):
    status, code, message = 401, "api_key_expired", gettext_noop("The API key has expired.")


class ApiKeyRevoked(ApplicationError):
    status, code, message = 401, "api_key_revoked", gettext_noop("The API key has been revoked.")


class InsufficientScope(ApplicationError):
    status = 403
    code = "insufficient_scope"
    message = gettext_noop("The API key lacks a scope this operation requires.")


class IpNotAllowed(ApplicationError):
    status = 403
    code = "ip_not_allowed"
    message = gettext_noop("The API key may not be used from this IP address.")


class AccountSuspended(ApplicationError):
    status, code, message = 403, "account_suspended", gettext_noop("The account is suspended.")


class PermissionDenied(ApplicationError):
    status, code, message = (
        403,
        "permission_denied",
        gettext_noop("You may not perform this operation."),
    )


class NotFound(ApplicationError):
    status, code, message = 404, "not_found", gettext_noop("The requested resource does not exist.")


class MethodNotAllowed(ApplicationError):
    status, code, message = (
        405,
        "method_not_allowed",
        gettext_noop("This method is not allowed here."),
    )


class PayloadTooLarge(ApplicationError):
    """A body past the server's limits: its size, or how many fields or files a form has."""

    status, code = 413, "payload_too_large"
    message = gettext_noop("The request body is too large or has too many parts.")


class UnsupportedMediaType(ApplicationError):
    status = 415
    code = "unsupported_media_type"
    message = gettext_noop("Send request bodies as 'Content-Type: application/json'.")


class InvalidState(ApplicationError):
    status, code = 409, "invalid_state"
    message = gettext_noop("The resource's current status does not allow this action.")


class ActionInProgress(ApplicationError):
    status, code = 409, "action_in_progress"
    message = gettext_noop("Another action is still in progress on this resource.")


class Conflict(ApplicationError):
    status, code, message = (
        409,
        "conflict",
        gettext_noop("The request conflicts with the current state."),
    )


class InvalidNodeToken(ApplicationError):
    status, code = 401, "invalid_token"
    message = gettext_noop("The node token is missing, malformed or wrong.")


class NoCapacity(ApplicationError):
    status, code = 409, "no_capacity"
    message = gettext_noop("No node of the region has room for it now.")


class IdempotencyRequestInProgress(ApplicationError):
    status, code = 409, "idempotency_request_in_progress"
    message = gettext_noop(
        "A request with this Idempotency-Key is still being processed; retry it shortly."
    )


class IdempotencyKeyReused(ApplicationError):
    status, code = 422, "idempotency_key_reused"
    message = gettext_noop("This Idempotency-Key was already used with a different request.")


class QuotaExceeded(ApplicationError):
    status, code, message = (
        422,
        "quota_exceeded",
        gettext_noop("The account's quota would be exceeded."),
    )


class PlanLimit(ApplicationError):
    """Beyond what the instance's plan bought: resources change with the plan, not by hand."""

    status, code, message = (
        422,
        "plan_limit",
        gettext_noop("The plan of this server or bot does not allow that."),
    )


class PlanRequired(ApplicationError):
    """Beyond what the account may run without a plan (its unbilled allowance): order one."""

    status, code = 422, "plan_required"
    message = gettext_noop(
        "Servers and bots beyond the account's unbilled allowance are ordered as a plan."
    )


class RateLimited(ApplicationError):
    status, code, message = 429, "rate_limited", gettext_noop("Too many requests; retry later.")


class InternalError(ApplicationError):
    status, code, message = 500, "internal_error", gettext_noop("An unexpected error occurred.")


class ServiceUnavailable(ApplicationError):
    status = 503
    code = "service_unavailable"
    message = gettext_noop("The service is temporarily unavailable.")

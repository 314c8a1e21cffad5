"""``Idempotency-Key`` on every POST under ``/v1`` (README, "API decisions").

A middleware rather than a view mixin, so that no POST endpoint can go without it. The key is
scoped to the API key of the request (the key id in the token, read without a database query),
claimed before the view runs and given its answer after. The middleware answers by itself (a
replay, 409, 422, a bad header) only to a caller who passed authentication, so a stored answer
never reaches someone who merely knows a key id; otherwise the view authenticates as usual and
the claim is dropped if it refused the caller. A replay also needs the scopes the endpoint
required of the first request, held by the caller now, or it is ``insufficient_scope``.
"""

from collections.abc import Callable
from functools import partial

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request

from accounts.api.authentication import ApiKeyAuthentication
from accounts.keys import ParsedToken, parse_token
from accounts.services import ApiKeyPrincipal, parse_bearer
from hosting.api.exceptions import error_response
from hosting.api.middleware import API_PREFIX
from hosting.api.params import invalid_parameter
from hosting.api.permissions import require_scopes
from hosting.errors import ApplicationError, ValidationFailed
from idempotency.models import IdempotencyRecord
from idempotency.services import (
    RequestFingerprint,
    idempotency_complete,
    idempotency_release,
    idempotency_replay,
    idempotency_reserve,
)

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_MAX_LENGTH = 255
REPLAYED_HEADER = "Idempotent-Replayed"
# Headers that belong to the answer; the others (request id, rate limits) belong to each request.
STORED_HEADERS = ("Content-Type", "Location", "Allow")
# Refusals that come before the endpoint does anything and depend on the key's rights and budget
# at that moment: a retry is judged afresh (and can do no harm, since nothing happened).
UNSTORED_STATUSES = frozenset({401, 403, 429})


class IdempotencyMiddleware:
    """Sits innermost, so replays and refusals get the request id and rate-limit headers too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The method first: any other request passes without building ``request.headers``.
        if request.method != "POST" or not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        key = request.headers.get(IDEMPOTENCY_KEY_HEADER)
        if key is None:
            return self.get_response(request)
        token = _parsed_token(request)
        if token is None:
            # Authentication will refuse this request: there is nothing to claim or to keep.
            return self.get_response(request)
        try:
            fingerprint = _fingerprint(request, key)
            record, claimed = idempotency_reserve(
                api_key_id=token.key_id, key=key, fingerprint=fingerprint
            )
        except ApplicationError as error:
            return _answer_authenticated(request, partial(_refuse, error, request))
        if not claimed:
            return _answer_authenticated(
                request, partial(_replay, record=record, fingerprint=fingerprint, token=token)
            )
        return self._run_view(request, record, token)

    def _run_view(
        self, request: HttpRequest, record: IdempotencyRecord, token: ParsedToken
    ) -> HttpResponse:
        try:
            response = self.get_response(request)
        except BaseException:
            idempotency_release(record=record)
            raise
        if _keeps(request, response):
            idempotency_complete(
                record=record,
                token=token.token,
                status=response.status_code,
                headers={name: response[name] for name in STORED_HEADERS if name in response},
                body=response.content,
                # Noted by HasRequiredScopes; none when the answer came before it (a 404 path).
                required_scopes=getattr(request, "required_scopes", []),
            )
        else:
            idempotency_release(record=record)
        return response


def _parsed_token(request: HttpRequest) -> ParsedToken | None:
    try:
        return parse_token(parse_bearer(request.headers.get("Authorization", "")))
    except ApplicationError:
        return None


def _fingerprint(request: HttpRequest, key: str) -> RequestFingerprint:
    if not key:
        code = "blank"
    elif len(key) > IDEMPOTENCY_KEY_MAX_LENGTH:
        code = "max_length"
    elif not (key.isascii() and key.isprintable()):
        code = "invalid"
    else:
        code = None
    if code is not None:
        raise invalid_parameter(
            IDEMPOTENCY_KEY_HEADER,
            code,
            f"Header '{IDEMPOTENCY_KEY_HEADER}' must be 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} "
            "printable ASCII characters.",
        )
    try:
        body = request.body
    except RequestDataTooBig:
        raise ValidationFailed("The request body is too large.") from None
    return RequestFingerprint.of(method=request.method, path=request.get_full_path(), body=body)


def _answer_authenticated(
    request: HttpRequest, answer: Callable[[ApiKeyPrincipal], HttpResponse]
) -> HttpResponse:
    """Answer without the view, after the view's own authentication and rate limiting."""
    try:
        _, principal = ApiKeyAuthentication().authenticate(Request(request))
        return answer(principal)
    except ApplicationError as error:
        return error_response(error, request)


def _refuse(
    error: ApplicationError, request: HttpRequest, principal: ApiKeyPrincipal
) -> HttpResponse:
    return error_response(error, request)


def _replay(
    principal: ApiKeyPrincipal,
    *,
    record: IdempotencyRecord,
    fingerprint: RequestFingerprint,
    token: ParsedToken,
) -> HttpResponse:
    stored = idempotency_replay(record=record, fingerprint=fingerprint, token=token.token)
    # Judged by the caller's rights now, as the view would judge a new request: a key whose user
    # was demoted since must not get the first answer (a new key's token, say) again.
    require_scopes(required=stored.required_scopes, held=principal.scopes)
    response = HttpResponse(stored.body, status=stored.status, headers=stored.headers)
    response[REPLAYED_HEADER] = "true"
    return response


def _keeps(request: HttpRequest, response: HttpResponse) -> bool:
    """Keep answers to authenticated callers, except server errors and the refusals above."""
    return (
        isinstance(getattr(request, "auth", None), ApiKeyPrincipal)
        and response.status_code < 500
        and response.status_code not in UNSTORED_STATUSES
        and not response.streaming
    )

"""Bearer API key authentication, with rate limiting folded into the same step.

Rate limiting happens here rather than in a DRF throttle because throttles run after
authentication and permissions: failed attempts must be counted per client address (to slow
down guessing) and every authenticated answer, a 403 included, must count against the key.

With Redis, a request costs one round trip for both: the key lookup counts it in its key's
window (``api_key_authenticate``'s ``counter``). A cache miss counts it in a second trip.
"""

from django.conf import settings
from rest_framework.authentication import BaseAuthentication

from accounts.services import (
    ApiKeyPrincipal,
    api_key_authenticate,
    api_key_check_access,
    api_key_record_use,
)
from hosting.api.throttling import COUNTER_TTL, RateLimitExceeded, RateLimitWindow
from hosting.errors import ApplicationError
from hosting.http import WWW_AUTHENTICATE, client_ip


def key_bucket(key_id: str) -> str:
    """The rate-limit bucket of a key's requests."""
    return f"key:{key_id}"


class _KeyWindow:
    """The key's counter in this request's window (``KeyRequestCounter``)."""

    ttl = COUNTER_TTL

    def __init__(self, window: RateLimitWindow):
        self.window = window

    def shared_key(self, key_id: str) -> str | None:
        return self.window.shared_key(key_bucket(key_id))

    def uncount(self, key_id: str) -> None:
        self.window.unhit(key_bucket(key_id))


def _remember_rate_limit(request, exc_or_state) -> None:
    state = exc_or_state.state if isinstance(exc_or_state, RateLimitExceeded) else exc_or_state
    request._request.rate_limit = state


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request) -> tuple[object, ApiKeyPrincipal]:
        ip = client_ip(request)
        window = RateLimitWindow.current()
        principal = None
        try:
            principal = api_key_authenticate(
                header=request.META.get("HTTP_AUTHORIZATION", ""), counter=_KeyWindow(window)
            )
            api_key_check_access(principal=principal, ip=ip)
        except ApplicationError as error:
            if principal is not None and principal.counted is not None:
                window.unhit(key_bucket(principal.api_key.key_id))  # counted against the address
            if error.status in (401, 403):
                self._count_failure(request, ip, window)
            raise
        try:
            limit = principal.account.rate_limit_per_minute or settings.RATE_LIMIT_PER_MINUTE
            if principal.counted is not None:
                state = window.state(count=principal.counted, limit=limit, policy="default")
            else:
                state = window.hit(
                    bucket=key_bucket(principal.api_key.key_id), limit=limit, policy="default"
                )
        except RateLimitExceeded as exceeded:
            _remember_rate_limit(request, exceeded)
            raise
        _remember_rate_limit(request, state)
        api_key_record_use(api_key=principal.api_key, ip=ip)
        return principal.user, principal

    def _count_failure(self, request, ip: str, window: RateLimitWindow) -> None:
        """Count a refused request against its address; over the limit it becomes a 429."""
        try:
            state = window.hit(
                bucket=f"ip:{ip}", limit=settings.RATE_LIMIT_ANON_PER_MINUTE, policy="anonymous"
            )
        except RateLimitExceeded as exceeded:
            _remember_rate_limit(request, exceeded)
            raise
        _remember_rate_limit(request, state)

    def authenticate_header(self, request) -> str:
        return WWW_AUTHENTICATE

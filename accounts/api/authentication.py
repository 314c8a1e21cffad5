"""Bearer API key authentication, with rate limiting folded into the same step.

Rate limiting happens here rather than in a DRF throttle because throttles run after
authentication and permissions: failed attempts must be counted per client address (to slow
down guessing) and every authenticated answer, a 403 included, must count against the key.
"""

from django.conf import settings
from rest_framework.authentication import BaseAuthentication

from accounts.services import (
    ApiKeyPrincipal,
    api_key_authenticate,
    api_key_check_access,
    api_key_record_use,
)
from hosting.api.throttling import RateLimitExceeded, rate_limit_hit
from hosting.errors import ApplicationError
from hosting.http import WWW_AUTHENTICATE, client_ip


def _remember_rate_limit(request, exc_or_state) -> None:
    state = exc_or_state.state if isinstance(exc_or_state, RateLimitExceeded) else exc_or_state
    request._request.rate_limit = state


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request) -> tuple[object, ApiKeyPrincipal]:
        ip = client_ip(request)
        try:
            principal = api_key_authenticate(header=request.META.get("HTTP_AUTHORIZATION", ""))
            api_key_check_access(principal=principal, ip=ip)
        except ApplicationError as error:
            if error.status in (401, 403):
                self._count_failure(request, ip)
            raise
        try:
            limit = principal.account.rate_limit_per_minute or settings.RATE_LIMIT_PER_MINUTE
            state = rate_limit_hit(
                bucket=f"key:{principal.api_key.key_id}", limit=limit, policy="default"
            )
        except RateLimitExceeded as exceeded:
            _remember_rate_limit(request, exceeded)
            raise
        _remember_rate_limit(request, state)
        api_key_record_use(api_key=principal.api_key, ip=ip)
        return principal.user, principal

    def _count_failure(self, request, ip: str) -> None:
        """Count a refused request against its address; over the limit it becomes a 429."""
        try:
            state = rate_limit_hit(
                bucket=f"ip:{ip}", limit=settings.RATE_LIMIT_ANON_PER_MINUTE, policy="anonymous"
            )
        except RateLimitExceeded as exceeded:
            _remember_rate_limit(request, exceeded)
            raise
        _remember_rate_limit(request, state)

    def authenticate_header(self, request) -> str:
        return WWW_AUTHENTICATE

"""Bearer API key authentication, with rate limiting folded into the same step.

Rate limiting happens here rather than in a DRF throttle because throttles run after
authentication and permissions: failed attempts must be counted per client address (to slow
down guessing) and every authenticated answer, a 403 included, must count against the key.

With Redis, a request costs one round trip for both: the key lookup counts it in its key's
window (``api_key_authenticate``'s ``counter``). A cache miss counts it in a second trip.

A hot list does not even wait for that trip before its statement (``KeySpeculation``,
hosting/api/views.py's ``EnvelopeListMixin.dispatch``): the lookup is sent, the list is
answered for the key this process decoded last, and the lookup's answer is read after it. An
answer that is not that very entry (the key, its user, membership or account changed), or
puts the key over its limit, throws the answer away, and the request is answered again the
ordinary way with the lookup's answer (not asked twice: counted once).
"""

import dataclasses

from django.conf import settings
from rest_framework.authentication import BaseAuthentication

from accounts.services import (
    ApiKeyPrincipal,
    LookupAnswer,
    SentAuthentication,
    api_key_authenticate,
    api_key_authentication_sent,
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


def _limit(principal: ApiKeyPrincipal) -> int:
    return principal.account.rate_limit_per_minute or settings.RATE_LIMIT_PER_MINUTE


class KeySpeculation:
    """A request answered while its key's lookup is on its way (``ApiKeyAuthentication.
    speculate``): ``principal`` is the expected one; ``settle()`` reads the lookup's answer
    after the request was answered and tells whether that answer stands."""

    def __init__(
        self,
        request,
        sent: SentAuthentication,
        principal: ApiKeyPrincipal,
        window: RateLimitWindow,
        ip: str,
    ):
        self.request, self.sent, self.principal = request, sent, principal
        self.window, self.ip = window, ip
        self.answer: LookupAnswer | None = None

    def settle(self) -> bool:
        """True when the lookup confirms the expected principal and the request is within its
        key's limit: the limit's state is noted for the answer's headers and the key's use
        recorded, as ``ApiKeyAuthentication.authenticate`` does. False otherwise: the answer
        must be thrown away and the request answered again (``retry``)."""
        answer, same = self.sent.read()
        self.answer = answer
        if not same:
            return False
        counted = answer.counted
        if counted is None:
            # The script did not count it (a key made under an older pepper, whose digest it
            # cannot compare): counted now, in a second trip, as ``authenticate`` does.
            counted = self.window.count(key_bucket(self.principal.api_key.key_id))
            self.answer = dataclasses.replace(answer, counted=counted)
        try:
            state = self.window.state(count=counted, limit=_limit(self.principal), policy="default")
        except RateLimitExceeded:
            return False  # answered again: the 429 and its headers, the ordinary way
        self.request.rate_limit = state
        api_key_record_use(api_key=self.principal.api_key, ip=self.ip)
        return True

    def abandon(self) -> None:
        """Leave the lookup's answer unread: the request is not answered at all (its process
        is being stopped, say)."""
        self.sent.abandon()

    def retry(self, request) -> None:
        """Make ``request`` (Django's, put back as it was when this was made) authenticate
        again the ordinary way with the lookup's answer ``settle()`` read, in the same window:
        the request is not counted twice."""
        request.key_speculation = None
        request.key_lookup = (self.answer, self.window)


class ApiKeyAuthentication(BaseAuthentication):
    @staticmethod
    def speculate(request) -> KeySpeculation | None:
        """For a request (Django's) whose answer has no effect but itself (a list's ``GET``):
        send its key's lookup and give the principal to answer it with while the lookup is on
        its way (``KeySpeculation``, whose ``settle()`` must be called), or None to
        authenticate the ordinary way (no key seen here before, no shared cache, a key the
        expected entry refuses: then its answer is read now and kept for ``authenticate``)."""
        window = RateLimitWindow.current()
        sent = api_key_authentication_sent(
            header=request.META.get("HTTP_AUTHORIZATION", ""), counter=_KeyWindow(window)
        )
        if sent is None:
            return None
        ip = client_ip(request)
        try:
            principal = sent.principal()
        except ApplicationError as refusal:  # refused the ordinary way, with this refusal
            request.key_lookup = (sent.read(refusal=refusal)[0], window)
            return None
        try:
            api_key_check_access(principal=principal, ip=ip)
        except ApplicationError:
            request.key_lookup = (sent.read()[0], window)  # refused the ordinary way
            return None
        request.key_speculation = speculation = KeySpeculation(request, sent, principal, window, ip)
        return speculation

    def authenticate(self, request) -> tuple[object, ApiKeyPrincipal]:
        speculation = getattr(request._request, "key_speculation", None)
        if speculation is not None:
            return speculation.principal.user, speculation.principal
        answer: LookupAnswer | None = None
        window = RateLimitWindow.current()
        looked_up = getattr(request._request, "key_lookup", None)
        if looked_up is not None:
            answer, window = looked_up
        ip = client_ip(request)
        principal = None
        try:
            principal = api_key_authenticate(
                header=request.META.get("HTTP_AUTHORIZATION", ""),
                counter=_KeyWindow(window),
                answer=answer,
            )
            api_key_check_access(principal=principal, ip=ip)
        except ApplicationError as error:
            if principal is not None and principal.counted is not None:
                window.unhit(key_bucket(principal.api_key.key_id))  # counted against the address
            if error.status in (401, 403):
                self._count_failure(request, ip, window)
            raise
        try:
            limit = _limit(principal)
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

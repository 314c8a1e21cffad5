"""A lean stack for ``/v1``: the API's requests pass only the middleware an API request needs.

The dashboard's middleware (sessions, the signed-in user, messages, CSRF, allauth's, the
second-factor policy, sessions' last seen) has nothing to do on a Bearer request, yet each of
them runs on every request that reaches Django's one chain: sessions are opened, the user is
looked up lazily, message storage is built. ``hosting.wsgi`` therefore sends ``/v1`` to a
second handler whose chain is ``settings.API_MIDDLEWARE`` (request ids, security headers,
English, the API's errors, idempotency: every header an answer had before), and every other
path to the full ``settings.MIDDLEWARE``. The test suite's client dispatches the same way
(tests/conftest.py), so every API test runs through the lean stack.
"""

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.urls import ResolverMatch, get_resolver, set_urlconf

API_PREFIX = "/v1/"

# A path's route by resolver and path, for the routes that capture nothing (the lists, say),
# bounded: resolving walks the API's patterns on every request (3 % of a hot list's time).
_matches: dict[tuple, ResolverMatch] = {}
MATCHES_LIMIT = 1024


def is_api_path(path: str) -> bool:
    """Whether a request's path (``PATH_INFO``) is the API's."""
    return path.startswith(API_PREFIX) or path == "/v1"


class ApiMiddlewareMixin:
    """A handler whose middleware chain is ``settings.API_MIDDLEWARE``.

    Django's handler builds its chain from ``settings.MIDDLEWARE``; it is given the API's list
    for that one call (at start-up, before any request is served).
    """

    def load_middleware(self, is_async: bool = False) -> None:
        pages = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_MIDDLEWARE
        try:
            super().load_middleware(is_async)  # type: ignore[misc]
        finally:
            settings.MIDDLEWARE = pages

    def resolve_request(self, request) -> ResolverMatch:
        """As Django's handler resolves a request, a route that captures no value kept by its
        resolver (the urlconf's, so a changed urlconf is resolved again) and its path."""
        if hasattr(request, "urlconf"):
            set_urlconf(request.urlconf)
            resolver = get_resolver(request.urlconf)
        else:
            resolver = get_resolver()
        key = (resolver, request.path_info)
        match = _matches.get(key)
        if match is None:
            match = resolver.resolve(request.path_info)
            if not match.args and not match.kwargs:
                if len(_matches) >= MATCHES_LIMIT:
                    _matches.clear()
                _matches[key] = match
        request.resolver_match = match
        return match


class ApiWSGIHandler(ApiMiddlewareMixin, WSGIHandler):
    """The WSGI handler of ``/v1``."""


class Dispatcher:
    """One WSGI application: ``/v1`` to the API's handler, everything else to the pages'."""

    def __init__(self, pages, api):
        self.pages, self.api = pages, api

    def __call__(self, environ, start_response):
        if is_api_path(environ.get("PATH_INFO", "")):
            return self.api(environ, start_response)
        return self.pages(environ, start_response)

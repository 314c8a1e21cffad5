"""Each app's API routes, skipped at once by a request whose path they cannot match (issue 35).

Django resolves ``/v1/...`` by trying every app's routes in order, a regular expression each:
``/v1/invoices`` tried the accounts', servers', databases', events' and webhooks' routes first
(7 to 9 % of a list request's CPU, bench/README.md). ``app_routes(module)`` includes an app's
routes as ``path("", include(module))`` does, but its resolver first knows the literal first
segment of every route it holds (``servers`` for ``^servers/(?P<pk>[^/.]+)/$``) and answers
"no match" at once for a path whose first segment is none of them. A route whose first segment
is not a plain literal (a converter, a pattern, a flag) makes the app's routes always tried, so
what resolves, and in what order, is exactly what it was.
"""

import re

from django.urls import URLResolver
from django.urls.exceptions import Resolver404
from django.urls.resolvers import RegexPattern, RoutePattern

_LITERAL = re.compile(r"[A-Za-z0-9_-]+")


def _first_segment(pattern) -> str | None:
    """The literal first segment every path this pattern matches starts with (``""`` for a
    pattern matching the empty path only), or None when it has none or it cannot be told."""
    if isinstance(pattern, RoutePattern):
        text, end = str(pattern._route), ("/",)
    elif isinstance(pattern, RegexPattern):
        text = str(pattern._regex)
        if not text.startswith("^") or "|" in text:  # an alternative could start otherwise
            return None
        text, end = text[1:], ("/", "$")
    else:
        return None
    found = _LITERAL.match(text)
    literal = found.group(0) if found else ""
    rest = text[len(literal) :]
    if rest == "" and isinstance(pattern, RoutePattern):
        return literal if pattern._is_endpoint else None  # an include's "" prefix: look inside
    if not literal and rest.startswith(("$",)):
        return ""
    if literal and rest.startswith(end):
        return literal
    return None


def _segments(patterns) -> frozenset[str] | None:
    """The first segments of every route beneath ``patterns``; None if one cannot be told."""
    found: set[str] = set()
    for entry in patterns:
        first = _first_segment(entry.pattern)
        if first is not None:
            found.add(first)
        elif isinstance(entry, URLResolver) and str(entry.pattern) == "":
            inner = _segments(entry.url_patterns)
            if inner is None:
                return None
            found |= inner
        else:
            return None
    return frozenset(found)


class AppRoutesResolver(URLResolver):
    """``path("", include(module))`` that refuses at once the paths it cannot match."""

    _known: frozenset[str] | bool | None = False  # False: not read yet

    def resolve(self, path):
        if self._known is False:
            self._known = _segments(self.url_patterns)
        if self._known is not None and str(path).split("/", 1)[0] not in self._known:
            raise Resolver404({"tried": [], "path": path})
        return super().resolve(path)


def app_routes(urlconf_module: str) -> AppRoutesResolver:
    """An app's API routes under ``/v1`` (``hosting/api/urls.py``)."""
    return AppRoutesResolver(RoutePattern("", is_endpoint=False), urlconf_module)

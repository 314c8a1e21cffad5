"""Each app's API routes are skipped at once by a path they cannot match, and every path
resolves exactly as through Django's own includes (hosting/api/routing.py)."""

import re

import pytest
from django.urls import URLResolver, get_resolver
from django.urls.exceptions import Resolver404
from django.urls.resolvers import RoutePattern

from hosting.api import routing

pytestmark = pytest.mark.django_db


def _plain(resolver: URLResolver) -> URLResolver:
    """The same routes as Django's own include builds them."""
    return URLResolver(RoutePattern("", is_endpoint=False), resolver.urlconf_name)


def _paths() -> list[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = [re.sub(r"\{[^}]+\}", "x_1", path) for path in schema["paths"]]
    odd = ["/v1/", "/v1/nothing", "/v1/servers/", "/v1/servers.json", "/v1/servers/x/y/z/w"]
    return [path.removeprefix("/v1/") for path in paths + odd]


def _outcome(resolver, path):
    try:
        found = resolver.resolve(path)
    except Resolver404:
        return None
    return (found.func, found.args, found.kwargs, found.url_name)


def test_every_path_resolves_as_through_djangos_includes():
    v1 = next(p for p in get_resolver().url_patterns if str(p.pattern) == "v1/")
    apps = [p for p in v1.url_patterns if isinstance(p, routing.AppRoutesResolver)]
    assert len(apps) == 9
    paths = _paths()
    assert len(paths) > 200
    for app in apps:
        plain = _plain(app)
        for path in paths:
            assert _outcome(app, path) == _outcome(plain, path), (app.urlconf_name, path)
    # The first segments are known for every app: each path is tried against one app's routes.
    assert all(app._known for app in apps)
    tried = [sum(_outcome(app, path) is not None for app in apps) for path in paths]
    assert max(tried) == 1


@pytest.mark.parametrize(
    ("route", "first"),
    [
        (RoutePattern("servers", is_endpoint=True), "servers"),
        (RoutePattern("servers/<str:pk>/files", is_endpoint=True), "servers"),
        (RoutePattern("<str:pk>/files", is_endpoint=True), None),
        (RoutePattern("servers<int:n>", is_endpoint=True), None),
        (RoutePattern("", is_endpoint=False), None),
        (routing.RegexPattern(r"^servers/(?P<pk>[^/.]+)/$"), "servers"),
        (routing.RegexPattern(r"^servers\.(?P<format>[a-z]+)$"), None),
        (routing.RegexPattern(r"^servers/$|^bots/$"), None),
        (routing.RegexPattern(r"^(?i)servers/$"), None),
        (routing.RegexPattern(r"^$"), ""),
        (routing.RegexPattern(r"servers/$"), None),
    ],
)
def test_a_routes_first_segment_is_known_only_when_it_is_a_plain_literal(route, first):
    assert routing._first_segment(route) == first

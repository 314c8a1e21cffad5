"""Everything under ``/v1``: the docs, each app's ``api/urls.py``, and a JSON 404 for the rest."""

from django.urls import path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from hosting.api.routing import app_routes
from hosting.api.views import API_METHODS, api_not_found

urlpatterns = [
    path(
        "openapi.json",
        SpectacularJSONAPIView.as_view(http_method_names=API_METHODS),
        name="openapi",
    ),
    path(
        "docs",
        SpectacularSwaggerView.as_view(url_name="openapi", http_method_names=API_METHODS),
        name="api-docs",
    ),
    path(
        "redoc",
        SpectacularRedocView.as_view(url_name="openapi", http_method_names=API_METHODS),
        name="api-redoc",
    ),
    app_routes("accounts.api.urls"),
    app_routes("servers.api.urls"),
    app_routes("databases.api.urls"),
    app_routes("events.api.urls"),
    app_routes("webhooks.api.urls"),
    app_routes("billing.api.urls"),
    app_routes("stripe_gateway.api.urls"),
    app_routes("support.api.urls"),
    app_routes("analytics.api.urls"),
    re_path(r"^[\s\S]*$", api_not_found),  # any path, newlines included
]

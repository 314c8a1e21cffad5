"""Everything under ``/v1``: the docs, each app's ``api/urls.py``, and a JSON 404 for the rest."""

from django.urls import include, path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

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
    path("", include("accounts.api.urls")),
    path("", include("servers.api.urls")),
    path("", include("databases.api.urls")),
    path("", include("events.api.urls")),
    path("", include("webhooks.api.urls")),
    path("", include("billing.api.urls")),
    path("", include("stripe_gateway.api.urls")),
    path("", include("support.api.urls")),
    path("", include("analytics.api.urls")),
    re_path(r"^[\s\S]*$", api_not_found),  # any path, newlines included
]

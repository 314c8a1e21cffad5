"""Everything under ``/v1``: the docs, each app's ``api/urls.py``, and a JSON 404 for the rest."""

from django.urls import include, path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from hosting.api.views import api_not_found

urlpatterns = [
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="api-docs"),
    path("redoc", SpectacularRedocView.as_view(url_name="openapi"), name="api-redoc"),
    path("", include("accounts.api.urls")),
    path("", include("servers.api.urls")),
    path("", include("events.api.urls")),
    path("", include("webhooks.api.urls")),
    re_path(r"^.*$", api_not_found),
]

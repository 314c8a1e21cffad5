"""The service's URLs with the inbound-mail webhook mounted, as ANYMAIL_WEBHOOK_SECRET does."""

from django.urls import include, path

from hosting.urls import urlpatterns as service_urlpatterns

urlpatterns = [*service_urlpatterns, path("anymail/", include("anymail.urls"))]

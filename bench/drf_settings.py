"""Settings of the idiomatic DRF reference (``bench/drf_app.py``; not a test).

The service's own settings (database, apps, models, secrets), with what a project made by
``django-admin startproject`` and the DRF tutorial would have instead of ours: Django's default
middleware, DRF's own JSON renderer, no rate limiting.
"""

from hosting.settings import *  # noqa: F403

ROOT_URLCONF = "bench.drf_app"
WSGI_APPLICATION = "bench.drf_app.application"
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",  # the apps include allauth, which asks it
]
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_THROTTLE_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",  # the answer the service gives
}

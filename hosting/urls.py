from allauth.account import views as allauth_views
from django.conf import settings
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path, register_converter
from django.views.generic import RedirectView
from django.views.i18n import JavaScriptCatalog, set_language

from hosting.api.views import api_not_found
from hosting.dashboard.staff_home import StaffHomeView
from hosting.health import healthz
from hosting.ids import IdConverter

# Before the apps' URL modules are included: their dashboard paths take ``<id:...>``.
register_converter(IdConverter, "id")

urlpatterns = [
    path("v1/", include("hosting.api.urls")),
    re_path(r"^v1$", api_not_found),
    path("healthz", healthz, name="healthz"),
    # The sign-in pages' language picker (a cookie); signed in, Profile keeps the choice.
    path("i18n/setlang/", set_language, name="set_language"),
    # The dashboard scripts' own strings in the page's language (gettext() in static/js).
    path("i18n/js/", JavaScriptCatalog.as_view(), name="javascript_catalog"),
    # Browsers ask for /favicon.ico whatever the pages' <link rel="icon"> says.
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"))),
    path("admin/", admin.site.urls),
    # The staff home: queues, today's billing, the nodes' health (hosting/dashboard/staff_home.py).
    path("staff", StaffHomeView.as_view(), name="staff_home"),
    path("", include("accounts.urls")),
    # django-allauth's pages we use: the second factor at sign-in and its set-up, the sessions,
    # re-authentication. Not its sign-in, sign-up or password pages: ours stay the only ones
    # (their shared rate limits); its "account_login" leads to ours.
    path("auth/2fa/", include("allauth.mfa.urls")),
    path("auth/sessions/", include("allauth.usersessions.urls")),
    path("auth/reauthenticate/", allauth_views.reauthenticate, name="account_reauthenticate"),
    path("auth/logout/", allauth_views.logout, name="account_logout"),
    path("auth/login/", RedirectView.as_view(pattern_name="login"), name="account_login"),
    # Single sign-on: each configured provider's sign-in and callback, and the linked
    # identities under Profile → Security (accounts/sso_urls.py).
    path("auth/sso/", include("accounts.sso_urls")),
    path("", include("events.urls")),
    path("", include("servers.urls")),
    path("", include("databases.urls")),
    path("", include("webhooks.urls")),
    path("", include("billing.urls")),
    path("", include("stripe_gateway.urls")),
    path("", include("support.urls")),
    path("", include("analytics.urls")),
]

if settings.SUPPORT_INBOUND_WEBHOOK:
    # Mail into the desk through the configured provider's inbound webhook only (any other
    # provider's path is 404; support.apps connects the signal).
    urlpatterns.append(path("anymail/", include("support.inbound_urls")))

"""Single sign-on's routes under /auth/sso/: each provider's sign-in and callback, and the
linked identities (Profile → Security). allauth's own sign-in, sign-up and password pages stay
unserved: a provider not configured answers 404 here, like a page that does not exist."""

from functools import wraps

from allauth.socialaccount import views as social_views
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.discord import views as discord
from allauth.socialaccount.providers.github import views as github
from allauth.socialaccount.providers.google import views as google
from django.http import Http404
from django.urls import path

from accounts import sso


def _configured_only(view):
    @wraps(view)
    def guarded(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except SocialApp.DoesNotExist:
            raise Http404("No such sign-in provider.") from None

    return guarded


def _preset(slug: str, views, callback=None) -> list:
    return [
        path(f"{slug}/login/", _configured_only(views.oauth2_login), name=f"{slug}_login"),
        path(
            f"{slug}/login/callback/",
            _configured_only(callback or views.oauth2_callback),
            name=f"{slug}_callback",
        ),
    ]


urlpatterns = [
    # The presets first: the host's provider takes any other id (its app's provider_id).
    *_preset("discord", discord, sso.discord_callback),
    *_preset("github", github),
    *_preset("google", google),
    path("<str:provider_id>/login/", sso.oidc_login, name="openid_connect_login"),
    path("<str:provider_id>/login/callback/", sso.oidc_callback, name="openid_connect_callback"),
    path("connections/", social_views.connections, name="socialaccount_connections"),
]

"""``{% sso_buttons %}``: a "Sign in with …" button for each single sign-on provider the host
configured (none, and nothing is shown), on the dashboard's and admin's sign-in pages."""

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.providers.base import AuthProcess
from django import template

register = template.Library()


@register.inclusion_tag("accounts/includes/sso_buttons.html", takes_context=True)
def sso_buttons(context, next_url: str = "") -> dict:
    request = context["request"]
    providers = get_adapter().list_providers(request)
    return {
        "csrf_token": context.get("csrf_token"),
        "next": next_url,
        "process": AuthProcess.LOGIN,
        "providers": [
            {"name": provider.name, "id": provider.sub_id, "url": provider.get_login_url(request)}
            for provider in providers
        ],
    }


@register.simple_tag(takes_context=True)
def sso_available(context) -> bool:
    """Whether the host configured any single sign-on provider (Profile → Security)."""
    return bool(get_adapter().list_apps(context["request"]))

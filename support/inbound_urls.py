"""The second door for mail into the desk: the inbound webhook of the one provider configured
(``SUPPORT_INBOUND_PROVIDER``), mounted at ``/anymail/`` by hosting/urls.py when
``ANYMAIL_WEBHOOK_SECRET`` is set.

django-anymail's own URL module mounts every provider it knows, inbound and tracking; those of
a provider without its settings answer an anonymous POST with a server error. Only the
configured provider's inbound route is taken from it, so every other path is 404.
"""

from anymail import urls as anymail_urls
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern

app_name = "anymail"


def inbound_webhook_patterns(provider: str) -> list[URLPattern]:
    """django-anymail's inbound route(s) of ``provider`` (Mandrill has one combined webhook);
    an unknown provider stops the start-up with the names anymail knows."""
    wanted = {f"{provider}_inbound_webhook", "mandrill_webhook" if provider == "mandrill" else ""}
    found = [each for each in anymail_urls.urlpatterns if each.name in wanted]
    if not provider or not found:
        known = sorted(
            each.name.removesuffix("_inbound_webhook")
            for each in anymail_urls.urlpatterns
            if each.name.endswith("_inbound_webhook")
        )
        raise ImproperlyConfigured(
            f"SUPPORT_INBOUND_PROVIDER {provider!r} has no inbound webhook; one of: "
            f"{', '.join([*known, 'mandrill'])}."
        )
    return found


# Mounted only with a provider (the settings require one with the secret).
urlpatterns = (
    inbound_webhook_patterns(settings.SUPPORT_INBOUND_PROVIDER)
    if settings.SUPPORT_INBOUND_PROVIDER
    else []
)

"""Facts about an HTTP request, and answers, that every layer may need, without any app."""

from django.core.files import File
from django.http import FileResponse
from django.utils.cache import patch_cache_control
from rest_framework.settings import api_settings

# Sent with every 401 (CONTRACT §5).
WWW_AUTHENTICATE = 'Bearer realm="api"'


def client_ip(request) -> str:
    """The client address, honouring ``NUM_PROXIES`` trusted proxies: DRF's own rule (its
    throttles' ``get_ident``), read from ``META`` rather than through ``request.headers``,
    which builds a mapping of every header for the one it reads (1 % of a hot list's time)."""
    meta = request.META
    forwarded, remote = meta.get("HTTP_X_FORWARDED_FOR"), meta.get("REMOTE_ADDR")
    proxies = api_settings.NUM_PROXIES
    if proxies is not None:
        if proxies == 0 or forwarded is None:
            return remote
        addresses = forwarded.split(",")
        return addresses[-min(proxies, len(addresses))].strip()
    return "".join(forwarded.split()) if forwarded else remote


def download_response(file: File, *, filename: str, content_type: str) -> FileResponse:
    """A stored file someone uploaded, as a download: never shown inline (so no file can run as
    a page of the site), its type never guessed by the browser, kept by no cache. The caller
    has checked that the reader may have it."""
    response = FileResponse(
        file.open("rb"), as_attachment=True, filename=filename, content_type=content_type
    )
    response["X-Content-Type-Options"] = "nosniff"
    patch_cache_control(response, private=True, no_store=True)
    return response

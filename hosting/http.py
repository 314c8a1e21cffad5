"""Facts about an HTTP request that every layer may need, without any app."""

from rest_framework.throttling import BaseThrottle

# Sent with every 401 (CONTRACT §5).
WWW_AUTHENTICATE = 'Bearer realm="api"'


def client_ip(request) -> str:
    """The client address, honouring ``NUM_PROXIES`` trusted proxies (DRF's own rule)."""
    return BaseThrottle().get_ident(request)

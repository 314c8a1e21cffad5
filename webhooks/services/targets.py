"""Where webhook requests may go: an allowed scheme and a public address, checked at every
attempt against the addresses the host resolves to then (no DNS rebinding to the inside)."""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _


class UnsafeTarget(Exception):
    """The URL or the address it resolves to may not be sent to."""


class Unresolvable(UnsafeTarget):
    """The host does not resolve."""


def refused_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Private, loopback, link-local, multicast, reserved or otherwise not global."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def check_url(url: str) -> str:
    """The URL's host if it is an allowed scheme and host; raise ``UnsafeTarget`` otherwise."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port outside 0-65535
    except ValueError:
        raise UnsafeTarget(_("The URL is not valid (check its host and port).")) from None
    allowed = {"https", "http"} if settings.WEBHOOKS_ALLOW_HTTP else {"https"}
    if parts.scheme not in allowed:
        raise UnsafeTarget(
            _("Webhook URLs must use https://.")
            if not settings.WEBHOOKS_ALLOW_HTTP
            else _("Webhook URLs must use http:// or https://.")
        )
    if not parts.hostname or parts.username or parts.password:
        raise UnsafeTarget(_("The URL needs a host and must not carry credentials."))
    return parts.hostname


def resolve_target(url: str) -> tuple[str, list[str]]:
    """Resolve the host now (at every attempt) and refuse private and special addresses.

    Returns the host and its allowed addresses; the request is then sent to one of these very
    addresses, so a DNS answer cannot change between the check and the connection.
    """
    host = check_url(url)
    port = urlsplit(url).port or (443 if url.startswith("https") else 80)
    return host, public_addresses(host, port, allow_private=settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS)


def public_addresses(host: str, port: int, *, allow_private: bool = False) -> list[str]:
    """The addresses ``host`` resolves to now; ``Unresolvable`` when none, ``UnsafeTarget``
    when one is private, loopback or reserved (unless ``allow_private``). What webhooks and
    the file manager's fetch from a URL both send to."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise Unresolvable(_("The host %(host)s does not resolve.") % {"host": host}) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not allow_private:
        refused = [a for a in addresses if refused_address(ipaddress.ip_address(a))]
        if refused:
            raise UnsafeTarget(
                _("%(host)s resolves to %(address)s, a private, loopback or reserved address.")
                % {"host": host, "address": refused[0]}
            )
    return addresses

"""A file pulled from a URL into a server's folder by the agent itself (PROTOCOL.md "Files"),
so that a plugin or a mod goes from its site to the server without passing through the
customer's connection or the control plane.

The agent fetches what a customer names, from the node's network: the URL is checked here even
though the control plane checked it too, since a name may resolve elsewhere by now. Only http
and https, no user name or password in it, a host of AGENT_PULL_ALLOWED_HOSTS, and, unless
AGENT_PULL_ALLOW_PRIVATE, no address that is not public (loopback, private, link-local with the
clouds' metadata address, shared, multicast, reserved; IPv6 ones too, and IPv4 addresses
wrapped in IPv6). A host name is checked as resolved, by the connector's own resolver, so the
address connected to is the address checked; every redirect (at most five) is checked again.

The body is streamed to a hidden file beside the target, charged to the disk quota as it
arrives, and renamed into place whole (agent/archives.py ``NewFile``), never over an entry.
"""

import asyncio
import ipaddress
import re
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from agent.archives import NewFile
from agent.config import Config
from agent.errors import AgentError, ValidationFailed
from agent.files import ServerFiles, TooLarge, customer_path

MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK_BYTES = 1 << 20
MAX_URL_CHARACTERS = 4096
CONNECT_TIMEOUT_SECONDS = 30
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, RFC 6598
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# Forms of an IPv4 address that only some parsers read as one (2130706433, 0x7f.1, 127.1).
NUMERIC_HOST = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)

type Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class UrlRefused(ValidationFailed):
    """The URL, or an address its host resolves to, is not one the agent fetches."""


class PullFailed(AgentError):
    code = "pull_failed"
    status = 502


class PullTimedOut(AgentError):
    code = "pull_timeout"
    status = 504


def address_refusal(address: Address) -> str | None:
    """Why the agent does not connect to ``address``; None when it may (a public address)."""
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "an unspecified address"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and (address in NAT64 or address in IPV4_COMPATIBLE):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            reason = address_refusal(embedded)
            return f"{reason} in IPv6" if reason else None
        if address.is_site_local:
            return "a site-local address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address in SHARED:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None


def _host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    return any(
        host == name or (name.startswith("*.") and host.endswith(name[1:])) for name in allowed
    )


def check_url(url: str, *, allowed_hosts: tuple[str, ...] | None, allow_private: bool) -> str:
    """``url`` when the agent may fetch it (its host's addresses, for a name, are checked as
    resolved); else ``UrlRefused`` saying why."""
    if len(url) > MAX_URL_CHARACTERS:
        raise UrlRefused(f"url: at most {MAX_URL_CHARACTERS:,} characters.")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UrlRefused("url: only http:// and https:// addresses are pulled.")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("url: an address with a user name or password is refused.")
    host = (parts.hostname or "").rstrip(".")
    try:
        parts.port  # noqa: B018 - read for its check
    except ValueError:
        raise UrlRefused("url: the port is not a number from 1 to 65535.") from None
    if not host:
        raise UrlRefused("url: the address names no host.")
    if allowed_hosts is not None and not _host_allowed(host, allowed_hosts):
        raise UrlRefused(f"url: {host} is not among the hosts files may be pulled from.")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if NUMERIC_HOST.fullmatch(host):
            raise UrlRefused(f"url: {host} is not an address written in full.") from None
        return url
    reason = None if allow_private else address_refusal(address)
    if reason or getattr(address, "scope_id", None):
        raise UrlRefused(f"url: {host} is {reason or 'a scoped address'}.")
    return url


class VettedResolver(AbstractResolver):
    """The system's resolver, refusing a host any of whose addresses the agent does not
    connect to; the connector connects only to what this returns."""

    def __init__(self, *, allow_private: bool):
        self._resolver = ThreadedResolver()
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._resolver.resolve(host, port, family)
        if not self._allow_private:
            for item in found:
                reason = address_refusal(ipaddress.ip_address(item["host"]))
                if reason:
                    raise UrlRefused(f"url: {host} resolves to {item['host']}, {reason}.")
        return found

    async def close(self) -> None:
        await self._resolver.close()


async def _fetch(
    url: str,
    new: NewFile,
    in_pool: Callable[..., Any],
    *,
    config: Config,
) -> None:
    max_bytes = config.files_max_upload_bytes
    connector = aiohttp.TCPConnector(
        resolver=VettedResolver(allow_private=config.pull_allow_private), use_dns_cache=False
    )
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_SECONDS)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        for _hop in range(MAX_REDIRECTS + 1):
            async with session.get(url, allow_redirects=False) as response:
                if response.status in REDIRECTS:
                    location = response.headers.get("Location")
                    if not location:
                        raise PullFailed(f"{url} redirects nowhere (no Location).")
                    url = check_url(
                        urljoin(url, location),
                        allowed_hosts=config.pull_allowed_hosts,
                        allow_private=config.pull_allow_private,
                    )
                    continue
                if not 200 <= response.status < 300:
                    raise PullFailed(f"{url} answered HTTP {response.status}.")
                if response.content_length is not None and response.content_length > max_bytes:
                    raise TooLarge(f"A file pulled is at most {max_bytes:,} bytes.")
                buffer = bytearray()
                async for data in response.content.iter_chunked(CHUNK_BYTES):
                    if new.size + len(buffer) + len(data) > max_bytes:
                        raise TooLarge(f"A file pulled is at most {max_bytes:,} bytes.")
                    buffer += data
                    if len(buffer) >= CHUNK_BYTES:
                        await in_pool(new.write, bytes(buffer))
                        buffer.clear()
                if buffer:
                    await in_pool(new.write, bytes(buffer))
                return
    raise PullFailed(f"More than {MAX_REDIRECTS} redirects: the file was not pulled.")


async def pull(
    files: ServerFiles,
    pool: Any,
    *,
    url: str,
    path: str,
    config: Config,
) -> dict[str, Any]:
    """Fetch ``url`` into the new file ``path`` (never over an entry): ``{"path", "size",
    "version"}`` once it is all there, within AGENT_PULL_TIMEOUT_SECONDS."""
    relative = customer_path(path)
    check_url(url, allowed_hosts=config.pull_allowed_hosts, allow_private=config.pull_allow_private)
    loop = asyncio.get_running_loop()

    def in_pool(operation: Callable[..., Any], *args: Any) -> Any:
        return loop.run_in_executor(pool, lambda: files.run(operation, *args))

    new = await in_pool(NewFile, files, relative)
    try:
        async with asyncio.timeout(config.pull_timeout_seconds):
            await _fetch(url, new, in_pool, config=config)
        return await in_pool(new.finish, 0o644)
    except TimeoutError:
        raise PullTimedOut(
            f"The file did not arrive within {config.pull_timeout_seconds:g} seconds."
        ) from None
    except aiohttp.ClientError as error:
        raise PullFailed(f"The download broke off: {error or type(error).__name__}.") from None
    finally:
        await in_pool(new.close)

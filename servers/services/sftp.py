"""SFTP on the control plane's side: may this user use this server's files now, and where do
they connect (agent/PROTOCOL.md "SFTP").

The agent serves SFTP and asks here at every sign-in, and again every minute of a session
(``POST /v1/agent/sftp/auth``): nothing is cached, so a deleted key, a changed password, a
demoted member, a revoked grant or a suspended server is refused at the next question. The
rights are ``servers.services.permissions``' for that user (role and grant, as a key of theirs
with every scope would have): the ``sftp`` permission to sign in, and ``files.write`` to
change anything (``files.write``); an instance that is suspended or being deleted
has its files closed (``servers.services.files.CLOSED``), as through the API, and an account
that is suspended opens nothing, as its API keys are refused (403 ``account_suspended``).
"""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.cache import cache

from accounts.models import User
from accounts.selectors import role_in
from accounts.services import sftp_credential_check, sftp_login_of, sftp_user_for_login
from servers.drivers import DriverError
from servers.drivers.agent import agent_request
from servers.models import Bot, Instance, Node, Server
from servers.services.files import CLOSED
from servers.services.permissions import Caller, instance_permissions

READ, WRITE = "files.read", "files.write"
SHORT_ID_LENGTH = 8  # the agent's: <login>.<first 8 characters of the id after its prefix>
ADDRESS_CACHE_SECONDS = 300


@dataclass(frozen=True)
class SftpGrant:
    user_id: str
    permissions: list[str]


def instance_file_permissions(*, instance: Instance, user: User) -> list[str]:
    """What ``user`` may do with ``instance``'s files over SFTP now (the ``sftp`` permission,
    and ``files.write`` to change them): ``[]``, ``["files.read"]`` or both."""
    if instance.deleted_at is not None or instance.status in CLOSED:
        return []
    if instance.account.is_suspended or not user.is_active:
        return []
    caller = Caller(
        user=user, account_id=instance.account_id, role=role_in(account=instance.account, user=user)
    )
    permissions = instance_permissions(caller, instance)
    if "sftp" not in permissions:
        return []
    return [READ, WRITE] if WRITE in permissions else [READ]


def _instance_on_node(node: Node, server_id: str) -> Instance | None:
    models: dict[str, type[Server] | type[Bot]] = {"srv_": Server, "bot_": Bot}
    model = models.get(server_id[:4])
    if model is None:
        return None
    return (
        model.objects.select_related("account")
        .filter(pk=server_id, node=node, deleted_at=None)
        .first()
    )


def sftp_authenticate(
    *,
    node: Node,
    login: str,
    server_id: str,
    public_key: str | None = None,
    password: str | None = None,
) -> SftpGrant | None:
    """The agent's question: may ``login``, with this key or password, use the files of
    ``server_id`` on ``node``? A grant, or None for every kind of no (the answer never says
    which: an unknown login, a wrong key, another node's server and a refused role look alike).
    The endpoint counts the question against its rate limits first."""
    user = sftp_user_for_login(login)
    # Checked even for an unknown login, so that it answers no sooner than a wrong password.
    if not sftp_credential_check(user=user, public_key=public_key, password=password):
        return None
    assert user is not None  # a credential never matches no user
    instance = _instance_on_node(node, server_id)
    if instance is None:
        return None
    permissions = instance_file_permissions(instance=instance, user=user)
    if READ not in permissions:
        return None
    return SftpGrant(user_id=user.pk, permissions=permissions)


def node_sftp_address(node: Node) -> dict[str, Any] | None:
    """Where a node serves SFTP, as its agent says in ``GET /api/system`` (``sftp``): host,
    port and host key fingerprint; None when it serves none or cannot be asked. A wildcard
    listen address (``0.0.0.0``, ``::``) is served on the host the control plane reaches the
    agent at. Kept for a few minutes, not asked at every page."""
    key = f"sftp-address:{node.pk}"
    cached = cache.get(key)
    if cached is not None:
        return cached or None
    try:
        status, answer, _ = agent_request(node, "GET", "system", timeout=3)
    except DriverError:
        return None
    sftp = answer.get("sftp") if status == 200 and isinstance(answer, dict) else None
    address = _address(node, sftp) if isinstance(sftp, dict) else None
    cache.set(key, address or {}, ADDRESS_CACHE_SECONDS)
    return address


def _address(node: Node, sftp: dict[str, Any]) -> dict[str, Any] | None:
    listen = sftp.get("listen")
    if not isinstance(listen, str) or ":" not in listen:
        return None
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit():
        return None
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 - a listen address read, not bound
        host = urlsplit(node.agent_url).hostname or ""
    if not host:
        return None
    fingerprint = sftp.get("host_key_fingerprint")
    return {
        "host": host,
        "port": int(port),
        "host_key_fingerprint": fingerprint if isinstance(fingerprint, str) else "",
    }


def sftp_connection(*, instance: Instance, user: User) -> dict[str, Any] | None:
    """What the Files tab shows to connect with SFTP: host, port, the user name and the
    ``sftp`` command line; None when the instance's node serves no SFTP, or when the user
    could not sign in now (no role that reads files, a suspended account or server)."""
    if instance.node is None or READ not in instance_file_permissions(instance=instance, user=user):
        return None
    address = node_sftp_address(instance.node)
    if address is None:
        return None
    username = f"{sftp_login_of(user)}.{instance.pk[4 : 4 + SHORT_ID_LENGTH]}"
    host = f"[{address['host']}]" if ":" in address["host"] else address["host"]
    return {
        **address,
        "username": username,
        "command": f"sftp -P {address['port']} {username}@{host}",
    }

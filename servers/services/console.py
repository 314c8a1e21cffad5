"""Console access: a short-lived token for one user and one server's or bot's console."""

from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from hosting.errors import ApplicationError, InvalidState
from servers.models import Instance
from servers.models import ServerStatus as S
from servers.signing import console_token


class ConsoleUnavailable(ApplicationError):
    status, code = 409, "console_unavailable"
    message = gettext_noop("This server runs on no node, so it has no console.")


def socket_url(agent_url: str, instance_id: str) -> str:
    scheme, _, rest = agent_url.partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/api/servers/{instance_id}/ws"


def console_open(*, instance: Instance, user_id: Any, command: bool) -> dict[str, Any]:
    """``{"token", "socket_url", "expires_at", "can_command"}`` for the browser to open the
    console with.

    The token lets its holder read the console, and type into it when ``command`` (the
    ``console.command`` permission; the agent refuses input on a token without
    ``console.write``), for ``CONSOLE_TOKEN_SECONDS``; the page asks for a new one before it
    runs out. 409 ``console_unavailable`` for an
    instance on no node (the simulated driver), ``invalid_state`` while suspended or deleting.
    """
    if instance.node_id is None:
        raise ConsoleUnavailable(
            _("This server runs on no node (the simulated driver), so it has no console.")
            if instance.kind == "server"
            else _("This bot runs on no node (the simulated driver), so it has no console.")
        )
    if instance.status in {S.SUSPENDED, S.DELETING}:
        raise InvalidState(
            {
                (S.SUSPENDED, "server"): _("The console of a suspended server is closed."),
                (S.SUSPENDED, "bot"): _("The console of a suspended bot is closed."),
                (S.DELETING, "server"): _("The console of a deleting server is closed."),
                (S.DELETING, "bot"): _("The console of a deleting bot is closed."),
            }[(S(instance.status), instance.kind)],
            details={"status": instance.status, "allowed_actions": []},
        )
    token, expires = console_token(
        node_id=instance.node_id, instance_id=instance.pk, user_id=user_id, write=command
    )
    node = instance.node
    assert node is not None  # refused above when it has none
    return {
        "token": token,
        "socket_url": socket_url(node.agent_url, instance.pk),
        "expires_at": datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "can_command": command,
    }

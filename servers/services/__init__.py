"""Write-side operations on game servers, Discord bots and their actions.

Every status change goes through ``records.instance_status_set``, which refuses anything outside
``servers.transitions.EDGES`` and records exactly one ``<kind>.status_changed`` event in the same
transaction. The modules, lowest first: ``validation`` (settings and quotas), ``records`` (the
row lock, the status edge, events), ``actions`` (requests and the worker's half), ``instances``
(create and change). Other apps and the API use the names below.
"""

from servers.services.actions import (
    action_request,
    action_run,
    actions_recover_stale,
    instance_crash,
    instance_suspend,
    run_action,
)
from servers.services.instances import (
    NEEDS_RESTART,
    InstanceChanges,
    bot_create,
    instance_update,
    server_create,
)
from servers.services.validation import (
    DEFAULT_BOT_RESOURCES,
    DEFAULT_SERVER_RESOURCES,
    validate_variables,
)

__all__ = [
    "DEFAULT_BOT_RESOURCES",
    "DEFAULT_SERVER_RESOURCES",
    "NEEDS_RESTART",
    "InstanceChanges",
    "action_request",
    "action_run",
    "actions_recover_stale",
    "bot_create",
    "instance_crash",
    "instance_suspend",
    "instance_update",
    "run_action",
    "server_create",
    "validate_variables",
]

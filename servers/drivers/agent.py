"""The driver for servers and bots placed on a node: it calls the node's agent over HTTP.

Each call carries a one-minute token the control plane signs (``servers.signing``); the agent
answers errors as ``{"error": {"code", "message"}}`` with a sentence for the customer, which
becomes the ``DriverError``. Timeouts and an unreachable agent are ``DriverError``s too, so the
action fails (or a deletion is retried) exactly as with any other driver failure.
"""

from typing import Any

import httpx
from django.conf import settings

from servers.drivers import DriverError, DriverTimeout, ProvisioningDriver, Usage
from servers.drivers.spec import instance_spec
from servers.models import Instance, Node
from servers.signing import request_token

# Seconds added to a call that waits for the process (start, stop) on top of its own timeout.
GRACE_SECONDS = 15


def agent_call(
    node: Node, method: str, path: str, *, body: Any = None, timeout: float | None = None
) -> tuple[int, Any]:
    """``(status, answer)`` of one call to the node's agent; ``DriverError`` when unreachable."""
    status, answer, _ = agent_request(node, method, path, body=body, timeout=timeout)
    return status, answer


def agent_request(
    node: Node,
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
) -> tuple[int, Any, httpx.Headers]:
    """``(status, answer, headers)`` of one call to the node's agent, with extra request
    ``headers`` (``If-Match``); ``DriverError`` when unreachable."""
    url = f"{node.agent_url}/api/{path}"
    try:
        with httpx.Client(
            timeout=timeout or settings.AGENT_REQUEST_TIMEOUT_SECONDS, verify=True
        ) as client:
            response = client.request(
                method,
                url,
                json=body,
                headers={**(headers or {}), "Authorization": f"Bearer {request_token(node.id)}"},
            )
    except httpx.TimeoutException:
        raise DriverTimeout(
            f"The node {node.name} did not answer in time; try again in a moment."
        ) from None
    except httpx.HTTPError:
        raise DriverError(f"The node {node.name} cannot be reached right now.") from None
    try:
        answer = response.json() if response.content else None
    except ValueError:
        answer = None
    return response.status_code, answer, response.headers


def _error_message(node: Node, status: int, answer: Any) -> str:
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and message:
        return message[:500]
    if status == 401:
        return f"The node {node.name} refused the control plane's credentials."
    return f"The node {node.name} answered with an error ({status})."


class AgentDriver(ProvisioningDriver):
    name = "agent"

    def _node(self, instance: Instance) -> Node:
        node = instance.node
        if node is None:
            raise DriverError("It is not placed on a node.")
        return node

    def _call(self, instance: Instance, method: str, suffix: str = "", **kwargs) -> Any:
        node = self._node(instance)
        status, answer = agent_call(node, method, f"servers/{instance.pk}{suffix}", **kwargs)
        if status >= 400:
            raise DriverError(_error_message(node, status, answer))
        return answer

    def _wait_seconds(self, instance: Instance, key: str, default: int) -> float:
        template = instance_spec(instance)["template"]
        return float(template.get(key) or default) + GRACE_SECONDS

    def create(self, instance: Instance) -> str:
        self._call(instance, "PUT", body=instance_spec(instance))
        return instance.address

    def install(self, instance: Instance) -> None:
        # The spec again: variables may have changed since (a reinstall).
        self._call(instance, "PUT", body=instance_spec(instance))
        self._call(instance, "POST", "/install", timeout=settings.AGENT_INSTALL_TIMEOUT_SECONDS)

    def start(self, instance: Instance) -> None:
        self._call(instance, "PUT", body=instance_spec(instance))
        self._call(
            instance,
            "POST",
            "/start",
            timeout=self._wait_seconds(instance, "ready_timeout_seconds", 120),
        )

    def stop(self, instance: Instance) -> None:
        self._call(
            instance,
            "POST",
            "/stop",
            timeout=self._wait_seconds(instance, "stop_timeout_seconds", 30),
        )

    def kill(self, instance: Instance) -> None:
        self._call(instance, "POST", "/kill")

    def delete(self, instance: Instance) -> None:
        node = self._node(instance)
        status, answer = agent_call(node, "DELETE", f"servers/{instance.pk}")
        if status >= 400 and status != 404:  # already gone is what was asked
            raise DriverError(_error_message(node, status, answer))

    def status(self, instance: Instance) -> str:
        answer = self._call(instance, "GET")
        return "running" if answer.get("status") == "running" else "stopped"

    def usage(self, instance: Instance) -> Usage:
        usage = (self._call(instance, "GET") or {}).get("usage") or {}
        return Usage(
            cpu_percent=float(usage.get("cpu_percent") or 0.0),
            memory_mb=int(usage.get("memory_bytes") or 0) // 2**20,
            disk_mb=int(usage.get("disk_bytes") or 0) // 2**20,
            network_rx_bytes=int(usage.get("network_rx_bytes") or 0),
            network_tx_bytes=int(usage.get("network_tx_bytes") or 0),
        )

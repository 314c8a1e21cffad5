"""Provisioning drivers: how the control plane makes machines do things.

A driver is a class with the methods of ``ProvisioningDriver``; ``PROVISIONING_DRIVER`` in
settings names the one in use. The worker calls it from ``servers.services.action_run`` while
carrying out an action, outside any database transaction, so a call may take as long as the real
operation does. A method raises ``DriverError`` with a sentence for the customer when the
operation failed; the lifecycle table (``servers.transitions``) decides what status follows.

An instance placed on a node (``servers.services.nodes``) goes through the agent driver
(``servers.drivers.agent``), which calls that node's agent; the others go through
``PROVISIONING_DRIVER``, the simulated driver unless set (``servers.drivers.routing``).
Nothing in the API, the services or the dashboard depends on which.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

from servers.models import Instance


class DriverError(Exception):
    """The node could not do what was asked; the message is shown to the customer."""


class DriverTimeout(DriverError):
    """The node did not answer in time (it may still be doing what was asked)."""


@dataclass(frozen=True)
class Usage:
    cpu_percent: float
    memory_mb: int
    disk_mb: int
    network_rx_bytes: int
    network_tx_bytes: int


class ProvisioningDriver(ABC):
    name: str

    @abstractmethod
    def create(self, instance: Instance) -> str:
        """Reserve the machine and return the instance's address (``ip:port``, may be empty)."""

    @abstractmethod
    def install(self, instance: Instance) -> None:
        """Install the game or bot runtime and its files."""

    @abstractmethod
    def start(self, instance: Instance) -> None:
        """Start the process and return once it is up."""

    @abstractmethod
    def stop(self, instance: Instance) -> None:
        """Stop the process gracefully."""

    @abstractmethod
    def kill(self, instance: Instance) -> None:
        """Stop the process at once."""

    @abstractmethod
    def delete(self, instance: Instance) -> None:
        """Remove everything and free the address."""

    @abstractmethod
    def status(self, instance: Instance) -> str:
        """What the node says the process is doing: ``running`` or ``stopped``."""

    @abstractmethod
    def usage(self, instance: Instance) -> Usage:
        """Current resource use, for analytics."""


@cache
def get_driver() -> ProvisioningDriver:
    """The default driver, for instances that no node runs (``PROVISIONING_DRIVER``)."""
    return import_string(settings.PROVISIONING_DRIVER)()

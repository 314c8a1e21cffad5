"""Which driver carries out an action on an instance."""

from servers.drivers import ProvisioningDriver, get_driver
from servers.drivers.agent import AgentDriver
from servers.models import Instance


def driver_for(instance: Instance) -> ProvisioningDriver:
    """The agent driver for an instance placed on a node, else the default driver."""
    return AgentDriver() if instance.node_id is not None else get_driver()

"""A driver that simulates nodes, and says so: nothing is installed or run anywhere.

It walks the real lifecycle with ``SIMULATED_DRIVER_DELAY_SECONDS`` per step (zero in tests),
hands out addresses from the region's pool (documentation address ranges, never reachable), and
obeys ``instance.simulation``: ``{"fail_install": true}`` makes installs fail,
``{"fail_start": true}`` makes starts fail. Crashes are reported with
``manage.py simulate_crash <id>``, the way a real node agent would report one.
"""

import random
import time

from django.conf import settings

from servers.drivers import DriverError, ProvisioningDriver, Usage
from servers.models import Instance, Region, Server


def free_address(region: Region, default_port: int, taken: set[str]) -> str | None:
    """The first ``ip:port`` of the region's pool not in ``taken``: the game's port first."""
    ports = [default_port, *range(region.port_range_start, region.port_range_end + 1)]
    for port in ports:
        for ip in region.ip_addresses:
            if f"{ip}:{port}" not in taken:
                return f"{ip}:{port}"
    return None


class SimulatedDriver(ProvisioningDriver):
    name = "simulated"

    def _wait(self) -> None:
        if settings.SIMULATED_DRIVER_DELAY_SECONDS:
            time.sleep(settings.SIMULATED_DRIVER_DELAY_SECONDS)

    def create(self, instance: Instance) -> str:
        self._wait()
        if not isinstance(instance, Server):
            return ""  # bots only make outbound connections: no public address
        region = instance.region
        taken = set(
            Server.objects.filter(region=region, deleted_at=None)
            .exclude(address="")
            .exclude(pk=instance.pk)
            .values_list("address", flat=True)
        )
        address = free_address(region, instance.game.default_port, taken)
        if address is None:
            raise DriverError(f"The region {region.name} has no free address left.")
        return address

    def install(self, instance: Instance) -> None:
        self._wait()
        if instance.simulation.get("fail_install"):
            raise DriverError("The installation failed (simulated failure).")

    def start(self, instance: Instance) -> None:
        self._wait()
        if instance.simulation.get("fail_start"):
            raise DriverError("The process exited during start-up (simulated failure).")

    def stop(self, instance: Instance) -> None:
        self._wait()

    def kill(self, instance: Instance) -> None:
        pass

    def delete(self, instance: Instance) -> None:
        self._wait()

    def status(self, instance: Instance) -> str:
        return "running" if instance.status == "running" else "stopped"

    def usage(self, instance: Instance) -> Usage:
        rng = random.Random(instance.pk)  # noqa: S311 - made-up figures, stable per instance
        running = instance.status == "running"
        return Usage(
            cpu_percent=round(rng.uniform(5, 60), 1) if running else 0.0,
            memory_mb=int(instance.memory_mb * rng.uniform(0.3, 0.8)) if running else 0,
            disk_mb=int(instance.disk_mb * rng.uniform(0.1, 0.5)),
            network_rx_bytes=rng.randint(10**6, 10**9) if running else 0,
            network_tx_bytes=rng.randint(10**6, 10**9) if running else 0,
        )

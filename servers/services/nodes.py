"""Nodes and their allocation pools (staff), and placing new servers and bots on them.

A region with no node runs on the configured default driver (the simulated one in demos); once a
region has nodes, every new server and bot of it is placed on one of them, or refused with 409
``no_capacity``. Placement holds the row locks of the region's nodes, so two creates never take
the same port nor overbook a node; the unique allocation of a server backs this up.
"""

import ipaddress
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast
from urllib.parse import urlsplit

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.keys import current_pepper_id, digest_token, make_token, parse_token, token_matches
from events.services import changed_attributes, record_event
from hosting.changes import UNSET, Changes, Unset
from hosting.errors import Conflict, InvalidNodeToken, NoCapacity, NotFound, ValidationFailed
from servers.models import Allocation, Bot, Instance, Node, Region, Server
from servers.services.allocations import (
    allocations_take_named,
    free_count,
    port_offsets,
    primary_with_offsets,
    template_ports,
)

NODE_TOKEN_PREFIX = "hmn_"  # noqa: S105 - a public prefix, not a secret
MAX_PORTS_PER_CHANGE = 5000


def node_representation(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "name": node.name,
        "region": node.region_id,
        "agent_url": node.agent_url,
        "memory_mb": node.memory_mb,
        "disk_mb": node.disk_mb,
        "cpu_percent": node.cpu_percent,
        "maintenance": node.maintenance,
        "token_hint": node.token_hint,
    }


def _node_event(node: Node, event: str, actor: Actor, previous: dict | None = None) -> None:
    record_event(
        type=f"node.{event}",
        account=None,
        object_type="node",
        obj=node_representation(node),
        actor=actor,
        previous_attributes=previous,
    )


# --- Checking input ---------------------------------------------------------------------------


def _clean_name(value: Any, *, current: Node | None = None) -> str:
    if not isinstance(value, str) or not 0 < len(value.strip()) <= 100:
        raise ValidationFailed.field("name", "required", _("A name of 1 to 100 characters."))
    name = value.strip()
    taken = Node.objects.filter(name__iexact=name)
    if current is not None:
        taken = taken.exclude(pk=current.pk)
    if taken.exists():
        raise ValidationFailed.field(
            "name", "duplicate", _("A node named %(name)s exists already.") % {"name": name}
        )
    return name


def _clean_url(value: Any) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if (
        parts is None
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.path not in {"", "/"}
        or parts.query
        or parts.username
        or len(value) > 200
    ):
        raise ValidationFailed.field(
            "agent_url", "invalid", _("The agent's address as http(s)://host:port, nothing after.")
        )
    return value.rstrip("/")


def _clean_capacity(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationFailed.field(
            field,
            "out_of_range",
            # Translators: %(field)s is a field's name (memory_mb, disk_mb, cpu_percent).
            _("%(field)s must be %(low)s to %(high)s.")
            % {"field": field, "low": low, "high": high},
        )
    return value


def _clean_region(value: Any) -> Region:
    region = Region.objects.filter(slug=value).first() if isinstance(value, str) else None
    if region is None:
        raise ValidationFailed.field("region", "invalid_choice", _("Unknown region."))
    return region


CAPACITY_LIMITS = {
    "memory_mb": (256, 64 * 1024 * 1024),
    "disk_mb": (1024, 1024 * 1024 * 1024),
    "cpu_percent": (10, 100 * 256),
}


PORT_OR_RANGE = re.compile(r"(?P<low>[0-9]{1,5})(?:-(?P<high>[0-9]{1,5}))?", re.ASCII)


def parse_allocations(ip: Any, ports: Any) -> list[tuple[str, int]]:
    """``ip`` and ``"25565-25600, 27015"`` as ``(ip, port)`` pairs, or a field error."""
    try:
        address = str(ipaddress.ip_address(ip.strip())) if isinstance(ip, str) else None
    except ValueError:
        address = None
    if address is None:
        raise ValidationFailed.field("ip", "invalid", _("An IPv4 or IPv6 address."))
    if not isinstance(ports, str) or not ports.strip():
        raise ValidationFailed.field("ports", "required", _("Ports such as 25565-25600, 27015."))
    found: list[int] = []
    for part in ports.replace(" ", "").split(","):
        # ASCII digits only (``str.isdigit`` takes ``٢`` and ``²``), and a range has both ends.
        match = PORT_OR_RANGE.fullmatch(part)
        if match is None:
            raise ValidationFailed.field(
                "ports",
                "invalid",
                # Translators: %(part)s is what was typed, quoted.
                _("%(part)s is not a port or range such as 25565-25600.") % {"part": repr(part)},
            )
        first, last = int(match["low"]), int(match["high"] or match["low"])
        if not 1 <= first <= last <= 65535:
            raise ValidationFailed.field(
                "ports", "invalid", _("%(part)s is outside 1-65535.") % {"part": part}
            )
        found.extend(range(first, last + 1))
        if len(found) > MAX_PORTS_PER_CHANGE:
            raise ValidationFailed.field(
                "ports",
                "too_many",
                _("At most %(max)s ports at a time.") % {"max": MAX_PORTS_PER_CHANGE},
            )
    return [(address, port) for port in dict.fromkeys(found)]


# --- Staff changes -----------------------------------------------------------------------------


@transaction.atomic
def node_create(
    *,
    name: Any,
    region: Any,
    agent_url: Any,
    memory_mb: Any,
    disk_mb: Any,
    cpu_percent: Any,
    maintenance: bool = False,
    actor: Actor,
) -> tuple[Node, str]:
    """A new node and its token, which is returned this once and kept only as a digest."""
    token, key_id = make_token(NODE_TOKEN_PREFIX)
    pepper_id = current_pepper_id()
    node = Node.objects.create(
        name=_clean_name(name),
        region=_clean_region(region),
        agent_url=_clean_url(agent_url),
        memory_mb=_clean_capacity("memory_mb", memory_mb, *CAPACITY_LIMITS["memory_mb"]),
        disk_mb=_clean_capacity("disk_mb", disk_mb, *CAPACITY_LIMITS["disk_mb"]),
        cpu_percent=_clean_capacity("cpu_percent", cpu_percent, *CAPACITY_LIMITS["cpu_percent"]),
        maintenance=bool(maintenance),
        token_key_id=key_id,
        token_pepper_id=pepper_id,
        token_digest=cast(str, digest_token(token, pepper_id)),  # the current pepper: never None
    )
    _node_event(node, "created", actor)
    return node, token


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeChanges(Changes):
    """What one edit of a node sets (staff: the admin API, the admin site, the local node's
    seeding). The service checks each value: a node's name is unique, its agent's address is
    an http(s) origin, its capacity within ``CAPACITY_LIMITS`` and above what it runs."""

    name: str | Unset = UNSET
    agent_url: str | Unset = UNSET
    maintenance: bool | Unset = UNSET
    memory_mb: int | Unset = UNSET
    disk_mb: int | Unset = UNSET
    cpu_percent: int | Unset = UNSET


@transaction.atomic
def node_update(*, node: Node, changes: NodeChanges, actor: Actor) -> Node:
    """Change a node's name, agent address, capacity or maintenance mode.

    Capacity may not drop below what the node's servers and bots were given.
    """
    node = Node.objects.select_for_update().get(pk=node.pk)
    before = node_representation(node)
    if not isinstance(changes.name, Unset):
        node.name = _clean_name(changes.name, current=node)
    if not isinstance(changes.agent_url, Unset):
        node.agent_url = _clean_url(changes.agent_url)
    if not isinstance(changes.maintenance, Unset):
        node.maintenance = changes.maintenance
    used = node_usage(node)
    given = changes.given()
    for field, (low, high) in CAPACITY_LIMITS.items():
        if field in given:
            value = _clean_capacity(field, given[field], low, high)
            if field != "cpu_percent" and value < used[field]:
                raise ValidationFailed.field(
                    field,
                    "below_usage",
                    # Translators: %(used)s is the amount in the field's unit (MB or %).
                    _("Its servers and bots were given %(used)s already.") % {"used": used[field]},
                )
            setattr(node, field, value)
    # Only the columns this edit owns: the agent's hello writes others of the same row, and on a
    # database without row locks (SQLite) a whole-row save would undo a hello it raced with.
    node.save(update_fields=["name", "agent_url", "maintenance", *CAPACITY_LIMITS])
    previous = changed_attributes(before, node_representation(node))
    if previous:
        _node_event(node, "updated", actor, previous)
    return node


@transaction.atomic
def node_token_rotate(*, node: Node, actor: Actor) -> tuple[Node, str]:
    """A new token for the node; the old one stops working at once."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    token, key_id = make_token(NODE_TOKEN_PREFIX)
    node.token_key_id, node.token_pepper_id = key_id, current_pepper_id()
    node.token_digest = cast(str, digest_token(token, node.token_pepper_id))  # current pepper
    node.save(update_fields=["token_key_id", "token_pepper_id", "token_digest"])
    _node_event(node, "token_rotated", actor)
    return node, token


@transaction.atomic
def node_delete(*, node: Node, actor: Actor) -> None:
    """Remove a node that runs nothing any more (its allocations go with it)."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    live = sum(model.objects.filter(node=node, deleted_at=None).count() for model in (Server, Bot))
    if live:
        raise Conflict(
            _("The node still runs %(count)s servers and bots; move or delete them first.")
            % {"count": live},
            details={"instances": live},
        )
    _node_event(node, "deleted", actor)
    Server.objects.filter(node=node).update(node=None)
    Bot.objects.filter(node=node).update(node=None)
    node.delete()


@transaction.atomic
def node_allocations_add(*, node: Node, ip: Any, ports: Any, actor: Actor) -> int:
    """Add ``ip`` with ``ports`` (``"25565-25600, 27015"``) to the pool; returns how many were
    new (ones already there are left as they are)."""
    pairs = parse_allocations(ip, ports)
    node = Node.objects.select_for_update().get(pk=node.pk)
    existing = set(Allocation.objects.filter(node=node, ip=pairs[0][0]).values_list("ip", "port"))
    new = [
        Allocation(node=node, ip=ip, port=port) for ip, port in pairs if (ip, port) not in existing
    ]
    Allocation.objects.bulk_create(new)
    if new:
        _node_event(node, "allocations_added", actor)
    return len(new)


@transaction.atomic
def node_allocations_remove(*, node: Node, ip: Any, ports: Any, actor: Actor) -> int:
    """Remove free ``ip:ports`` from the pool; an allocation a server holds is refused."""
    pairs = parse_allocations(ip, ports)
    node = Node.objects.select_for_update().get(pk=node.pk)
    rows = Allocation.objects.filter(
        node=node, ip=pairs[0][0], port__in=[port for _ip, port in pairs]
    )
    held = list(rows.exclude(server=None).values_list("port", flat=True)[:10])
    if held:
        raise Conflict(
            _("Ports in use by servers cannot be removed: %(ports)s.")
            % {"ports": ", ".join(map(str, held))},
            details={"ports": held},
        )
    removed, _by_model = rows.delete()
    if removed:
        _node_event(node, "allocations_removed", actor)
    return removed


# --- Placement ---------------------------------------------------------------------------------


def node_usage(node: Node) -> dict[str, int]:
    """What the node's live servers and bots were given: memory, disk and CPU."""
    totals = {"memory_mb": 0, "disk_mb": 0, "cpu_percent": 0}
    for model in (Server, Bot):
        sums = model.objects.filter(node=node, deleted_at=None).aggregate(
            memory_mb=Sum("memory_mb"), disk_mb=Sum("disk_mb"), cpu_percent=Sum("cpu_percent")
        )
        for field in totals:
            totals[field] += sums[field] or 0
    return totals


def region_has_nodes(region: Region) -> bool:
    return Node.objects.filter(region=region).exists()


def instance_place(instance: Instance, *, preferred_port: int | None = None) -> None:
    """Put a new server or bot on a node of its region with room, in the caller's transaction.

    Nothing happens in a region without nodes. Of the nodes with enough free memory and disk
    (and, for a server, a free allocation), the one with the most free memory is taken: load is
    spread rather than packed. A server takes the game's port where it is free on that node,
    else the lowest free port, as its primary allocation, and one more for each port its game's
    template names (servers.services.allocations); when some of those are at an ``offset`` of the
    game port, only a primary whose port + offset is free for each of them (a node without one
    is passed over). Raises ``NoCapacity`` when no node has room.
    """
    region = instance.region
    # Locks every node of the region, in one order: creates in a region are placed one at a time.
    nodes = list(Node.objects.select_for_update().filter(region=region).order_by("id"))
    if not nodes:
        return
    candidates = []
    for node in nodes:
        if node.maintenance:
            continue
        used = node_usage(node)
        free_memory = node.memory_mb - used["memory_mb"]
        if free_memory < instance.memory_mb or node.disk_mb - used["disk_mb"] < instance.disk_mb:
            continue
        candidates.append((-free_memory, node.id, node))
    for _free, _id, node in sorted(candidates, key=lambda row: row[:2]):
        if not isinstance(instance, Server):
            instance.node = node
            instance.save(update_fields=["node", "updated_at"])
            return
        template = instance.game.template
        free = Allocation.objects.select_for_update().filter(node=node, server=None)
        if port_offsets(template):
            allocation = primary_with_offsets(node.id, template, preferred_port)
        else:
            allocation = None
            if preferred_port is not None:
                allocation = free.filter(port=preferred_port).order_by("ip").first()
            allocation = allocation or free.order_by("port", "ip").first()
        if allocation is None:
            continue
        # The game's named ports come from the same node and address as its primary.
        if free_count(node.id, allocation.ip) < 1 + len(template_ports(template)):
            continue
        instance.node = node
        instance.address = allocation.address
        instance.save(update_fields=["node", "address", "updated_at"])
        allocation.server = instance
        allocation.is_primary = True
        allocation.assigned_at = timezone.now()
        allocation.save(update_fields=["server", "is_primary", "assigned_at"])
        allocations_take_named(instance, allocation)
        return
    if all(node.maintenance for node in nodes):
        message = _(
            # Translators: %(region)s is a region's name.
            "No room in %(region)s: every node of the region is in maintenance. Try a smaller "
            "size or another region."
        )
    elif isinstance(instance, Server):
        message = _(
            # Translators: %(region)s is a region's name.
            "No room in %(region)s: no node of the region has that much free memory and disk "
            "and a free port. Try a smaller size or another region."
        )
    else:
        message = _(
            # Translators: %(region)s is a region's name.
            "No room in %(region)s: no node of the region has that much free memory and disk. "
            "Try a smaller size or another region."
        )
    raise NoCapacity(
        message % {"region": region.name},
        details={
            "region": region.slug,
            "memory_mb": instance.memory_mb,
            "disk_mb": instance.disk_mb,
        },
    )


def instance_resize_check(instance: Instance, *, memory_mb: int, disk_mb: int) -> None:
    """Refuse growing a placed server or bot beyond what its node has left (409)."""
    if instance.node_id is None:
        return
    node = Node.objects.select_for_update().get(pk=instance.node_id)
    used = node_usage(node)
    if (
        used["memory_mb"] - instance.memory_mb + memory_mb > node.memory_mb
        or used["disk_mb"] - instance.disk_mb + disk_mb > node.disk_mb
    ):
        raise NoCapacity(
            _("Its node has no room to grow it to %(memory)s MB memory and %(disk)s MB disk.")
            % {"memory": memory_mb, "disk": disk_mb},
            details={"memory_mb": memory_mb, "disk_mb": disk_mb},
        )


def instance_release(instance: Instance) -> None:
    """Free a deleted server's allocations (in the caller's transaction)."""
    if isinstance(instance, Server):
        Allocation.objects.filter(server=instance).update(
            server=None, is_primary=False, note="", assigned_at=None
        )


# --- The agent's own calls ---------------------------------------------------------------------


def node_authenticate(header: str) -> Node:
    """The node whose token is in ``Authorization: Bearer hmn_…``; 401 ``invalid_token``."""
    scheme, _space, token = header.partition(" ")
    parsed = parse_token(token.strip(), NODE_TOKEN_PREFIX) if scheme == "Bearer" else None
    node = Node.objects.filter(token_key_id=parsed.key_id).first() if parsed else None
    if not token_matches(
        token.strip(),
        digest=node.token_digest if node else None,
        pepper_id=node.token_pepper_id if node else None,
    ):
        raise InvalidNodeToken()
    assert node is not None  # token_matches refuses a missing digest
    _seen_now(node)
    return node


# How stale ``Node.last_seen_at`` may get before an agent's call writes it again: one write a
# minute at most per node, whatever the number of calls (samples, events, SFTP sign-ins).
LAST_SEEN_EVERY = timedelta(minutes=1)


def _seen_now(node: Node) -> None:
    """Each call of a node's agent is a sign of life (the staff home's nodes panel): its last
    contact moves on, at most once a minute. A node that never said hello stays so."""
    now = timezone.now()
    if node.last_seen_at is not None and now - node.last_seen_at >= LAST_SEEN_EVERY:
        Node.objects.filter(pk=node.pk).update(last_seen_at=now)
        node.last_seen_at = now


def node_seen(node: Node, *, boot_id: str, version: str, limits: str, isolation: str) -> Node:
    """Record that the node's agent said hello (on start and reconnect): what it is and how it
    limits and isolates its tenants (``isolation`` blank when it did not say)."""
    node.boot_id, node.agent_version, node.agent_limits = boot_id[:64], version[:32], limits[:16]
    node.agent_isolation = isolation
    node.last_seen_at = timezone.now()
    node.save(
        update_fields=[
            "boot_id",
            "agent_version",
            "agent_limits",
            "agent_isolation",
            "last_seen_at",
        ]
    )
    return node


def node_of(node_id: str) -> Node:
    node = Node.objects.filter(pk=node_id).first()
    if node is None:
        raise NotFound()
    return node


def bot_source_for_node(*, node: Node, bot_id: str) -> Bot:
    """A bot on ``node`` with an uploaded archive; 404 for any other."""
    bot = Bot.objects.filter(pk=bot_id, node=node, deleted_at=None, source_type="upload").first()
    if bot is None or not bot.source_archive:
        raise NotFound("No uploaded code for that bot on this node.")
    return bot

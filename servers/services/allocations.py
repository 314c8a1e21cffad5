"""A server's allocations (issue 32): its primary ``ip:port`` and the additional ones.

A server holds its primary allocation from the moment it is placed (its ``address``), and as many
more as its plan allows (``allocation_limit``, the primary included), all on its own node: the
customer adds one (the lowest free port, or the port asked for when it is free), picks another as
primary, writes a note on each and removes the additional ones. The game's template may name extra
ports (``ports``: ``[{"name": "query", "protocol": "udp", …}]``); those are taken when the server
is placed, and each named port is the additional allocation in that position (in the order they
were taken), which the start and install scripts read as ``{{PORT_QUERY}}``.
Every change is an event (``server.allocation_added``, ``…_updated``, ``…_removed``).
"""

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.actors import Actor
from events.services import changed_attributes, record_event
from hosting.changes import UNSET, Unset
from hosting.errors import ApplicationError, Conflict, NoCapacity, NotFound, ValidationFailed
from hosting.representations import timestamp
from servers.models import Allocation, Server
from servers.services.records import instance_locked

NOTE_MAX = 200


class AllocationLimitReached(ApplicationError):
    status, code = 409, "allocation_limit_reached"
    message = "This server holds as many allocations as its plan allows."


class PortUnavailable(ApplicationError):
    status, code = 409, "port_unavailable"
    message = "That port is not free on this server's node."


class PrimaryAllocation(ApplicationError):
    status, code = 409, "primary_allocation"
    message = "The primary allocation cannot be removed; make another one primary first."


def template_ports(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The extra ports a game's template names (``ports``), in order; none when it names none
    (such a game listens on fixed offsets from its one port, as before)."""
    ports = template.get("ports") or []
    return [port for port in ports if isinstance(port, dict)]


def port_variable(name: str) -> str:
    """The variable a named port is given to the scripts by: ``query`` -> ``PORT_QUERY``."""
    return f"PORT_{name.upper()}"


def allocation_limit(server: Server) -> int:
    """How many allocations the server may hold, its primary included: its plan's (1 without a
    plan), and never fewer than its game needs (the primary and each port it names)."""
    plan_limit = (server.plan or {}).get("allocation_limit", 1)
    return max(plan_limit, 1 + len(template_ports(server.game.template)))


def allocations_of(server: Server) -> QuerySet[Allocation]:
    """The server's allocations: its primary first, then the additional ones in the order they
    were taken (the order the template's named ports are assigned in)."""
    return Allocation.objects.filter(server=server).order_by("-is_primary", "assigned_at", "id")


def allocation_names(server: Server, allocations: list[Allocation]) -> dict[int, str]:
    """Each allocation's name: ``game`` for the primary, then the template's named ports given
    to the additional allocations in order; an allocation beyond them has none."""
    names = iter(port.get("name", "") for port in template_ports(server.game.template))
    shown: dict[int, str] = {}
    for allocation in allocations:
        shown[allocation.pk] = "game" if allocation.is_primary else next(names, "")
    return shown


def allocation_representation(allocation: Allocation, name: str = "") -> dict[str, Any]:
    """An allocation as the API shows it and its events carry it."""
    return {
        "id": allocation.public_id,
        "server_id": allocation.server_id,
        "ip": allocation.ip,
        "port": allocation.port,
        "address": allocation.address,
        "is_primary": allocation.is_primary,
        "name": name,
        "note": allocation.note,
        "assigned_at": timestamp(allocation.assigned_at) if allocation.assigned_at else None,
    }


def allocation_of(server: Server, allocation_id: str) -> Allocation:
    """One of the server's allocations by its ``alloc_…`` id; 404 otherwise."""
    allocation = Allocation.objects.filter(server=server, public_id=allocation_id).first()
    if allocation is None:
        raise NotFound("No such allocation on this server.")
    return allocation


def _record(
    server: Server, allocation: Allocation, change: str, actor: Actor, **kwargs: Any
) -> None:
    names = allocation_names(server, list(allocations_of(server)))
    record_event(
        type=f"server.allocation_{change}",
        account=server.account,
        object_type="allocation",
        obj=allocation_representation(allocation, names.get(allocation.pk, "")),
        actor=actor,
        related_id=server.id,
        **kwargs,
    )


def _free_on(node_id: str | None) -> QuerySet[Allocation]:
    return Allocation.objects.select_for_update().filter(node_id=node_id, server=None)


def allocations_take_named(server: Server, primary: Allocation) -> None:
    """Give a server just placed the additional allocations its game's named ports need, the
    ports right after its primary first (where a game used to listen on fixed offsets), in the
    caller's transaction. Raises ``NoCapacity`` when its node has too few free ones."""
    needed = len(template_ports(server.game.template))
    if not needed:
        return
    free = _free_on(primary.node_id).filter(ip=primary.ip)
    taken = list(free.filter(port__gt=primary.port).order_by("port")[:needed])
    if len(taken) < needed:
        chosen = {item.pk for item in taken}
        rest = free.exclude(pk__in=chosen).order_by("port")[: needed - len(taken)]
        taken += list(rest)
    if len(taken) < needed:
        raise NoCapacity(
            f"Its node has too few free ports for the {needed} extra ports its game needs.",
            details={"ports": needed},
        )
    now = timezone.now()
    for position, allocation in enumerate(taken):
        allocation.server = server
        # A microsecond apart, so that they keep the order the template names the ports in.
        allocation.assigned_at = now + timedelta(microseconds=position + 1)
        allocation.save(update_fields=["server", "assigned_at"])


def free_count(node_id: str | None, ip: str) -> int:
    """Free allocations of a node on one address (placement asks before it takes a primary)."""
    return Allocation.objects.filter(node_id=node_id, ip=ip, server=None).count()


def allocation_add(
    *, server: Server, actor: Actor, port: int | None = None, note: str = ""
) -> Allocation:
    """Give the server one more allocation of its node: ``port`` when it is free there (409
    ``port_unavailable`` otherwise), else the lowest free port, the primary's address first.
    409 ``allocation_limit_reached`` when it holds as many as its plan allows, ``no_capacity``
    when its node has none free, ``invalid_state`` before it is placed."""
    note = _note(note)
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise ValidationFailed.field("port", "invalid", "port must be a whole number.")
    with transaction.atomic():
        server = instance_locked(server)
        if server.node_id is None:
            raise Conflict("This server is not on a node yet; allocations come with its node.")
        held = Allocation.objects.filter(server=server)
        limit = allocation_limit(server)
        if held.count() >= limit:
            raise AllocationLimitReached(
                f"This server holds {limit} allocations, as many as its plan allows; "
                "remove one first.",
                details={"limit": limit},
            )
        primary = held.filter(is_primary=True).first()
        free = _free_on(server.node_id)
        if port is not None:
            allocation = None
            if primary is not None:
                allocation = free.filter(port=port, ip=primary.ip).first()
            allocation = allocation or free.filter(port=port).order_by("ip").first()
            if allocation is None:
                raise PortUnavailable(
                    f"Port {port} is not free on this server's node.", details={"port": port}
                )
        else:
            allocation = None
            if primary is not None:
                allocation = free.filter(ip=primary.ip).order_by("port").first()
            allocation = allocation or free.order_by("port", "ip").first()
            if allocation is None:
                raise NoCapacity("This server's node has no free port left.")
        allocation.server = server
        allocation.note = note
        allocation.assigned_at = timezone.now()
        allocation.save(update_fields=["server", "note", "assigned_at"])
        _record(server, allocation, "added", actor)
    return allocation


def allocation_update(
    *,
    allocation: Allocation,
    actor: Actor,
    note: str | Unset = UNSET,
    is_primary: bool | Unset = UNSET,
) -> Allocation:
    """Change an allocation's ``note``, or make it the server's primary (``is_primary``: true;
    the old primary becomes an additional one and the server's address changes with it, from
    its next start). ``is_primary: false`` says what an additional one is already (nothing
    changes); on the primary it is 409 ``primary_allocation``: a primary is unset only by making
    another one primary."""
    with transaction.atomic():
        server = instance_locked(_held_by(allocation))
        allocation = Allocation.objects.select_for_update().get(pk=allocation.pk, server=server)
        if is_primary is False and allocation.is_primary:
            raise PrimaryAllocation(
                "A server always has a primary allocation: make another one primary instead."
            )
        before = allocation_representation(allocation)
        if not isinstance(note, Unset):
            allocation.note = _note(note)
            allocation.save(update_fields=["note"])
        if is_primary is True and not allocation.is_primary:
            old = Allocation.objects.select_for_update().filter(server=server, is_primary=True)
            now = timezone.now()
            # The old primary takes the place the new one had among the additional ones.
            old.update(is_primary=False, assigned_at=allocation.assigned_at or now)
            allocation.is_primary = True
            allocation.save(update_fields=["is_primary"])
            server.address = allocation.address
            server.save(update_fields=["address", "updated_at"])
        previous = changed_attributes(before, allocation_representation(allocation))
        if previous:
            _record(server, allocation, "updated", actor, previous_attributes=previous)
    return allocation


def allocation_remove(*, allocation: Allocation, actor: Actor) -> None:
    """Give an additional allocation back to its node's pool; the primary never (409
    ``primary_allocation``)."""
    with transaction.atomic():
        server = instance_locked(_held_by(allocation))
        allocation = Allocation.objects.select_for_update().get(pk=allocation.pk, server=server)
        if allocation.is_primary:
            raise PrimaryAllocation()
        _record(server, allocation, "removed", actor)
        allocation.server = None
        allocation.note = ""
        allocation.assigned_at = None
        allocation.save(update_fields=["server", "note", "assigned_at"])


def _held_by(allocation: Allocation) -> Server:
    """The server holding ``allocation`` (``allocation_of`` found it through it); 404 once it
    gave it back."""
    if allocation.server is None:
        raise NotFound("No such allocation on this server.")
    return allocation.server


def _note(note: Any) -> str:
    if not isinstance(note, str):
        raise ValidationFailed.field("note", "invalid", "note must be text.")
    note = note.strip()
    if len(note) > NOTE_MAX:
        raise ValidationFailed.field(
            "note", "max_length", f"note takes at most {NOTE_MAX} characters."
        )
    return note

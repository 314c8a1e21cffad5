"""A server's allocations (issue 32): its primary ``ip:port`` and the additional ones.

A server holds its primary allocation from the moment it is placed (its ``address``), and as many
more as its plan allows (``allocation_limit``, the primary included), all on its own node: the
customer adds one (the lowest free port, or the port asked for when it is free), picks another as
primary, writes a note on each and removes the additional ones. The game's template may name extra
ports (``ports``: ``[{"name": "query", "protocol": "udp", …}]``); those are taken when the server
is placed, and each named port is the additional allocation in that position (in the order they
were taken), which the start and install scripts read as ``{{PORT_QUERY}}``. A named port with an
``offset`` is one the game opens itself on its game port + offset (Valheim's query on + 1): the
server holds exactly that ``ip:port``, from placement on, and no change of its allocations undoes
that (409 ``derived_ports``).
Every change is an event (``server.allocation_added``, ``…_updated``, ``…_removed``).
"""

from collections import Counter
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

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
    message = gettext_noop("This server holds as many allocations as its plan allows.")


class PortUnavailable(ApplicationError):
    status, code = 409, "port_unavailable"
    message = gettext_noop("That port is not free on this server's node.")


class PrimaryAllocation(ApplicationError):
    status, code = 409, "primary_allocation"
    message = gettext_noop(
        "The primary allocation cannot be removed; make another one primary first."
    )


class DerivedPorts(ApplicationError):
    status, code = 409, "derived_ports"
    message = gettext_noop("Its game opens some of its ports itself on its game port + an offset.")


def template_ports(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The extra ports a game's template names (``ports``), in order; none when it names none
    (such a game listens on fixed offsets from its one port, as before)."""
    ports = template.get("ports") or []
    return [port for port in ports if isinstance(port, dict)]


def port_offsets(template: dict[str, Any]) -> dict[str, int]:
    """The named ports the game opens itself on its game port + ``offset``, by name."""
    return {
        port["name"]: port["offset"]
        for port in template_ports(template)
        if isinstance(port.get("name"), str)
        and isinstance(port.get("offset"), int)
        and not isinstance(port["offset"], bool)
    }


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
        raise NotFound(_("No such allocation on this server."))
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


def primary_with_offsets(
    node_id: str | None, template: dict[str, Any], preferred_port: int | None = None
) -> Allocation | None:
    """A free allocation of the node to be the primary of a server of a game with offset ports:
    its ``ip:port + offset`` free for each of them, and as many free on its address as the game
    needs in all; the game's port first, else the lowest. It and its offset ports are locked in
    the caller's transaction (placement then takes them); None when the node has no such set."""
    offsets = list(port_offsets(template).values())
    needed = 1 + len(template_ports(template))
    free = set(Allocation.objects.filter(node_id=node_id, server=None).values_list("ip", "port"))
    per_ip = Counter(ip for ip, _port in free)
    candidates = sorted(
        (
            (port != preferred_port, port, ip)
            for ip, port in free
            if per_ip[ip] >= needed and all((ip, port + offset) in free for offset in offsets)
        ),
    )
    for _share, port, ip in candidates:
        wanted = [port] + [port + offset for offset in offsets]
        # Locked, and read again: a customer's allocation_add may have taken one meanwhile.
        locked = list(_free_on(node_id).filter(ip=ip, port__in=wanted))
        if len(locked) == len(wanted):
            return next(item for item in locked if item.port == port)
    return None


def allocations_take_named(server: Server, primary: Allocation) -> None:
    """Give a server just placed the additional allocations its game's named ports need, in the
    caller's transaction: a port with an ``offset`` exactly the primary's port + offset (placement
    chose a primary where they are free: ``primary_with_offsets``), the others the ports right
    after its primary first, else the lowest free. Raises ``NoCapacity`` when its node has too few
    free ones."""
    template = server.game.template
    ports = template_ports(template)
    needed = len(ports)
    if not needed:
        return
    free = _free_on(primary.node_id).filter(ip=primary.ip)
    wanted = {primary.port + offset: name for name, offset in port_offsets(template).items()}
    fixed = {wanted[item.port]: item for item in free.filter(port__in=wanted)}
    if len(fixed) < len(wanted):
        raise NoCapacity(
            _("Its node does not have the ports its game opens beside its game port free."),
            details={"ports": needed},
        )
    others = free.exclude(pk__in=[item.pk for item in fixed.values()])
    count = needed - len(fixed)
    taken = list(others.filter(port__gt=primary.port).order_by("port")[:count])
    if len(taken) < count:
        chosen = {item.pk for item in taken}
        rest = others.exclude(pk__in=chosen).order_by("port")[: count - len(taken)]
        taken += list(rest)
    if len(taken) < count:
        raise NoCapacity(
            _("Its node has too few free ports for the %(needed)s extra ports its game needs.")
            % {"needed": needed},
            details={"ports": needed},
        )
    unfixed = iter(taken)
    ordered = [fixed.get(port.get("name", "")) or next(unfixed) for port in ports]
    now = timezone.now()
    for position, allocation in enumerate(ordered):
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
        raise ValidationFailed.field("port", "invalid", _("port must be a whole number."))
    with transaction.atomic():
        server = instance_locked(server)
        if server.node_id is None:
            raise Conflict(_("This server is not on a node yet; allocations come with its node."))
        held = Allocation.objects.filter(server=server)
        limit = allocation_limit(server)
        if held.count() >= limit:
            raise AllocationLimitReached(
                _(
                    "This server holds %(limit)s allocations, as many as its plan allows; "
                    "remove one first."
                )
                % {"limit": limit},
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
                    _("Port %(port)s is not free on this server's node.") % {"port": port},
                    details={"port": port},
                )
        else:
            allocation = None
            if primary is not None:
                allocation = free.filter(ip=primary.ip).order_by("port").first()
            allocation = allocation or free.order_by("port", "ip").first()
            if allocation is None:
                raise NoCapacity(_("This server's node has no free port left."))
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
    another one primary. A game with offset ports moves its primary only to an allocation whose
    ``ip:port + offset`` the server holds for each of them (409 ``derived_ports`` otherwise):
    those become its offset ports, the other named ports keep theirs where they can."""
    with transaction.atomic():
        server = instance_locked(_held_by(allocation))
        allocation = Allocation.objects.select_for_update().get(pk=allocation.pk, server=server)
        if is_primary is False and allocation.is_primary:
            raise PrimaryAllocation(
                _("A server always has a primary allocation: make another one primary instead.")
            )
        before = allocation_representation(allocation)
        if not isinstance(note, Unset):
            allocation.note = _note(note)
            allocation.save(update_fields=["note"])
        if is_primary is True and not allocation.is_primary:
            order = None
            if port_offsets(server.game.template):
                held = list(allocations_of(server).select_for_update())
                order = _primary_move_order(server, allocation, held)
            old = Allocation.objects.select_for_update().filter(server=server, is_primary=True)
            now = timezone.now()
            # The old primary takes the place the new one had among the additional ones.
            old.update(is_primary=False, assigned_at=allocation.assigned_at or now)
            allocation.is_primary = True
            allocation.save(update_fields=["is_primary"])
            if order is not None:
                _reorder(order)
            server.address = allocation.address
            server.save(update_fields=["address", "updated_at"])
        previous = changed_attributes(before, allocation_representation(allocation))
        if previous:
            _record(server, allocation, "updated", actor, previous_attributes=previous)
    return allocation


def allocation_remove(*, allocation: Allocation, actor: Actor) -> None:
    """Give an additional allocation back to its node's pool; the primary never (409
    ``primary_allocation``), nor one its game opens itself on the primary's port + offset (409
    ``derived_ports``)."""
    with transaction.atomic():
        server = instance_locked(_held_by(allocation))
        allocation = Allocation.objects.select_for_update().get(pk=allocation.pk, server=server)
        if allocation.is_primary:
            raise PrimaryAllocation()
        _removal_check(server, allocation)
        _record(server, allocation, "removed", actor)
        allocation.server = None
        allocation.note = ""
        allocation.assigned_at = None
        allocation.save(update_fields=["server", "note", "assigned_at"])


def _offsets_missing(
    template: dict[str, Any], primary: Allocation, additional: list[Allocation]
) -> dict[str, int]:
    """The offset ports not named on ``primary``'s ``ip:port + offset`` (``{name: that port}``)
    when ``additional`` are the other allocations in the order the named ports go to them."""
    names = (port.get("name", "") for port in template_ports(template))
    named = dict(zip(names, additional, strict=False))  # the named ports beyond them have none
    missing = {}
    for name, offset in port_offsets(template).items():
        item = named.get(name)
        if item is None or (item.ip, item.port) != (primary.ip, primary.port + offset):
            missing[name] = primary.port + offset
    return missing


def _derived_ports(server: Server, ports: dict[str, int], what: str) -> DerivedPorts:
    listed = ", ".join(
        _("%(name)s on %(port)s") % {"name": name, "port": port}
        for name, port in sorted(ports.items())
    )
    return DerivedPorts(
        _("%(game)s opens ports itself beside its game port (%(listed)s): %(what)s")
        % {"game": server.game.name, "listed": listed, "what": what},
        details={"ports": ports},
    )


def _primary_move_order(
    server: Server, new: Allocation, held: list[Allocation]
) -> list[Allocation]:
    """The additional allocations, in the order the named ports go to them, once ``new`` is the
    primary of a server whose game has offset ports: each offset port the allocation on new's
    ``ip:port + offset``, each other named port the one it has where that stays additional, then
    the rest in the order they were taken (the old primary where the new one was). 409
    ``derived_ports`` when the server does not hold new's port + offset for each of them."""
    template = server.game.template
    offsets = port_offsets(template)
    additional = [held[0] if item.pk == new.pk else item for item in held[1:]]
    at = {(item.ip, item.port): item for item in additional}
    missing = {
        name: new.port + offset
        for name, offset in offsets.items()
        if (new.ip, new.port + offset) not in at
    }
    if missing:
        raise _derived_ports(
            server, missing, _("add those to make %(address)s primary.") % {"address": new.address}
        )
    names = allocation_names(server, held)
    current = {names[item.pk]: item for item in held[1:] if names[item.pk]}
    fixed = {name: at[(new.ip, new.port + offset)] for name, offset in offsets.items()}
    claimed = {item.pk for item in fixed.values()}
    slots: list[Allocation | None] = []
    for port in template_ports(template):
        name = port.get("name", "")
        if name in fixed:
            slots.append(fixed[name])
            continue
        kept = current.get(name)
        if kept is None or kept.pk == new.pk or kept.pk in claimed:
            slots.append(None)  # filled below from the rest
            continue
        claimed.add(kept.pk)
        slots.append(kept)
    rest = [item for item in additional if item.pk not in claimed]
    order = []
    for slot in slots:
        if slot is None and rest:
            slot = rest.pop(0)
        if slot is not None:
            order.append(slot)
    order += rest
    missing = _offsets_missing(template, new, order)
    if missing:  # a named port with no allocation left before an offset port
        raise _derived_ports(
            server, missing, _("%(address)s cannot be made primary.") % {"address": new.address}
        )
    return order


def _reorder(order: list[Allocation]) -> None:
    """Put the additional allocations in ``order`` (the order named ports go to them) with the
    times they were taken, rearranged (a microsecond apart where two were the same)."""
    stamps = sorted(
        Allocation.objects.filter(pk__in=[item.pk for item in order]).values_list(
            "assigned_at", flat=True
        ),
        key=lambda stamp: stamp or timezone.now(),
    )
    previous = None
    for item, stamp in zip(order, stamps, strict=True):
        stamp = stamp or timezone.now()
        if previous is not None and stamp <= previous:
            stamp = previous + timedelta(microseconds=1)
        Allocation.objects.filter(pk=item.pk).update(assigned_at=stamp)
        previous = stamp


def _removal_check(server: Server, allocation: Allocation) -> None:
    """409 ``derived_ports`` when removing ``allocation`` would leave one of the game's offset
    ports that is held where the game opens it (the primary's port + offset) without it."""
    template = server.game.template
    if not port_offsets(template):
        return
    held = list(allocations_of(server))
    primary, additional = held[0], held[1:]
    before = _offsets_missing(template, primary, additional)
    after = _offsets_missing(
        template, primary, [item for item in additional if item.pk != allocation.pk]
    )
    broken = {name: port for name, port in after.items() if name not in before}
    if broken:
        raise _derived_ports(
            server,
            broken,
            _("%(address)s stays while %(primary)s is primary.")
            % {"address": allocation.address, "primary": primary.address},
        )


def _held_by(allocation: Allocation) -> Server:
    """The server holding ``allocation`` (``allocation_of`` found it through it); 404 once it
    gave it back."""
    if allocation.server is None:
        raise NotFound(_("No such allocation on this server."))
    return allocation.server


def _note(note: Any) -> str:
    if not isinstance(note, str):
        raise ValidationFailed.field("note", "invalid", _("note must be text."))
    note = note.strip()
    if len(note) > NOTE_MAX:
        raise ValidationFailed.field(
            "note",
            "max_length",
            _("note takes at most %(max)s characters.") % {"max": NOTE_MAX},
        )
    return note

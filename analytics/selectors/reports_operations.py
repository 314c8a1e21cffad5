"""Reports on the help desk and the fleet (staff).

Tickets are measured as the help desk measures them (``support.services.sla``): the first
response is the first public staff reply, its time the business seconds from the ticket's
opening on its department's SLA calendar (around the clock without a policy), the clock its
first-response target is counted on; a ticket is done once resolved or closed
(``support.transitions.FINISHED``), its resolution time the business seconds it waited on staff
(``sla_seconds_used``: the clock its resolution target is counted on, paused while the ticket
waits on the customer or is on hold); it breached its SLA when the desk flagged a missed first
response or resolution target (the desk's ``breached`` filter). Tickets fall in the month they
were opened; duplicates merged into another ticket are left out. Percentiles are nearest-rank.
"""

from collections import defaultdict
from datetime import date
from typing import Any

from django.db.models import Count
from django.utils.translation import gettext_noop

from accounts.models import User
from analytics.reporting import (
    Column,
    Report,
    midnight,
    month_after,
    month_label,
    month_start,
    months,
    nearest_rank,
    share,
)
from servers.selectors import bots_live, nodes_with_usage, servers_live
from support.business_hours import business_seconds_between
from support.selectors import departments_of_staff, tickets_for_staff
from support.services.sla import calendar_of
from support.transitions import FINISHED

TICKET_COLUMNS = (
    Column("month", "month", gettext_noop("Month")),
    Column("department_id", "string", gettext_noop("Department")),
    Column("department_name", "string", gettext_noop("Department name")),
    Column("tickets", "count", gettext_noop("Tickets opened")),
    Column("responded", "count", gettext_noop("Of them, answered")),
    Column("first_response_p50", "seconds", gettext_noop("First response, median (business time)")),
    Column("first_response_p90", "seconds", gettext_noop("First response, 90th percentile")),
    Column("resolved", "count", gettext_noop("Of them, resolved or closed")),
    Column(
        "resolution_p50",
        "seconds",
        gettext_noop("Resolution, median (business time waiting on staff)"),
    ),
    Column("resolution_p90", "seconds", gettext_noop("Resolution, 90th percentile")),
    Column("sla_breached", "count", gettext_noop("Of them, past an SLA target")),
    Column("sla_breach_rate", "percent", gettext_noop("SLA breach rate")),
)
CAPACITY = (
    Column("memory_mb", "integer", gettext_noop("Memory (MB)")),
    Column("memory_allocated_mb", "integer", gettext_noop("Memory given to servers and bots (MB)")),
    Column("memory_allocated_rate", "percent", gettext_noop("Memory given")),
    Column("disk_mb", "integer", gettext_noop("Disk (MB)")),
    Column("disk_allocated_mb", "integer", gettext_noop("Disk given to servers and bots (MB)")),
    Column("disk_allocated_rate", "percent", gettext_noop("Disk given")),
    Column("allocations_total", "count", gettext_noop("Addresses (ip:port)")),
    Column("allocations_used", "count", gettext_noop("Addresses held by servers")),
)
FLEET_COLUMNS = {
    "status": (
        Column("kind", "string", gettext_noop("Server or bot")),
        Column("region", "string", gettext_noop("Region")),
        Column("status", "string", gettext_noop("Status")),
        Column("count", "count", gettext_noop("How many")),
    ),
    "node": (
        Column("node_id", "string", gettext_noop("Node")),
        Column("node_name", "string", gettext_noop("Node name")),
        Column("region", "string", gettext_noop("Region")),
        *CAPACITY,
    ),
    "region": (
        Column("region", "string", gettext_noop("Region")),
        Column("nodes", "count", gettext_noop("Nodes")),
        *CAPACITY,
    ),
}


def _no_tickets() -> dict[str, Any]:
    return {"tickets": 0, "first_responses": [], "resolutions": [], "breached": 0}


def tickets_report(*, user: User, first: date, last: date) -> Report:
    """Per month and department of the desk ``user`` works (every one for a superuser, as
    the staff ticket list): tickets opened, how soon they were answered and resolved (p50,
    p90 in business seconds, over those answered or resolved so far), and the share that
    breached an SLA target. Every month of the range is listed for each department that had
    a ticket in it."""
    departments = {
        department.pk: department
        for department in departments_of_staff(user).select_related("sla_policy")
    }
    calendars = {pk: calendar_of(department.sla_policy) for pk, department in departments.items()}
    tickets = (
        tickets_for_staff(user)
        .order_by()
        .filter(
            department__in=list(departments),
            merged_into__isnull=True,
            created_at__gte=midnight(first),
            created_at__lt=midnight(month_after(last)),
        )
        .values_list(
            "department_id",
            "created_at",
            "first_response_at",
            "status",
            "sla_seconds_used",
            "first_response_breached",
            "resolution_breached",
        )
    )
    groups: dict[tuple[date, str], dict[str, Any]] = defaultdict(_no_tickets)
    for department_id, created, responded, status, used, late_first, late_end in tickets:
        group = groups[(month_start(created), department_id)]
        group["tickets"] += 1
        if responded is not None:
            seconds = business_seconds_between(calendars[department_id], created, responded)
            group["first_responses"].append(seconds)
        if status in FINISHED:
            group["resolutions"].append(used)
        group["breached"] += int(late_first or late_end)
    seen = sorted({department_id for _, department_id in groups})
    rows = []
    for month in months(first, last):
        for department_id in sorted(seen, key=lambda pk: (departments[pk].name, pk)):
            group = groups.get((month, department_id)) or _no_tickets()
            rows.append(
                {
                    "month": month_label(month),
                    "department_id": department_id,
                    "department_name": departments[department_id].name,
                    "tickets": group["tickets"],
                    "responded": len(group["first_responses"]),
                    "first_response_p50": nearest_rank(group["first_responses"], 50),
                    "first_response_p90": nearest_rank(group["first_responses"], 90),
                    "resolved": len(group["resolutions"]),
                    "resolution_p50": nearest_rank(group["resolutions"], 50),
                    "resolution_p90": nearest_rank(group["resolutions"], 90),
                    "sla_breached": group["breached"],
                    "sla_breach_rate": share(group["breached"], group["tickets"]),
                }
            )
    parameters = {"start_month": month_label(first), "end_month": month_label(last)}
    return Report("tickets", parameters, TICKET_COLUMNS, rows)


def _capacity(
    memory: int, memory_used: int, disk: int, disk_used: int, total: int, used: int
) -> dict[str, Any]:
    return {
        "memory_mb": memory,
        "memory_allocated_mb": memory_used,
        "memory_allocated_rate": share(memory_used, memory),
        "disk_mb": disk,
        "disk_allocated_mb": disk_used,
        "disk_allocated_rate": share(disk_used, disk),
        "allocations_total": total,
        "allocations_used": used,
    }


def fleet_report(*, group_by: str = "status") -> Report:
    """The fleet now. ``status``: live servers and bots (not deleted) per region and status.
    ``node``: each node's memory and disk, what its servers and bots were given of them, and
    its pool of addresses (held by a server or free). ``region``: the nodes of each region
    summed up."""
    parameters = {"group_by": group_by}
    if group_by == "status":
        rows = [
            {"kind": kind, "region": row["region_id"], "status": row["status"], "count": row["n"]}
            for kind, live in (("server", servers_live()), ("bot", bots_live()))
            for row in live.order_by().values("region_id", "status").annotate(n=Count("id"))
        ]
        rows.sort(key=lambda row: (row["kind"] != "server", row["region"], row["status"]))
        return Report("fleet", parameters, FLEET_COLUMNS["status"], rows)
    nodes = [
        (
            node,
            (
                node.memory_mb,
                node.used_memory_mb,
                node.disk_mb,
                node.used_disk_mb,
                node.allocation_total,
                node.allocation_total - node.allocation_free,
            ),
        )
        for node in nodes_with_usage()
    ]
    if group_by == "node":
        rows = [
            {"node_id": node.pk, "node_name": node.name, "region": node.region_id}
            | _capacity(*figures)
            for node, figures in nodes
        ]
        return Report("fleet", parameters, FLEET_COLUMNS["node"], rows)
    regions: dict[str, list[int]] = {}
    for node, figures in nodes:
        sums = regions.setdefault(node.region_id, [0] * (len(figures) + 1))
        sums[0] += 1
        for index, figure in enumerate(figures, start=1):
            sums[index] += figure
    rows = [
        {"region": region, "nodes": sums[0]} | _capacity(*sums[1:])
        for region, sums in sorted(regions.items())
    ]
    return Report("fleet", parameters, FLEET_COLUMNS["region"], rows)

"""Read-side queries for servers, bots, actions and the catalogues."""

from datetime import datetime, timedelta

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from servers.models import Action, Bot, Game, Instance, Node, Region, Server


def servers_live() -> QuerySet[Server]:
    """Every account's servers that are not deleted (the staff's fleet report)."""
    return Server.objects.filter(deleted_at=None)


def bots_live() -> QuerySet[Bot]:
    return Bot.objects.filter(deleted_at=None)


def servers_of_account(*, account_id: str) -> QuerySet[Server]:
    """An account's servers, newest first; never another account's, never deleted ones."""
    return Server.objects.filter(account_id=account_id, deleted_at=None)


def bots_of_account(*, account_id: str) -> QuerySet[Bot]:
    return Bot.objects.filter(account_id=account_id, deleted_at=None)


def unbilled_used(account, field: str | None = None) -> int:
    """What the account's live servers and bots without a plan use of its unbilled allowance:
    how many there are (``field`` None), or their total ``memory_mb``, ``cpu_percent`` or
    ``disk_mb``. The one reading of the allowance, for the pages and the checks alike."""
    plan_less = [
        model.objects.filter(account=account, deleted_at=None, plan__isnull=True)
        for model in (Server, Bot)
    ]
    if field is None:
        return sum(rows.count() for rows in plan_less)
    return sum(rows.aggregate(total=Sum(field))["total"] or 0 for rows in plan_less)


def unbilled_left(account) -> int:
    """How many more servers and bots the account may create without a plan (its unbilled
    allowance less its plan-less ones; the resources are checked when creating)."""
    return max(account.unbilled_instances - unbilled_used(account), 0)


def instances_by_ids(queryset: QuerySet, ids: list[str]) -> dict[str, Instance]:
    return {instance.pk: instance for instance in queryset.filter(pk__in=ids)}


def actions_of(instance: Instance) -> QuerySet[Action]:
    return Action.objects.filter(**{instance.kind: instance})


def game_catalogue() -> QuerySet[Game]:
    return Game.objects.all()


def region_catalogue() -> QuerySet[Region]:
    return Region.objects.all()


def region_default_for(*, account_id: str, regions: QuerySet[Region]) -> str | None:
    """Where a new server or bot of the account goes by default, among ``regions``: where its
    newest server or bot is, else the first region by name (not whichever the catalogue lists
    first)."""
    newest = [
        model.objects.filter(account_id=account_id, region__in=regions)
        .order_by("-created_at")
        .values_list("created_at", "region_id")
        .first()
        for model in (Server, Bot)
    ]
    used = max((each for each in newest if each is not None), default=None)
    if used is not None:
        return used[1]
    return regions.order_by("name").values_list("pk", flat=True).first()


def _given(model, field: str):
    """What the node's live instances of ``model`` were given of ``field`` (a subquery)."""
    sums = (
        model.objects.filter(node=OuterRef("pk"), deleted_at=None)
        .order_by()
        .values("node")
        .annotate(total=Sum(field))
        .values("total")
    )
    return Coalesce(Subquery(sums), 0)


def nodes_with_usage() -> QuerySet[Node]:
    """Nodes with what their servers and bots were given (``used_*``) and their allocation
    pool's size (``allocation_total``, ``allocation_free``), in one query."""
    return Node.objects.annotate(
        **{
            f"used_{field}": _given(Server, field) + _given(Bot, field)
            for field in ("memory_mb", "disk_mb", "cpu_percent")
        },
        allocation_total=Count("allocations"),
        allocation_free=Count("allocations", filter=Q(allocations__server=None)),
    ).order_by("region_id", "name")


def games_with_usage() -> QuerySet[Game]:
    """Every game by name, with ``server_count`` (servers not deleted) and
    ``deleted_server_count`` (the deleted servers' records, which keep their game)."""
    return Game.objects.annotate(
        server_count=Count("servers", filter=Q(servers__deleted_at=None), distinct=True),
        deleted_server_count=Count(
            "servers", filter=Q(servers__deleted_at__isnull=False), distinct=True
        ),
    ).order_by("name", "slug")


# A node whose servers run reports their usage every AGENT_BATCH_SECONDS (15 by default): one
# silent this long while some of them run is not reporting. An idle node calls only when it
# (re)connects, so its silence says nothing.
NODE_QUIET_MINUTES = 5


def _counted(model, status: str):
    """How many of the node's live instances of ``model`` are in ``status`` (a subquery: a
    join beside the allocations' would multiply their counts)."""
    counts = (
        model.objects.filter(node=OuterRef("pk"), deleted_at=None, status=status)
        .order_by()
        .values("node")
        .annotate(total=Count("pk"))
        .values("total")
    )
    return Coalesce(Subquery(counts), 0)


def _percent(part: int, whole: int) -> int:
    return round(100 * part / whole) if whole else 0


def fleet_health(*, now: datetime, shown: int = 10) -> dict:
    """The staff home's nodes panel: every node with what it was given, how many of its
    servers run, failed to install or are stopped, when its agent last called, and what needs
    a look (``problems``); the nodes with problems first, then by name, ``shown`` of them."""
    nodes = list(
        nodes_with_usage()
        .select_related("region")
        .annotate(
            running=_counted(Server, "running"),
            install_failed=_counted(Server, "install_failed"),
            bots_running=_counted(Bot, "running"),
        )
    )
    quiet_since = now - timedelta(minutes=NODE_QUIET_MINUTES)
    for node in nodes:
        problems = []
        if node.last_seen_at is None:
            problems.append("never_connected")
        elif node.last_seen_at < quiet_since and (node.running or node.bots_running):
            problems.append("not_reporting")
        if node.isolation_flagged:
            problems.append("not_isolated")
        if node.install_failed:
            problems.append("install_failed")
        if node.memory_mb and node.used_memory_mb >= node.memory_mb:
            problems.append("full")
        node.problems = problems
        node.memory_percent = _percent(node.used_memory_mb, node.memory_mb)
        node.disk_percent = _percent(node.used_disk_mb, node.disk_mb)
    nodes.sort(key=lambda node: (not node.problems, node.region_id, node.name))
    return {
        "nodes": nodes[:shown],
        "total": len(nodes),
        "with_problems": sum(1 for node in nodes if node.problems),
        "maintenance": sum(1 for node in nodes if node.maintenance),
    }

"""Read-side queries for servers, bots, actions and the catalogues."""

from django.db.models import QuerySet

from servers.models import Action, Bot, Game, Instance, Region, Server


def servers_of_account(*, account_id: str) -> QuerySet[Server]:
    """An account's servers, newest first; never another account's, never deleted ones."""
    return Server.objects.filter(account_id=account_id, deleted_at=None)


def bots_of_account(*, account_id: str) -> QuerySet[Bot]:
    return Bot.objects.filter(account_id=account_id, deleted_at=None)


def instances_by_ids(queryset: QuerySet, ids: list[str]) -> dict[str, Instance]:
    return {instance.pk: instance for instance in queryset.filter(pk__in=ids)}


def actions_of(instance: Instance) -> QuerySet[Action]:
    return Action.objects.filter(**{instance.kind: instance})


def game_catalogue() -> QuerySet[Game]:
    return Game.objects.all()


def region_catalogue() -> QuerySet[Region]:
    return Region.objects.all()

"""Read-side queries for servers and the game catalogue."""

from django.db.models import QuerySet

from servers.models import Game, Server


def servers_of_account(*, account_id: str) -> QuerySet[Server]:
    """An account's servers, newest first; never another account's."""
    return Server.objects.filter(account_id=account_id)


def game_catalogue() -> QuerySet[Game]:
    return Game.objects.all()

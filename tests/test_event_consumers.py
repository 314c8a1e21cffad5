"""Event consumers (events.services.event_consumer_add) run inside the recording transaction."""

import ast

import pytest

from accounts.actors import Actor
from accounts.services import account_update
from events import services as event_services
from events.models import Event
from webhooks.services import deliveries_for_event


def test_webhooks_consume_every_event_without_the_event_log_importing_them():
    assert deliveries_for_event in event_services._consumers
    with open(event_services.__file__) as source:
        imported = [
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(ast.parse(source.read()))
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        ]
    assert not [name for name in imported if name.startswith("webhooks")]


def test_a_consumer_that_fails_rolls_the_change_back_with_its_event(account, owner, monkeypatch):
    def broken(event):
        raise RuntimeError("the consumer failed")

    monkeypatch.setattr(event_services, "_consumers", [*event_services._consumers, broken])
    with pytest.raises(RuntimeError):
        account_update(account=account, actor=Actor(user=owner), name="Renamed")
    account.refresh_from_db()
    assert account.name != "Renamed"
    assert not Event.objects.filter(type="account.updated").exists()

"""Fixtures of the servers' tests: a server and a bot on a node whose agent is a stand-in
(``fake_agent``, tests/servers/backup_helpers.py). Modules with fixtures of the same names
keep their own."""

import pytest

from servers.models import ServerStatus
from tests.factories import BotFactory, ServerFactory
from tests.servers.backup_helpers import FakeAgent
from tests.servers.test_nodes import new_node


@pytest.fixture
def fake_agent(monkeypatch) -> FakeAgent:
    agent = FakeAgent()
    monkeypatch.setattr("servers.services.backups.agent_request", agent)
    return agent


@pytest.fixture
def node_with_token(db):
    return new_node()


@pytest.fixture
def node(node_with_token):
    return node_with_token[0]


@pytest.fixture
def server(account, node):
    return ServerFactory(account=account, node=node, status=ServerStatus.STOPPED)


@pytest.fixture
def bot(account, node):
    return BotFactory(account=account, node=node, status=ServerStatus.STOPPED)

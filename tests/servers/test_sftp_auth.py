"""POST /v1/agent/sftp/auth: whom the control plane lets a node's agent sign in to SFTP, and
with which rights (agent/PROTOCOL.md "SFTP"). The real agent and OpenSSH's client against it
are in tests/agent/test_sftp_control_plane.py."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.models import SshKey
from accounts.roles import Role
from accounts.services import account_suspend, member_change_role
from accounts.services.sftp import (
    sftp_login_change,
    sftp_password_remove,
    sftp_password_set,
    ssh_key_create,
    ssh_key_delete,
)
from hosting.errors import ValidationFailed
from servers.models import ServerStatus
from tests.envelopes import error_of
from tests.factories import BotFactory, MembershipFactory, ServerFactory, UserFactory
from tests.servers.test_nodes import new_node

pytestmark = pytest.mark.django_db
AUTH = "/v1/agent/sftp/auth"
PASSWORD = "a-long-sftp-passphrase"
BOTH = ["files.read", "files.write"]


def key_line() -> str:
    public = ed25519.Ed25519PrivateKey.generate().public_key()
    return public.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


@pytest.fixture
def node_and_token():
    return new_node()


@pytest.fixture
def agent(node_and_token, client_for):
    return client_for(node_and_token[1])


@pytest.fixture
def server(account, node_and_token):
    return ServerFactory(account=account, node=node_and_token[0])


def signed_up(user, login: str) -> str:
    """Give ``user`` the login and an SSH key; return the key's line."""
    sftp_login_change(user=user, login=login, actor=SYSTEM)
    line = key_line()
    ssh_key_create(user=user, name="k", public_key=line, actor=SYSTEM)
    return line


def ask(agent, login, server_id, **credential):
    response = agent.post(
        AUTH, {"username": login, "server_id": server_id, **credential}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_the_owner_signs_in_with_a_key_and_may_read_and_write(agent, owner, server):
    line = signed_up(owner, "alice")
    assert ask(agent, "alice", server.id, public_key=line) == {
        "allowed": True,
        "user_id": owner.id,
        "permissions": BOTH,
    }
    assert SshKey.objects.get(user=owner).last_used_at is not None


def test_the_owner_signs_in_with_the_sftp_password(agent, owner, server):
    sftp_login_change(user=owner, login="alice", actor=SYSTEM)
    sftp_password_set(user=owner, password=PASSWORD, actor=SYSTEM)
    assert ask(agent, "alice", server.id, password=PASSWORD)["allowed"] is True
    assert ask(agent, "alice", server.id, password=PASSWORD + "x") == {"allowed": False}
    # The account's own password is not the SFTP password.
    assert ask(agent, "alice", server.id, password="correct-horse-battery") == {"allowed": False}


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        (Role.OWNER, BOTH),
        (Role.ADMIN, BOTH),
        (Role.DEVELOPER, BOTH),
        (Role.SUPPORT, ["files.read"]),
        (Role.VIEWER, None),
        (Role.BILLING, None),
    ],
)
def test_each_role_gets_the_files_apis_rights(agent, account, server, role, expected):
    member = MembershipFactory(account=account, role=role).user
    line = signed_up(member, "member")
    answer = ask(agent, "member", server.id, public_key=line)
    if expected is None:
        assert answer == {"allowed": False}
    else:
        assert answer == {"allowed": True, "user_id": member.id, "permissions": expected}


def test_an_outsider_is_refused_with_their_own_valid_key(agent, outsider, server):
    line = signed_up(outsider, "mallory")
    assert ask(agent, "mallory", server.id, public_key=line) == {"allowed": False}


def test_a_bot_is_reached_as_a_server_is(agent, account, owner, node_and_token):
    bot = BotFactory(account=account, node=node_and_token[0])
    line = signed_up(owner, "alice")
    assert ask(agent, "alice", bot.id, public_key=line)["permissions"] == BOTH


def test_another_nodes_server_is_refused(agent, account, owner, client_for):
    other_node, other_token = new_node(name="fra-2", ports="")
    theirs = ServerFactory(account=account, node=other_node)
    line = signed_up(owner, "alice")
    assert ask(agent, "alice", theirs.id, public_key=line) == {"allowed": False}
    assert ask(client_for(other_token), "alice", theirs.id, public_key=line)["allowed"] is True


def test_someone_elses_key_is_refused_for_my_login(agent, owner, teammate, server):
    signed_up(owner, "alice")
    teammates_line = signed_up(teammate, "bob")
    assert ask(agent, "alice", server.id, public_key=teammates_line) == {"allowed": False}
    assert ask(agent, "bob", server.id, public_key=teammates_line)["allowed"] is True


def test_a_deleted_key_is_refused_at_the_next_question(agent, owner, server):
    line = signed_up(owner, "alice")
    assert ask(agent, "alice", server.id, public_key=line)["allowed"] is True
    ssh_key_delete(ssh_key=SshKey.objects.get(user=owner), actor=SYSTEM)
    assert ask(agent, "alice", server.id, public_key=line) == {"allowed": False}


def test_a_changed_or_removed_password_is_refused_at_once(agent, owner, server):
    sftp_login_change(user=owner, login="alice", actor=SYSTEM)
    sftp_password_set(user=owner, password=PASSWORD, actor=SYSTEM)
    assert ask(agent, "alice", server.id, password=PASSWORD)["allowed"] is True
    sftp_password_set(user=owner, password="another-long-passphrase", actor=SYSTEM)
    assert ask(agent, "alice", server.id, password=PASSWORD) == {"allowed": False}
    sftp_password_remove(user=owner, actor=SYSTEM)
    assert ask(agent, "alice", server.id, password="another-long-passphrase") == {"allowed": False}


def test_a_changed_login_stops_the_old_one(agent, owner, server):
    line = signed_up(owner, "alice")
    sftp_login_change(user=owner, login="alice2", actor=SYSTEM)
    assert ask(agent, "alice", server.id, public_key=line) == {"allowed": False}
    assert ask(agent, "alice2", server.id, public_key=line)["allowed"] is True


def test_a_demoted_member_loses_write_at_the_next_question(agent, account, owner, server):
    member = MembershipFactory(account=account, role=Role.DEVELOPER)
    line = signed_up(member.user, "dev")
    assert ask(agent, "dev", server.id, public_key=line)["permissions"] == BOTH
    member_change_role(membership=member, role=Role.SUPPORT, actor=Actor(user=owner))
    assert ask(agent, "dev", server.id, public_key=line)["permissions"] == ["files.read"]


@pytest.mark.parametrize(
    "closed", [ServerStatus.SUSPENDED, ServerStatus.DELETING, "deleted", "account_suspended"]
)
def test_closed_files_are_refused(agent, account, owner, server, closed):
    line = signed_up(owner, "alice")
    if closed == "deleted":
        server.deleted_at = timezone.now()
        server.save()
    elif closed == "account_suspended":
        account_suspend(account=account, reason="unpaid", actor=SYSTEM)
    else:
        server.status = closed
        server.save()
    assert ask(agent, "alice", server.id, public_key=line) == {"allowed": False}


def test_an_inactive_user_is_refused(agent, owner, server):
    line = signed_up(owner, "alice")
    owner.is_active = False
    owner.save()
    assert ask(agent, "alice", server.id, public_key=line) == {"allowed": False}


def test_unknown_logins_and_servers_are_refused_alike(agent, owner, server):
    line = signed_up(owner, "alice")
    assert ask(agent, "nobody", server.id, public_key=line) == {"allowed": False}
    assert ask(agent, "nobody", server.id, password=PASSWORD) == {"allowed": False}
    assert ask(agent, "NOT-A-LOGIN", server.id, password=PASSWORD) == {"allowed": False}
    assert ask(agent, "alice", "srv_doesnotexist", public_key=line) == {"allowed": False}
    assert ask(agent, "alice", server.id, public_key="ssh-ed25519 AAAA") == {"allowed": False}


def test_too_many_questions_for_a_login_and_server_are_refused(
    agent, owner, server, settings, rate_limit_clock
):
    settings.SFTP_AUTH_ATTEMPTS_PER_MINUTE = 3
    line = signed_up(owner, "alice")
    for _ in range(3):
        ask(agent, "alice", server.id, password="wrong-guess-here")
    # Over the limit even the right key is refused, before it is looked at.
    assert ask(agent, "alice", server.id, public_key=line) == {"allowed": False}
    rate_limit_clock.advance(60)
    assert ask(agent, "alice", server.id, public_key=line)["allowed"] is True


def test_too_many_questions_from_a_node_are_refused(
    agent, owner, teammate, server, settings, rate_limit_clock
):
    settings.SFTP_AUTH_NODE_ATTEMPTS_PER_MINUTE = 2
    line = signed_up(owner, "alice")
    ask(agent, "x1", server.id, password="wrong-guess-here")
    ask(agent, "x2", server.id, password="wrong-guess-here")
    assert ask(agent, "alice", server.id, public_key=line) == {"allowed": False}


@pytest.mark.parametrize(
    "body",
    [
        {"username": "alice", "server_id": "srv_x"},
        {"username": "alice", "server_id": "srv_x", "password": "p", "public_key": "k"},
        {"username": "alice", "server_id": "nope", "password": "p"},
        {"username": "alice", "server_id": "srv_x", "password": "p", "extra": 1},
    ],
)
def test_a_malformed_question_is_400(agent, body):
    error_of(agent.post(AUTH, body, format="json"), 400, "validation_failed")


def test_only_a_node_token_may_ask(owner_api, client_for, server):
    body = {"username": "a", "server_id": server.id, "password": "p"}
    error_of(owner_api.post(AUTH, body, format="json"), 401, "invalid_token")
    error_of(client_for(None).post(AUTH, body, format="json"), 401, "invalid_token")


def test_a_stranger_with_the_same_login_pattern_cannot_take_a_login(db):
    UserFactory(email="alice@example.com", sftp_login="alice")
    other = UserFactory(email="other@example.com")
    with pytest.raises(ValidationFailed):
        sftp_login_change(user=other, login="alice", actor=SYSTEM)

"""The management commands ``seed_demo`` and ``create_api_key``."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.keys import TOKEN_LENGTH, parse_token
from accounts.models import Account, ApiKey, User
from accounts.roles import SCOPES, Role
from servers.models import Server
from tests.dashboard import signed_in
from tests.factories import MembershipFactory, UserFactory


def run(command: str, *args: str) -> list[str]:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue().splitlines()


def seed_demo(*args: str) -> tuple[list[str], str]:
    lines = run("seed_demo", *args)
    return lines, lines[-1]


def server_total(client_for, token: str) -> int:
    response = client_for(token).get("/v1/servers")
    assert response.status_code == 200, response.content
    return response.json()["data"]["pagination"]["total"]


# --- seed_demo --------------------------------------------------------------------------------


def test_seed_demo_creates_an_account_with_servers_and_prints_a_working_token(db, client_for):
    lines, token = seed_demo("--email", "demo@example.com", "--servers", "7")

    assert token.startswith("hms_")
    assert len(token) == TOKEN_LENGTH
    assert parse_token(token) is not None
    assert any(line.startswith("Created account acct_") for line in lines)
    assert server_total(client_for, token) == 7
    account = Account.objects.get(memberships__user__email="demo@example.com")
    assert account.memberships.get().role == Role.OWNER
    assert account.servers.count() == 7
    api_key = ApiKey.objects.get(account=account)
    assert sorted(api_key.scopes) == sorted(SCOPES)
    assert api_key.revoked_at is None
    assert api_key.expires_at is None


def test_seed_demo_reuses_the_account_and_replaces_the_demo_key(db, client_for):
    _, first_token = seed_demo("--email", "demo@example.com", "--servers", "7")
    account = Account.objects.get(memberships__user__email="demo@example.com")

    lines, second_token = seed_demo("--email", "demo@example.com", "--servers", "7")

    assert f"Reusing account {account.id} owned by demo@example.com." in lines
    assert not any(line.startswith("Added") for line in lines)
    assert second_token != first_token
    assert second_token.startswith("hms_")
    assert Account.objects.filter(memberships__user__email="demo@example.com").count() == 1
    assert User.objects.filter(email="demo@example.com").count() == 1
    assert Server.objects.filter(account=account).count() == 7
    assert ApiKey.objects.filter(account=account, revoked_at=None).count() == 1
    assert server_total(client_for, second_token) == 7
    response = client_for(first_token).get("/v1/servers")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "api_key_revoked"


def test_seed_demo_runs_any_number_of_times_and_leaves_one_live_demo_key(db, client_for):
    tokens = [seed_demo("--email", "demo@example.com", "--servers", "3")[1] for _ in range(30)]

    account = Account.objects.get(memberships__user__email="demo@example.com")
    assert account.max_api_keys < 30
    live = ApiKey.objects.filter(account=account, revoked_at=None)
    assert [api_key.key_id for api_key in live] == [parse_token(tokens[-1]).key_id]
    assert ApiKey.objects.filter(account=account).count() == 30
    assert server_total(client_for, tokens[-1]) == 3


def test_seed_demo_leaves_other_keys_of_the_demo_user_alone(db, client_for):
    seed_demo("--email", "demo@example.com", "--servers", "1")
    (own_token,) = run("create_api_key", "--email", "demo@example.com", "--scopes", "servers:read")

    seed_demo("--email", "demo@example.com", "--servers", "1")

    assert server_total(client_for, own_token) == 1
    assert ApiKey.objects.filter(revoked_at=None).count() == 2


def test_seed_demo_servers_rest_with_what_their_status_implies(db):
    seed_demo("--email", "demo@example.com", "--servers", "30")

    servers = list(Server.objects.select_related("region"))
    assert {server.status for server in servers} == {
        "running",
        "stopped",
        "suspended",
        "install_failed",
    }
    addresses = [server.address for server in servers]
    assert len(set(addresses)) == len(servers)
    for server in servers:
        assert server.address.rsplit(":", 1)[0] in server.region.ip_addresses
        assert bool(server.status_reason) == (server.status == "install_failed")
        assert bool(server.suspended_reason) == (server.status == "suspended")


def test_the_demo_servers_page_shows_addresses_and_does_not_poll(db):
    seed_demo("--email", "demo@example.com", "--servers", "30", "--password", "demo-password")
    client = signed_in(User.objects.get(email="demo@example.com"))

    response = client.get("/")

    body = response.content.decode()
    assert response.status_code == 200
    assert 'data-poll="false"' in body
    assert 'data-poll="true"' not in body
    running = Server.objects.filter(status="running").first()
    detail = client.get(f"/servers/{running.id}").content.decode()
    assert running.address in detail
    assert "Assigned while provisioning" not in detail


def test_seed_demo_topping_up_gives_new_servers_addresses_of_their_own(db):
    seed_demo("--email", "demo@example.com", "--servers", "5")

    seed_demo("--email", "demo@example.com", "--servers", "12")

    addresses = list(Server.objects.values_list("address", flat=True))
    assert len(addresses) == 12
    assert all(addresses)
    assert len(set(addresses)) == 12


def test_seed_demo_tops_the_account_up_to_the_requested_number(db, client_for):
    seed_demo("--email", "demo@example.com", "--servers", "7")
    account = Account.objects.get(memberships__user__email="demo@example.com")

    lines, token = seed_demo("--email", "demo@example.com", "--servers", "10")

    assert "Added 3 servers (now 10)." in lines
    assert server_total(client_for, token) == 10
    assert Server.objects.filter(account=account).count() == 10
    assert Account.objects.count() == 1


def test_seed_demo_never_deletes_servers_when_asked_for_fewer(db, client_for):
    seed_demo("--email", "demo@example.com", "--servers", "7")

    _, token = seed_demo("--email", "demo@example.com", "--servers", "2")

    assert server_total(client_for, token) == 7


def test_seed_demo_finds_the_account_whatever_the_email_case(db):
    seed_demo("--email", "demo@example.com", "--servers", "1")

    lines, _ = seed_demo("--email", "Demo@Example.COM", "--servers", "1")

    assert any(line.startswith("Reusing account") for line in lines)
    assert Account.objects.count() == 1


def test_seed_demo_keeps_servers_of_other_accounts_apart(
    db, account, owner, make_token, client_for
):
    _, token = seed_demo("--email", "demo@example.com", "--servers", "7")

    assert server_total(client_for, make_token(owner, account)) == 0
    assert server_total(client_for, token) == 7


def test_seed_demo_rejects_a_negative_server_count(db):
    with pytest.raises(CommandError, match="--servers"):
        run("seed_demo", "--email", "demo@example.com", "--servers", "-1")

    assert not Account.objects.exists()


# --- create_api_key ---------------------------------------------------------------------------


def test_create_api_key_prints_only_the_token(account, owner, client_for):
    out = io.StringIO()

    call_command("create_api_key", "--email", owner.email, "--scopes", "servers:read", stdout=out)

    output = out.getvalue()
    token = output.strip()
    assert output == f"{token}\n"
    assert token.startswith("hms_")
    assert len(token) == TOKEN_LENGTH
    api_key = ApiKey.objects.get()
    assert api_key.key_id == parse_token(token).key_id
    assert api_key.scopes == ["servers:read"]
    assert api_key.account == account
    assert api_key.user == owner
    assert api_key.name == "Command-line key"
    assert api_key.expires_at is None
    assert token not in api_key.digest
    assert client_for(token).get("/v1/servers").status_code == 200


def test_create_api_key_limits_the_key_to_the_given_scopes(account, owner, client_for):
    (token,) = run("create_api_key", "--email", owner.email, "--scopes", "billing:read")

    response = client_for(token).get("/v1/servers")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert response.json()["error"]["details"]["required_scopes"] == ["servers:read"]
    assert ApiKey.objects.get().scopes == ["billing:read"]


def test_create_api_key_accepts_several_scopes_a_name_and_an_expiry(account, owner):
    before = timezone.now()

    (token,) = run(
        "create_api_key",
        "--email",
        owner.email.upper(),
        "--scopes",
        " servers:write , servers:read,,",
        "--name",
        "CI deploys",
        "--expires-in-days",
        "30",
    )

    api_key = ApiKey.objects.get()
    assert api_key.key_id == parse_token(token).key_id
    assert api_key.scopes == ["servers:read", "servers:write"]
    assert api_key.name == "CI deploys"
    assert before + timedelta(days=30) <= api_key.expires_at <= timezone.now() + timedelta(days=30)


def test_create_api_key_chooses_the_account_with_the_account_option(account, owner):
    other = MembershipFactory(user=owner, role=Role.DEVELOPER).account

    run("create_api_key", "--email", owner.email, "--scopes", "servers:read", "--account", other.id)

    assert ApiKey.objects.get().account == other


def test_create_api_key_rejects_a_user_of_several_accounts_without_the_account_option(
    account, owner
):
    MembershipFactory(user=owner, role=Role.DEVELOPER)

    with pytest.raises(CommandError, match=r"several accounts.*--account"):
        run("create_api_key", "--email", owner.email, "--scopes", "servers:read")

    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_an_unknown_email(account, owner):
    with pytest.raises(CommandError, match=r"No account membership found for nobody@example\.com"):
        run("create_api_key", "--email", "nobody@example.com", "--scopes", "servers:read")

    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_a_user_without_a_membership(db):
    user = UserFactory()

    with pytest.raises(CommandError, match="No account membership"):
        run("create_api_key", "--email", user.email, "--scopes", "servers:read")

    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_an_unknown_scope(account, owner):
    with pytest.raises(CommandError, match=r"Unknown scopes: servers:explode"):
        run("create_api_key", "--email", owner.email, "--scopes", "servers:read,servers:explode")

    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_no_scopes(account, owner):
    with pytest.raises(CommandError, match="at least one scope"):
        run("create_api_key", "--email", owner.email, "--scopes", " , ")

    assert not ApiKey.objects.exists()


@pytest.mark.parametrize("days", ["0", "-5"])
def test_create_api_key_rejects_an_expiry_of_less_than_a_day(account, owner, days):
    with pytest.raises(CommandError, match="--expires-in-days must be at least 1"):
        run(
            "create_api_key",
            "--email",
            owner.email,
            "--scopes",
            "servers:read",
            "--expires-in-days",
            days,
        )

    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_a_scope_the_role_may_not_grant(account):
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user

    with pytest.raises(CommandError, match=r"'viewer' may not grant: servers:write"):
        run("create_api_key", "--email", viewer.email, "--scopes", "servers:write")

    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_a_staff_scope_for_a_customer(account, owner):
    with pytest.raises(CommandError, match="may not grant: admin:read"):
        run("create_api_key", "--email", owner.email, "--scopes", "admin:read")

    assert not ApiKey.objects.exists()

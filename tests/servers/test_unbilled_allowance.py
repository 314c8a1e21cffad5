"""Issue 27, case 2: servers and bots without a plan only within the account's unbilled allowance
(staff set it; new accounts start with ``NEW_ACCOUNT_UNBILLED_ALLOWANCE``, none by default)."""

import importlib

import pytest
from django.apps import apps

from accounts.actors import Actor
from accounts.models import Account
from accounts.services import account_create, account_update
from events.models import Event
from servers.models import Bot, Server
from servers.services import server_create
from tests.envelopes import error_of
from tests.factories import UserFactory
from tests.servers.helpers import MINECRAFT
from tests.servers.test_bots_api import BOT

ZERO = {"instances": 0, "memory_mb": 0, "cpu_percent": 0, "disk_mb": 0}
ALLOWANCE_FIELDS = {f"unbilled_{key}" for key in ZERO}


def allow(account: Account, **allowance: int) -> None:
    """Set the allowance (keys as the API names them); the rest zero."""
    for key, value in (ZERO | allowance).items():
        setattr(account, f"unbilled_{key}", value)
    account.save()


def create_server(api, **resources):
    body = {**MINECRAFT, **({"resources": resources} if resources else {})}
    return api.post("/v1/servers", body, format="json")


# --- Creating -------------------------------------------------------------------------------


def test_without_an_allowance_a_server_or_bot_needs_a_plan(account, owner_api):
    allow(account)
    error = error_of(create_server(owner_api), 422, "plan_required")
    assert error["details"] == {"allowance": "instances", "limit": 0, "used": 0}
    assert "POST /v1/subscriptions" in error["message"]
    error_of(owner_api.post("/v1/bots", BOT, format="json"), 422, "plan_required")
    assert not Server.objects.exists() and not Bot.objects.exists()
    assert not Event.objects.filter(type__in=["server.created", "bot.created"]).exists()


def test_the_allowance_counts_servers_and_bots_together(account, owner_api):
    allow(account, instances=2, memory_mb=100_000, cpu_percent=10_000, disk_mb=1_000_000)
    assert create_server(owner_api).status_code == 201
    assert owner_api.post("/v1/bots", BOT, format="json").status_code == 201
    error = error_of(create_server(owner_api), 422, "plan_required")
    assert error["details"] == {"allowance": "instances", "limit": 2, "used": 2}
    assert Server.objects.count() == 1


@pytest.mark.parametrize(
    ("field", "limit"), [("memory_mb", 3000), ("cpu_percent", 150), ("disk_mb", 15000)]
)
def test_the_allowance_bounds_resources_together(account, owner_api, field, limit):
    allow(
        account,
        instances=10,
        **({"memory_mb": 100_000, "cpu_percent": 10_000, "disk_mb": 1_000_000} | {field: limit}),
    )
    first = {"memory_mb": 2048, "cpu_percent": 100, "disk_mb": 10240}
    assert create_server(owner_api, **first).status_code == 201
    error = error_of(create_server(owner_api, **first), 422, "plan_required")
    assert error["details"] == {"allowance": field, "limit": limit, "used": first[field]}
    # What is left of it still fits.
    rest = first | {field: limit - first[field]}
    assert create_server(owner_api, **rest).status_code == 201


def test_a_plan_less_server_is_resized_only_within_the_allowance(account, owner_api):
    allow(account, instances=5, memory_mb=4096, cpu_percent=1000, disk_mb=100_000)
    server_id = create_server(owner_api, memory_mb=2048).json()["data"]["server"]["id"]
    grown = owner_api.patch(
        f"/v1/servers/{server_id}", {"resources": {"memory_mb": 4096}}, format="json"
    )
    assert grown.status_code == 200, grown.content
    too_much = owner_api.patch(
        f"/v1/servers/{server_id}", {"resources": {"memory_mb": 4097}}, format="json"
    )
    error = error_of(too_much, 422, "plan_required")
    assert error["details"] == {"allowance": "memory_mb", "limit": 4096, "used": 4096}
    assert Server.objects.get(pk=server_id).memory_mb == 4096
    # Shrinking is always allowed, also once staff lowered the allowance below what runs.
    allow(account, instances=5, memory_mb=1024, cpu_percent=1000, disk_mb=100_000)
    shrunk = owner_api.patch(
        f"/v1/servers/{server_id}", {"resources": {"memory_mb": 3072}}, format="json"
    )
    assert shrunk.status_code == 200, shrunk.content


def test_deleted_servers_give_their_share_back(account, owner_api):
    allow(account, instances=1, memory_mb=4096, cpu_percent=1000, disk_mb=100_000)
    server = Server.objects.get(pk=create_server(owner_api).json()["data"]["server"]["id"])
    server.deleted_at = server.created_at
    server.save()
    assert create_server(owner_api).status_code == 201


def test_plan_servers_do_not_count_against_the_allowance(account, owner_api):
    allow(account, instances=1, memory_mb=2048, cpu_percent=100, disk_mb=10240)
    plan = {
        "subscription": "sub_x",
        "product": "4 GB",
        "memory_mb": 4096,
        "cpu_percent": 200,
        "disk_mb": 20480,
    }
    server_create(
        account=account,
        name="Bought",
        game="minecraft-java",
        region="eu-central",
        variables={"EULA": True},
        resources={"memory_mb": 4096},
        plan=plan,
        actor=Actor(),
    )
    assert create_server(owner_api).status_code == 201


def test_staff_are_not_bound_by_the_allowance(account):
    allow(account)
    staff = UserFactory(is_staff=True)
    server = server_create(
        account=account,
        name="Made by staff",
        game="minecraft-java",
        region="eu-central",
        variables={"EULA": True},
        actor=Actor(user=staff),
    )
    assert server.plan is None


def test_an_outsiders_allowance_is_not_the_accounts(account, other_account, outsider_api):
    allow(account, instances=10, memory_mb=100_000, cpu_percent=10_000, disk_mb=1_000_000)
    allow(other_account)
    error_of(create_server(outsider_api), 422, "plan_required")


# --- New accounts ---------------------------------------------------------------------------


def test_a_sign_up_starts_without_an_allowance(db):
    account = account_create(
        name="New", owner_email="new@example.com", owner_password="a-long-password-1"
    )
    assert {field: getattr(account, field) for field in ALLOWANCE_FIELDS} == dict.fromkeys(
        ALLOWANCE_FIELDS, 0
    )


def test_a_host_billing_elsewhere_gives_new_accounts_an_allowance(db, settings):
    settings.NEW_ACCOUNT_UNBILLED_ALLOWANCE = {
        "unbilled_instances": 3,
        "unbilled_memory_mb": 6144,
        "unbilled_cpu_percent": 300,
        "unbilled_disk_mb": 30720,
    }
    account = account_create(name="New", owner_email="new@example.com")
    assert (account.unbilled_instances, account.unbilled_memory_mb) == (3, 6144)


# --- Who sees and sets it -------------------------------------------------------------------


def test_the_account_shows_its_allowance_to_members(
    account, owner_api, teammate, make_token, client_for
):
    allow(account, instances=2, memory_mb=4096)
    teammate_api = client_for(make_token(teammate, account, ["account:read"]))
    for api in (owner_api, teammate_api):
        body = api.get("/v1/account").json()
        assert body["data"]["account"]["unbilled_allowance"] == ZERO | {
            "instances": 2,
            "memory_mb": 4096,
        }


def test_members_cannot_set_their_own_allowance(account, owner_api):
    allow(account)
    response = owner_api.patch(
        "/v1/account", {"unbilled_allowance": {"instances": 99}}, format="json"
    )
    assert response.status_code == 400, response.content
    assert Account.objects.get(pk=account.pk).unbilled_instances == 0


def test_staff_set_part_of_the_allowance_and_the_change_is_an_event(account, staff_api):
    allow(account, instances=1, memory_mb=2048, cpu_percent=100, disk_mb=10240)
    response = staff_api.patch(
        f"/v1/admin/customers/{account.id}",
        {"unbilled_allowance": {"instances": 3, "memory_mb": 8192}},
        format="json",
    )
    assert response.status_code == 200, response.content
    shown = response.json()["data"]["customer"]["unbilled_allowance"]
    assert shown == {"instances": 3, "memory_mb": 8192, "cpu_percent": 100, "disk_mb": 10240}
    event = Event.objects.get(type="account.updated", object_id=account.id)
    assert event.data["previous_attributes"]["unbilled_allowance"] == {
        "instances": 1,
        "memory_mb": 2048,
        "cpu_percent": 100,
        "disk_mb": 10240,
    }


@pytest.mark.parametrize(
    "allowance",
    [
        {"instances": -1},
        {"memory_mb": "5"},
        {"disk_mb": True},
        {"seats": 2},
        [1, 2],
        "3",
        {"cpu_percent": 2**31},
    ],
)
def test_staff_get_a_clear_error_for_a_bad_allowance(account, staff_api, allowance):
    allow(account)
    response = staff_api.patch(
        f"/v1/admin/customers/{account.id}", {"unbilled_allowance": allowance}, format="json"
    )
    error = error_of(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["name"].startswith("unbilled_allowance")
    assert Account.objects.get(pk=account.pk).unbilled_instances == 0


def test_the_service_refuses_a_negative_allowance_and_accepts_zero(account):
    from hosting.errors import ValidationFailed

    with pytest.raises(ValidationFailed):
        account_update(account=account, actor=Actor(), unbilled_memory_mb=-1)
    account_update(account=account, actor=Actor(), unbilled_memory_mb=0)
    assert Account.objects.get(pk=account.pk).unbilled_memory_mb == 0


# --- Existing accounts keep what they run ---------------------------------------------------


def test_the_migration_gives_existing_accounts_what_their_plan_less_instances_use(account):
    allow(account)
    Server.objects.create(
        account=account,
        name="a",
        game_id="minecraft-java",
        region_id="eu-central",
        memory_mb=3000,
        cpu_percent=150,
        disk_mb=7000,
    )
    Bot.objects.create(
        account=account,
        name="b",
        region_id="eu-central",
        runtime="python",
        start_command="python bot.py",
        memory_mb=500,
        cpu_percent=50,
        disk_mb=1000,
    )
    Server.objects.create(
        account=account,
        name="bought",
        game_id="minecraft-java",
        region_id="eu-central",
        memory_mb=9999,
        plan={"subscription": "sub_x"},
    )
    migration = importlib.import_module(
        "billing.migrations.0006_unbilled_allowance_of_existing_accounts"
    )
    migration.keep_what_runs(apps, None)
    account.refresh_from_db()
    allowance = ("instances", "memory_mb", "cpu_percent", "disk_mb")
    assert [getattr(account, f"unbilled_{key}") for key in allowance] == [2, 3500, 200, 8000]

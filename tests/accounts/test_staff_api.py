"""/v1/admin/customers: the cross-account staff API, open only to staff keys with admin:*."""

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from accounts.models import Account, ApiKey, Membership, User
from accounts.roles import Role
from events.models import Event
from tests.conftest import auth_queries
from tests.envelopes import error_of
from tests.factories import AccountFactory, MembershipFactory
from tests.test_openapi import validator_for

CUSTOMERS = "/v1/admin/customers"
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


def key_of(api) -> ApiKey:
    """The key an APIClient authenticates with."""
    token = api._credentials["HTTP_AUTHORIZATION"].removeprefix("Bearer ")
    return ApiKey.objects.get(key_id=token[4:16])


def customer_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [customer["id"] for customer in response.json()["data"]["customers"]]


# --- Who may use it ------------------------------------------------------------------------


def test_a_staff_key_reads_every_account(
    staff_reader_api, staff_account, account, owner, teammate, other_account, outsider
):
    response = staff_reader_api.get(CUSTOMERS)

    assert customer_ids(response) == [other_account.id, account.id, staff_account.id]
    customer = response.json()["data"]["customers"][1]
    assert customer == {
        "id": account.id,
        "name": "Owner's Hosting",
        "status": "active",
        "suspended_at": None,
        "suspended_reason": "",
        "rate_limit_per_minute": None,
        "max_api_keys": 25,
        "require_second_factor": False,
        "unbilled_allowance": {
            "instances": account.unbilled_instances,
            "memory_mb": account.unbilled_memory_mb,
            "cpu_percent": account.unbilled_cpu_percent,
            "disk_mb": account.unbilled_disk_mb,
        },
        "created_at": account.created_at.strftime(TIMESTAMP),
        "updated_at": account.updated_at.strftime(TIMESTAMP),
        "owners": [owner.email],
        "member_count": 2,
    }
    assert response.json()["data"]["pagination"]["total"] == 3


def test_a_non_staff_owner_cannot_hold_admin_scopes(owner_api, owner, account):
    response = owner_api.post(
        "/v1/api-keys", {"name": "Staff?", "scopes": ["admin:read"]}, format="json"
    )

    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["admin:read"]
    assert not ApiKey.objects.filter(name="Staff?").exists()


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("get", "", "admin:read"),
        ("post", "", "admin:write"),
        ("get", "/{id}", "admin:read"),
        ("patch", "/{id}", "admin:write"),
        ("post", "/{id}/suspend", "admin:write"),
        ("post", "/{id}/unsuspend", "admin:write"),
        ("get", "/{id}/members", "admin:read"),
    ],
)
def test_customer_keys_get_403_on_every_staff_endpoint(
    owner_api, outsider_api, account, other_account, method, path, scope
):
    for api, target in ((owner_api, account), (outsider_api, account), (owner_api, other_account)):
        response = getattr(api, method)(CUSTOMERS + path.format(id=target.id), {}, format="json")
        error = error_of(response, 403)
        assert error["code"] == "insufficient_scope"
        assert error["details"] == {"required_scopes": [scope]}
    assert Account.objects.filter(status="suspended").count() == 0


def test_a_staff_key_without_admin_write_cannot_change_customers(staff_reader_api, account):
    for response in (
        staff_reader_api.post(
            CUSTOMERS, {"name": "X", "owner_email": "x@example.com"}, format="json"
        ),
        staff_reader_api.patch(f"{CUSTOMERS}/{account.id}", {"name": "X"}, format="json"),
        staff_reader_api.post(f"{CUSTOMERS}/{account.id}/suspend", {}, format="json"),
    ):
        error = error_of(response, 403)
        assert error["details"] == {"required_scopes": ["admin:write"]}
    account.refresh_from_db()
    assert (account.name, account.status) == ("Owner's Hosting", "active")


def test_a_staff_key_stops_working_for_admin_when_its_user_leaves_staff(staff, staff_api):
    staff.is_staff = False
    staff.save()

    error = error_of(staff_api.get(CUSTOMERS), 403)

    assert error["code"] == "insufficient_scope"


# --- Listing -------------------------------------------------------------------------------


@pytest.fixture
def customers(staff_account, account, owner, other_account, outsider):
    account.created_at = datetime(2026, 1, 1, tzinfo=UTC)
    account.save()
    other_account.created_at = datetime(2026, 2, 1, tzinfo=UTC)
    other_account.status = Account.Status.SUSPENDED
    other_account.save()
    co_owner = MembershipFactory(account=other_account, role=Role.OWNER, user__email="co@x.io")
    MembershipFactory(account=other_account, role=Role.VIEWER, user__email="view@x.io")
    return {"ours": account, "theirs": other_account, "co_owner": co_owner.user}


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("status=suspended", ["Someone Else's Hosting"]),
        ("status=active", ["Owner's Hosting", "Hosting Company"]),
        ("search=else", ["Someone Else's Hosting"]),
        ("search=CO@X", ["Someone Else's Hosting"]),
        ("search=view@x.io", []),
        ("search=ops@hosting", ["Hosting Company"]),
        ("created_after=2026-01-15T00:00:00Z", ["Someone Else's Hosting"]),
        ("created_before=2026-01-15T00:00:00Z", ["Owner's Hosting", "Hosting Company"]),
        ("ordering=name", ["Hosting Company", "Owner's Hosting", "Someone Else's Hosting"]),
    ],
)
def test_customers_can_be_filtered(staff_api, staff, customers, query, names):
    response = staff_api.get(f"{CUSTOMERS}?{query}")

    assert response.status_code == 200, response.content
    assert [c["name"] for c in response.json()["data"]["customers"]] == names


def test_the_search_finds_an_exact_id_and_each_owner_once(staff_api, customers):
    theirs = customers["theirs"]

    response = staff_api.get(f"{CUSTOMERS}?search={theirs.id}")

    assert customer_ids(response) == [theirs.id]
    customer = response.json()["data"]["customers"][0]
    assert sorted(customer["owners"]) == sorted([theirs.memberships.first().user.email, "co@x.io"])
    assert customer["member_count"] == 3
    assert customer["status"] == "suspended"


@pytest.mark.parametrize("query", ["status=closed", "created_after=yesterday", "ordering=owners"])
def test_an_unknown_filter_value_is_refused(staff_api, query):
    error = error_of(staff_api.get(f"{CUSTOMERS}?{query}"), 400)

    assert error["code"] == "invalid_parameter"
    assert error["details"]["parameters"][0]["name"] == query.split("=")[0]


def test_the_customer_list_runs_a_fixed_number_of_queries(staff_api, django_assert_num_queries):
    for _ in range(30):
        customer = AccountFactory()
        MembershipFactory.create_batch(2, account=customer, role=Role.OWNER)
        MembershipFactory(account=customer, role=Role.VIEWER)
    staff_api.get(CUSTOMERS)

    # The key with its context, the count, the page with member counts, the owners.
    with django_assert_num_queries(3 + auth_queries()):
        response = staff_api.get(f"{CUSTOMERS}?per_page=100&search=customer")

    customers = response.json()["data"]["customers"]
    assert len(customers) == 30
    assert {len(c["owners"]) for c in customers} == {2}
    assert {c["member_count"] for c in customers} == {3}


# --- Reading, creating, changing -----------------------------------------------------------


def test_one_customer_and_its_members(staff_api, account, owner, teammate):
    one = staff_api.get(f"{CUSTOMERS}/{account.id}")
    members = staff_api.get(f"{CUSTOMERS}/{account.id}/members")

    assert one.status_code == 200
    assert one.json()["data"]["customer"]["owners"] == [owner.email]
    assert members.status_code == 200
    assert [(m["id"], m["role"]) for m in members.json()["data"]["members"]] == [
        (teammate.id, "developer"),
        (owner.id, "owner"),
    ]
    assert members.json()["data"]["pagination"]["total"] == 2


@pytest.mark.parametrize("suffix", ["", "/members", "/suspend", "/unsuspend"])
def test_an_unknown_customer_is_not_found(staff_api, suffix):
    method = staff_api.get if suffix in ("", "/members") else staff_api.post

    response = method(f"{CUSTOMERS}/acct_000000000000000000000000{suffix}", format="json")

    assert error_of(response, 404)["code"] == "not_found"


def test_staff_create_a_customer_with_a_new_owner(
    staff_api, staff, django_capture_on_commit_callbacks
):
    response = staff_api.post(
        CUSTOMERS,
        {"name": " Creeper Hosting ", "owner_email": "Alex@Example.com", "owner_name": "Alex"},
        format="json",
    )

    assert response.status_code == 201, response.content
    customer = response.json()["data"]["customer"]
    account = Account.objects.get(pk=customer["id"])
    assert account.name == customer["name"] == "Creeper Hosting"
    assert customer["owners"] == ["alex@example.com"]
    assert customer["member_count"] == 1
    owner = User.objects.get(email="alex@example.com")
    assert owner.name == "Alex"
    assert not owner.has_usable_password()
    assert Membership.objects.get(account=account).role == Role.OWNER
    events = Event.objects.filter(account=account).order_by("created_at", "id")
    assert [e.type for e in events] == ["account.created", "member.added"]
    assert {e.actor_api_key for e in events} == {key_of(staff_api)}
    assert {e.actor_user for e in events} == {staff}


def test_an_existing_user_becomes_the_owner(staff_api, outsider):
    response = staff_api.post(
        CUSTOMERS, {"name": "Second shop", "owner_email": outsider.email.upper()}, format="json"
    )

    assert response.status_code == 201
    account = Account.objects.get(pk=response.json()["data"]["customer"]["id"])
    assert Membership.objects.get(account=account).user == outsider
    assert User.objects.filter(email=outsider.email).count() == 1


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, [("name", "required"), ("owner_email", "required")]),
        ({"name": "X", "owner_email": "nope"}, [("owner_email", "invalid")]),
        ({"name": "", "owner_email": "a@example.com"}, [("name", "blank")]),
        (
            {"name": "X", "owner_email": "a@example.com", "owner_password": "hunter2"},
            [("owner_password", "unknown_field")],
        ),
    ],
)
def test_an_invalid_customer_is_refused(staff_api, body, fields):
    error = error_of(staff_api.post(CUSTOMERS, body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    assert Account.objects.count() == 1


def test_staff_change_a_customers_name_and_limits(staff_api, account, owner_api):
    response = staff_api.patch(
        f"{CUSTOMERS}/{account.id}",
        {"name": "Renamed", "rate_limit_per_minute": 1200, "max_api_keys": 50},
        format="json",
    )

    assert response.status_code == 200
    customer = response.json()["data"]["customer"]
    assert (customer["name"], customer["rate_limit_per_minute"], customer["max_api_keys"]) == (
        "Renamed",
        1200,
        50,
    )
    account.refresh_from_db()
    assert (account.name, account.rate_limit_per_minute, account.max_api_keys) == (
        "Renamed",
        1200,
        50,
    )
    assert owner_api.get("/v1/account")["X-RateLimit-Limit"] == "1200"
    event = Event.objects.get(type="account.updated")
    assert event.account == account
    assert event.actor_api_key == key_of(staff_api)
    assert event.data["previous_attributes"] == {
        "name": "Owner's Hosting",
        "rate_limit_per_minute": None,
        "max_api_keys": 25,
    }


def test_a_null_rate_limit_means_the_default(staff_api, account):
    account.rate_limit_per_minute = 5
    account.save()

    response = staff_api.patch(
        f"{CUSTOMERS}/{account.id}", {"rate_limit_per_minute": None}, format="json"
    )

    assert response.json()["data"]["customer"]["rate_limit_per_minute"] is None
    account.refresh_from_db()
    assert account.rate_limit_per_minute is None


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"rate_limit_per_minute": 0}, [("rate_limit_per_minute", "min_value")]),
        ({"rate_limit_per_minute": "fast"}, [("rate_limit_per_minute", "invalid")]),
        ({"max_api_keys": None}, [("max_api_keys", "null")]),
        ({"max_api_keys": -1}, [("max_api_keys", "min_value")]),
        ({"max_api_keys": 2**31}, [("max_api_keys", "max_value")]),
        ({"name": ""}, [("name", "blank")]),
        ({"status": "suspended"}, [("status", "unknown_field")]),
    ],
)
def test_an_invalid_customer_change_is_refused(staff_api, account, body, fields):
    error = error_of(staff_api.patch(f"{CUSTOMERS}/{account.id}", body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    account.refresh_from_db()
    assert (account.name, account.max_api_keys, account.status) == ("Owner's Hosting", 25, "active")


# --- Suspending ----------------------------------------------------------------------------


def test_suspending_locks_the_customers_keys_and_unsuspending_restores_them(
    staff_api, account, owner_api
):
    assert owner_api.get("/v1/account").status_code == 200

    suspended = staff_api.post(
        f"{CUSTOMERS}/{account.id}/suspend", {"reason": "Unpaid invoices"}, format="json"
    )

    assert suspended.status_code == 200
    customer = suspended.json()["data"]["customer"]
    assert (customer["status"], customer["suspended_reason"]) == ("suspended", "Unpaid invoices")
    account.refresh_from_db()
    assert account.is_suspended
    assert customer["suspended_at"] == account.suspended_at.strftime(TIMESTAMP)
    for path in ("/v1/account", "/v1/servers", "/v1/api-keys"):
        assert error_of(owner_api.get(path), 403)["code"] == "account_suspended"

    restored = staff_api.post(f"{CUSTOMERS}/{account.id}/unsuspend")

    assert restored.status_code == 200
    customer = restored.json()["data"]["customer"]
    assert (customer["status"], customer["suspended_at"], customer["suspended_reason"]) == (
        "active",
        None,
        "",
    )
    account.refresh_from_db()
    assert not account.is_suspended
    assert owner_api.get("/v1/account").status_code == 200
    events = Event.objects.filter(type__in=["account.suspended", "account.unsuspended"])
    assert sorted(e.type for e in events) == ["account.suspended", "account.unsuspended"]
    assert {e.actor_api_key for e in events} == {key_of(staff_api)}
    assert {e.account for e in events} == {account}


def test_suspending_twice_changes_nothing(staff_api, account):
    staff_api.post(f"{CUSTOMERS}/{account.id}/suspend", {}, format="json")
    account.refresh_from_db()
    first = account.suspended_at

    again = staff_api.post(f"{CUSTOMERS}/{account.id}/suspend", {"reason": "x"}, format="json")

    assert again.status_code == 200
    account.refresh_from_db()
    assert (account.suspended_at, account.suspended_reason) == (first, "")
    assert Event.objects.filter(type="account.suspended").count() == 1


def test_a_suspended_customer_is_listed_and_readable_by_staff(staff_api, account):
    staff_api.post(f"{CUSTOMERS}/{account.id}/suspend", {}, format="json")

    response = staff_api.get(f"{CUSTOMERS}?status=suspended")

    assert customer_ids(response) == [account.id]
    assert staff_api.get(f"{CUSTOMERS}/{account.id}/members").status_code == 200


@pytest.mark.parametrize(
    ("suffix", "body", "fields"),
    [
        ("suspend", {"reason": "x" * 501}, [("reason", "max_length")]),
        ("suspend", {"until": "2027-01-01"}, [("until", "unknown_field")]),
        ("unsuspend", {"reason": "paid"}, [("reason", "unknown_field")]),
    ],
)
def test_an_invalid_suspension_is_refused(staff_api, account, suffix, body, fields):
    response = staff_api.post(f"{CUSTOMERS}/{account.id}/{suffix}", body, format="json")

    error = error_of(response, 400)
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == fields
    account.refresh_from_db()
    assert account.status == "active"


def test_unsuspending_an_active_customer_changes_nothing(staff_api, account):
    response = staff_api.post(f"{CUSTOMERS}/{account.id}/unsuspend")

    assert response.status_code == 200
    assert response.json()["data"]["customer"]["status"] == "active"
    assert not Event.objects.filter(type="account.unsuspended").exists()


def test_staff_timestamps_are_whole_seconds(staff_api, account):
    account.created_at = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    account.save()

    customer = staff_api.get(f"{CUSTOMERS}/{account.id}").json()["data"]["customer"]

    assert customer["created_at"] == "2026-03-04T05:06:07Z"


def test_the_answers_match_the_documented_schema(staff_api, account):
    document = APIClient().get("/v1/openapi.json").json()
    one = f"{CUSTOMERS}/{{id}}"
    new = {"name": "New", "owner_email": "new@example.com"}

    for path, method, response in (
        (CUSTOMERS, "get", staff_api.get(CUSTOMERS)),
        (CUSTOMERS, "post", staff_api.post(CUSTOMERS, new, format="json")),
        (one, "get", staff_api.get(f"{CUSTOMERS}/{account.id}")),
        (
            one,
            "patch",
            staff_api.patch(f"{CUSTOMERS}/{account.id}", {"max_api_keys": 3}, format="json"),
        ),
        (f"{one}/suspend", "post", staff_api.post(f"{CUSTOMERS}/{account.id}/suspend")),
        (f"{one}/unsuspend", "post", staff_api.post(f"{CUSTOMERS}/{account.id}/unsuspend")),
        (
            f"{CUSTOMERS}/{{customer_id}}/members",
            "get",
            staff_api.get(f"{CUSTOMERS}/{account.id}/members"),
        ),
    ):
        status = str(response.status_code)
        assert status in {"200", "201"}, (path, method, response.content)
        validator = validator_for(
            document,
            "paths",
            path,
            method,
            "responses",
            status,
            "content",
            "application/json",
            "schema",
        )
        assert [e.message for e in validator.iter_errors(response.json())] == [], (path, method)

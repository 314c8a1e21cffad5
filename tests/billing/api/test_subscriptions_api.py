"""The subscriptions API: ordering a plan, reading subscriptions, previewing and changing the
plan, cancelling and resuming, and checking a promotion code; the owner, a billing teammate,
a viewer and an outsider each get what their role and account allow."""

import json
from datetime import timedelta

import pytest

from accounts.actors import SYSTEM
from billing.models import Coupon, Invoice, Price, PromotionCode, Subscription
from billing.services import balance_change, balance_of
from billing.services.job.renewals import billing_run
from events.models import Event
from servers.models import Server
from tests.billing.api.conftest import T0, at, data_of, listed
from tests.envelopes import error_of
from tests.servers.helpers import MINECRAFT, run_worker

pytestmark = pytest.mark.django_db

ORDER = {"name": "Survival SMP", "region": "eu-central", "game": "minecraft-java"}
ORDER_VARIABLES = dict(MINECRAFT["variables"])


def post(api, path, body=None):
    return api.post(
        path, json.dumps(body if body is not None else {}), content_type="application/json"
    )


def top_up(account, amount):
    balance_change(
        account=account,
        amount=amount,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )


def order_body(price, **extra):
    return {"price": price.id, "order": {**ORDER, "variables": ORDER_VARIABLES}, **extra}


@pytest.fixture
def bigger(catalogue):
    return Price.objects.create(
        product=catalogue.server, currency="EUR", unit_amount=2400, interval="month"
    )


@pytest.fixture
def on_clock(account, other_account):
    at(account, T0)
    at(other_account, T0)
    return account


@pytest.fixture
def paid_order(on_clock, owner_api, catalogue):
    """An order the account's credit paid for at once: active, its server being created."""
    top_up(on_clock, 5000)
    answer = data_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)
    run_worker()
    return Subscription.objects.get(pk=answer["subscription"]["id"])


# --- Ordering ---------------------------------------------------------------------------------


def test_an_order_without_credit_waits_for_payment_then_creates_the_server(
    on_clock, owner_api, catalogue
):
    response = post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur))
    answer = data_of(response, 201)
    subscription, invoice = answer["subscription"], answer["invoice"]

    assert response["Location"].endswith(f"/v1/subscriptions/{subscription['id']}")
    assert subscription["status"] == "incomplete"
    assert subscription["server"] is None
    assert {key: subscription["order"][key] for key in ORDER} == ORDER
    assert subscription["order"]["variables"]["EULA"] is True  # with the game's defaults
    assert invoice["status"] == "open"
    assert invoice["billing_reason"] == "subscription_create"
    assert invoice["total"] == 1200  # no tax rate for the seller's country in this test
    assert [line["amount"] for line in invoice["lines"]] == [1200]

    top_up(on_clock, 1200)
    paid = data_of(post(owner_api, f"/v1/invoices/{invoice['id']}/pay", {"source": "credit"}))
    assert paid["invoice"]["status"] == "paid"
    shown = data_of(owner_api.get(f"/v1/subscriptions/{subscription['id']}"))["subscription"]
    assert shown["status"] == "active"
    server = Server.objects.get(pk=shown["server"])
    assert (server.memory_mb, server.name) == (catalogue.server.memory_mb, "Survival SMP")


def test_an_order_covered_by_credit_is_paid_and_active_at_once(on_clock, owner_api, catalogue):
    top_up(on_clock, 5000)
    answer = data_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)

    assert answer["subscription"]["status"] == "active"
    assert answer["subscription"]["server"] is not None
    assert answer["invoice"]["status"] == "paid"
    assert balance_of(on_clock) == 5000 - 1200
    assert Event.objects.filter(account=on_clock, type="subscription.created").count() == 1


def test_a_bot_order_keeps_its_token_out_of_every_answer_and_event(on_clock, owner_api, catalogue):
    body = {
        "price": catalogue.bot_eur.id,
        "order": {
            "name": "Mod bot",
            "region": "eu-central",
            "runtime": "python-3.13",
            "start_command": "python bot.py",
            "token": "MTA1NjY3ODkwMTIzNDU2Nzg5.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB",
        },
    }
    response = post(owner_api, "/v1/subscriptions", body)
    answer = data_of(response, 201)

    assert set(answer["subscription"]["order"]) == {
        "name",
        "region",
        "runtime",
        "start_command",
        "environment",
    }
    assert "abcdefghijklmnop" not in response.content.decode()
    for event in Event.objects.filter(account=on_clock):
        assert "token" not in json.dumps(event.data)


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"price": "price_doesnotexist"}, "price", "invalid_choice"),
        ({"order": {**ORDER, "region": "mars-1"}}, "order.region", "invalid_choice"),
        ({"order": {**ORDER, "game": "valheim"}}, "order.game", "not_in_plan"),
        ({"order": {"region": "eu-central", "game": "minecraft-java"}}, "order.name", "required"),
        ({"promotion_code": "NOPE"}, "promotion_code", "coupon_not_found"),
        ({"quantity": 2}, "quantity", "max_value"),
        ({"surprise": 1}, "surprise", "unknown_field"),
    ],
)
def test_a_refused_order_names_the_field_and_writes_nothing(
    on_clock, owner_api, catalogue, change, field, code
):
    body = {**order_body(catalogue.server_eur), **change}
    error = error_of(post(owner_api, "/v1/subscriptions", body), 400)

    assert error["code"] == "validation_failed"
    assert (field, code) in [(item["name"], item["code"]) for item in error["details"]["fields"]]
    assert not Subscription.objects.exists()
    assert not Invoice.objects.exists()


def test_an_archived_price_or_another_currency_is_refused(on_clock, owner_api, catalogue):
    error = error_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_old)), 400)
    assert error["details"]["fields"][0]["code"] == "invalid_choice"

    data_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)
    error = error_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_usd)), 409)
    assert error["code"] == "conflict"
    assert error["details"] == {"currency": "EUR"}


def test_a_promotion_code_is_checked_then_discounts_the_order(on_clock, owner_api, catalogue):
    coupon = Coupon.objects.create(name="Welcome", percent_off=10, duration="once")
    PromotionCode.objects.create(coupon=coupon, code="WELCOME10", max_redemptions=1)

    check = data_of(
        post(
            owner_api,
            "/v1/coupons/validate",
            {"price": catalogue.server_eur.id, "promotion_code": "welcome10"},
        )
    )["coupon_validation"]
    assert check["coupon"]["id"] == coupon.id
    assert check["promotion_code"]["code"] == "WELCOME10"
    assert PromotionCode.objects.get().times_redeemed == 0  # checking redeems nothing

    body = order_body(catalogue.server_eur, promotion_code="WELCOME10")
    invoice = data_of(post(owner_api, "/v1/subscriptions", body), 201)["invoice"]
    assert (invoice["subtotal"], invoice["discount"], invoice["total"]) == (1200, 120, 1080)

    used_up = error_of(
        post(
            owner_api,
            "/v1/coupons/validate",
            {"price": catalogue.server_eur.id, "promotion_code": "WELCOME10"},
        ),
        400,
    )
    assert used_up["details"]["fields"][0] == {
        "name": "promotion_code",
        "code": "coupon_used_up",
        "message": "This promotion code has been used up.",
    }


def test_the_coupon_id_a_check_shows_does_not_get_round_the_codes_limit(
    on_clock, owner_api, catalogue
):
    coupon = Coupon.objects.create(name="Launch", percent_off=10, duration="forever")
    PromotionCode.objects.create(coupon=coupon, code="LAUNCH", max_redemptions=1)
    check = {"price": catalogue.server_eur.id, "promotion_code": "launch"}
    shown = data_of(post(owner_api, "/v1/coupons/validate", check))["coupon_validation"]
    assert shown["coupon"]["id"] == coupon.id  # still shown: an id alone redeems nothing
    assert shown["coupon"]["directly_redeemable"] is False
    body = order_body(catalogue.server_eur, promotion_code="LAUNCH")
    data_of(post(owner_api, "/v1/subscriptions", body), 201)

    refused = {
        "name": "coupon",
        "code": "coupon_code_required",
        "message": "This coupon is redeemed with a promotion code: type the code.",
    }
    by_id = {"price": catalogue.server_eur.id, "coupon": coupon.id}
    error = error_of(post(owner_api, "/v1/coupons/validate", by_id), 400)
    assert (error["code"], error["details"]["fields"]) == ("validation_failed", [refused])
    body = order_body(catalogue.server_eur, coupon=coupon.id)
    body["order"]["name"] = "Second world"
    error = error_of(post(owner_api, "/v1/subscriptions", body), 400)
    assert (error["code"], error["details"]["fields"]) == ("validation_failed", [refused])
    assert Subscription.objects.count() == 1
    coupon.refresh_from_db()
    assert coupon.times_redeemed == 1


def test_a_coupon_staff_marked_directly_redeemable_is_checked_and_ordered_by_id(
    on_clock, owner_api, catalogue
):
    coupon = Coupon.objects.create(
        name="Partner", percent_off=50, duration="once", directly_redeemable=True
    )
    by_id = {"price": catalogue.server_eur.id, "coupon": coupon.id}
    check = data_of(post(owner_api, "/v1/coupons/validate", by_id))["coupon_validation"]
    assert (check["coupon"]["id"], check["promotion_code"]) == (coupon.id, None)
    assert check["coupon"]["directly_redeemable"] is True

    body = order_body(catalogue.server_eur, coupon=coupon.id)
    invoice = data_of(post(owner_api, "/v1/subscriptions", body), 201)["invoice"]
    assert (invoice["subtotal"], invoice["discount"], invoice["total"]) == (1200, 600, 600)


def test_a_coupon_check_needs_exactly_one_of_code_and_coupon(owner_api, catalogue):
    for body in (
        {"price": catalogue.server_eur.id},
        {"price": catalogue.server_eur.id, "promotion_code": "A", "coupon": "B"},
    ):
        error = error_of(post(owner_api, "/v1/coupons/validate", body), 400)
        assert error["details"]["fields"][0]["name"] == "promotion_code"


# --- Reading ----------------------------------------------------------------------------------


def test_lists_filter_by_status_and_search_and_stay_in_the_account(
    on_clock, owner_api, outsider_api, other_account, catalogue
):
    top_up(on_clock, 5000)
    active = data_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)
    body = order_body(catalogue.server_eur)
    body["order"]["name"] = "Creative world"
    at(on_clock, T0 + timedelta(hours=1))
    balance_change(
        account=on_clock,
        amount=-balance_of(on_clock),
        currency="EUR",
        kind="adjustment",
        description="Spent",
        actor=SYSTEM,
    )
    waiting = data_of(post(owner_api, "/v1/subscriptions", body), 201)
    top_up(other_account, 5000)
    data_of(post(outsider_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)

    ids = (active["subscription"]["id"], waiting["subscription"]["id"])
    assert listed(owner_api.get("/v1/subscriptions"), "subscriptions") == [ids[1], ids[0]]
    assert listed(owner_api.get("/v1/subscriptions?status=incomplete"), "subscriptions") == [ids[1]]
    assert listed(owner_api.get("/v1/subscriptions?search=creat"), "subscriptions") == [ids[1]]
    assert listed(owner_api.get("/v1/subscriptions?ordering=created_at"), "subscriptions") == [
        ids[0],
        ids[1],
    ]
    assert error_of(owner_api.get("/v1/subscriptions?status=paused"), 400)["code"] == (
        "invalid_parameter"
    )
    assert error_of(outsider_api.get(f"/v1/subscriptions/{ids[0]}"), 404)["code"] == "not_found"


# --- Changing the plan ------------------------------------------------------------------------


def test_a_preview_shows_exactly_what_the_upgrade_then_invoices(paid_order, owner_api, bigger):
    # Half-way through a 31-day March period: half the old price back, half the new one due.
    at(
        paid_order.account,
        paid_order.current_period_start
        + (paid_order.current_period_end - paid_order.current_period_start) / 2,
    )
    path = f"/v1/subscriptions/{paid_order.id}"

    preview = data_of(post(owner_api, f"{path}/preview-change", {"price": bigger.id}))
    change = preview["plan_change"]
    assert [line["amount"] for line in change["lines"]] == [-600, 1200]
    assert (change["total"], change["outcome"]) == (600, "invoice")
    assert Invoice.objects.count() == 1  # the preview wrote nothing

    answer = data_of(post(owner_api, f"{path}/change", {"price": bigger.id}))
    assert answer["subscription"]["price"] == bigger.id
    invoice = answer["invoice"]
    assert invoice["billing_reason"] == "subscription_update"
    assert [line["amount"] for line in invoice["lines"]] == [-600, 1200]
    assert invoice["total"] == change["total"]
    assert invoice["status"] == "paid"  # the credit left (3,800) covers it
    run_worker()
    assert Server.objects.get(pk=paid_order.server_id).memory_mb == bigger.product.memory_mb


def test_a_downgrade_credits_the_balance_and_invoices_nothing(paid_order, owner_api, bigger):
    path = f"/v1/subscriptions/{paid_order.id}"
    data_of(post(owner_api, f"{path}/change", {"price": bigger.id}))
    before = balance_of(paid_order.account)
    at(paid_order.account, paid_order.current_period_end - timedelta(days=10))

    preview = data_of(post(owner_api, f"{path}/preview-change", {"price": paid_order.price_id}))[
        "plan_change"
    ]
    assert preview["outcome"] == "credit" and preview["total"] < 0
    answer = data_of(post(owner_api, f"{path}/change", {"price": paid_order.price_id}))
    assert answer["invoice"] is None
    assert balance_of(paid_order.account) == before - preview["total"]


@pytest.mark.parametrize(
    ("price", "code"),
    [("same", "unchanged"), ("usd", "currency_mismatch"), ("bot", "invalid_choice")],
)
def test_a_change_that_cannot_be_is_refused_on_the_price(
    paid_order, owner_api, catalogue, price, code
):
    target = {"same": paid_order.price, "usd": catalogue.server_usd, "bot": catalogue.bot_eur}
    for action in ("preview-change", "change"):
        error = error_of(
            post(
                owner_api,
                f"/v1/subscriptions/{paid_order.id}/{action}",
                {"price": target[price].id},
            ),
            400,
        )
        assert error["details"]["fields"][0]["code"] == code


# --- Cancelling -------------------------------------------------------------------------------


def test_cancel_at_period_end_then_resume_then_cancel_now(paid_order, owner_api):
    path = f"/v1/subscriptions/{paid_order.id}"

    later = data_of(post(owner_api, f"{path}/cancel", {}))["subscription"]
    assert (later["status"], later["cancel_at_period_end"]) == ("active", True)
    resumed = data_of(post(owner_api, f"{path}/resume"))["subscription"]
    assert (resumed["cancel_at_period_end"], resumed["canceled_at"]) == (False, None)
    assert error_of(post(owner_api, f"{path}/resume"), 409)["code"] == "conflict"

    now = data_of(post(owner_api, f"{path}/cancel", {"at_period_end": False}))["subscription"]
    assert now["status"] == "canceled"
    run_worker()
    assert Server.objects.get(pk=paid_order.server_id).deleted_at is not None
    refused = error_of(post(owner_api, f"{path}/change", {"price": paid_order.price_id}), 409)
    assert (refused["code"], refused["details"]["status"]) == ("invalid_state", "canceled")
    assert error_of(post(owner_api, f"{path}/cancel", {}), 409)["code"] == "invalid_state"


# --- Who may ----------------------------------------------------------------------------------


ENDPOINTS = [
    ("get", "", None, "billing:read"),
    ("post", "/preview-change", {"price": "{bigger}"}, "billing:read"),
    ("post", "/change", {"price": "{bigger}"}, "billing:write"),
    ("post", "/cancel", {}, "billing:write"),
]


def _call(api, method, suffix, body, subscription, bigger):
    path = f"/v1/subscriptions/{subscription.id}{suffix}"
    if body is None:
        return api.get(path)
    filled = {key: value.format(bigger=bigger.id) for key, value in body.items()}
    return post(api, path, filled)


@pytest.mark.parametrize(("method", "suffix", "body", "scope"), ENDPOINTS)
@pytest.mark.parametrize("who", ["owner_api", "mate_api"])
def test_the_owner_and_a_billing_teammate_use_the_subscription(
    request, paid_order, bigger, who, method, suffix, body, scope
):
    api = request.getfixturevalue(who)
    assert _call(api, method, suffix, body, paid_order, bigger).status_code == 200


@pytest.mark.parametrize(("method", "suffix", "body", "scope"), ENDPOINTS)
def test_an_outsider_gets_not_found_and_changes_nothing(
    outsider_api, paid_order, bigger, method, suffix, body, scope
):
    before = Subscription.objects.values().get(pk=paid_order.pk)
    error = error_of(_call(outsider_api, method, suffix, body, paid_order, bigger), 404)
    assert error["code"] == "not_found"
    assert Subscription.objects.values().get(pk=paid_order.pk) == before


@pytest.mark.parametrize(("method", "suffix", "body", "scope"), ENDPOINTS)
def test_a_viewer_reads_but_cannot_change(
    reader_api, paid_order, bigger, method, suffix, body, scope
):
    response = _call(reader_api, method, suffix, body, paid_order, bigger)
    if scope == "billing:read":
        assert response.status_code == 200
    else:
        error = error_of(response, 403)
        assert error["code"] == "insufficient_scope"


def test_a_key_without_billing_scopes_cannot_order_or_list(unscoped_api, catalogue):
    assert error_of(unscoped_api.get("/v1/subscriptions"), 403)["code"] == "insufficient_scope"
    refused = post(unscoped_api, "/v1/subscriptions", order_body(catalogue.server_eur))
    assert error_of(refused, 403)["code"] == "insufficient_scope"
    assert not Subscription.objects.exists()


def test_a_plans_server_is_refused_more_than_its_plan_with_plan_limit(paid_order, owner_api):
    """Issue 27, case 2, through the API: the envelope names the field, the limit and the
    subscription whose plan change gives more."""
    server = Server.objects.get(pk=paid_order.server_id)
    response = owner_api.patch(
        f"/v1/servers/{server.id}",
        json.dumps({"resources": {"memory_mb": server.memory_mb * 4}}),
        content_type="application/json",
    )
    error = error_of(response, 422)
    assert error["code"] == "plan_limit"
    assert error["details"] == {
        "field": "memory_mb",
        "limit": server.memory_mb,
        "subscription": paid_order.id,
    }
    before = server.memory_mb
    server.refresh_from_db()
    assert server.memory_mb == before


def test_deleting_a_plans_server_ends_its_subscription(paid_order, owner_api, owner, account):
    """Issue 27: a plan's server deleted by its customer ends the subscription now (as cancelling
    now would), attributed to who deleted it; the renewal issued ahead is voided."""
    at(account, paid_order.current_period_end - timedelta(days=2))
    billing_run()  # the billing job issues the renewal ahead
    renewal = Invoice.objects.get(subscription=paid_order, billing_reason="subscription_cycle")
    balance = balance_of(account)
    response = owner_api.delete(f"/v1/servers/{paid_order.server_id}")
    assert response.status_code == 202, response.content
    paid_order.refresh_from_db()
    assert paid_order.status == "canceled" and paid_order.ended_at is not None
    renewal.refresh_from_db()
    # Credit paid the renewal at issue: it goes back, as the period will never be served.
    assert (renewal.status, renewal.amount_credited) == ("paid", renewal.total)
    assert balance_of(account) == balance + renewal.total
    ended = Event.objects.get(type="subscription.canceled", object_id=paid_order.id)
    assert ended.actor_user == owner and ended.actor_api_key is not None
    run_worker()
    assert Server.objects.get(pk=paid_order.server_id).deleted_at is not None
    # Nothing charges it again.
    at(account, paid_order.current_period_end + timedelta(days=40))
    billing_run()
    assert not Invoice.objects.filter(subscription=paid_order, status="open").exists()


def test_deleting_a_server_without_a_plan_touches_no_subscription(paid_order, owner_api, account):
    other = Server.objects.create(
        account=account,
        name="Free",
        game_id="minecraft-java",
        region_id="eu-central",
        status="stopped",
    )
    response = owner_api.delete(f"/v1/servers/{other.id}")
    assert response.status_code == 202, response.content
    paid_order.refresh_from_db()
    assert paid_order.status == "active"

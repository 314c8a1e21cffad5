"""The staff's catalogue API (products, prices, tax rates, coupons, promotion codes), every
customer's subscriptions, and a demo account's test clock: only staff keys with admin:*."""

import json

import pytest

from accounts.actors import SYSTEM
from billing.models import Coupon, Invoice, Price, Product, PromotionCode, Subscription, TaxRate
from billing.services import balance_change
from billing.services.subscriptions import subscription_order
from tests.billing.api.conftest import T0, at, data_of, listed
from tests.envelopes import error_of
from tests.factories import AccountFactory
from tests.servers.helpers import MINECRAFT

pytestmark = pytest.mark.django_db

PRODUCT = {
    "name": "Valheim 4 GB",
    "kind": "server",
    "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
    "games": ["minecraft-java"],
}


def post(api, path, body=None):
    return api.post(
        path, json.dumps(body if body is not None else {}), content_type="application/json"
    )


def patch(api, path, body):
    return api.patch(path, json.dumps(body), content_type="application/json")


@pytest.fixture
def subscribed(account, owner, catalogue):
    """An active subscription of the account (paid from credit), on a test clock."""
    at(account, T0)
    balance_change(
        account=account,
        amount=5000,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )
    subscription, _ = subscription_order(
        account=account, price=catalogue.server_eur, order=dict(MINECRAFT), actor=SYSTEM
    )
    return subscription


# --- Who may ----------------------------------------------------------------------------------

STAFF_ENDPOINTS = [
    ("get", "/v1/admin/products", None, "admin:read"),
    ("get", "/v1/admin/products/{product}", None, "admin:read"),
    ("post", "/v1/admin/products", PRODUCT, "admin:write"),
    ("patch", "/v1/admin/products/{product}", {"description": "Bigger"}, "admin:write"),
    ("post", "/v1/admin/products/{product}/archive", {}, "admin:write"),
    (
        "post",
        "/v1/admin/products/{product}/prices",
        {"currency": "eur", "unit_amount": 900, "interval": "month"},
        "admin:write",
    ),
    ("post", "/v1/admin/prices/{price}/archive", {}, "admin:write"),
    ("get", "/v1/admin/tax-rates", None, "admin:read"),
    ("post", "/v1/admin/tax-rates", {"country": "de", "percentage": "19"}, "admin:write"),
    ("get", "/v1/admin/coupons", None, "admin:read"),
    (
        "post",
        "/v1/admin/coupons",
        {"name": "Ten", "percent_off": "10", "duration": "once"},
        "admin:write",
    ),
    ("get", "/v1/admin/promotion-codes", None, "admin:read"),
    ("get", "/v1/admin/subscriptions", None, "admin:read"),
    ("get", "/v1/admin/subscriptions/{subscription}", None, "admin:read"),
    ("post", "/v1/admin/subscriptions/{subscription}/cancel", {}, "admin:write"),
    (
        "post",
        "/v1/admin/customers/{fresh}/billing-clock",
        {"to": "2030-01-01T00:00:00Z"},
        "admin:write",
    ),
]


def call(api, method, template, body, ids):
    path = template.format(**ids)
    if body is None:
        return api.get(path)
    return getattr(api, method)(path, json.dumps(body), content_type="application/json")


@pytest.fixture
def ids(catalogue, subscribed):
    return {
        "product": catalogue.server.id,
        "price": catalogue.server_usd.id,
        "subscription": subscribed.id,
        "fresh": AccountFactory().id,
    }


@pytest.mark.parametrize(("method", "template", "body", "scope"), STAFF_ENDPOINTS)
def test_a_staff_key_manages_the_catalogue(staff_api, ids, method, template, body, scope):
    response = call(staff_api, method, template, body, ids)
    assert response.status_code in (200, 201), response.content


@pytest.mark.parametrize(("method", "template", "body", "scope"), STAFF_ENDPOINTS)
def test_a_customers_full_key_and_a_staff_reader_are_refused(
    owner_api, staff_reader_api, ids, method, template, body, scope
):
    before = (Product.objects.count(), Price.objects.filter(active=True).count())
    error = error_of(call(owner_api, method, template, body, ids), 403)
    assert error["details"] == {"required_scopes": [scope]}
    if scope == "admin:write":
        error = error_of(call(staff_reader_api, method, template, body, ids), 403)
        assert error["details"] == {"required_scopes": ["admin:write"]}
    assert (Product.objects.count(), Price.objects.filter(active=True).count()) == before


# --- Products and prices ----------------------------------------------------------------------


def test_staff_create_a_plan_price_it_and_customers_see_it_on_sale(staff_api, owner_api, db):
    product = data_of(post(staff_api, "/v1/admin/products", PRODUCT), 201)["product"]
    assert product["resources"] == PRODUCT["resources"]
    assert product["prices"] == []

    price = data_of(
        post(
            staff_api,
            f"/v1/admin/products/{product['id']}/prices",
            {"currency": "eur", "unit_amount": 900, "interval": "month", "setup_fee": 500},
        ),
        201,
    )["price"]
    assert (price["currency"], price["unit_amount"], price["setup_fee"]) == ("EUR", 900, 500)
    on_sale = data_of(owner_api.get(f"/v1/products/{product['id']}"))["product"]
    assert [item["id"] for item in on_sale["prices"]] == [price["id"]]

    data_of(post(staff_api, f"/v1/admin/prices/{price['id']}/archive"))
    data_of(post(staff_api, f"/v1/admin/products/{product['id']}/archive"))
    assert error_of(owner_api.get(f"/v1/products/{product['id']}"), 404)["code"] == "not_found"
    staff_view = data_of(staff_api.get(f"/v1/admin/products/{product['id']}"))["product"]
    assert staff_view["active"] is False
    assert [item["active"] for item in staff_view["prices"]] == [False]
    assert listed(staff_api.get("/v1/admin/products?active=false"), "products") == [product["id"]]


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({**PRODUCT, "games": ["tetris"]}, "games", "invalid_choice"),
        ({**PRODUCT, "kind": "bot"}, "games", "not_allowed"),
        ({**PRODUCT, "resources": {"memory_mb": 1}}, "resources.cpu_percent", "required"),
        ({**PRODUCT, "extra": True}, "extra", "unknown_field"),
        ({**PRODUCT, "name": 7}, "name", "invalid"),
    ],
)
def test_a_product_the_catalogue_refuses_names_the_field(staff_api, db, body, field, code):
    error = error_of(post(staff_api, "/v1/admin/products", body), 400)
    assert (field, code) in [(item["name"], item["code"]) for item in error["details"]["fields"]]
    assert not Product.objects.exists()


def test_a_price_out_of_range_is_refused(staff_api, catalogue):
    path = f"/v1/admin/products/{catalogue.server.id}/prices"
    error = error_of(
        post(staff_api, path, {"currency": "EUR", "unit_amount": -1, "interval": "month"}), 400
    )
    assert error["details"]["fields"][0]["name"] == "unit_amount"
    error = error_of(
        post(staff_api, path, {"currency": "XYZ", "unit_amount": 1, "interval": "month"}), 400
    )
    assert error["details"]["fields"][0]["name"] == "currency"


def test_the_kind_of_a_product_in_use_cannot_change(staff_api, subscribed, catalogue):
    error = error_of(
        patch(staff_api, f"/v1/admin/products/{catalogue.server.id}", {"kind": "bot", "games": []}),
        409,
    )
    assert error["code"] == "conflict"
    assert Product.objects.get(pk=catalogue.server.pk).kind == "server"


# --- Tax rates, coupons, codes ----------------------------------------------------------------


def test_one_active_tax_rate_per_place(staff_api, db):
    rate = data_of(
        post(
            staff_api,
            "/v1/admin/tax-rates",
            {"country": "us", "region": "ny", "percentage": "8.875"},
        ),
        201,
    )["tax_rate"]
    assert (rate["country"], rate["region"], rate["percentage"]) == ("US", "US-NY", "8.875")
    again = error_of(
        post(
            staff_api,
            "/v1/admin/tax-rates",
            {"country": "US", "region": "US-NY", "percentage": "9"},
        ),
        409,
    )
    assert again["code"] == "conflict"
    data_of(post(staff_api, f"/v1/admin/tax-rates/{rate['id']}/archive"))
    data_of(
        post(
            staff_api, "/v1/admin/tax-rates", {"country": "US", "region": "NY", "percentage": "9"}
        ),
        201,
    )
    assert listed(staff_api.get("/v1/admin/tax-rates?country=us&active=true"), "tax_rates") == [
        TaxRate.objects.get(active=True).id
    ]
    bad = error_of(
        post(staff_api, "/v1/admin/tax-rates", {"country": "DE", "percentage": "120"}), 400
    )
    assert bad["details"]["fields"][0]["name"] == "percentage"


def test_a_coupon_and_its_code_then_archiving_stops_the_code(staff_api, owner_api, catalogue):
    coupon = data_of(
        post(
            staff_api,
            "/v1/admin/coupons",
            {
                "name": "Spring",
                "amount_off": 300,
                "currency": "eur",
                "duration": "repeating",
                "duration_in_months": 3,
                "applies_to": [catalogue.server.id],
            },
        ),
        201,
    )["coupon"]
    assert (coupon["amount_off"], coupon["currency"], coupon["applies_to"]) == (
        300,
        "EUR",
        [catalogue.server.id],
    )
    code = data_of(
        post(staff_api, "/v1/admin/promotion-codes", {"coupon": coupon["id"], "code": "spring-26"}),
        201,
    )["promotion_code"]
    assert code["code"] == "SPRING-26"
    taken = error_of(
        post(staff_api, "/v1/admin/promotion-codes", {"coupon": coupon["id"], "code": "Spring-26"}),
        409,
    )
    assert taken["code"] == "conflict"
    check = {"price": catalogue.server_eur.id, "promotion_code": "spring-26"}
    assert data_of(post(owner_api, "/v1/coupons/validate", check))

    data_of(post(staff_api, f"/v1/admin/coupons/{coupon['id']}/archive"))
    refused = error_of(post(owner_api, "/v1/coupons/validate", check), 400)
    assert refused["details"]["fields"][0]["code"] == "coupon_not_found"
    assert PromotionCode.objects.get().active is False
    assert listed(staff_api.get("/v1/admin/coupons?active=false"), "coupons") == [coupon["id"]]

    missing = error_of(
        post(
            staff_api,
            "/v1/admin/promotion-codes",
            {"coupon": "cpn_000000000000000000000000", "code": "NOPE1"},
        ),
        404,
    )
    assert missing["code"] == "not_found"


def test_staff_publish_a_coupon_for_redemption_by_id_and_take_it_back(
    staff_api, staff_reader_api, owner_api, catalogue, openapi
):
    coupon = data_of(
        post(
            staff_api,
            "/v1/admin/coupons",
            {"name": "Partner", "percent_off": "20", "duration": "once"},
        ),
        201,
    )["coupon"]
    assert coupon["directly_redeemable"] is False
    by_id = {"price": catalogue.server_eur.id, "coupon": coupon["id"]}
    refused = error_of(post(owner_api, "/v1/coupons/validate", by_id), 400)
    assert refused["details"]["fields"][0]["code"] == "coupon_code_required"

    path = f"/v1/admin/coupons/{coupon['id']}"
    changed = data_of(patch(staff_api, path, {"directly_redeemable": True}))
    assert changed["coupon"] == {**coupon, "directly_redeemable": True}
    assert data_of(post(owner_api, "/v1/coupons/validate", by_id))
    assert data_of(staff_api.get(path))["coupon"]["directly_redeemable"] is True

    data_of(patch(staff_api, path, {"directly_redeemable": False}))
    refused = error_of(post(owner_api, "/v1/coupons/validate", by_id), 400)
    assert refused["details"]["fields"][0]["code"] == "coupon_code_required"

    assert data_of(patch(staff_api, path, {}))["coupon"]["directly_redeemable"] is False
    bad = error_of(patch(staff_api, path, {"directly_redeemable": "yes"}), 400)
    assert bad["details"]["fields"][0]["name"] == "directly_redeemable"
    unknown = error_of(patch(staff_api, path, {"name": "Renamed"}), 400)
    assert ("name", "unknown_field") in [
        (field["name"], field["code"]) for field in unknown["details"]["fields"]
    ]
    denied = error_of(patch(staff_reader_api, path, {"directly_redeemable": True}), 403)
    assert denied["code"] == "insufficient_scope"
    assert Coupon.objects.get().directly_redeemable is False

    direct = data_of(
        post(
            staff_api,
            "/v1/admin/coupons",
            {
                "name": "Newsletter",
                "amount_off": 200,
                "currency": "EUR",
                "duration": "once",
                "directly_redeemable": True,
            },
        ),
        201,
    )["coupon"]
    assert direct["directly_redeemable"] is True

    operation = openapi["paths"]["/v1/admin/coupons/{id}"]["patch"]
    body = operation["requestBody"]["content"]["application/json"]
    assert body["examples"]
    schema = openapi["components"]["schemas"]
    assert "directly_redeemable" in schema["Coupon"]["properties"]
    assert "directly_redeemable" in schema["CouponCreateRequest"]["properties"]


def test_a_coupon_without_an_amount_is_refused(staff_api, db):
    error = error_of(
        post(staff_api, "/v1/admin/coupons", {"name": "Nothing", "duration": "once"}), 400
    )
    assert error["code"] == "validation_failed"
    assert not Coupon.objects.exists()


# --- Subscriptions of every customer ----------------------------------------------------------


def test_staff_list_every_subscription_and_cancel_one(
    staff_api, subscribed, other_account, outsider, catalogue
):
    at(other_account, T0)
    theirs, _ = subscription_order(
        account=other_account, price=catalogue.server_eur, order=dict(MINECRAFT), actor=SYSTEM
    )
    assert set(listed(staff_api.get("/v1/admin/subscriptions"), "subscriptions")) == {
        subscribed.id,
        theirs.id,
    }
    assert listed(
        staff_api.get(f"/v1/admin/subscriptions?account={other_account.id}"), "subscriptions"
    ) == [theirs.id]

    canceled = data_of(
        post(staff_api, f"/v1/admin/subscriptions/{theirs.id}/cancel", {"at_period_end": False})
    )["subscription"]
    assert canceled["status"] == "canceled"
    assert Invoice.objects.get(subscription=theirs).status == "void"  # it was never paid


# --- The test clock ---------------------------------------------------------------------------


def test_a_demo_accounts_clock_starts_then_walks_a_month_of_renewals(
    staff_api, account, owner, catalogue
):
    path = f"/v1/admin/customers/{account.id}/billing-clock"
    assert error_of(staff_api.get(path), 404)["code"] == "not_found"
    started = data_of(post(staff_api, path, {"to": "2031-01-15T12:00:00Z"}))["billing_clock"]
    assert (started["now"], started["runs"]) == ("2031-01-15T12:00:00Z", 0)
    balance_change(
        account=account,
        amount=5000,
        currency="EUR",
        kind="adjustment",
        description="Top-up",
        actor=SYSTEM,
    )
    subscription, _ = subscription_order(
        account=account, price=catalogue.server_eur, order=dict(MINECRAFT), actor=SYSTEM
    )

    moved = data_of(post(staff_api, path, {"to": "2031-02-16T12:00:00Z"}))["billing_clock"]

    assert moved["runs"] == 32  # daily steps: Jan 15 12:00 to Feb 16 12:00
    assert moved["counts"]["renewals"] == 1
    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "paid"
    assert Subscription.objects.get(pk=subscription.pk).current_period_start.month == 2
    assert data_of(staff_api.get(path))["billing_clock"]["now"] == "2031-02-16T12:00:00Z"


@pytest.mark.parametrize(
    ("to", "code"),
    [
        ("2031-01-01T00:00:00Z", "out_of_range"),
        ("2040-01-01T00:00:00Z", "too_far"),
        ("3100-01-01T00:00:00Z", "out_of_range"),
        ("soon", "invalid"),
    ],
)
def test_a_clock_moves_only_forward_and_boundedly(staff_api, account, to, code):
    path = f"/v1/admin/customers/{account.id}/billing-clock"
    data_of(post(staff_api, path, {"to": "2031-01-15T12:00:00Z"}))
    error = error_of(post(staff_api, path, {"to": to}), 400)
    assert error["details"]["fields"][0] == {
        **error["details"]["fields"][0],
        "name": "to",
        "code": code,
    }


def test_an_account_billed_on_the_real_clock_gets_no_test_clock(
    staff_api, account, owner, catalogue
):
    subscription_order(
        account=account, price=catalogue.server_eur, order=dict(MINECRAFT), actor=SYSTEM
    )
    error = error_of(
        post(
            staff_api,
            f"/v1/admin/customers/{account.id}/billing-clock",
            {"to": "2031-01-15T12:00:00Z"},
        ),
        409,
    )
    assert error["code"] == "conflict"
    assert (
        error_of(
            post(
                staff_api,
                "/v1/admin/customers/acct_000000000000000000000000/billing-clock",
                {"to": "2031-01-15T12:00:00Z"},
            ),
            404,
        )["code"]
        == "not_found"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/v1/admin/prices/price_000000000000000000000000/archive",
        "/v1/admin/tax-rates/txr_000000000000000000000000/archive",
        "/v1/admin/coupons/cpn_000000000000000000000000/archive",
        "/v1/admin/promotion-codes/promo_000000000000000000000000/deactivate",
        "/v1/admin/products/prod_000000000000000000000000/archive",
    ],
)
def test_archiving_an_unknown_object_is_not_found(staff_api, db, path):
    assert error_of(post(staff_api, path), 404)["code"] == "not_found"

"""What the API fuzzer (scripts/fuzz.py) found in billing: a request the schema calls invalid
must be refused, one it calls valid must not be, and every answer must be documented."""

import json

import pytest

from billing.models import Product
from tests.billing.api.conftest import data_of, listed
from tests.envelopes import error_of

pytestmark = pytest.mark.django_db


def post(api, path, body):
    return api.post(path, json.dumps(body), content_type="application/json")


def operation(openapi: dict, method: str, path: str) -> dict:
    return openapi["paths"][path][method]


# --- Query parameters -------------------------------------------------------------------------

ACTIVE_LISTS = [
    ("/v1/admin/products", "products"),
    ("/v1/admin/tax-rates", "tax_rates"),
    ("/v1/admin/coupons", "coupons"),
    ("/v1/admin/promotion-codes", "promotion_codes"),
]


@pytest.mark.parametrize(("path", "key"), ACTIVE_LISTS)
@pytest.mark.parametrize("value", ["AAA", "yes", "2", "unknown"])
def test_an_active_filter_that_is_not_true_or_false_is_refused(staff_api, path, key, value):
    error = error_of(staff_api.get(path, {"active": value}), 400)
    assert error["code"] == "invalid_parameter"
    assert [item["name"] for item in error["details"]["parameters"]] == ["active"]


@pytest.mark.parametrize("value", ["true", "True", "false", "FALSE"])
def test_the_active_filter_reads_true_and_false_in_any_case(staff_api, catalogue, value):
    expected = {product.id for product in Product.objects.filter(active=value.lower() == "true")}
    assert set(listed(staff_api.get("/v1/admin/products", {"active": value}), "products")) == (
        expected
    )


# --- Documented answers -----------------------------------------------------------------------


def test_a_promotion_code_of_an_unknown_coupon_is_a_documented_404(staff_api, openapi):
    response = post(
        staff_api,
        "/v1/admin/promotion-codes",
        {"coupon": "coupon_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc", "code": "welcome10"},
    )
    assert error_of(response, 404)["code"] == "not_found"
    assert "404" in operation(openapi, "post", "/v1/admin/promotion-codes")["responses"]


# --- Request bodies as strict as the catalogue ------------------------------------------------


def body_schema(openapi: dict, component: str) -> dict:
    return openapi["components"]["schemas"][component]["properties"]


@pytest.mark.parametrize(
    ("component", "field", "minimum", "maximum"),
    [
        ("PriceCreateRequest", "unit_amount", 0, 99_999_999),
        ("PriceCreateRequest", "setup_fee", 0, 99_999_999),
        ("PriceCreateRequest", "trial_days", 0, 365),
        ("PriceCreateRequest", "interval_count", 1, 3 * 365 * 24),
        ("CouponCreateRequest", "amount_off", 1, 99_999_999),
        ("CouponCreateRequest", "duration_in_months", 1, 36),
        ("CouponCreateRequest", "max_redemptions", 1, 1_000_000_000),
        ("PromotionCodeCreateRequest", "max_redemptions", 1, 1_000_000_000),
        ("ProductCreateRequest", "suspend_after_days", 0, 365),
        ("ProductCreateRequest", "terminate_after_days", 1, 365),
        ("ProductResourcesInputRequest", "memory_mb", 256, 65536),
    ],
)
def test_catalogue_bodies_document_the_catalogues_ranges(
    openapi, component, field, minimum, maximum
):
    schema = body_schema(openapi, component)[field]
    assert (schema["minimum"], schema["maximum"]) == (minimum, maximum)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/admin/tax-rates", {"country": "DE\n", "percentage": "19"}, "country"),
        ("/v1/admin/tax-rates", {"country": " de", "percentage": "19"}, "country"),
        ("/v1/admin/tax-rates", {"country": "DE", "percentage": "19\n"}, "percentage"),
        ("/v1/admin/tax-rates", {"country": "DE", "percentage": "100.5"}, "percentage"),
        ("/v1/admin/tax-rates", {"country": "DE", "percentage": "1e1"}, "percentage"),
        (
            "/v1/admin/coupons",
            {"name": "Ten", "duration": "once", "percent_off": "10.125"},
            "percent_off",
        ),
        ("/v1/admin/coupons", {"name": "Ten", "duration": "once", "amount_off": 0}, "amount_off"),
    ],
)
def test_a_value_outside_the_documented_shape_is_refused_as_sent(staff_api, path, body, field):
    error = error_of(post(staff_api, path, body), 400)
    assert [item["name"] for item in error["details"]["fields"]] == [field]


def test_a_code_is_refused_before_its_coupon_is_looked_up(staff_api, db):
    """The documented shape is checked first: a code with a final newline is a 400."""
    response = post(staff_api, "/v1/admin/promotion-codes", {"coupon": "coupon_x", "code": "AB1\n"})
    assert error_of(response, 400)["details"]["fields"][0]["name"] == "code"


def test_a_tax_rate_in_the_documented_shape_is_created(staff_api, db):
    body = {"country": "us", "region": "ny", "percentage": "8.875"}
    rate = data_of(post(staff_api, "/v1/admin/tax-rates", body), 201)["tax_rate"]
    assert (rate["country"], rate["region"], rate["percentage"]) == ("US", "US-NY", "8.875")


@pytest.mark.parametrize("country", ["DE\n", " de", "de "])
def test_a_profile_country_outside_its_documented_pattern_is_refused(owner_api, country):
    response = owner_api.patch("/v1/billing-profile", {"country": country}, format="json")
    assert error_of(response, 400)["details"]["fields"][0]["name"] == "country"

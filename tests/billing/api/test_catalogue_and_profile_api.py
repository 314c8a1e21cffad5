"""GET /v1/products (what is on sale, at which prices) and the billing profile."""

import pytest

from billing.models import BillingProfile
from events.models import Event
from tests.billing.api.conftest import data_of, listed
from tests.envelopes import error_of
from tests.test_openapi import response_schema_validator, validator_for

PROFILE = "/v1/billing-profile"


# --- Products ---------------------------------------------------------------------------------


def test_products_on_sale_are_listed_newest_first_with_their_active_prices(
    openapi, owner_api, catalogue
):
    response = owner_api.get("/v1/products")

    products = data_of(response)["products"]
    assert [product["id"] for product in products] == [catalogue.bot.id, catalogue.server.id]
    server = products[1]
    assert server == {
        "id": catalogue.server.id,
        "name": "Minecraft 4 GB",
        "description": "",
        "kind": "server",
        "resources": {"memory_mb": 4096, "cpu_percent": 200, "disk_mb": 20480},
        "backups": {"limit": 3, "storage_mb": 10240},
        "schedules": {"limit": 5},
        "databases": {"limit": 1},
        "allocations": {"limit": 1},
        "games": ["minecraft-java"],
        "regions": [],
        "runtimes": [],
        "active": True,
        "created_at": "2026-03-01T09:00:00Z",
        "prices": server["prices"],
    }
    assert [(p["id"], p["currency"], p["unit_amount"]) for p in server["prices"]] == [
        (catalogue.server_eur.id, "EUR", 1200),
        (catalogue.server_usd.id, "USD", 1300),
    ]
    assert server["prices"][0]["recurring"] == {"interval": "month", "interval_count": 1}
    errors = response_schema_validator(openapi, "/v1/products", "200").iter_errors(response.json())
    assert [error.message for error in errors] == []


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("kind=bot", ["bot"]),
        ("kind=server,bot", ["bot", "server"]),
        ("currency=usd", ["server"]),
        ("currency=EUR", ["bot", "server"]),
        ("currency=GBP", []),
        ("kind=bot&currency=USD", []),
    ],
)
def test_products_filter_by_kind_and_currency(owner_api, catalogue, query, names):
    ids = listed(owner_api.get(f"/v1/products?{query}"), "products")

    assert ids == [getattr(catalogue, name).id for name in names]


@pytest.mark.parametrize("query", ["kind=vps", "currency=XYZ", "currency="])
def test_an_unknown_kind_or_currency_is_an_invalid_parameter(owner_api, catalogue, query):
    assert error_of(owner_api.get(f"/v1/products?{query}"), 400)["code"] == "invalid_parameter"


def test_a_product_and_an_archived_one(owner_api, catalogue):
    product = data_of(owner_api.get(f"/v1/products/{catalogue.bot.id}"))["product"]
    assert (product["name"], product["runtimes"]) == ("Bot Small", ["python-3.13"])
    assert [price["recurring"]["interval"] for price in product["prices"]] == ["hour"]

    error = error_of(owner_api.get(f"/v1/products/{catalogue.archived.id}"), 404)
    assert error["code"] == "not_found"


# --- The billing profile ----------------------------------------------------------------------


def test_an_empty_profile_reads_as_empty(openapi, owner_api, account):
    response = owner_api.get(PROFILE)

    profile = data_of(response)["billing_profile"]
    assert profile["legal_name"] == "" and profile["currency"] is None
    assert profile["address"] == {
        "line1": "",
        "line2": "",
        "postal_code": "",
        "city": "",
        "region": "",
        "country": "",
    }
    errors = response_schema_validator(openapi, PROFILE, "200").iter_errors(response.json())
    assert [error.message for error in errors] == []


def test_a_billing_teammate_sets_the_profile_normalized_and_it_is_recorded(
    openapi, mate_api, mate, account
):
    response = mate_api.patch(
        PROFILE,
        {
            "legal_name": "Blockworks GmbH",
            "country": "de",
            "vat_id": "de 136.695.976",
            "address_line1": "Hauptstraße 5",
            "postal_code": "10115",
            "city": "Berlin",
            "email": "billing@blockworks.example",
        },
        format="json",
    )

    profile = data_of(response)["billing_profile"]
    assert (profile["vat_id"], profile["address"]["country"]) == ("DE136695976", "DE")
    assert profile["address"]["line1"] == "Hauptstraße 5"
    stored = BillingProfile.objects.get(account=account)
    assert (stored.legal_name, stored.city, stored.email) == (
        "Blockworks GmbH",
        "Berlin",
        "billing@blockworks.example",
    )
    event = Event.objects.get(type="customer.billing_profile_updated")
    assert event.actor_user_id == mate.id and event.actor_api_key_id is not None
    assert event.data["object"] == profile
    assert event.data["previous_attributes"]["legal_name"] == ""
    validator = validator_for(
        openapi,
        "paths",
        PROFILE,
        "patch",
        "responses",
        "200",
        "content",
        "application/json",
        "schema",
    )
    assert [error.message for error in validator.iter_errors(response.json())] == []


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"country": "DE", "vat_id": "DE136695978"}, "vat_id", "invalid_checksum"),
        ({"country": "DE", "vat_id": "FR40303265045"}, "vat_id", "country_mismatch"),
        ({"vat_id": "DE136695976"}, "vat_id", "country_required"),
        ({"country": "Germany"}, "country", "invalid"),
        ({"tax_exempt": True}, "tax_exempt", "staff_only"),
        ({"currency": "USD"}, "currency", "unknown_field"),
        ({"email": "nobody"}, "email", "invalid"),
        ({"legal_name": "x" * 201}, "legal_name", "max_length"),
        ({"legal_name": 5}, "legal_name", "invalid"),
        ({"city": "A\u0000B"}, "city", "null_characters"),
    ],
)
def test_a_bad_field_is_named_and_nothing_changes(owner_api, account, body, field, code):
    error = error_of(owner_api.patch(PROFILE, body, format="json"), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == [(field, code)]
    assert not BillingProfile.objects.filter(account=account).exclude(legal_name="").exists()
    assert not Event.objects.filter(type="customer.billing_profile_updated").exists()


def test_an_empty_patch_changes_nothing(owner_api, books):
    before = data_of(owner_api.get(PROFILE))

    assert data_of(owner_api.patch(PROFILE, {}, format="json")) == before


def test_the_currency_shows_once_the_first_invoice_fixed_it(owner_api, books):
    assert data_of(owner_api.get(PROFILE))["billing_profile"]["currency"] == "EUR"

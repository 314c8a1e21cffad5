"""The billing profile: checked field by field, VAT ids normalized for their country, the
tax exemption for staff only, the currency never set here, and one event per change."""

from decimal import Decimal

import pytest

from accounts.actors import SYSTEM, Actor
from billing.models import BillingProfile
from billing.selectors import billing_profile_of, tax_decision
from billing.services.catalogue import tax_rate_create
from billing.services.profile import (
    BillingProfileChanges,
    billing_profile_check,
    billing_profile_update,
)
from events.models import Event
from hosting.errors import ValidationFailed

pytestmark = pytest.mark.django_db

ADDRESS = {
    "legal_name": "Blockworks GmbH",
    "email": "billing@blockworks.example",
    "address_line1": "Hauptstraße 5",
    "address_line2": "3. OG",
    "postal_code": "10115",
    "city": "Berlin",
    "region": "Berlin",
    "country": "de",
    "vat_id": "de 136.695.976",
}


def update(account, changes, *, staff=False, actor=SYSTEM):
    return billing_profile_update(
        account=account, changes=BillingProfileChanges.of(changes), actor=actor, staff=staff
    )


def refused(account, changes, *, staff=False) -> list[dict]:
    with pytest.raises(ValidationFailed) as raised:
        update(account, changes, staff=staff)
    return raised.value.details["fields"]


def test_it_sets_the_profile_with_the_country_upper_cased_and_the_vat_id_normalized(account):
    profile = update(account, ADDRESS)

    profile.refresh_from_db()
    assert profile.account_id == account.id
    assert (profile.legal_name, profile.email) == ("Blockworks GmbH", "billing@blockworks.example")
    assert (profile.address_line1, profile.address_line2) == ("Hauptstraße 5", "3. OG")
    assert (profile.postal_code, profile.city, profile.region) == ("10115", "Berlin", "Berlin")
    assert (profile.country, profile.vat_id) == ("DE", "DE136695976")
    assert (profile.tax_exempt, profile.currency) == (False, "")


def test_text_is_trimmed_and_a_greek_id_takes_its_el_prefix(account):
    profile = update(account, {"legal_name": "  Ergo AE ", "country": "GR", "vat_id": "094259216"})

    assert (profile.legal_name, profile.vat_id) == ("Ergo AE", "EL094259216")


def test_a_change_records_the_event_with_the_previous_values(account, owner):
    update(account, {"legal_name": "Old Name BV", "city": "Utrecht"})
    actor = Actor(user=owner, ip="203.0.113.5")

    update(account, {"legal_name": "New Name BV", "city": "Utrecht"}, actor=actor)

    event = Event.objects.filter(type="customer.billing_profile_updated").latest("created_at")
    assert event.account_id == account.id
    assert event.object_type == "billing_profile"
    # A profile is its account's: the event names the customer it is about.
    assert event.object_id == account.id and event.data["object"]["id"] == account.id
    assert event.actor_user_id == owner.id and event.actor_ip == "203.0.113.5"
    shown = event.data["object"]
    assert shown["legal_name"] == "New Name BV"
    assert shown["address"]["city"] == "Utrecht"
    assert event.data["previous_attributes"] == {"legal_name": "Old Name BV"}


def test_an_address_change_names_the_whole_previous_address(account):
    update(account, {"city": "Utrecht", "country": "NL"})

    update(account, {"city": "Amsterdam"})

    event = Event.objects.filter(type="customer.billing_profile_updated").latest("created_at")
    assert event.data["previous_attributes"] == {
        "address": {
            "line1": "",
            "line2": "",
            "postal_code": "",
            "city": "Utrecht",
            "region": "",
            "country": "NL",
        }
    }


def test_nothing_changed_records_nothing(account):
    update(account, {"legal_name": "Same BV"})
    events = Event.objects.filter(type="customer.billing_profile_updated").count()

    update(account, {"legal_name": " Same BV "})
    update(account, {})

    assert Event.objects.filter(type="customer.billing_profile_updated").count() == events


@pytest.mark.parametrize(
    ("region", "stored"),
    [
        ("ny", "US-NY"),
        ("NY", "US-NY"),
        (" us-ny ", "US-NY"),
        ("New York", "New York"),
        ("CA-ON", "CA-ON"),  # another country's code: kept as typed
    ],
)
def test_a_region_that_reads_as_a_subdivision_is_stored_as_its_iso_code(account, region, stored):
    update(account, {"country": "us", "region": region})

    assert billing_profile_of(account).region == stored


def test_the_region_is_read_again_when_the_country_is_set(account):
    assert update(account, {"region": "ny"}).region == "ny"  # no country yet: as typed

    assert update(account, {"country": "US"}).region == "US-NY"


def test_a_region_typed_as_its_short_code_gets_the_regional_tax_rate(account):
    tax_rate_create(
        country="US", region="US-NY", percentage="8.875", display_name="Sales tax", actor=SYSTEM
    )
    update(account, {"country": "US", "region": "ny"})

    assert tax_decision(account).percentage == Decimal("8.875")
    update(account, {"region": "New York"})
    assert tax_decision(account).percentage == Decimal(0)  # no US-wide rate configured


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"country": "DE", "vat_id": "DE136695978"}, "invalid_checksum"),
        ({"country": "DE", "vat_id": "DE13669597"}, "invalid_length"),
        ({"country": "DE", "vat_id": "FR40303265045"}, "country_mismatch"),
        ({"country": "CY", "vat_id": "EL094259216"}, "country_mismatch"),
        ({"country": "US", "vat_id": "12-3456789"}, "unsupported_country"),
        ({"vat_id": "DE136695976"}, "country_required"),
    ],
)
def test_an_invalid_vat_id_is_a_field_error_with_its_code(account, changes, code):
    problems = refused(account, changes)

    assert [(p["name"], p["code"]) for p in problems] == [("vat_id", code)]
    assert not billing_profile_of(account).vat_id


def test_a_new_country_is_refused_when_the_vat_id_on_file_does_not_belong_to_it(account):
    update(account, {"country": "DE", "vat_id": "DE136695976"})

    problems = refused(account, {"country": "FR"})

    assert [(p["name"], p["code"]) for p in problems] == [("vat_id", "country_mismatch")]
    profile = BillingProfile.objects.get(account=account)
    assert (profile.country, profile.vat_id) == ("DE", "DE136695976")


def test_clearing_the_vat_id_lets_the_country_change(account):
    update(account, {"country": "DE", "vat_id": "DE136695976"})

    profile = update(account, {"country": "FR", "vat_id": ""})

    assert (profile.country, profile.vat_id) == ("FR", "")


def test_a_vat_id_outside_the_eu_is_checked_with_its_countrys_rules(account):
    profile = update(account, {"country": "CH", "vat_id": "CHE-116.281.710 MWST"})

    assert profile.vat_id == "CHE116281710MWST"


@pytest.mark.parametrize("country", ["Deutschland", "D1", "1", "D", "ÄÖ"])
def test_a_country_is_two_letters(account, country):
    problems = refused(account, {"country": country})

    assert [p["name"] for p in problems] == ["country"]
    assert problems[0]["code"] in {"invalid", "max_length"}


def test_a_customer_cannot_set_the_tax_exemption(account):
    problems = refused(account, {"tax_exempt": True})

    assert [(p["name"], p["code"]) for p in problems] == [("tax_exempt", "staff_only")]
    assert not billing_profile_of(account).tax_exempt


def test_staff_set_the_tax_exemption_and_it_is_recorded(account):
    profile = update(account, {"tax_exempt": True}, staff=True)

    assert profile.tax_exempt is True
    event = Event.objects.get(type="customer.billing_profile_updated")
    assert event.data["previous_attributes"] == {"tax_exempt": False}


def test_staff_give_the_account_its_own_payment_gateways(account):
    assert refused(account, {"payment_gateways": ["bank_transfer"]}) == [
        {
            "name": "payment_gateways",
            "code": "staff_only",
            "message": "Only the hosting company's staff set this.",
        },
    ]

    profile = update(account, {"payment_gateways": ["bank_transfer", "credit"]}, staff=True)

    assert profile.payment_gateways == ["bank_transfer", "credit"]
    event = Event.objects.get(type="customer.billing_profile_updated")
    assert event.data["object"]["payment_gateways"] == ["bank_transfer", "credit"]
    assert event.data["previous_attributes"] == {"payment_gateways": []}
    assert update(account, {"payment_gateways": []}, staff=True).payment_gateways == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["paypal"], "No gateway 'paypal' here; this service has bank_transfer, credit."),
        (["credit", "credit"], "Name each gateway once."),
    ],
)
def test_a_gateway_list_must_name_this_service_s_gateways_once(account, value, message):
    problems = refused(account, {"payment_gateways": value}, staff=True)

    assert [(p["name"], p["code"], p["message"]) for p in problems] == [
        ("payment_gateways", "invalid", message)
    ]
    assert billing_profile_of(account).payment_gateways == []


def test_the_currency_is_never_set_here(account):
    with pytest.raises(TypeError):
        BillingProfileChanges(currency="USD")


def test_every_bad_field_is_named_at_once_and_nothing_is_saved(account):
    problems = refused(
        account,
        {
            "legal_name": "Blockworks",
            "country": "Germany",
            "vat_id": "DE136695976",
            "tax_exempt": True,
            "payment_gateways": ["bank_transfer"],
        },
    )

    assert [(p["name"], p["code"]) for p in problems] == [
        ("payment_gateways", "staff_only"),
        ("tax_exempt", "staff_only"),
        ("country", "invalid"),
        ("vat_id", "country_required"),
    ]
    profile = billing_profile_of(account)
    assert (profile.legal_name, profile.country, profile.vat_id) == ("", "", "")
    assert not Event.objects.filter(type="customer.billing_profile_updated").exists()


def test_a_check_names_what_the_rules_refuse_and_changes_nothing(account):
    with pytest.raises(ValidationFailed) as raised:
        billing_profile_check(
            account=account, changes=BillingProfileChanges(country="Germany", vat_id="DE1366")
        )

    assert [(p["name"], p["code"]) for p in raised.value.details["fields"]] == [
        ("country", "invalid"),
        ("vat_id", "country_required"),
    ]
    billing_profile_check(account=account, changes=BillingProfileChanges(country="DE"))
    assert not BillingProfile.objects.filter(account=account).exists()


def test_the_profile_row_is_made_once_and_locked_for_the_change(account, monkeypatch):
    locked = []
    original = BillingProfile.objects.select_for_update

    def spy(*args, **kwargs):
        locked.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(BillingProfile.objects, "select_for_update", spy)
    update(account, {"city": "Utrecht"})
    update(account, {"city": "Leiden"})

    assert locked == [True, True]
    assert BillingProfile.objects.filter(account=account).count() == 1

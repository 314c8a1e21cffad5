"""The payment methods API: the owner and a billing teammate save, list, make default and
remove cards; an outsider's key finds none of them (404); a key without ``billing:write`` is
403; a service without Stripe settings answers 422 to every change."""

import pytest

from stripe_gateway.models import PaymentMethod
from tests.billing.api.conftest import data_of, listed
from tests.envelopes import error_of
from tests.stripe_gateway.helpers import save_card

pytestmark = pytest.mark.django_db


def browser_confirms(stripe_api, setup_intent_id: str, number: str = "4242424242424242") -> None:
    """What Stripe.js does with the SetupIntent's client secret in the customer's browser."""
    card = stripe_api.v1.payment_methods.create(
        params={
            "type": "card",
            "card": {"number": number, "exp_month": 11, "exp_year": 2031, "cvc": "314"},
        }
    )
    stripe_api.v1.setup_intents.confirm(setup_intent_id, params={"payment_method": card.id})


@pytest.mark.parametrize("who", ["owner_api", "mate_api"])
def test_a_card_is_saved_listed_made_default_and_removed(request, stripe_api, who):
    api = request.getfixturevalue(who)

    started = data_of(api.post("/v1/payment-methods/setup-intents", {}, format="json"), 201)
    assert started["publishable_key"] == "pk_test_localstripe"
    assert started["setup_intent"]["client_secret"].startswith(started["setup_intent"]["id"])
    browser_confirms(stripe_api, started["setup_intent"]["id"])
    answer = api.post(
        "/v1/payment-methods", {"setup_intent": started["setup_intent"]["id"]}, format="json"
    )
    first = data_of(answer, 201)["payment_method"]
    assert answer["Location"].endswith(f"/v1/payment-methods/{first['id']}")
    assert first["card"] == {"brand": "visa", "last4": "4242", "exp_month": 11, "exp_year": 2031}
    assert first["is_default"] is True
    again = api.post(
        "/v1/payment-methods", {"setup_intent": started["setup_intent"]["id"]}, format="json"
    )
    assert data_of(again, 201)["payment_method"]["id"] == first["id"]  # saved once

    second_intent = data_of(api.post("/v1/payment-methods/setup-intents", {}, format="json"), 201)
    browser_confirms(stripe_api, second_intent["setup_intent"]["id"], "5555555555554444")
    second = data_of(
        api.post(
            "/v1/payment-methods",
            {"setup_intent": second_intent["setup_intent"]["id"]},
            format="json",
        ),
        201,
    )["payment_method"]
    assert listed(api.get("/v1/payment-methods"), "payment_methods") == [second["id"], first["id"]]

    made = data_of(api.post(f"/v1/payment-methods/{second['id']}/default", {}, format="json"))
    assert made["payment_method"]["is_default"] is True
    assert (
        data_of(api.get(f"/v1/payment-methods/{first['id']}"))["payment_method"]["is_default"]
        is False
    )

    gone = data_of(api.delete(f"/v1/payment-methods/{second['id']}"))
    assert gone == {"id": second["id"], "deleted": True}
    assert data_of(api.get(f"/v1/payment-methods/{first['id']}"))["payment_method"]["is_default"]


def test_an_outsider_finds_no_card_and_cannot_save_ours(
    stripe_api, account, owner, outsider_api, owner_api
):
    ours = save_card(stripe_api, account, owner)
    for method, path in (
        ("get", f"/v1/payment-methods/{ours.id}"),
        ("delete", f"/v1/payment-methods/{ours.id}"),
        ("post", f"/v1/payment-methods/{ours.id}/default"),
    ):
        assert error_of(getattr(outsider_api, method)(path), 404)["code"] == "not_found"
    assert listed(outsider_api.get("/v1/payment-methods"), "payment_methods") == []
    ours_intent = data_of(
        owner_api.post("/v1/payment-methods/setup-intents", {}, format="json"), 201
    )
    browser_confirms(stripe_api, ours_intent["setup_intent"]["id"])
    stolen = outsider_api.post(
        "/v1/payment-methods", {"setup_intent": ours_intent["setup_intent"]["id"]}, format="json"
    )
    assert error_of(stolen, 400)["details"]["fields"][0] == {
        "name": "setup_intent",
        "code": "not_found",
        "message": "No such SetupIntent for this account.",
    }
    assert PaymentMethod.objects.filter(account=account).count() == 1


def test_reading_needs_billing_read_and_changing_billing_write(
    stripe_api, account, owner, reader_api, unscoped_api
):
    ours = save_card(stripe_api, account, owner)
    assert listed(reader_api.get("/v1/payment-methods"), "payment_methods") == [ours.id]
    refused = reader_api.post(f"/v1/payment-methods/{ours.id}/default", {}, format="json")
    assert error_of(refused, 403)["code"] == "insufficient_scope"
    assert error_of(unscoped_api.get("/v1/payment-methods"), 403)["code"] == "insufficient_scope"


def test_without_stripe_settings_cards_are_not_offered(owner_api, settings):
    settings.STRIPE_ENABLED = False
    assert listed(owner_api.get("/v1/payment-methods"), "payment_methods") == []
    refused = owner_api.post("/v1/payment-methods/setup-intents", {}, format="json")
    assert error_of(refused, 422)["code"] == "payment_method_not_supported"


def open_invoice(account, owner, amount=1500):
    """An order left unpaid: no credit, and no card yet when it was made."""
    from tests.billing.test_subscriptions import order, plan

    _, invoice = order(account, owner, plan(amount=amount))
    assert invoice.status == "open"
    return invoice


def test_an_open_invoice_is_paid_by_card_now(stripe_api, account, owner, owner_api):
    invoice = open_invoice(account, owner)
    save_card(stripe_api, account, owner)

    answer = data_of(
        owner_api.post(f"/v1/invoices/{invoice.id}/pay", {"source": "card"}, format="json")
    )

    assert answer["next_action"] is None
    assert answer["payment"]["status"] == "succeeded" and answer["payment"]["gateway"] == "stripe"
    assert answer["payment"]["reference"].startswith("Visa •••• 4242")
    assert answer["invoice"]["status"] == "paid" and answer["invoice"]["amount_paid"] == 1500
    again = owner_api.post(f"/v1/invoices/{invoice.id}/pay", {"source": "card"}, format="json")
    assert error_of(again, 409)["code"] == "invalid_state"


def test_a_card_the_bank_wants_confirmed_comes_back_to_the_invoice(
    stripe_api, account, owner, owner_api, client
):
    from tests.stripe_gateway.helpers import NEEDS_AUTHENTICATION

    invoice = open_invoice(account, owner)
    card = save_card(stripe_api, account, owner, NEEDS_AUTHENTICATION)
    body = {"source": "card", "payment_method": card.id}

    answer = data_of(owner_api.post(f"/v1/invoices/{invoice.id}/pay", body, format="json"))
    assert answer["payment"]["status"] == "processing"
    assert answer["next_action"]["type"] == "use_stripe_sdk"
    secret = answer["next_action"]["client_secret"]
    busy = owner_api.post(f"/v1/invoices/{invoice.id}/pay", body, format="json")
    assert error_of(busy, 409)["details"]["payment"] == answer["payment"]["id"]

    # The customer passes the bank's challenge (Stripe.js and the bank's page, faked by
    # localstripe's own test route), and the bank sends them back to the invoice.
    intent_id = secret.split("_secret_")[0]
    stripe_api.raw_request(
        "post",
        f"/v1/payment_intents/{intent_id}/_authenticate",
        client_secret=secret,
        success="true",
    )
    client.force_login(owner)
    back = client.get(f"/billing/invoices/{invoice.id}/card-return", {"payment_intent": intent_id})
    assert back.status_code == 302 and back["Location"] == f"/billing/invoices/{invoice.id}"
    invoice.refresh_from_db()
    assert invoice.status == "paid"
    page = client.get(back["Location"])
    assert f"Invoice {invoice.number} is paid by card." in page.content.decode()


def test_paying_by_card_names_a_card_of_the_account(
    stripe_api, account, owner, owner_api, other_account, outsider
):
    invoice = open_invoice(account, owner)
    theirs = save_card(stripe_api, other_account, outsider)
    body = {"source": "card", "payment_method": theirs.id}
    refused = owner_api.post(f"/v1/invoices/{invoice.id}/pay", body, format="json")
    assert error_of(refused, 400)["details"]["fields"][0]["code"] == "not_found"
    no_card = owner_api.post(f"/v1/invoices/{invoice.id}/pay", {"source": "card"}, format="json")
    assert error_of(no_card, 400)["details"]["fields"][0]["message"] == (
        "The account has no saved card."
    )


def test_without_stripe_settings_an_invoice_cannot_be_paid_by_card(account, owner, owner_api):
    invoice = open_invoice(account, owner)
    refused = owner_api.post(f"/v1/invoices/{invoice.id}/pay", {"source": "card"}, format="json")
    assert error_of(refused, 422)["code"] == "payment_method_not_supported"

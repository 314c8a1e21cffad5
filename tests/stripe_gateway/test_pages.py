"""The dashboard's card pages, server side: Billing → Payment methods (the page, saving the card
Stripe.js confirmed, make default, remove) and "Pay by card" on an invoice. Stripe.js itself
cannot load here (no internet): tests/browser/test_payment_methods_page.py drives the page in
chromium up to that point."""

import pytest

from accounts.roles import Role
from billing.models import Invoice
from stripe_gateway.models import PaymentMethod
from tests.factories import MembershipFactory
from tests.stripe_gateway.helpers import NEEDS_AUTHENTICATION, save_card
from tests.stripe_gateway.test_api import browser_confirms, open_invoice

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    return client


def test_the_page_lists_the_cards_and_offers_to_add_one(stripe_api, account, owner, signed_in):
    card = save_card(stripe_api, account, owner)
    page = signed_in.get("/billing/payment-methods")
    body = page.content.decode()
    assert page.status_code == 200
    assert "Visa •••• 4242" in body and "Default" in body
    assert 'src="https://js.stripe.com/v3/"' in body  # Stripe.js from Stripe, as it requires
    assert 'data-publishable-key="pk_test_localstripe"' in body
    assert f"/billing/payment-methods/{card.id}/remove" in body
    assert 'href="/billing/payment-methods"' in signed_in.get("/billing").content.decode()


def test_the_server_side_of_saving_a_card(stripe_api, account, signed_in):
    started = signed_in.post("/billing/payment-methods/setup-intent")
    assert started.status_code == 200 and started.json()["success"] is True
    intent = started.json()["data"]["setup_intent"]
    browser_confirms(stripe_api, intent["id"])  # Stripe.js's confirmCardSetup

    saved = signed_in.post("/billing/payment-methods/save", {"setup_intent": intent["id"]})

    assert saved.status_code == 302 and saved["Location"] == "/billing/payment-methods"
    method = PaymentMethod.objects.get(account=account)
    assert method.is_default and method.last4 == "4242"
    assert "Visa •••• 4242 (11/2031) is saved." in signed_in.get(saved["Location"]).content.decode()


def test_adding_a_card_asks_for_a_recent_sign_in(stripe_api, account, owner, signed_in):
    """A sensitive action (issue 33): without a password or factor typed in the last
    REAUTHENTICATION_MINUTES, the page offers to confirm first and the card's endpoints refuse."""
    from tests.accounts.test_sign_in_policies import age_sign_in

    age_sign_in(signed_in, 11 * 60)
    body = signed_in.get("/billing/payment-methods").content.decode()
    assert 'id="add-card-confirm"' in body and 'id="add-card"' not in body
    assert 'href="/auth/reauthenticate/?next=%2Fbilling%2Fpayment-methods"' in body
    started = signed_in.post("/billing/payment-methods/setup-intent")
    assert started.status_code == 403
    assert started.json()["error"]["code"] == "reauthentication_required"
    saved = signed_in.post("/billing/payment-methods/save", {"setup_intent": "seti_1"}, follow=True)
    assert "Confirm it is you first" in saved.content.decode()
    assert not PaymentMethod.objects.filter(account=account).exists()

    signed_in.force_login(owner)  # a sign-in just now: the form is offered again
    assert 'id="add-card"' in signed_in.get("/billing/payment-methods").content.decode()


def test_make_default_and_remove(stripe_api, account, owner, signed_in):
    first = save_card(stripe_api, account, owner)
    second = save_card(stripe_api, account, owner, "5555555555554444")
    signed_in.post(f"/billing/payment-methods/{second.id}/default")
    assert PaymentMethod.objects.get(pk=second.pk).is_default
    signed_in.post(f"/billing/payment-methods/{second.id}/remove")
    assert list(PaymentMethod.objects.filter(account=account)) == [first]
    assert PaymentMethod.objects.get(pk=first.pk).is_default


def test_a_viewer_sees_the_cards_but_cannot_change_them(stripe_api, account, owner, client):
    card = save_card(stripe_api, account, owner)
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    client.force_login(viewer)
    page = client.get("/billing/payment-methods").content.decode()
    assert "Visa •••• 4242" in page and "Add a card" not in page and "Remove" not in page
    client.post(f"/billing/payment-methods/{card.id}/remove")
    assert PaymentMethod.objects.filter(pk=card.pk).exists()


def test_another_account_s_card_is_not_found(stripe_api, other_account, outsider, signed_in):
    theirs = save_card(stripe_api, other_account, outsider)
    assert signed_in.post(f"/billing/payment-methods/{theirs.id}/remove").status_code == 404
    assert PaymentMethod.objects.filter(pk=theirs.pk).exists()


def test_pay_by_card_pays_the_invoice(stripe_api, account, owner, signed_in):
    invoice = open_invoice(account, owner)
    save_card(stripe_api, account, owner)
    assert 'id="pay-by-card"' in signed_in.get(f"/billing/invoices/{invoice.id}").content.decode()

    paid = signed_in.post(f"/billing/invoices/{invoice.id}/pay-by-card")

    assert paid.status_code == 302
    assert Invoice.objects.get(pk=invoice.pk).status == "paid"
    assert (
        f"Invoice {invoice.number} is paid by card."
        in signed_in.get(paid["Location"]).content.decode()
    )


def test_pay_by_card_sends_the_customer_through_the_bank(stripe_api, account, owner, signed_in):
    invoice = open_invoice(account, owner)
    save_card(stripe_api, account, owner, NEEDS_AUTHENTICATION)

    page = signed_in.post(f"/billing/invoices/{invoice.id}/pay-by-card")

    body = page.content.decode()
    assert page.status_code == 200 and 'id="confirm-payment"' in body
    assert f'data-return-url="http://testserver/billing/invoices/{invoice.id}/card-return"' in body
    assert Invoice.objects.get(pk=invoice.pk).status == "open"


def test_without_stripe_there_is_no_card_page(signed_in, account, owner):
    invoice = open_invoice(account, owner)
    assert signed_in.get("/billing/payment-methods").status_code == 404
    assert (
        'id="pay-by-card"' not in signed_in.get(f"/billing/invoices/{invoice.id}").content.decode()
    )
    assert 'href="/billing/payment-methods"' not in signed_in.get("/billing").content.decode()

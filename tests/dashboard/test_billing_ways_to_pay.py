"""An open invoice's page shows every way to pay it that applies to the account: its credit
(all or part), a card when the service has a card gateway, and a bank transfer to the seller's
account with the invoice number as the reference (also printed on the PDF)."""

import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from billing.models import Invoice
from billing.services import invoice_mark_paid
from billing.services.gateways import GATEWAYS, gateway_register
from billing.services.profile import BillingProfileChanges, billing_profile_update
from stripe_gateway.services.gateway import StripeGateway
from tests.dashboard import html_id_text, signed_in
from tests.dashboard.test_billing_pages import (  # noqa: F401 (clock: the account's test clock)
    clock,
    credit,
    invoice_url,
    issue,
    pdf_text,
)
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db

BANK_ACCOUNT = {
    "account_holder": "Demo Hosting Co. (example)",
    "iban": "BE71 0961 2345 6769",
    "bic": "GKCCBEBB",
}


@pytest.fixture
def bank_details(settings):
    """The seller's bank account in the settings, as finalizing an invoice copies them."""
    settings.BILLING_SELLER = settings.BILLING_SELLER | {"bank_account": BANK_ACCOUNT}


@pytest.fixture
def cards(settings):
    """A service with a card gateway (nothing here calls Stripe: the page only offers it)."""
    settings.STRIPE_ENABLED = True
    settings.BILLING_GATEWAYS = ["credit", "stripe", "bank_transfer"]
    gateway_register(StripeGateway())
    yield
    GATEWAYS.pop("stripe", None)


def own_gateways(account, names: list[str]) -> None:
    billing_profile_update(
        account=account,
        changes=BillingProfileChanges(payment_gateways=names),
        actor=SYSTEM,
        staff=True,
    )


def ways_to_pay(response) -> str:
    assert response.status_code == 200
    return html_id_text(response, "ways-to-pay") or ""


def test_an_open_invoice_shows_the_transfer_with_the_iban_and_the_invoice_number(
    owner, account, bank_details
):
    invoice = issue(account)

    response = signed_in(owner).get(invoice_url(invoice))

    transfer = html_id_text(response, "pay-by-bank-transfer")
    assert transfer is not None
    assert "Demo Hosting Co. (example)" in transfer
    assert "BE71 0961 2345 6769" in transfer and "GKCCBEBB" in transfer
    assert f"<dt>Reference</dt><dd><code>{invoice.number}</code></dd>" in transfer
    assert "12.00 EUR" in transfer


def test_an_invoice_issued_before_the_bank_details_shows_today_s(owner, account, settings):
    invoice = issue(account)  # finalized without bank details
    assert "bank_account" not in invoice.seller
    settings.BILLING_SELLER = settings.BILLING_SELLER | {"bank_account": BANK_ACCOUNT}

    response = signed_in(owner).get(invoice_url(invoice))

    assert "BE71 0961 2345 6769" in html_id_text(response, "pay-by-bank-transfer")


def test_no_transfer_without_bank_details_or_when_the_account_may_not_transfer(
    owner, account, bank_details, settings
):
    invoice = issue(account)
    client = signed_in(owner)
    own_gateways(account, ["credit"])
    assert 'id="pay-by-bank-transfer"' not in client.get(invoice_url(invoice)).content.decode()

    own_gateways(account, [])
    settings.BILLING_SELLER = {
        key: value for key, value in settings.BILLING_SELLER.items() if key != "bank_account"
    }
    Invoice.objects.filter(pk=invoice.pk).update(seller=settings.BILLING_SELLER)
    response = client.get(invoice_url(invoice))

    assert 'id="pay-by-bank-transfer"' not in response.content.decode()
    # Nothing applies: the page says whom to ask rather than leaving the customer stuck.
    assert "billing@example.com" in html_id_text(response, "no-way-to-pay")


def test_the_credit_button_when_the_balance_covers_the_invoice(owner, account, bank_details):
    invoice = issue(account)
    credit(account, 2000)

    ways = ways_to_pay(signed_in(owner).get(invoice_url(invoice)))

    assert "covers this invoice" in ways
    assert ">Pay with credit<" in ways
    assert "BE71 0961 2345 6769" in ways  # the other ways stay offered


def test_credit_that_covers_part_offers_to_pay_that_part(owner, account):
    invoice = issue(account)
    credit(account, 500)

    ways = ways_to_pay(signed_in(owner).get(invoice_url(invoice)))

    assert "it covers 5.00 EUR of the 12.00 EUR due" in ways
    assert ">Pay 5.00 EUR with credit<" in ways


def test_no_credit_no_credit_button(owner, account, bank_details):
    invoice = issue(account)
    ways = ways_to_pay(signed_in(owner).get(invoice_url(invoice)))
    assert "pay-with-credit" not in ways and 'id="credit-available"' not in ways


def test_the_card_button_only_when_a_card_gateway_is_configured(owner, account, bank_details):
    invoice = issue(account)
    client = signed_in(owner)

    without = ways_to_pay(client.get(invoice_url(invoice)))

    assert 'id="pay-by-card"' not in without and "/billing/payment-methods" not in without


def test_with_a_card_gateway_a_saved_card_or_a_new_one_pays(owner, account, bank_details, cards):
    invoice = issue(account)

    ways = ways_to_pay(signed_in(owner).get(invoice_url(invoice)))

    assert 'id="pay-by-card"' in ways
    assert f'action="{invoice_url(invoice, "/pay-by-card")}"' in ways
    assert 'href="/billing/payment-methods"' in ways  # a new card is added there first
    assert "BE71 0961 2345 6769" in ways


def test_no_card_button_for_an_account_staff_keep_off_cards(owner, account, bank_details, cards):
    invoice = issue(account)
    own_gateways(account, ["credit", "bank_transfer"])

    ways = ways_to_pay(signed_in(owner).get(invoice_url(invoice)))

    assert 'id="pay-by-card"' not in ways and "BE71 0961 2345 6769" in ways


def test_a_viewer_reads_the_transfer_instructions_but_has_no_buttons(account, bank_details, cards):
    invoice = issue(account)
    credit(account, 2000)
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user

    ways = ways_to_pay(signed_in(viewer).get(invoice_url(invoice)))

    assert "BE71 0961 2345 6769" in ways and invoice.number in ways
    assert "pay-with-credit" not in ways and 'id="pay-by-card"' not in ways


def test_a_paid_invoice_shows_no_way_to_pay(owner, account, bank_details):
    invoice = issue(account)
    invoice_mark_paid(invoice=invoice, reference="TRF-2026-0042", actor=SYSTEM)

    body = signed_in(owner).get(invoice_url(invoice)).content.decode()

    assert 'id="ways-to-pay"' not in body and "BE71 0961 2345 6769" not in body


def test_the_pdf_of_an_open_invoice_prints_the_transfer_details(owner, account, bank_details):
    invoice = issue(account)

    text = pdf_text(signed_in(owner).get(invoice_url(invoice, "/pdf")).content)

    assert "IBAN BE71 0961 2345 6769" in text and "BIC GKCCBEBB" in text
    assert f"Reference {invoice.number}" in text


def test_the_overview_leads_from_each_invoice_to_pay_to_its_ways_to_pay(owner, account):
    invoice = issue(account)  # no credit: the overview has no button of its own for it

    body = signed_in(owner).get("/billing").content.decode()

    assert f'href="{invoice_url(invoice)}#ways-to-pay"' in body

"""Admin shows and takes money in the currency's units (issue 34, item 11): "8.99 EUR", never
"899"; "5" or "5.00" typed into a credit form adds 5.00; a bad amount says why on its field;
buyers and sellers read as addresses, not JSON."""

import re

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from billing.models import BalanceTransaction, BillingProfile, Coupon, CreditNote, Price
from billing.services.catalogue import price_create, product_create
from billing.services.credit_notes import credit_note_create
from billing.services.invoices import invoice_mark_paid
from billing.services.ledger import balance_change, balance_of
from billing.services.profile import BillingProfileChanges, billing_profile_update
from hosting.money import InvalidAmount, parse_amount
from tests.accounts.test_admin import admin_url
from tests.billing.test_admin import (
    STAFF,
    credit,
    errors_of,
    issued,
    said,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def product():
    return product_create(
        name="Survival 4 GB",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
        actor=STAFF,
    )


@pytest.mark.parametrize(
    ("text", "currency", "minor"),
    [
        ("5", "EUR", 500),
        ("5.00", "EUR", 500),
        ("5.5", "EUR", 550),
        (" 1,234.50 ", "EUR", 123450),
        ("-5.25", "EUR", -525),
        ("1500", "JPY", 1500),
        ("1500.00", "JPY", 1500),
    ],
)
def test_amounts_are_typed_in_the_currency_s_units(text, currency, minor):
    assert parse_amount(text, currency, allow_negative=True) == minor


@pytest.mark.parametrize(
    ("text", "currency", "message"),
    [
        ("5.001", "EUR", "EUR has 2 decimals at most: write it like 5.00."),
        ("15.5", "JPY", "JPY has no decimals: write it like 5."),
        ("five", "EUR", "Not an amount: write it in EUR like 5.00."),
        ("5,00", "EUR", "Not an amount: write it in EUR like 5.00."),
        ("", "EUR", "Not an amount: write it in EUR like 5.00."),
        ("-1", "EUR", "The amount cannot be negative."),
    ],
)
def test_a_bad_amount_says_why(text, currency, message):
    with pytest.raises(InvalidAmount) as refused:
        parse_amount(text, currency)
    assert str(refused.value) == message


def add_credit(admin_client, account, amount, currency="EUR"):
    return admin_client.post(
        admin_url(BalanceTransaction, "add"),
        {"account": account.pk, "amount": amount, "currency": currency, "description": "Outage"},
        follow=True,
    )


@pytest.mark.parametrize("typed", ["5", "5.00", "5.0"])
def test_credit_is_entered_in_units_and_confirmed_in_units(admin_client, account, typed):
    response = add_credit(admin_client, account, typed)

    assert balance_of(account) == 500
    entry = BalanceTransaction.objects.get()
    assert entry.amount == 500
    (level, text), *_ = said(response)
    assert level == "success"
    assert "+5.00 EUR" in text and "500" not in text.replace("5.00", "")
    page = admin_client.get(admin_url(BalanceTransaction, "change", entry.pk)).content.decode()
    assert "5.00 EUR" in page
    listed = admin_client.get(admin_url(BalanceTransaction, "changelist")).content.decode()
    assert "5.00 EUR" in listed


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        ("5.001", "EUR has 2 decimals at most: write it like 5.00."),
        ("lots", "Not an amount: write it in EUR like 5.00."),
        ("", "This field is required."),
    ],
)
def test_a_bad_credit_amount_is_refused_on_its_field(admin_client, account, typed, error):
    response = add_credit(admin_client, account, typed)

    assert response.status_code == 200
    assert errors_of(response) == {"amount": [error]}
    assert not BalanceTransaction.objects.exists()


def test_a_yen_credit_has_no_decimals(admin_client, account):
    refused = add_credit(admin_client, account, "15.50", "JPY")
    add_credit(admin_client, account, "1500", "JPY")

    assert errors_of(refused) == {"amount": ["JPY has no decimals: write it like 5."]}
    assert BalanceTransaction.objects.get().amount == 1500


def test_add_credit_from_a_customer_page_takes_its_currency(admin_client, account):
    balance_change(
        account=account, amount=100, currency="USD", kind="adjustment", description="x", actor=STAFF
    )
    page = admin_client.get(admin_url(BalanceTransaction, "add"), {"account": account.pk})

    form = page.context["adminform"].form
    assert (form["account"].value(), form["currency"].value()) == (account.pk, "USD")


def test_a_price_is_typed_and_shown_in_units(admin_client, product):
    refused = admin_client.post(
        admin_url(Price, "add"),
        {
            "product": product.pk,
            "currency": "EUR",
            "unit_amount": "-8.99",
            "interval": "month",
            "interval_count": "1",
            "setup_fee": "1.234",
            "trial_days": "0",
        },
    )
    made = admin_client.post(
        admin_url(Price, "add"),
        {
            "product": product.pk,
            "currency": "EUR",
            "unit_amount": "8.99",
            "interval": "month",
            "interval_count": "1",
            "setup_fee": "",
            "trial_days": "0",
        },
    )

    assert errors_of(refused) == {
        "unit_amount": ["The amount cannot be negative."],
        "setup_fee": ["EUR has 2 decimals at most: write it like 5.00."],
    }
    assert made.status_code == 302
    price = Price.objects.get()
    assert (price.unit_amount, price.setup_fee) == (899, 0)
    assert str(price) == "Survival 4 GB: 8.99 EUR / month"
    page = admin_client.get(admin_url(Price, "change", price.pk)).content.decode()
    assert "8.99 EUR" in page and "0.00 EUR" in page
    assert ">899<" not in page


def test_a_coupon_s_amount_off_needs_its_currency(admin_client):
    refused = admin_client.post(
        admin_url(Coupon, "add"), {"name": "Off", "duration": "once", "amount_off": "5"}
    )

    assert errors_of(refused) == {"currency": ["Choose the currency of the amount."]}
    admin_client.post(
        admin_url(Coupon, "add"),
        {"name": "Off", "duration": "once", "amount_off": "2.50", "currency": "GBP"},
    )
    coupon = Coupon.objects.get()
    assert coupon.amount_off == 250
    page = admin_client.get(admin_url(Coupon, "change", coupon.pk)).content.decode()
    assert "2.50 GBP" in page


def test_an_invoice_shows_lines_in_units_and_its_parties_as_addresses(admin_client, account):
    billing_profile_update(
        account=account,
        changes=BillingProfileChanges.of(
            {
                "legal_name": "Blockworks BV",
                "address_line1": "Keizersgracht 1",
                "postal_code": "1015 CJ",
                "city": "Amsterdam",
                "country": "NL",
            }
        ),
        actor=STAFF,
    )
    invoice = issued(account, 899)

    page = admin_client.get(admin_url(type(invoice), "change", invoice.pk)).content.decode()

    assert "8.99 EUR" in page
    assert re.search(r'<td class="field-amount_shown">\s*<p>8.99 EUR</p>', page)
    assert '"address_lines"' not in page and "{&#x27;name&#x27;" not in page
    assert "Blockworks BV<br>Keizersgracht 1" in page
    assert BillingProfile.objects.get(account=account).legal_name in page


def test_a_credit_note_is_typed_in_units_and_shown_in_units(admin_client, account):
    invoice = invoice_mark_paid(invoice=issued(account, 1200), reference="T-1", actor=STAFF)
    url = reverse("admin:billing_invoice_credit_note", args=[quote(invoice.pk)])
    form = {"confirm": "yes", "reason": "other", "refund_to": "balance", "memo": ""}

    bad = [admin_client.post(url, {**form, "amount": typed}) for typed in ("0", "-1", "1.005")]
    done = admin_client.post(url, {**form, "amount": "2.5"})

    assert [each.context["form"].errors["amount"] for each in bad] == [
        ["The amount must be more than zero."],
        ["The amount cannot be negative."],
        ["EUR has 2 decimals at most: write it like 5.00."],
    ]
    assert done.status_code == 302
    note = CreditNote.objects.get()
    assert note.amount == 250
    page = admin_client.get(admin_url(CreditNote, "change", note.pk)).content.decode()
    assert "2.50 EUR" in page
    assert '"address_lines"' not in page


def test_a_credit_note_of_a_service_shows_in_units(admin_client, account):
    credit(account, 100)
    invoice = invoice_mark_paid(invoice=issued(account, 1200), reference="T-2", actor=STAFF)
    note = credit_note_create(
        invoice=invoice, amount=1200, reason="other", refund_to="balance", actor=STAFF
    )

    listed = admin_client.get(admin_url(CreditNote, "changelist")).content.decode()

    assert note.number in listed and "12.00 EUR" in listed


def test_a_yen_price_reads_without_decimals(product):
    price = price_create(
        product=product, currency="JPY", unit_amount=1500, interval="month", actor=STAFF
    )
    assert str(price) == "Survival 4 GB: 1,500 JPY / month"


def test_mrr_snapshots_read_in_units(admin_client):
    from datetime import date

    from analytics.models import MrrSnapshot

    snapshot = MrrSnapshot.objects.create(
        day=date(2026, 11, 1), account_id="acct_A", currency="EUR", mrr=89900, subscriptions=3
    )

    listed = admin_client.get(admin_url(MrrSnapshot, "changelist")).content.decode()
    shown = admin_client.get(admin_url(MrrSnapshot, "change", snapshot.pk)).content.decode()

    assert "899.00 EUR" in listed and "899.00 EUR" in shown
    assert ">89900<" not in listed

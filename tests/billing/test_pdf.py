"""Invoices and credit notes render to PDFs whose text reads back: number, lines, totals."""

import io
from datetime import UTC, date, datetime

import pytest
from pypdf import PdfReader
from weasyprint.urls import URLFetcher

from billing import pdf
from billing.pdf import DocumentSnapshot, LineSnapshot, offline_url_fetcher, render_document_pdf
from tests.test_settings import SETUP, assert_refused, start_django

SELLER = {
    "name": "Demo Hosting Co.",
    "address_lines": ["1 Example Street", "1000 Brussels"],
    "country": "BE",
    "vat_id": "BE0123456749",
    "email": "billing@example.com",
}
BUYER = {
    "name": "Blockworks GmbH",
    "address_lines": ["Hauptstraße 5", "10115 Berlin"],
    "country": "DE",
    "vat_id": "DE136695976",
}
REVERSE_CHARGE = (
    "Reverse charge: VAT to be accounted for by the recipient (Article 196, 2006/112/EC)."
)


def line(description: str, amount: int, **overrides) -> LineSnapshot:
    return {
        "description": description,
        "period_start": None,
        "period_end": None,
        "quantity": 1,
        "unit_amount": amount,
        "amount": amount,
        "proration": False,
        "tax_amount": 0,
    } | overrides


def invoice(lines: list[LineSnapshot], **overrides) -> DocumentSnapshot:
    subtotal = sum(item["amount"] for item in lines)
    return {
        "kind": "invoice",
        "number": "INV-2026-000042",
        "issued_at": datetime(2026, 3, 1, 9, 30, tzinfo=UTC),
        "due_date": date(2026, 3, 15),
        "currency": "EUR",
        "seller": SELLER,
        "buyer": BUYER,
        "lines": lines,
        "subtotal": subtotal,
        "discount": 0,
        "tax": [{"label": "VAT 0% (reverse charge)", "amount": 0}],
        "total": subtotal,
        "amount_paid": 0,
        "amount_remaining": subtotal,
        "notes": [REVERSE_CHARGE],
    } | overrides


THREE_LINES = [
    line(
        "Plan Large (16 GB) — survival-eu",
        4000,
        period_start=datetime(2026, 3, 1, tzinfo=UTC),
        period_end=datetime(2026, 4, 1, tzinfo=UTC),
    ),
    line(
        "Unused time on Plan Medium after 2026-03-10",
        -1355,
        proration=True,
        period_start=datetime(2026, 3, 10, 14, 0, tzinfo=UTC),
        period_end=datetime(2026, 4, 1, tzinfo=UTC),
    ),
    line("Extra backup slots", 150, quantity=3, unit_amount=50),
]


def pdf_text(document: bytes) -> str:
    """The document's text with every run of whitespace as one space (cells wrap lines)."""
    reader = PdfReader(io.BytesIO(document))
    return " ".join(" ".join(page.extract_text().split()) for page in reader.pages)


def test_an_invoice_reads_back_with_its_number_lines_parties_total_and_note():
    document = render_document_pdf(invoice(THREE_LINES))

    assert document.startswith(b"%PDF-")
    text = pdf_text(document)
    assert "Invoice" in text
    assert "INV-2026-000042" in text
    for item in THREE_LINES:
        assert item["description"] in text
    assert "2026-03-01 \N{EN DASH} 2026-04-01" in text
    assert "2026-03-10 14:00 UTC \N{EN DASH} 2026-04-01" in text
    assert "Proration" in text
    assert "-13.55 EUR" in text
    assert "Total 27.95 EUR" in text
    assert "Amount due 27.95 EUR" in text
    assert "Demo Hosting Co." in text
    assert "VAT ID BE0123456749" in text
    assert "Blockworks GmbH" in text
    assert "Hauptstraße 5" in text
    assert "Reverse charge: VAT to be accounted for by the recipient" in text
    assert "2026-03-15" in text


def test_a_credit_note_names_the_invoice_it_corrects_and_its_reason():
    credit_note = invoice(
        [line("Refund: Plan Large, 10 days of downtime", 1290)],
        kind="credit_note",
        number="CN-2026-000007",
        due_date=None,
        original_invoice_number="INV-2026-000042",
        reason="Service outage",
        notes=[],
    )

    text = pdf_text(render_document_pdf(credit_note))

    assert "Credit note" in text
    assert "CN-2026-000007" in text
    assert "Corrects invoice INV-2026-000042" in text
    assert "Reason: Service outage" in text
    assert "Refund: Plan Large, 10 days of downtime" in text
    assert "Total credited 12.90 EUR" in text
    assert "Amount due" not in text


def test_amounts_follow_the_currency_s_minor_unit():
    yen = invoice([line("Plan Small", 1200, quantity=2, unit_amount=600)], currency="JPY")

    text = pdf_text(render_document_pdf(yen))

    assert "600 JPY" in text
    assert "Total 1,200 JPY" in text


def test_a_discount_is_shown_off_the_subtotal():
    document = invoice([line("Plan Large", 4000)], discount=1000, total=3000, amount_remaining=3000)

    text = pdf_text(render_document_pdf(document))

    assert "Subtotal 40.00 EUR" in text
    assert "Discount -10.00 EUR" in text
    assert "Total 30.00 EUR" in text


def test_markup_in_a_description_is_printed_as_text_and_nothing_is_fetched(monkeypatch):
    fetched: list[str] = []

    def spying_fetcher() -> URLFetcher:
        fetcher = offline_url_fetcher()
        original = fetcher.fetch

        def fetch(url, headers=None):
            fetched.append(url)
            return original(url, headers)

        fetcher.fetch = fetch
        return fetcher

    monkeypatch.setattr(pdf, "offline_url_fetcher", spying_fetcher)
    document = invoice(
        [line('<img src="http://x.test/t.png">', 100)],
        buyer=BUYER | {"name": '<b>Mallory</b><link rel="stylesheet" href="http://x.test/s.css">'},
    )

    text = pdf_text(render_document_pdf(document))

    assert '<img src="http://x.test/t.png">' in text
    assert '<b>Mallory</b><link rel="stylesheet" href="http://x.test/s.css">' in text
    assert fetched == []


@pytest.mark.parametrize(
    "url",
    [
        "http://203.0.113.9/track.png",
        "https://example.com/logo.png",
        "ftp://example.com/logo.png",
        "file:///etc/passwd",
    ],
)
def test_the_url_fetcher_refuses_everything_but_inline_data(url):
    with pytest.raises(ValueError, match="disallowed protocol"):
        offline_url_fetcher().fetch(url)


def test_the_url_fetcher_decodes_inline_data():
    response = offline_url_fetcher().fetch("data:text/plain;base64,aGk=")

    assert response.read() == b"hi"


def test_a_long_invoice_runs_over_pages_and_ends_with_its_last_line_and_total():
    lines = [
        line(f"Hourly usage, server srv-{n:03d}", 125, quantity=5, unit_amount=25)
        for n in range(200)
    ]
    document = render_document_pdf(invoice(lines, notes=[]))

    reader = PdfReader(io.BytesIO(document))
    assert len(reader.pages) > 1
    text = pdf_text(document)
    assert "Hourly usage, server srv-000" in text
    assert "Hourly usage, server srv-199" in text
    assert "Total 250.00 EUR" in text
    assert f"Page {len(reader.pages)} of {len(reader.pages)}" in text


# --- the seller comes from the environment ---------------------------------------------------

PRINT_SELLER = f"{SETUP}; from django.conf import settings; print(settings.BILLING_SELLER)"


def test_the_seller_is_read_from_the_environment(tmp_path):
    result = start_django(
        tmp_path,
        PRINT_SELLER,
        DEBUG="true",
        BILLING_SELLER_NAME="Acme Hosting SRL",
        BILLING_SELLER_ADDRESS="Rue de la Loi 16 | 1000 Bruxelles",
        BILLING_SELLER_COUNTRY="be",
        BILLING_SELLER_VAT_ID="",
        BILLING_SELLER_EMAIL="invoices@acme.example",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(
        {
            "name": "Acme Hosting SRL",
            "address_lines": ["Rue de la Loi 16", "1000 Bruxelles"],
            "country": "BE",
            "vat_id": "",
            "email": "invoices@acme.example",
        }
    )


@pytest.mark.parametrize("country", ["Belgium", "B1", "1"])
def test_a_seller_country_that_is_not_a_two_letter_code_stops_start_up(tmp_path, country):
    result = start_django(tmp_path, PRINT_SELLER, DEBUG="true", BILLING_SELLER_COUNTRY=country)

    assert_refused(result, "BILLING_SELLER_COUNTRY", repr(country.upper()))


# --- paying by bank transfer -----------------------------------------------------------------

BANK_ACCOUNT = {
    "account_holder": "Demo Hosting Co.",
    "iban": "BE71 0961 2345 6769",
    "bic": "GKCCBEBB",
}


def test_an_invoice_still_owed_says_where_to_transfer_and_which_reference_to_use():
    document = invoice(THREE_LINES, seller=SELLER | {"bank_account": BANK_ACCOUNT})

    text = pdf_text(render_document_pdf(document))

    assert "PAY BY BANK TRANSFER" in text  # a heading, in capitals like "BILLED TO"
    assert "Account holder Demo Hosting Co." in text
    assert "IBAN BE71 0961 2345 6769" in text
    assert "BIC GKCCBEBB" in text
    assert "Reference INV-2026-000042" in text
    assert "Amount 27.95 EUR" in text


def test_a_paid_invoice_and_a_credit_note_carry_no_transfer_instructions():
    seller = SELLER | {"bank_account": BANK_ACCOUNT}
    paid = invoice(THREE_LINES, seller=seller, amount_paid=2795, amount_remaining=0)
    credit_note = invoice(
        [line("Refund", 1290)],
        kind="credit_note",
        number="CN-2026-000007",
        due_date=None,
        original_invoice_number="INV-2026-000042",
        reason="Service outage",
        notes=[],
        seller=seller,
        amount_remaining=0,
    )

    for document in (paid, credit_note):
        text = pdf_text(render_document_pdf(document))
        assert "BE71 0961 2345 6769" not in text and "bank transfer" not in text.lower()


def test_an_invoice_issued_without_bank_details_prints_none():
    text = pdf_text(render_document_pdf(invoice(THREE_LINES)))
    assert "IBAN" not in text and "bank transfer" not in text.lower()


PRINT_BANK = (
    f"{SETUP}; from django.conf import settings; print(settings.BILLING_SELLER.get('bank_account'))"
)


def test_the_seller_s_bank_account_is_read_from_the_environment(tmp_path):
    result = start_django(
        tmp_path,
        PRINT_BANK,
        DEBUG="true",
        BILLING_SELLER_NAME="Acme Hosting SRL",
        BILLING_SELLER_IBAN=" be71096123456769 ",
        BILLING_SELLER_BIC="gkccbebb",
    )

    assert result.returncode == 0, result.stderr
    # Printed as IBANs are on paper: in groups of four; the holder is the seller unless set.
    assert result.stdout.strip() == str(
        {"account_holder": "Acme Hosting SRL", "iban": "BE71 0961 2345 6769", "bic": "GKCCBEBB"}
    )


def test_without_an_iban_the_seller_has_no_bank_account(tmp_path):
    result = start_django(tmp_path, PRINT_BANK, DEBUG="true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"


@pytest.mark.parametrize(
    ("variables", "needles"),
    [
        ({"BILLING_SELLER_IBAN": "BE71 0961 2345 6760"}, ["BILLING_SELLER_IBAN", "check digits"]),
        ({"BILLING_SELLER_IBAN": "not an iban"}, ["BILLING_SELLER_IBAN"]),
        (
            {"BILLING_SELLER_IBAN": "BE71 0961 2345 6769", "BILLING_SELLER_BIC": "GKCC"},
            ["BILLING_SELLER_BIC", "'GKCC'"],
        ),
        ({"BILLING_SELLER_BIC": "GKCCBEBB"}, ["BILLING_SELLER_BIC", "BILLING_SELLER_IBAN"]),
    ],
)
def test_a_bank_account_that_cannot_be_right_stops_start_up(tmp_path, variables, needles):
    result = start_django(tmp_path, PRINT_BANK, DEBUG="true", **variables)
    assert_refused(result, *needles)

"""Credit notes and their PDFs, the balance and its ledger, payments."""

import io

import pytest
from pypdf import PdfReader

from billing.models import BalanceTransaction
from billing.representations import (
    balance_transaction_representation,
    credit_note_representation,
    payment_representation,
)
from tests.billing.api.conftest import DAY, T0, data_of, listed
from tests.envelopes import error_of
from tests.test_openapi import response_schema_validator


def iso(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def schema_errors(openapi, path: str, body: dict) -> list[str]:
    return [
        error.message for error in response_schema_validator(openapi, path, "200").iter_errors(body)
    ]


# --- Credit notes -----------------------------------------------------------------------------


def test_credit_notes_are_listed_and_shown_as_their_representation(openapi, owner_api, books):
    response = owner_api.get("/v1/credit-notes")

    assert data_of(response)["credit_notes"] == [credit_note_representation(books.credit_note)]
    assert schema_errors(openapi, "/v1/credit-notes", response.json()) == []
    detail = owner_api.get(f"/v1/credit-notes/{books.credit_note.id}")
    assert data_of(detail) == {"credit_note": credit_note_representation(books.credit_note)}
    assert data_of(detail)["credit_note"]["invoice"] == books.paid.id
    assert schema_errors(openapi, "/v1/credit-notes/{id}", detail.json()) == []


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("invoice={paid}", True),
        ("invoice={open}", False),
        (f"created_after={iso(T0 + 3 * DAY)}", True),
        (f"created_before={iso(T0 + 3 * DAY)}", False),
    ],
)
def test_credit_notes_filter_by_invoice_and_date(owner_api, books, query, found):
    query = query.format(paid=books.paid.id, open=books.open.id)

    ids = listed(owner_api.get(f"/v1/credit-notes?{query}"), "credit_notes")

    assert ids == ([books.credit_note.id] if found else [])


def test_a_credit_note_pdf_names_its_invoice_reason_and_amount(owner_api, books):
    response = owner_api.get(f"/v1/credit-notes/{books.credit_note.id}/pdf")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    number = books.credit_note.number
    assert number.startswith("TEST-CN-2026-")
    assert response["Content-Disposition"] == f'attachment; filename="{number}.pdf"'
    reader = PdfReader(io.BytesIO(response.content))
    text = " ".join(" ".join(page.extract_text().split()) for page in reader.pages)
    assert "Credit note" in text and number in text
    assert f"Corrects invoice {books.paid.number}" in text.replace("- ", "-")
    assert "Reason: Product unsatisfactory" in text
    assert "Total credited 3.00 EUR" in text
    assert "Two days of downtime." in text
    assert "Amount due" not in text


# --- The balance and its ledger ---------------------------------------------------------------


def test_the_balance_is_the_ledgers_sum_in_the_billing_currency(openapi, owner_api, books):
    response = owner_api.get("/v1/balance")

    assert data_of(response) == {"balance": {"available": 5000 - 1700 + 300, "currency": "EUR"}}
    assert schema_errors(openapi, "/v1/balance", response.json()) == []


def test_an_account_never_billed_has_no_currency_and_no_credit(owner_api, account):
    assert data_of(owner_api.get("/v1/balance")) == {"balance": {"available": 0, "currency": None}}
    assert data_of(owner_api.get("/v1/balance-transactions"))["balance_transactions"] == []


def test_the_ledger_is_newest_first_and_every_entry_names_its_cause(openapi, owner_api, books):
    response = owner_api.get("/v1/balance-transactions")

    entries = data_of(response)["balance_transactions"]
    assert [(e["kind"], e["amount"], e["ending_balance"]) for e in entries] == [
        ("credit_note", 300, 3600),
        ("applied_to_invoice", -1700, 3300),
        ("adjustment", 5000, 5000),
    ]
    assert entries[0]["credit_note"] == books.credit_note.id
    assert entries[1]["invoice"] == books.paid.id
    assert entries[2]["description"] == "Welcome credit"
    assert schema_errors(openapi, "/v1/balance-transactions", response.json()) == []
    entry = BalanceTransaction.objects.get(pk=entries[1]["id"])
    assert data_of(owner_api.get(f"/v1/balance-transactions/{entry.id}")) == {
        "balance_transaction": balance_transaction_representation(entry)
    }


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("kind=adjustment", ["adjustment"]),
        ("kind=adjustment,credit_note", ["credit_note", "adjustment"]),
        ("kind=overpayment", []),
    ],
)
def test_the_ledger_filters_by_kind(owner_api, books, query, kinds):
    entries = data_of(owner_api.get(f"/v1/balance-transactions?{query}"))["balance_transactions"]

    assert [entry["kind"] for entry in entries] == kinds


def test_an_unknown_kind_is_an_invalid_parameter(owner_api, books):
    error = error_of(owner_api.get("/v1/balance-transactions?kind=gift"), 400)

    assert error["details"]["parameters"][0]["name"] == "kind"


# --- Payments ---------------------------------------------------------------------------------


def test_payments_are_listed_and_shown_as_their_representation(openapi, owner_api, books):
    response = owner_api.get("/v1/payments")

    assert data_of(response)["payments"] == [payment_representation(books.payment)]
    assert schema_errors(openapi, "/v1/payments", response.json()) == []
    payment = data_of(owner_api.get(f"/v1/payments/{books.payment.id}"))["payment"]
    assert (payment["invoice"], payment["gateway"], payment["amount"]) == (
        books.paid.id,
        "credit",
        1700,
    )


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("status=succeeded", True),
        ("status=failed,refunded", False),
        ("invoice={paid}", True),
        ("invoice={open}", False),
    ],
)
def test_payments_filter_by_status_and_invoice(owner_api, books, query, found):
    query = query.format(paid=books.paid.id, open=books.open.id)

    ids = listed(owner_api.get(f"/v1/payments?{query}"), "payments")

    assert ids == ([books.payment.id] if found else [])


def test_an_unknown_payment_status_is_an_invalid_parameter(owner_api, books):
    error = error_of(owner_api.get("/v1/payments?status=pending"), 400)

    assert error["code"] == "invalid_parameter"

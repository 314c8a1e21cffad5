"""The staff's billing API: every customer's invoices, marking a transfer paid, voiding, giving
up, credit notes, balance adjustments and the tax exemption; only for staff keys with admin:*."""

import io
import json

import pytest
from pypdf import PdfReader

from billing.models import BalanceTransaction, CreditNote, Invoice, Payment
from billing.representations import invoice_representation
from billing.services import balance_of
from events.models import Event
from tests.billing.api.conftest import DAY, T0, at, data_of, listed
from tests.envelopes import error_of
from tests.test_openapi import validator_for

ADMIN_INVOICES = "/v1/admin/invoices"


def post(api, path: str, body: dict | None = None, **extra):
    return api.post(path, json.dumps(body or {}), content_type="application/json", **extra)


def staff_key_of(staff) -> str:
    return staff.api_keys.get().id


# --- Who may use it ---------------------------------------------------------------------------


STAFF_ENDPOINTS = [
    ("get", "/v1/admin/invoices", None, "admin:read"),
    ("get", "/v1/admin/invoices/{open}", None, "admin:read"),
    ("get", "/v1/admin/invoices/{paid}/pdf", None, "admin:read"),
    ("post", "/v1/admin/invoices/{open}/mark-paid", {"reference": "SEPA 1"}, "admin:write"),
    ("post", "/v1/admin/invoices/{open}/void", {}, "admin:write"),
    ("post", "/v1/admin/invoices/{open}/mark-uncollectible", {}, "admin:write"),
    ("get", "/v1/admin/credit-notes/{credit_note}", None, "admin:read"),
    (
        "post",
        "/v1/admin/credit-notes",
        {"invoice": "{open}", "amount": 100, "reason": "other", "refund_to": "none"},
        "admin:write",
    ),
    ("get", "/v1/admin/customers/{account}/balance-transactions", None, "admin:read"),
    ("get", "/v1/admin/customers/{account}/balance-transactions/{topup}", None, "admin:read"),
    (
        "post",
        "/v1/admin/customers/{account}/balance-transactions",
        {"amount": 100, "currency": "EUR", "description": "Goodwill"},
        "admin:write",
    ),
    ("get", "/v1/admin/customers/{account}/billing-profile", None, "admin:read"),
    ("patch", "/v1/admin/customers/{account}/billing-profile", {"tax_exempt": True}, "admin:write"),
]


def fill(value, books):
    ids = {
        "open": books.open.id,
        "paid": books.paid.id,
        "credit_note": books.credit_note.id,
        "account": books.account.id,
        "topup": books.topup.id,
    }
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {key: fill(item, books) for key, item in value.items()}
    return value


def call(api, method, template, body, books):
    path = fill(template, books)
    if body is None:
        return getattr(api, method)(path)
    return getattr(api, method)(
        path, json.dumps(fill(body, books)), content_type="application/json"
    )


@pytest.mark.parametrize(("method", "template", "body", "scope"), STAFF_ENDPOINTS)
def test_a_staff_key_with_admin_scopes_reaches_any_customer(
    staff_api, books, method, template, body, scope
):
    response = call(staff_api, method, template, body, books)

    assert response.status_code in (200, 201), response.content


@pytest.mark.parametrize(("method", "template", "body", "scope"), STAFF_ENDPOINTS)
def test_a_customers_full_key_is_refused_the_staff_api(
    owner_api, books, method, template, body, scope
):
    error = error_of(call(owner_api, method, template, body, books), 403)

    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": [scope]}


@pytest.mark.parametrize(
    ("method", "template", "body", "scope"),
    [endpoint for endpoint in STAFF_ENDPOINTS if endpoint[3] == "admin:write"],
)
def test_a_staff_reader_cannot_change_anything(
    staff_reader_api, books, method, template, body, scope
):
    error = error_of(call(staff_reader_api, method, template, body, books), 403)

    assert error["details"] == {"required_scopes": ["admin:write"]}
    assert Invoice.objects.get(pk=books.open.pk).status == "open"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/admin/invoices/inv_000000000000000000000000"),
        ("post", "/v1/admin/invoices/inv_000000000000000000000000/void"),
        ("get", "/v1/admin/credit-notes/cn_000000000000000000000000"),
        ("get", "/v1/admin/customers/acct_000000000000000000000000/billing-profile"),
        ("get", "/v1/admin/customers/acct_000000000000000000000000/balance-transactions"),
        ("post", "/v1/admin/customers/acct_000000000000000000000000/balance-transactions"),
    ],
)
def test_an_unknown_id_is_not_found(staff_api, books, method, path):
    body = {"amount": 1, "currency": "EUR", "description": "x"} if "balance" in path else {}
    response = post(staff_api, path, body) if method == "post" else staff_api.get(path)

    assert error_of(response, 404)["code"] == "not_found"


# --- Invoices of every customer ---------------------------------------------------------------


def test_staff_list_every_customers_invoices_or_one_customers(staff_reader_api, books, their_books):
    everything = listed(staff_reader_api.get(ADMIN_INVOICES), "invoices")
    ours = listed(staff_reader_api.get(f"{ADMIN_INVOICES}?account={books.account.id}"), "invoices")
    theirs_open = listed(
        staff_reader_api.get(f"{ADMIN_INVOICES}?account={their_books.account.id}&status=open"),
        "invoices",
    )

    assert len(everything) == 8 and set(ours) < set(everything)
    assert ours == [books.draft.id, books.uncollectible.id, books.open.id, books.paid.id]
    assert theirs_open == [their_books.open.id]
    detail = data_of(staff_reader_api.get(f"{ADMIN_INVOICES}/{their_books.paid.id}"))
    assert detail == {
        "invoice": invoice_representation(Invoice.objects.get(pk=their_books.paid.pk))
    }


def test_staff_download_any_customers_invoice_pdf(staff_reader_api, their_books):
    response = staff_reader_api.get(f"{ADMIN_INVOICES}/{their_books.open.id}/pdf")

    assert response["Content-Type"] == "application/pdf"
    text = " ".join(PdfReader(io.BytesIO(response.content)).pages[0].extract_text().split())
    assert their_books.open.number in text and "Total 12.00 EUR" in text
    error = error_of(staff_reader_api.get(f"{ADMIN_INVOICES}/{their_books.draft.id}/pdf"), 409)
    assert error["code"] == "invalid_state"


def test_staff_mark_a_transfer_paid_with_its_reference(staff_api, staff, books):
    response = post(
        staff_api, f"{ADMIN_INVOICES}/{books.open.id}/mark-paid", {"reference": " SEPA 2026-03-04 "}
    )

    invoice = data_of(response)["invoice"]
    assert (invoice["status"], invoice["amount_paid"], invoice["amount_remaining"]) == (
        "paid",
        1200,
        0,
    )
    payment = Payment.objects.get(invoice=books.open)
    assert (payment.gateway, payment.reference, payment.amount, payment.created_by_id) == (
        "bank_transfer",
        "SEPA 2026-03-04",
        1200,
        staff.id,
    )
    for kind, object_id in (("invoice.paid", invoice["id"]), ("payment.succeeded", payment.id)):
        event = Event.objects.get(type=kind, object_id=object_id)
        assert event.actor_user_id == staff.id and event.actor_api_key_id == staff_key_of(staff)
    again = error_of(
        post(staff_api, f"{ADMIN_INVOICES}/{books.open.id}/mark-paid", {"reference": "again"}), 409
    )
    assert (again["code"], again["details"]) == (
        "invalid_state",
        {"status": "paid", "allowed_statuses": []},
    )


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({}, "reference", "required"),
        ({"reference": "   "}, "reference", "blank"),
        ({"reference": "x" * 201}, "reference", "max_length"),
        ({"reference": "SEPA", "amount": 5}, "amount", "unknown_field"),
    ],
)
def test_marking_paid_needs_a_reference(staff_api, books, body, field, code):
    error = error_of(post(staff_api, f"{ADMIN_INVOICES}/{books.open.id}/mark-paid", body), 400)

    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == [(field, code)]
    assert not Payment.objects.filter(invoice=books.open).exists()


def test_staff_void_an_unpaid_invoice_and_the_customer_sees_it(staff_api, owner_api, books):
    invoice = data_of(post(staff_api, f"{ADMIN_INVOICES}/{books.open.id}/void"))["invoice"]

    assert (invoice["status"], invoice["amount_remaining"]) == ("void", 0)
    assert invoice["voided_at"] is not None
    assert Event.objects.filter(type="invoice.voided", object_id=books.open.id).count() == 1
    assert data_of(owner_api.get(f"/v1/invoices/{books.open.id}"))["invoice"]["status"] == "void"
    assert owner_api.get(f"/v1/invoices/{books.open.id}/pdf").status_code == 200


@pytest.mark.parametrize(
    ("name", "code", "details"),
    [
        ("paid", "conflict", {"amount_paid": 1700}),
        ("draft", "invalid_state", {"status": "draft", "allowed_statuses": ["open"]}),
    ],
)
def test_a_paid_invoice_or_a_draft_is_not_voided(staff_api, books, name, code, details):
    invoice = getattr(books, name)

    error = error_of(post(staff_api, f"{ADMIN_INVOICES}/{invoice.id}/void"), 409)

    assert (error["code"], error["details"]) == (code, details)
    assert Invoice.objects.get(pk=invoice.pk).status == name


def test_voiding_takes_no_body(staff_api, books):
    error = error_of(post(staff_api, f"{ADMIN_INVOICES}/{books.open.id}/void", {"why": "x"}), 400)

    assert error["details"]["fields"][0]["code"] == "unknown_field"


def test_staff_mark_an_open_invoice_uncollectible(staff_api, books):
    path = f"{ADMIN_INVOICES}/{books.open.id}/mark-uncollectible"

    invoice = data_of(post(staff_api, path))["invoice"]

    assert invoice["status"] == "uncollectible" and invoice["marked_uncollectible_at"]
    assert Event.objects.filter(
        type="invoice.marked_uncollectible", object_id=books.open.id
    ).exists()
    error = error_of(post(staff_api, path), 409)
    assert error["details"] == {"status": "uncollectible", "allowed_statuses": ["paid", "void"]}


def test_a_staff_action_is_replayed_for_the_same_idempotency_key(staff_api, books):
    path = f"{ADMIN_INVOICES}/{books.open.id}/mark-paid"
    first = post(staff_api, path, {"reference": "SEPA 1"}, HTTP_IDEMPOTENCY_KEY="transfer-1")
    second = post(staff_api, path, {"reference": "SEPA 1"}, HTTP_IDEMPOTENCY_KEY="transfer-1")

    assert first.status_code == second.status_code == 200
    assert second["Idempotent-Replayed"] == "true" and second.json() == first.json()
    assert Payment.objects.filter(invoice=books.open).count() == 1


# --- Credit notes -----------------------------------------------------------------------------


def test_staff_credit_what_was_paid_back_to_the_balance(openapi, staff_api, owner_api, books):
    response = post(
        staff_api,
        "/v1/admin/credit-notes",
        {
            "invoice": books.paid.id,
            "amount": 400,
            "reason": "duplicate",
            "refund_to": "balance",
            "memo": "Charged twice",
        },
    )

    credit_note = data_of(response, 201)["credit_note"]
    assert response["Location"] == f"http://testserver/v1/admin/credit-notes/{credit_note['id']}"
    assert (credit_note["invoice"], credit_note["amount"], credit_note["memo"]) == (
        books.paid.id,
        400,
        "Charged twice",
    )
    assert balance_of(books.account) == 3600 + 400
    entry = BalanceTransaction.objects.get(credit_note_id=credit_note["id"])
    assert (entry.kind, entry.amount) == ("credit_note", 400)
    assert Event.objects.filter(type="credit_note.created", object_id=credit_note["id"]).exists()
    assert data_of(staff_api.get(response["Location"]))["credit_note"] == credit_note
    assert data_of(owner_api.get(f"/v1/credit-notes/{credit_note['id']}"))["credit_note"] == (
        credit_note
    )
    validator = validator_for(
        openapi,
        "paths",
        "/v1/admin/credit-notes",
        "post",
        "responses",
        "201",
        "content",
        "application/json",
        "schema",
    )
    assert [error.message for error in validator.iter_errors(response.json())] == []


def test_forgiving_what_is_owed_settles_an_open_invoice(staff_api, books):
    response = post(
        staff_api,
        "/v1/admin/credit-notes",
        {"invoice": books.open.id, "amount": 1200, "reason": "order_change", "refund_to": "none"},
    )

    data_of(response, 201)
    invoice = Invoice.objects.get(pk=books.open.pk)
    assert (invoice.status, invoice.amount_remaining, invoice.amount_credited) == ("paid", 0, 1200)


@pytest.mark.parametrize(
    ("changes", "status", "code", "field"),
    [
        ({"invoice": "inv_000000000000000000000000"}, 404, "not_found", None),
        ({"invoice": "{draft}"}, 409, "invalid_state", None),
        (
            {"amount": 5000, "refund_to": "balance", "invoice": "{paid}"},
            400,
            "validation_failed",
            "amount",
        ),
        ({"amount": 1300}, 400, "validation_failed", "refund_to"),
        ({"amount": 0}, 400, "validation_failed", "amount"),
        ({"reason": "whim"}, 400, "validation_failed", "reason"),
        ({"refund_to": "card"}, 400, "validation_failed", "refund_to"),
        ({"amount": "5"}, 400, "validation_failed", "amount"),
    ],
)
def test_a_credit_note_that_cannot_be_issued_is_refused(
    staff_api, books, changes, status, code, field
):
    body = {"invoice": books.open.id, "amount": 100, "reason": "other", "refund_to": "none"}
    body |= changes
    body["invoice"] = body["invoice"].format(draft=books.draft.id, paid=books.paid.id)

    error = error_of(post(staff_api, "/v1/admin/credit-notes", body), status)

    assert error["code"] == code
    if field:
        assert [f["name"] for f in error["details"]["fields"]] == [field]
    assert CreditNote.objects.count() == 1  # the books' own


# --- Balance adjustments ----------------------------------------------------------------------


def test_staff_add_and_take_credit(staff_api, staff, owner_api, books):
    path = f"/v1/admin/customers/{books.account.id}/balance-transactions"

    response = post(staff_api, path, {"amount": 2000, "currency": "eur", "description": "Outage"})

    entry = data_of(response, 201)["balance_transaction"]
    assert response["Location"] == f"http://testserver{path}/{entry['id']}"
    assert (entry["kind"], entry["amount"], entry["ending_balance"]) == ("adjustment", 2000, 5600)
    assert data_of(staff_api.get(response["Location"]))["balance_transaction"] == entry
    event = Event.objects.get(type="customer.balance_changed", object_id=entry["id"])
    assert event.actor_user_id == staff.id and event.account_id == books.account.id
    assert data_of(owner_api.get("/v1/balance"))["balance"]["available"] == 5600
    at(books.account, T0 + 6 * DAY)  # the account's clock: entries of one instant sort by id
    taken = post(staff_api, path, {"amount": -600, "currency": "EUR", "description": "Correction"})
    assert data_of(taken, 201)["balance_transaction"]["ending_balance"] == 5000
    entries = data_of(staff_api.get(f"{path}?kind=adjustment"))["balance_transactions"]
    assert [e["amount"] for e in entries] == [-600, 2000, 5000]


@pytest.mark.parametrize(
    ("body", "status", "code", "details"),
    [
        ({"amount": -99999, "currency": "EUR"}, 409, "conflict", {"balance": 3600}),
        ({"amount": 100, "currency": "USD"}, 409, "conflict", {"currency": "EUR"}),
        ({"amount": 0, "currency": "EUR"}, 400, "validation_failed", None),
        ({"amount": 100, "currency": "XYZ"}, 400, "validation_failed", None),
        ({"amount": 100, "currency": "EUR", "description": " "}, 400, "validation_failed", None),
        ({"amount": 1.5, "currency": "EUR"}, 400, "validation_failed", None),
    ],
)
def test_an_adjustment_that_cannot_be_made_is_refused(
    staff_api, books, body, status, code, details
):
    path = f"/v1/admin/customers/{books.account.id}/balance-transactions"
    body = {"description": "Adjustment"} | body

    error = error_of(post(staff_api, path, body), status)

    assert error["code"] == code
    if details:
        assert error["details"] == details
    assert balance_of(books.account) == 3600


# --- The billing profile ----------------------------------------------------------------------


def test_staff_set_the_tax_exemption_and_the_address(staff_api, staff, owner_api, books):
    path = f"/v1/admin/customers/{books.account.id}/billing-profile"

    response = staff_api.patch(path, {"tax_exempt": True, "city": "Potsdam"}, format="json")

    profile = data_of(response)["billing_profile"]
    assert (profile["tax_exempt"], profile["address"]["city"]) == (True, "Potsdam")
    assert data_of(owner_api.get("/v1/billing-profile"))["billing_profile"] == profile
    event = Event.objects.get(type="customer.billing_profile_updated", actor_user=staff)
    assert event.data["previous_attributes"]["tax_exempt"] is False
    assert data_of(staff_api.get(path))["billing_profile"] == profile
    error = error_of(staff_api.patch(path, {"tax_exempt": "yes"}, format="json"), 400)
    assert error["details"]["fields"][0]["name"] == "tax_exempt"

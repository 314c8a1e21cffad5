"""GET /v1/invoices (filters, pagination, the query budget), one invoice, its PDF, and paying it
with credit."""

import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pypdf import PdfReader

from billing.models import BalanceTransaction, Invoice, Payment, Subscription
from billing.representations import invoice_representation
from billing.services import balance_of
from events.models import Event
from tests.billing.api.conftest import DAY, PLAN, SETUP, T0, at, data_of, issue, listed
from tests.conftest import auth_queries
from tests.envelopes import error_of
from tests.test_openapi import response_schema_validator, validator_for

INVOICES = "/v1/invoices"


def iso(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pdf_text(content: bytes) -> str:
    reader = PdfReader(io.BytesIO(content))
    return " ".join(" ".join(page.extract_text().split()) for page in reader.pages)


def pay(api, invoice, body=None, **extra):
    return api.post(
        f"{INVOICES}/{invoice.id}/pay",
        json.dumps({"source": "credit"} if body is None else body),
        content_type="application/json",
        **extra,
    )


# --- The list ---------------------------------------------------------------------------------


def test_the_list_is_newest_first_with_each_invoice_as_its_representation(owner_api, books):
    data = data_of(owner_api.get(INVOICES))

    assert data["pagination"] == {"page": 1, "per_page": 25, "total": 4, "total_pages": 1}
    expected = [books.draft, books.uncollectible, books.open, books.paid]
    assert data["invoices"] == [
        invoice_representation(Invoice.objects.get(pk=invoice.pk)) for invoice in expected
    ]
    paid = data["invoices"][3]
    assert (paid["status"], paid["total"], paid["amount_remaining"]) == ("paid", 1700, 0)
    assert [line["description"] for line in paid["lines"]] == [PLAN["description"], "Setup fee"]
    assert paid["customer"]["name"] == "Blockworks GmbH"
    assert paid["number"].startswith("TEST-INV-2026-")


def test_the_list_and_an_invoice_match_the_documented_schema(openapi, owner_api, books):
    body = owner_api.get(INVOICES).json()
    validator = response_schema_validator(openapi, "/v1/invoices", "200")
    assert [error.message for error in validator.iter_errors(body)] == []

    body = owner_api.get(f"{INVOICES}/{books.paid.id}").json()
    validator = response_schema_validator(openapi, "/v1/invoices/{id}", "200")
    assert [error.message for error in validator.iter_errors(body)] == []


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("status=open", ["open"]),
        ("status=open,paid", ["open", "paid"]),
        ("status=open&status=draft", ["draft", "open"]),
        ("currency=eur", ["draft", "uncollectible", "open", "paid"]),
        ("currency=USD", []),
        (f"created_after={iso(T0 + 2 * DAY)}", ["draft", "uncollectible", "open"]),
        (f"created_before={iso(T0 + 2 * DAY)}", ["paid"]),
        (f"due_after={iso(T0 + 9 * DAY)}", ["uncollectible", "open"]),
        (f"due_before={iso(T0 + 9 * DAY)}", ["paid"]),
        ("ordering=total", ["uncollectible", "draft", "open", "paid"]),
        ("ordering=-total", ["paid", "draft", "open", "uncollectible"]),
        ("status=open,paid,uncollectible&ordering=due_date", ["paid", "open", "uncollectible"]),
        ("subscription=sub_000000000000000000000000", []),
        ("unknown_parameter=1", ["draft", "uncollectible", "open", "paid"]),
    ],
)
def test_filters_and_ordering(owner_api, books, their_books, query, names):
    response = owner_api.get(f"{INVOICES}?{query}")

    assert listed(response, "invoices") == [getattr(books, name).id for name in names]
    assert response.json()["data"]["pagination"]["total"] == len(names)


def test_the_subscription_filter_finds_its_invoices(owner_api, account, books, catalogue):
    subscription = Subscription.objects.create(
        account=account,
        price=catalogue.server_eur,
        billing_cycle_anchor=T0,
        current_period_start=T0,
        current_period_end=T0 + 31 * DAY,
    )
    Invoice.objects.filter(pk=books.open.pk).update(subscription=subscription)

    response = owner_api.get(f"{INVOICES}?subscription={subscription.id}")

    assert listed(response, "invoices") == [books.open.id]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=sent", "status"),
        ("status=open,sent", "status"),
        ("currency=XYZ", "currency"),
        ("created_after=yesterday", "created_after"),
        ("due_before=2026-13-45", "due_before"),
        ("ordering=number", "ordering"),
        ("status=", "status"),
    ],
)
def test_an_unknown_filter_value_is_an_invalid_parameter(owner_api, books, query, parameter):
    error = error_of(owner_api.get(f"{INVOICES}?{query}"), 400)

    assert error["code"] == "invalid_parameter"
    assert [p["name"] for p in error["details"]["parameters"]] == [parameter]


def test_pages_follow_the_contract(owner_api, books):
    first = owner_api.get(f"{INVOICES}?per_page=3")
    second = owner_api.get(f"{INVOICES}?per_page=3&page=2")
    past = owner_api.get(f"{INVOICES}?per_page=3&page=5")

    assert data_of(first)["pagination"] == {"page": 1, "per_page": 3, "total": 4, "total_pages": 2}
    assert listed(first, "invoices") + listed(second, "invoices") == [
        books.draft.id,
        books.uncollectible.id,
        books.open.id,
        books.paid.id,
    ]
    assert 'rel="next"' in first["Link"] and "per_page=3" in first["Link"]
    assert data_of(past) == {
        "invoices": [],
        "pagination": {"page": 5, "per_page": 3, "total": 4, "total_pages": 2},
    }
    error = error_of(owner_api.get(f"{INVOICES}?per_page=101"), 400)
    assert error["details"]["parameters"][0]["name"] == "per_page"


@pytest.mark.parametrize("per_page", [1, 25, 100])
def test_a_page_of_invoices_costs_two_queries_whatever_its_size(owner_api, account, per_page):
    for _ in range(110):
        issue(account, PLAN, SETUP, finalize=False)
    owner_api.get(INVOICES)  # the first call records the key's last use; steady state follows
    with CaptureQueriesContext(connection) as queries:
        response = owner_api.get(f"{INVOICES}?per_page={per_page}")

    invoices = data_of(response)["invoices"]
    assert len(invoices) == per_page
    assert all(len(invoice["lines"]) == 2 for invoice in invoices)
    # The page with its total (one statement) and its lines, plus the key unless it comes from
    # the shared cache.
    assert len(queries) == 2 + auth_queries(), [q["sql"] for q in queries]


def test_one_invoice_is_its_representation(mate_api, books):
    data = data_of(mate_api.get(f"{INVOICES}/{books.open.id}"))

    assert data == {"invoice": invoice_representation(Invoice.objects.get(pk=books.open.pk))}
    assert data["invoice"]["lines"][0]["period"] == {
        "start": "2026-03-01T00:00:00Z",
        "end": "2026-04-01T00:00:00Z",
    }
    assert data["invoice"]["due_date"] == iso(T0 + 9 * DAY)


def test_a_list_filter_never_narrows_the_detail(owner_api, books):
    response = owner_api.get(f"{INVOICES}/{books.open.id}?status=paid")

    assert data_of(response)["invoice"]["id"] == books.open.id


# --- The PDF ----------------------------------------------------------------------------------


def test_the_pdf_reads_back_with_the_number_the_lines_and_the_total(owner_api, books):
    response = owner_api.get(f"{INVOICES}/{books.paid.id}/pdf")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    number = books.paid.number
    assert response["Content-Disposition"] == f'attachment; filename="{number}.pdf"'
    assert "X-RateLimit-Remaining" in response
    content = b"".join(response.streaming_content) if response.streaming else response.content
    text = pdf_text(content)
    assert number in text
    assert PLAN["description"] in text
    assert "2026-03-01 \N{EN DASH} 2026-04-01" in text
    assert "Setup fee" in text
    assert "Total 17.00 EUR" in text
    assert "Amount paid 17.00 EUR" in text
    assert "Amount due 0.00 EUR" in text
    assert "Blockworks GmbH" in text and "VAT ID DE136695976" in text
    assert "Demo Hosting Co." in text
    assert "Due 2026-03-09" in text


def test_the_pdf_shows_the_buyer_as_it_was_when_finalized(owner_api, books):
    owner_api.patch("/v1/billing-profile", {"legal_name": "Renamed GmbH"}, format="json")

    text = pdf_text(owner_api.get(f"{INVOICES}/{books.open.id}/pdf").content)

    assert "Blockworks GmbH" in text and "Renamed GmbH" not in text


def test_a_draft_has_no_pdf(owner_api, books):
    error = error_of(owner_api.get(f"{INVOICES}/{books.draft.id}/pdf"), 409)

    assert error["code"] == "invalid_state"
    assert error["details"]["status"] == "draft"


def test_a_taxed_invoice_prints_its_rate(owner_api, account, books):
    Invoice.objects.filter(pk=books.open.pk).update(tax_percentage="19", tax=228, total=1428)

    text = pdf_text(owner_api.get(f"{INVOICES}/{books.open.id}/pdf").content)

    assert "Tax 19% 2.28 EUR" in text


# --- Paying with credit -----------------------------------------------------------------------


def test_paying_with_credit_pays_the_invoice_and_records_it(owner_api, owner, account, books):
    response = pay(owner_api, books.open)

    invoice = data_of(response)["invoice"]
    assert (invoice["status"], invoice["amount_paid"]) == ("paid", 1200)
    assert invoice["amount_remaining"] == 0 and invoice["paid_at"] is not None
    assert invoice == invoice_representation(Invoice.objects.get(pk=books.open.pk))
    assert balance_of(account) == 3600 - 1200
    payment = Payment.objects.get(invoice=books.open)
    assert (payment.gateway, payment.status, payment.amount) == ("credit", "succeeded", 1200)
    entry = BalanceTransaction.objects.filter(invoice=books.open).get()
    assert (entry.kind, entry.amount) == ("applied_to_invoice", -1200)
    paid = Event.objects.get(type="invoice.paid", object_id=books.open.id)
    assert paid.actor_user_id == owner.id and paid.actor_api_key_id is not None


def test_credit_that_does_not_cover_the_invoice_pays_part_of_it(owner_api, account, books):
    at(account, T0 + 6 * DAY)
    big = issue(account, {"description": "Dedicated host", "unit_amount": 5000})

    invoice = data_of(pay(owner_api, big))["invoice"]

    assert (invoice["status"], invoice["amount_paid"], invoice["amount_remaining"]) == (
        "open",
        3600,
        1400,
    )
    error = error_of(pay(owner_api, big), 409)
    assert (error["code"], error["details"]) == ("conflict", {"balance": 0})


@pytest.mark.parametrize(("name", "allowed"), [("paid", []), ("draft", ["open"])])
def test_an_invoice_whose_status_forbids_paying_is_an_invalid_state(
    owner_api, books, name, allowed
):
    invoice = getattr(books, name)

    error = error_of(pay(owner_api, invoice), 409)

    assert error["code"] == "invalid_state"
    assert error["details"] == {"status": name, "allowed_statuses": allowed}
    assert Payment.objects.filter(invoice=invoice).count() == (1 if name == "paid" else 0)


def test_an_uncollectible_invoice_can_still_be_paid(owner_api, books):
    assert data_of(pay(owner_api, books.uncollectible))["invoice"]["status"] == "paid"


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"source": "cheque"}, "source", "invalid_choice"),
        ({"source": "card", "return_url": "not a url"}, "return_url", "invalid"),
        ({}, "source", "required"),
        ({"source": "credit", "amount": 5}, "amount", "unknown_field"),
        ({"source": 1}, "source", "invalid"),
    ],
)
def test_a_bad_body_is_refused_in_the_envelope(owner_api, books, body, field, code):
    error = error_of(pay(owner_api, books.open, body), 400)

    assert error["code"] == "validation_failed"
    assert [(f["name"], f["code"]) for f in error["details"]["fields"]] == [(field, code)]
    assert Payment.objects.filter(invoice=books.open).count() == 0


def test_paying_again_with_the_same_idempotency_key_replays_the_first_answer(owner_api, books):
    first = pay(owner_api, books.open, HTTP_IDEMPOTENCY_KEY="pay-open-1")
    second = pay(owner_api, books.open, HTTP_IDEMPOTENCY_KEY="pay-open-1")

    assert first.status_code == second.status_code == 200
    assert second["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert Payment.objects.filter(invoice=books.open).count() == 1
    error = error_of(pay(owner_api, books.paid, HTTP_IDEMPOTENCY_KEY="pay-open-1"), 422)
    assert error["code"] == "idempotency_key_reused"


def test_the_pay_answer_matches_the_documented_schema(openapi, owner_api, books):
    body = pay(owner_api, books.open).json()

    validator = validator_for(
        openapi,
        "paths",
        "/v1/invoices/{id}/pay",
        "post",
        "responses",
        "200",
        "content",
        "application/json",
        "schema",
    )
    assert [error.message for error in validator.iter_errors(body)] == []

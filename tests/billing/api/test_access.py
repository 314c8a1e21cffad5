"""Who may use each customer billing endpoint: the owner and a teammate whose role holds the
billing scopes see and act; an outsider gets 404 (never a 403 that would say the object
exists); a key without the scope, or whose user's role lacks it, gets 403 with the contract's
code."""

import pytest

from billing.models import Invoice
from tests.billing.api.conftest import data_of, listed
from tests.envelopes import error_of

# (method, path with {placeholders} from the books, body, what it needs)
OBJECT_ENDPOINTS = [
    ("get", "/v1/invoices/{open}", None, "billing:read"),
    ("get", "/v1/invoices/{paid}/pdf", None, "billing:read"),
    ("post", "/v1/invoices/{open}/pay", {"source": "credit"}, "billing:write"),
    ("get", "/v1/credit-notes/{credit_note}", None, "billing:read"),
    ("get", "/v1/credit-notes/{credit_note}/pdf", None, "billing:read"),
    ("get", "/v1/balance-transactions/{topup}", None, "billing:read"),
    ("get", "/v1/payments/{payment}", None, "billing:read"),
]
LISTS = [
    ("/v1/invoices", "invoices", ["draft", "uncollectible", "open", "paid"]),
    ("/v1/credit-notes", "credit_notes", ["credit_note"]),
    ("/v1/balance-transactions", "balance_transactions", None),
    ("/v1/payments", "payments", ["payment"]),
]
ACCOUNT_ENDPOINTS = [
    ("get", "/v1/balance", None, "billing:read"),
    ("get", "/v1/billing-profile", None, "billing:read"),
    ("patch", "/v1/billing-profile", {"city": "Potsdam"}, "billing:write"),
]
EVERY_ENDPOINT = [
    *OBJECT_ENDPOINTS,
    *((("get", path, None, "billing:read") for path, _, _ in LISTS)),
    *ACCOUNT_ENDPOINTS,
    ("get", "/v1/products", None, "billing:read"),
    ("get", "/v1/products/{product}", None, "billing:read"),
]


def path_of(template: str, books, catalogue=None) -> str:
    ids = {
        name: getattr(books, name).id
        for name in ("open", "paid", "credit_note", "topup", "payment")
    }
    if catalogue is not None:
        ids["product"] = catalogue.server.id
    return template.format(**ids)


def call(api, method: str, path: str, body):
    return (
        getattr(api, method)(path, body, format="json")
        if body is not None
        else getattr(api, method)(path)
    )


@pytest.mark.parametrize(("method", "template", "body", "scope"), OBJECT_ENDPOINTS)
@pytest.mark.parametrize("who", ["owner_api", "mate_api"])
def test_the_owner_and_a_billing_teammate_reach_the_accounts_objects(
    request, books, their_books, who, method, template, body, scope
):
    api = request.getfixturevalue(who)
    response = call(api, method, path_of(template, books), body)
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(("method", "template", "body", "scope"), OBJECT_ENDPOINTS)
def test_an_outsider_gets_not_found_for_the_accounts_objects(
    outsider_api, books, their_books, method, template, body, scope
):
    error = error_of(call(outsider_api, method, path_of(template, books), body), 404)

    assert error["code"] == "not_found"
    # Their own object of the same kind is there for them: the 404 is about whose it is.
    assert call(outsider_api, method, path_of(template, their_books), body).status_code == 200


def test_an_outsiders_pay_changes_nothing(outsider_api, books, their_books):
    error_of(
        outsider_api.post(f"/v1/invoices/{books.open.id}/pay", {"source": "credit"}, format="json"),
        404,
    )

    books.open.refresh_from_db()
    assert (books.open.status, books.open.amount_paid) == ("open", 0)


@pytest.mark.parametrize(("path", "key", "names"), LISTS)
def test_lists_show_the_accounts_rows_to_the_team_and_only_theirs_to_an_outsider(
    owner_api, mate_api, outsider_api, books, their_books, path, key, names
):
    def expected(of) -> list[str]:
        if names is None:
            return [entry.id for entry in sorted(of.entries, key=lambda e: e.created_at)][::-1]
        return [getattr(of, name).id for name in names]

    assert listed(owner_api.get(path), key) == expected(books)
    assert listed(mate_api.get(path), key) == expected(books)
    assert listed(outsider_api.get(path), key) == expected(their_books)


def test_the_balance_and_profile_are_the_callers_accounts(
    owner_api, mate_api, outsider_api, books, other_account
):
    for api in (owner_api, mate_api):
        assert data_of(api.get("/v1/balance")) == {
            "balance": {"available": 3600, "currency": "EUR"}
        }
        profile = data_of(api.get("/v1/billing-profile"))["billing_profile"]
        assert profile["legal_name"] == "Blockworks GmbH"
    assert data_of(outsider_api.get("/v1/balance")) == {
        "balance": {"available": 0, "currency": None}
    }
    assert data_of(outsider_api.get("/v1/billing-profile"))["billing_profile"]["legal_name"] == ""

    data_of(outsider_api.patch("/v1/billing-profile", {"legal_name": "Theirs"}, format="json"))

    books.account.billing_profile.refresh_from_db()
    assert books.account.billing_profile.legal_name == "Blockworks GmbH"


def test_every_customer_sees_the_same_catalogue(owner_api, outsider_api, catalogue):
    assert listed(owner_api.get("/v1/products"), "products") == listed(
        outsider_api.get("/v1/products"), "products"
    )


@pytest.mark.parametrize(("method", "template", "body", "scope"), EVERY_ENDPOINT)
def test_a_key_without_the_scope_is_refused(
    unscoped_api, books, catalogue, method, template, body, scope
):
    error = error_of(call(unscoped_api, method, path_of(template, books, catalogue), body), 403)

    assert error["code"] == "insufficient_scope"
    assert error["details"] == {"required_scopes": [scope]}


@pytest.mark.parametrize(("method", "template", "body", "scope"), EVERY_ENDPOINT)
def test_a_key_whose_user_was_moved_to_a_role_without_billing_is_refused(
    demoted_api, books, catalogue, method, template, body, scope
):
    error = error_of(call(demoted_api, method, path_of(template, books, catalogue), body), 403)

    assert error["code"] == "insufficient_scope"


@pytest.mark.parametrize(
    ("method", "template", "body", "scope"),
    [endpoint for endpoint in EVERY_ENDPOINT if endpoint[3] == "billing:write"],
)
def test_a_viewer_reads_billing_but_cannot_change_it(
    reader_api, books, method, template, body, scope
):
    error = error_of(call(reader_api, method, path_of(template, books), body), 403)

    assert error["details"] == {"required_scopes": ["billing:write"]}
    assert data_of(reader_api.get(f"/v1/invoices/{books.open.id}"))["invoice"]["status"] == "open"
    assert Invoice.objects.get(pk=books.open.pk).status == "open"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/invoices/inv_000000000000000000000000"),
        ("get", "/v1/invoices/inv_000000000000000000000000/pdf"),
        ("post", "/v1/invoices/inv_000000000000000000000000/pay"),
        ("get", "/v1/credit-notes/cn_000000000000000000000000"),
        ("get", "/v1/payments/pay_000000000000000000000000"),
        ("get", "/v1/balance-transactions/btx_000000000000000000000000"),
        ("get", "/v1/products/prod_000000000000000000000000"),
    ],
)
def test_an_id_that_does_not_exist_is_not_found(owner_api, books, method, path):
    body = {"source": "credit"} if method == "post" else None
    assert error_of(call(owner_api, method, path, body), 404)["code"] == "not_found"


def test_the_billing_api_needs_a_key(db, client):
    for path in ("/v1/invoices", "/v1/balance", "/v1/billing-profile", "/v1/products"):
        error = error_of(client.get(path), 401)
        assert error["code"] == "authentication_required"

"""``POST /v1/subscriptions/preview`` (issue 27, case 8): an order's summary before ordering, with
the body of an order; the same lines, tax and total as the invoice the order then creates; the
errors of an order; readable with ``billing:read``, about the caller's own account only."""

from decimal import Decimal

import pytest

from accounts.actors import SYSTEM
from billing.models import Coupon, Invoice, Price, PromotionCode, Subscription, TaxRate
from billing.rules.tax import REVERSE_CHARGE_NOTE
from billing.services.profile import BillingProfileChanges, billing_profile_update
from tests.billing.api.conftest import T0, at, data_of
from tests.billing.api.test_subscriptions_api import order_body, post, top_up
from tests.envelopes import error_of

pytestmark = pytest.mark.django_db
PREVIEW = "/v1/subscriptions/preview"


@pytest.fixture
def on_clock(account, other_account):
    at(account, T0)
    at(other_account, T0)
    TaxRate.objects.create(country="BE", percentage=Decimal(21))  # the seller's country
    return account


@pytest.fixture
def with_setup_fee(catalogue):
    return Price.objects.create(
        product=catalogue.server,
        currency="EUR",
        unit_amount=1200,
        interval="month",
        setup_fee=500,
    )


@pytest.fixture
def welcome(db):
    coupon = Coupon.objects.create(
        name="Welcome", percent_off=Decimal(10), duration="repeating", duration_in_months=2
    )
    return PromotionCode.objects.create(coupon=coupon, code="WELCOME10")


def test_the_summary_shows_every_amount_and_what_is_due_today_and_at_renewal(
    on_clock, owner_api, with_setup_fee, welcome
):
    top_up(on_clock, 1000)
    body = order_body(with_setup_fee, promotion_code="welcome10")

    preview = data_of(post(owner_api, PREVIEW, body))

    assert preview == {
        "order_preview": {
            "price": with_setup_fee.id,
            "currency": "EUR",
            "at": "2026-03-01T09:00:00Z",
            "coupon": welcome.coupon_id,
            "promotion_code": "WELCOME10",
            "tax_rate": {
                "percentage": "21",
                "inclusive": False,
                "reverse_charge": False,
                "note": "",
            },
            "lines": [
                {
                    "description": "Minecraft 4 GB (1 Mar 2026 09:00 to 1 Apr 2026 09:00)",
                    "price": with_setup_fee.id,
                    "amount": 1200,
                    "discount_amount": 120,
                    "tax_amount": 227,
                    "period": {"start": "2026-03-01T09:00:00Z", "end": "2026-04-01T09:00:00Z"},
                },
                {
                    "description": "Setup fee: Minecraft 4 GB",
                    "price": with_setup_fee.id,
                    "amount": 500,
                    "discount_amount": 50,
                    "tax_amount": 94,
                    "period": {"start": None, "end": None},
                },
            ],
            "subtotal": 1700,
            "setup_fee": 500,
            "discount": 170,
            "tax": 321,  # 21 % of 15.30, rounded once
            "total": 1851,
            "trial_end": None,
            "credit_applied": 1000,
            "due_today": 851,
            "renewal": {
                "at": "2026-04-01T09:00:00Z",
                "period": {"start": "2026-04-01T09:00:00Z", "end": "2026-05-01T09:00:00Z"},
                "subtotal": 1200,
                "discount": 120,  # two months of 10 %: the renewal is still discounted
                "tax": 227,
                "total": 1307,
            },
        }
    }
    assert not Subscription.objects.exists() and not Invoice.objects.exists()
    assert PromotionCode.objects.get().times_redeemed == 0

    invoice = data_of(post(owner_api, "/v1/subscriptions", body), 201)["invoice"]
    summary = preview["order_preview"]
    assert [
        (line["description"], line["amount"], line["discount_amount"], line["tax_amount"])
        for line in invoice["lines"]
    ] == [
        (line["description"], line["amount"], line["discount_amount"], line["tax_amount"])
        for line in summary["lines"]
    ]
    assert (invoice["subtotal"], invoice["discount"], invoice["tax"], invoice["total"]) == (
        summary["subtotal"],
        summary["discount"],
        summary["tax"],
        summary["total"],
    )
    assert (invoice["amount_paid"], invoice["amount_remaining"]) == (1000, summary["due_today"])


def test_a_reverse_charge_business_sees_no_tax_and_the_note(on_clock, owner_api, catalogue):
    changes = {"legal_name": "Blockworks GmbH", "country": "DE", "vat_id": "DE136695976"}
    billing_profile_update(
        account=on_clock, changes=BillingProfileChanges.of(changes), actor=SYSTEM
    )
    TaxRate.objects.create(country="DE", percentage=Decimal(19))

    summary = data_of(post(owner_api, PREVIEW, order_body(catalogue.server_eur)))["order_preview"]

    assert summary["tax_rate"] == {
        "percentage": "0",
        "inclusive": False,
        "reverse_charge": True,
        "note": REVERSE_CHARGE_NOTE,
    }
    assert (summary["tax"], summary["total"], summary["renewal"]["total"]) == (0, 1200, 1200)
    invoice = data_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)
    assert (invoice["invoice"]["tax"], invoice["invoice"]["total"]) == (0, 1200)


def test_a_trial_is_due_at_its_end(on_clock, owner_api, catalogue):
    trial = Price.objects.create(
        product=catalogue.server,
        currency="EUR",
        unit_amount=1200,
        interval="month",
        trial_days=7,
    )

    summary = data_of(post(owner_api, PREVIEW, order_body(trial)))["order_preview"]

    assert (summary["total"], summary["due_today"]) == (0, 0)
    assert summary["trial_end"] == summary["renewal"]["at"] == "2026-03-08T09:00:00Z"
    assert summary["renewal"]["total"] == 1200 + 252


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"price": "price_doesnotexist"}, 400),
        ({"order": {"name": "Survival SMP", "region": "mars-1", "game": "minecraft-java"}}, 400),
        ({"order": {"region": "eu-central", "game": "minecraft-java"}}, 400),
        ({"promotion_code": "NOPE"}, 400),
        ({"promotion_code": "WELCOME10", "coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc"}, 400),
        ({"coupon": "cpn_9Nb1Hd6Fy5Rk8Tz2Qm7Lx4Wc"}, 400),
        ({"quantity": 2}, 400),
        ({"surprise": 1}, 400),
    ],
)
def test_a_refused_preview_answers_the_error_ordering_answers(
    on_clock, owner_api, catalogue, change, status
):
    body = {**order_body(catalogue.server_eur), **change}

    refused = error_of(post(owner_api, PREVIEW, body), status)
    ordered = error_of(post(owner_api, "/v1/subscriptions", body), status)

    assert {**refused, "request_id": None} == {**ordered, "request_id": None}
    assert refused["code"] == "validation_failed"
    assert not Subscription.objects.exists()


def test_another_currency_than_the_accounts_is_the_orders_conflict(on_clock, owner_api, catalogue):
    top_up(on_clock, 5000)
    data_of(post(owner_api, "/v1/subscriptions", order_body(catalogue.server_eur)), 201)

    error = error_of(post(owner_api, PREVIEW, order_body(catalogue.server_usd)), 409)

    assert (error["code"], error["details"]) == ("conflict", {"currency": "EUR"})


def test_a_body_that_is_not_json_is_refused_as_everywhere(owner_api, catalogue):
    response = owner_api.post(PREVIEW, "price=x", content_type="application/x-www-form-urlencoded")
    assert error_of(response, 415)["code"] == "unsupported_media_type"
    response = owner_api.post(PREVIEW, "{", content_type="application/json")
    assert error_of(response, 400)["code"] == "invalid_json"


# --- Who may ----------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["owner_api", "mate_api", "reader_api"])
def test_the_team_previews_with_billing_read(request, on_clock, catalogue, who):
    """Reading, not ordering: the preview writes nothing and shows what the catalogue and the
    account's own invoices show anyway, so a viewer may price a plan before asking an owner."""
    top_up(on_clock, 500)
    api = request.getfixturevalue(who)

    summary = data_of(post(api, PREVIEW, order_body(catalogue.server_eur)))["order_preview"]

    assert (summary["total"], summary["credit_applied"]) == (1452, 500)


def test_a_key_without_billing_read_or_whose_role_lost_it_is_refused(
    on_clock, unscoped_api, demoted_api, catalogue
):
    for api in (unscoped_api, demoted_api):
        error = error_of(post(api, PREVIEW, order_body(catalogue.server_eur)), 403)
        assert (error["code"], error["details"]) == (
            "insufficient_scope",
            {"required_scopes": ["billing:read"]},
        )


def test_an_outsider_previews_for_their_own_account_only(
    on_clock, owner_api, outsider_api, other_account, catalogue
):
    top_up(on_clock, 5000)  # the owner's credit, not the outsider's
    billing_profile_update(
        account=other_account, changes=BillingProfileChanges(country="US"), actor=SYSTEM
    )

    theirs = data_of(post(outsider_api, PREVIEW, order_body(catalogue.server_eur)))
    mine = data_of(post(owner_api, PREVIEW, order_body(catalogue.server_eur)))

    assert (theirs["order_preview"]["credit_applied"], theirs["order_preview"]["tax"]) == (0, 0)
    assert (mine["order_preview"]["credit_applied"], mine["order_preview"]["tax"]) == (1452, 252)


def test_the_preview_is_in_the_schema_with_examples(openapi):
    operation = openapi["paths"][PREVIEW]["post"]
    assert operation["operationId"] == "subscriptions_preview_create"
    request = operation["requestBody"]["content"]["application/json"]
    assert request["schema"]["$ref"].endswith("/SubscriptionOrderRequest")
    assert request["examples"]
    assert operation["responses"]["200"]["content"]["application/json"]["examples"]
    assert {"400", "401", "403", "409"} <= set(operation["responses"])


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_preview_answers_outside_a_test_transaction_as_in_production(
    on_clock, owner_api, catalogue
):
    """The quota is checked under the account's row lock, as an order checks it: PostgreSQL
    refuses that lock outside a transaction, which the tests' own transaction would hide."""
    summary = data_of(post(owner_api, PREVIEW, order_body(catalogue.server_eur)))["order_preview"]
    assert summary["total"] == 1452

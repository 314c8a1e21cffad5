"""The gateways chosen per account: staff give an account its own list (its billing profile's
``payment_gateways``), and that list, not ``BILLING_GATEWAYS``, says whether its renewals are
charged to a card and whether it may pay or save cards; its saved cards can still be removed."""

from datetime import timedelta

import pytest

from accounts.actors import SYSTEM
from billing.clock import billing_clock_advance
from billing.models import Invoice, Payment
from billing.services.gateways import CARDS_NOT_FOR_ACCOUNT, collection_gateways
from billing.services.job.renewals import billing_run
from billing.services.profile import BillingProfileChanges, billing_profile_update
from stripe_gateway.models import PaymentMethod
from tests.billing.api.conftest import data_of, listed
from tests.billing.test_subscriptions import START, order, plan
from tests.envelopes import error_of
from tests.factories import AccountFactory, MembershipFactory
from tests.servers.helpers import run_worker
from tests.stripe_gateway.helpers import save_card

pytestmark = pytest.mark.django_db

NO_CARDS = ["credit", "bank_transfer"]


def own_gateways(account, names):
    billing_profile_update(
        account=account,
        changes=BillingProfileChanges(payment_gateways=names),
        actor=SYSTEM,
        staff=True,
    )


def test_the_account_s_list_orders_collection_and_an_empty_one_follows_the_setting(
    stripe_on, account
):
    assert [each.name for each in collection_gateways(account.id)] == [
        "credit",
        "stripe",
        "bank_transfer",
    ]
    own_gateways(account, ["bank_transfer"])
    assert [each.name for each in collection_gateways(account.id)] == ["bank_transfer"]
    own_gateways(account, ["stripe", "credit"])
    assert [each.name for each in collection_gateways(account.id)] == ["stripe", "credit"]
    own_gateways(account, [])
    assert len(collection_gateways(account.id)) == 3


def test_an_order_is_charged_to_the_card_only_where_the_account_pays_by_card(
    stripe_api, account, owner
):
    twin_owner = MembershipFactory(account=AccountFactory(), role="owner").user
    twin = twin_owner.memberships.get().account
    for each, person in ((account, owner), (twin, twin_owner)):
        save_card(stripe_api, each, person)
    own_gateways(account, NO_CARDS)

    _, ours = order(account, owner, plan(amount=1500))
    _, theirs = order(twin, twin_owner, plan(amount=1500))
    run_worker()

    assert Invoice.objects.get(pk=ours.pk).status == "open"
    assert not Payment.objects.filter(invoice=ours).exists()
    assert Invoice.objects.get(pk=theirs.pk).status == "paid"
    assert Payment.objects.get(invoice=theirs).gateway == "stripe"


def test_a_renewal_is_not_charged_to_the_card_of_an_account_without_cards(
    stripe_api, account, owner
):
    billing_clock_advance(account=account, to=START)
    save_card(stripe_api, account, owner)
    subscription, first = order(account, owner, plan(amount=1000))
    run_worker()
    assert Invoice.objects.get(pk=first.pk).status == "paid"
    own_gateways(account, NO_CARDS)

    billing_clock_advance(account=account, to=subscription.current_period_end - timedelta(hours=1))
    billing_run(account_id=account.id)
    run_worker()

    renewal = Invoice.objects.get(subscription=subscription, billing_reason="subscription_cycle")
    assert renewal.status == "open"
    assert not Payment.objects.filter(invoice=renewal).exists()


def test_an_account_without_cards_cannot_pay_or_save_one_but_removes_its_own(
    stripe_api, account, owner, owner_api
):
    card = save_card(stripe_api, account, owner)
    own_gateways(account, NO_CARDS)
    _, unpaid = order(account, owner, plan(amount=900))  # left open, for a transfer

    pay = owner_api.post(f"/v1/invoices/{unpaid.id}/pay", {"source": "card"}, format="json")
    setup = owner_api.post("/v1/payment-methods/setup-intents", {}, format="json")
    default = owner_api.post(f"/v1/payment-methods/{card.id}/default", {}, format="json")

    for refused in (pay, setup, default):
        assert error_of(refused, 422) == {
            "code": "payment_method_not_supported",
            "message": CARDS_NOT_FOR_ACCOUNT,
            "request_id": refused.json()["error"]["request_id"],
        }
    assert listed(owner_api.get("/v1/payment-methods"), "payment_methods") == [card.id]
    assert data_of(owner_api.delete(f"/v1/payment-methods/{card.id}"))["deleted"] is True
    assert not PaymentMethod.objects.filter(pk=card.pk).exists()


def test_the_dashboard_offers_no_card_to_an_account_without_cards(
    stripe_api, account, owner, client
):
    card = save_card(stripe_api, account, owner)
    own_gateways(account, NO_CARDS)
    _, invoice = order(account, owner, plan(amount=1500))
    client.force_login(owner)

    page = client.get("/billing/payment-methods").content.decode()
    invoice_page = client.get(f"/billing/invoices/{invoice.id}").content.decode()
    pay = client.post(f"/billing/invoices/{invoice.id}/pay-by-card", follow=True)
    setup = client.post("/billing/payment-methods/setup-intent")
    removed = client.post(f"/billing/payment-methods/{card.id}/remove")

    assert CARDS_NOT_FOR_ACCOUNT in page and "Add a card" not in page
    assert "js.stripe.com" not in page and "Make default" not in page
    assert 'id="pay-by-card"' not in invoice_page
    assert CARDS_NOT_FOR_ACCOUNT in pay.content.decode()
    assert not Payment.objects.filter(invoice=invoice, gateway="stripe").exists()
    assert setup.status_code == 422
    assert setup.json()["error"]["code"] == "payment_method_not_supported"
    assert removed.status_code == 302 and not PaymentMethod.objects.filter(pk=card.pk).exists()


def test_staff_set_an_account_s_gateways_over_the_staff_api(stripe_on, account, staff_api):
    url = f"/v1/admin/customers/{account.id}/billing-profile"
    changed = staff_api.patch(url, {"payment_gateways": ["bank_transfer"]}, format="json")
    unknown = staff_api.patch(url, {"payment_gateways": ["paypal"]}, format="json")

    assert data_of(changed)["billing_profile"]["payment_gateways"] == ["bank_transfer"]
    assert error_of(unknown, 400)["details"]["fields"][0]["name"] == "payment_gateways"
    assert [each.name for each in collection_gateways(account.id)] == ["bank_transfer"]

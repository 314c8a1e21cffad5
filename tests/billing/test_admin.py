"""Django admin for billing: every change goes through a billing service (with the events those
record), a service's refusal is a form error or a message and never a 500, records are
view-only, and nothing is deleted.

``admin_client`` and ``admin_user`` are pytest-django's staff superuser and its signed-in client.
"""

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib import admin
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from accounts.models import Account
from billing import models as billing_models
from billing.clock import billing_clock_advance
from billing.models import (
    BalanceTransaction,
    BillingClock,
    BillingProfile,
    BillingRunDay,
    Coupon,
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    Payment,
    Price,
    Product,
    PromotionCode,
    Subscription,
    TaxRate,
)
from billing.services.catalogue import (
    coupon_create,
    price_create,
    product_create,
    promotion_code_create,
    tax_rate_create,
)
from billing.services.credit_notes import credit_note_create
from billing.services.invoices import invoice_create, invoice_finalize, invoice_mark_paid
from billing.services.ledger import balance_change, balance_of
from billing.services.profile import BillingProfileChanges, billing_profile_update
from events.models import Event
from tests.accounts.test_admin import admin_url, changelist_actions
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db
STAFF = Actor()
PLAN = {"description": "Survival SMP, 4 GB (March)", "quantity": 1, "unit_amount": 1200}
VIEW_ONLY_RECORDS = [CreditNote, Payment, Subscription, DocumentSequence, BillingRunDay]
# Records the services alone create (a billing profile's staff-only fields are changed here).
RECORDS = [*VIEW_ONLY_RECORDS, BillingProfile]
EVERY_MODEL = [
    Product,
    Price,
    TaxRate,
    Coupon,
    PromotionCode,
    Invoice,
    BalanceTransaction,
    BillingClock,
    *RECORDS,
]


def draft(account, amount: int = 1200) -> Invoice:
    return invoice_create(account=account, currency="EUR", lines=[{**PLAN, "unit_amount": amount}])


def issued(account, amount: int = 1200) -> Invoice:
    return invoice_finalize(invoice=draft(account, amount))


def credit(account, amount: int) -> BalanceTransaction:
    return balance_change(
        account=account,
        amount=amount,
        currency="EUR",
        kind="adjustment",
        description="Goodwill credit",
        actor=STAFF,
    )


def said(response) -> list[tuple[str, str]]:
    """The messages the request left: (level tag, text)."""
    return [(message.level_tag, message.message) for message in get_messages(response.wsgi_request)]


def errors_of(response) -> dict[str, list[str]]:
    """The add or change form's errors by field ("__all__" for the form's own)."""
    return {
        name: list(errors) for name, errors in response.context["adminform"].form.errors.items()
    }


@pytest.fixture
def product() -> Product:
    return product_create(
        name="Survival 4 GB",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
        actor=STAFF,
    )


@pytest.fixture
def price(product) -> Price:
    return price_create(
        product=product, currency="EUR", unit_amount=1200, interval="month", actor=STAFF
    )


@pytest.fixture
def coupon() -> Coupon:
    return coupon_create(name="Welcome", duration="once", percent_off=10, actor=STAFF)


@pytest.fixture
def everything(account, product, price, coupon) -> dict[type, object]:
    """One object of every billing model."""
    now = timezone.now()
    subscription = Subscription.objects.create(
        account=account,
        price=price,
        status="active",
        billing_cycle_anchor=now,
        current_period_start=now,
        current_period_end=now + timedelta(days=31),
    )
    invoice = invoice_finalize(
        invoice=invoice_create(
            account=account,
            currency="EUR",
            lines=[{**PLAN, "price": price}],
            billing_reason="subscription_cycle",
            subscription=subscription,
            period_start=now,
        )
    )
    invoice_mark_paid(invoice=invoice, reference="TRANSFER-1", actor=STAFF)
    credit_note = credit_note_create(
        invoice=invoice, amount=200, reason="order_change", refund_to="balance", actor=STAFF
    )
    BillingProfile.objects.filter(account=account).update(legal_name="Creeper Hosting BV")
    return {
        Product: product,
        Price: price,
        TaxRate: tax_rate_create(country="NL", percentage="21", actor=STAFF),
        Coupon: coupon,
        PromotionCode: promotion_code_create(coupon=coupon, code="WELCOME10", actor=STAFF),
        Invoice: invoice,
        BalanceTransaction: BalanceTransaction.objects.get(credit_note=credit_note),
        # A test clock starts only on an account never billed: a demo account of its own.
        BillingClock: billing_clock_advance(account=AccountFactory(), to=now),
        CreditNote: credit_note,
        Payment: Payment.objects.get(invoice=invoice),
        Subscription: subscription,
        BillingProfile: BillingProfile.objects.get(account=account),
        DocumentSequence: DocumentSequence.objects.first(),
        BillingRunDay: BillingRunDay.objects.create(
            day=now.date(), runs=3, last_run_at=now, counts={"renewals": 2}
        ),
    }


# --- Every model -------------------------------------------------------------------------------


def test_every_billing_model_is_registered_its_lines_inline_on_the_invoice():
    models = {
        model
        for model in vars(billing_models).values()
        if isinstance(model, type)
        and issubclass(model, billing_models.models.Model)
        and model._meta.app_label == "billing"
        and not model._meta.abstract
    }

    assert models - set(admin.site._registry) == {InvoiceLine}
    assert set(EVERY_MODEL) == models - {InvoiceLine}


@pytest.mark.parametrize("model", EVERY_MODEL)
def test_every_changelist_answers_for_staff(admin_client, everything, model):
    response = admin_client.get(admin_url(model, "changelist"))
    searched = admin_client.get(admin_url(model, "changelist"), {"q": "Creeper"})

    assert response.status_code == searched.status_code == 200
    assert response.context["cl"].result_count >= 1


@pytest.mark.parametrize("model", EVERY_MODEL)
def test_every_change_page_answers_for_staff(admin_client, everything, model):
    obj = everything[model]

    response = admin_client.get(admin_url(model, "change", obj.pk))

    assert response.status_code == 200
    assert response.context["original"] == obj


@pytest.mark.parametrize("model", EVERY_MODEL)
def test_nothing_is_deleted_here(admin_client, everything, model):
    obj = everything[model]

    response = admin_client.post(admin_url(model, "delete", obj.pk), {"post": "yes"})

    assert response.status_code == 403
    assert "delete_selected" not in changelist_actions(admin_client, model)
    assert model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize(
    "model",
    [*(Price, TaxRate, PromotionCode, Invoice, BalanceTransaction), *VIEW_ONLY_RECORDS],
)
def test_records_are_view_only(admin_client, everything, model):
    obj = everything[model]

    page = admin_client.get(admin_url(model, "change", obj.pk))
    post = admin_client.post(admin_url(model, "change", obj.pk), {})

    assert b'name="_save"' not in page.content
    assert post.status_code == 403


@pytest.mark.parametrize("model", [Invoice, *RECORDS])
def test_records_are_not_added_here(admin_client, model):
    assert admin_client.get(admin_url(model, "add")).status_code == 403


def test_customers_cannot_reach_the_billing_pages(owner, everything):
    client = Client()
    client.force_login(owner)
    invoice = everything[Invoice]

    page = client.get(admin_url(Invoice, "change", invoice.pk))
    button = client.post(reverse("admin:billing_invoice_act", args=[quote(invoice.pk), "void"]))

    assert page.status_code == button.status_code == 302
    assert page["Location"].startswith(reverse("admin:login"))
    assert button["Location"].startswith(reverse("admin:login"))


# --- Products ----------------------------------------------------------------------------------

PRODUCT_FORM = {
    "name": "Valheim 8 GB",
    "description": "For ten Vikings",
    "kind": "server",
    "memory_mb": "8192",
    "cpu_percent": "300",
    "disk_mb": "40960",
    "games": ["valheim"],
    "regions": ["eu-west", "us-east"],
}


def test_a_product_is_added_through_the_service(admin_client, admin_user):
    response = admin_client.post(admin_url(Product, "add"), PRODUCT_FORM)

    assert response.status_code == 302
    product = Product.objects.get()
    assert (product.name, product.kind, product.memory_mb, product.disk_mb) == (
        "Valheim 8 GB",
        "server",
        8192,
        40960,
    )
    assert (product.games, product.regions, product.runtimes) == (
        ["valheim"],
        ["eu-west", "us-east"],
        [],
    )
    entry = LogEntry.objects.get(object_id=product.pk)
    assert (entry.user, entry.action_flag) == (admin_user, ADDITION)
    assert not Event.objects.exists()  # the catalogue belongs to no account


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"memory_mb": "100"}, "memory_mb", "memory_mb must be an integer from 256 to 65536."),
        ({"kind": "bot"}, "games", "A bot plan allows no games."),
        ({"runtimes": ["python-3.13"]}, "runtimes", "A game server plan allows no bot runtimes."),
        (
            {"suspend_after_days": "10", "terminate_after_days": "5"},
            "terminate_after_days",
            "terminate_after_days must be after suspend_after_days.",
        ),
    ],
)
def test_a_refused_product_shows_the_services_reason_on_its_field(
    admin_client, changes, field, message
):
    response = admin_client.post(admin_url(Product, "add"), {**PRODUCT_FORM, **changes})

    assert response.status_code == 200
    assert errors_of(response) == {field: [message]}
    assert not Product.objects.exists()


def test_a_product_is_changed_through_the_service(admin_client, product):
    form = {**PRODUCT_FORM, "name": "Survival 8 GB", "memory_mb": "8192", "kind": "server"}

    response = admin_client.post(admin_url(Product, "change", product.pk), form)

    assert response.status_code == 302
    product.refresh_from_db()
    assert (product.name, product.memory_mb, product.games) == ("Survival 8 GB", 8192, ["valheim"])


def test_a_subscribed_products_kind_stays(admin_client, everything, product):
    form = {**PRODUCT_FORM, "kind": "bot", "games": []}

    response = admin_client.post(admin_url(Product, "change", product.pk), form)

    assert response.status_code == 200
    assert list(errors_of(response)) == ["kind"]
    assert "1 subscription(s) use this product's prices" in errors_of(response)["kind"][0]
    product.refresh_from_db()
    assert (product.kind, product.name) == ("server", "Survival 4 GB")


def test_a_products_page_lists_its_prices(admin_client, product, price):
    page = admin_client.get(admin_url(Product, "change", product.pk)).content.decode()

    assert admin_url(Price, "change", price.pk) in page
    assert f"{reverse('admin:billing_price_add')}?product={product.pk}" in page


def test_archiving_products_archives_their_prices(admin_client, admin_user, product, price):
    response = admin_client.post(
        admin_url(Product, "changelist"),
        {"action": "archive_selected", "_selected_action": [product.pk]},
    )

    assert said(response) == [("success", "Archived 1 product.")]
    product.refresh_from_db()
    price.refresh_from_db()
    assert (product.active, price.active) == (False, False)
    entry = LogEntry.objects.get(object_id=product.pk)
    assert (entry.user, entry.action_flag, entry.change_message) == (
        admin_user,
        CHANGE,
        "Archived",
    )


# --- Prices, tax rates, coupons, promotion codes -----------------------------------------------


def test_a_price_is_added_through_the_service(admin_client, product):
    response = admin_client.post(
        admin_url(Price, "add"),
        {
            "product": product.pk,
            "currency": "USD",
            "unit_amount": "15.00",
            "interval": "year",
            "interval_count": "1",
            "setup_fee": "0",
            "trial_days": "14",
        },
    )

    assert response.status_code == 302
    price = Price.objects.get()
    assert (price.product, price.currency, price.unit_amount, price.interval) == (
        product,
        "USD",
        1500,
        "year",
    )
    assert price.trial_days == 14


def test_a_refused_price_shows_why(admin_client, product):
    response = admin_client.post(
        admin_url(Price, "add"),
        {
            "product": product.pk,
            "currency": "EUR",
            "unit_amount": "1500",
            "interval": "year",
            "interval_count": "4",
            "setup_fee": "0",
            "trial_days": "0",
        },
    )

    assert response.status_code == 200
    assert list(errors_of(response)) == ["interval_count"]
    assert "between 1 and 3" in errors_of(response)["interval_count"][0]
    assert not Price.objects.exists()


def test_archiving_a_price(admin_client, price):
    response = admin_client.post(
        admin_url(Price, "changelist"),
        {"action": "archive_selected", "_selected_action": [price.pk]},
    )

    assert said(response) == [("success", "Archived 1 price.")]
    price.refresh_from_db()
    assert not price.active


def test_the_price_changelist_filters_by_currency_interval_and_active(admin_client, price):
    filters = admin_client.get(admin_url(Price, "changelist")).context["cl"].filter_specs

    assert [spec.field.name for spec in filters] == ["currency", "interval", "active"]


def test_a_tax_rate_is_added_once_per_place(admin_client):
    form = {"country": "nl", "region": "", "percentage": "21", "display_name": "BTW"}

    added = admin_client.post(admin_url(TaxRate, "add"), form)
    again = admin_client.post(admin_url(TaxRate, "add"), {**form, "percentage": "9"})

    assert added.status_code == 302
    rate = TaxRate.objects.get()
    assert (rate.country, rate.display_name, rate.inclusive) == ("NL", "BTW", False)
    assert again.status_code == 200
    assert errors_of(again) == {
        "country": [f"NL already has an active tax rate ({rate.id}); archive it first."]
    }
    assert TaxRate.objects.count() == 1


def test_archiving_a_tax_rate(admin_client):
    rate = tax_rate_create(country="DE", percentage="19", actor=STAFF)

    admin_client.post(
        admin_url(TaxRate, "changelist"),
        {"action": "archive_selected", "_selected_action": [rate.pk]},
    )

    rate.refresh_from_db()
    assert not rate.active


def test_a_coupon_is_added_with_its_products(admin_client, product):
    response = admin_client.post(
        admin_url(Coupon, "add"),
        {
            "name": "Five off",
            "duration": "repeating",
            "duration_in_months": "3",
            "amount_off": "5",
            "currency": "EUR",
            "products": [product.pk],
            "redeem_by_0": "2099-01-01",
            "redeem_by_1": "00:00:00",
        },
    )

    assert response.status_code == 302
    coupon = Coupon.objects.get()
    assert (coupon.amount_off, coupon.currency, coupon.percent_off) == (500, "EUR", None)
    assert (coupon.duration, coupon.duration_in_months) == ("repeating", 3)
    assert coupon.redeem_by == datetime(2099, 1, 1, tzinfo=UTC)
    assert list(coupon.products.all()) == [product]


def test_a_coupon_with_two_discounts_is_refused(admin_client):
    response = admin_client.post(
        admin_url(Coupon, "add"),
        {
            "name": "Greedy",
            "duration": "once",
            "percent_off": "10",
            "amount_off": "500",
            "currency": "EUR",
        },
    )

    assert response.status_code == 200
    assert errors_of(response) == {
        "percent_off": ["Give either percent_off or amount_off (exactly one)."]
    }
    assert not Coupon.objects.exists()


def test_a_coupon_is_added_directly_redeemable_when_staff_tick_it(admin_client):
    response = admin_client.post(
        admin_url(Coupon, "add"),
        {"name": "Partner", "duration": "once", "percent_off": "20", "directly_redeemable": "on"},
    )

    assert response.status_code == 302
    assert Coupon.objects.get().directly_redeemable is True


def test_only_whether_a_coupon_is_directly_redeemable_is_changed_on_its_page(
    admin_client, admin_user, coupon
):
    page = admin_client.get(admin_url(Coupon, "change", coupon.pk))
    form = page.context["adminform"].form
    assert list(form.fields) == ["directly_redeemable"]

    response = admin_client.post(
        admin_url(Coupon, "change", coupon.pk),
        {"directly_redeemable": "on", "name": "Renamed", "percent_off": "90"},
    )

    assert response.status_code == 302
    coupon.refresh_from_db()
    assert (coupon.directly_redeemable, coupon.name, coupon.percent_off) == (True, "Welcome", 10)
    entry = LogEntry.objects.get(object_id=coupon.pk)
    assert (entry.user, entry.action_flag) == (admin_user, CHANGE)
    listed = admin_client.get(admin_url(Coupon, "changelist"), {"directly_redeemable__exact": "1"})
    assert listed.context["cl"].result_count == 1

    admin_client.post(admin_url(Coupon, "change", coupon.pk), {})
    coupon.refresh_from_db()
    assert coupon.directly_redeemable is False


def test_archiving_a_coupon_deactivates_its_codes(admin_client, coupon):
    code = promotion_code_create(coupon=coupon, code="SPRING", actor=STAFF)

    admin_client.post(
        admin_url(Coupon, "changelist"),
        {"action": "archive_selected", "_selected_action": [coupon.pk]},
    )

    coupon.refresh_from_db()
    code.refresh_from_db()
    assert (coupon.active, code.active) == (False, False)


def test_a_promotion_code_is_added_upper_case_and_once(admin_client, coupon):
    added = admin_client.post(
        admin_url(PromotionCode, "add"), {"coupon": coupon.pk, "code": "spring-26"}
    )
    again = admin_client.post(
        admin_url(PromotionCode, "add"), {"coupon": coupon.pk, "code": "Spring-26"}
    )

    assert added.status_code == 302
    assert PromotionCode.objects.get().code == "SPRING-26"
    assert again.status_code == 200
    assert errors_of(again) == {"code": ["The promotion code SPRING-26 already exists."]}


def test_deactivating_promotion_codes(admin_client, coupon):
    code = promotion_code_create(coupon=coupon, code="SPRING", actor=STAFF)

    response = admin_client.post(
        admin_url(PromotionCode, "changelist"),
        {"action": "deactivate_selected", "_selected_action": [code.pk]},
    )

    assert said(response) == [("success", "Deactivated 1 promotion code.")]
    code.refresh_from_db()
    assert not code.active


# --- Invoices ----------------------------------------------------------------------------------


def run_action(client, action: str, *invoices: Invoice):
    return client.post(
        admin_url(Invoice, "changelist"),
        {"action": action, "_selected_action": [invoice.pk for invoice in invoices]},
    )


def test_finalizing_drafts_goes_through_the_service(admin_client, admin_user, account):
    first, second = draft(account), draft(account)

    response = run_action(admin_client, "finalize_selected", first, second)

    assert said(response) == [("success", "Finalized 2 invoices.")]
    assert set(Invoice.objects.values_list("status", flat=True)) == {"open"}
    finalized = Event.objects.filter(type="invoice.finalized", actor_user=admin_user)
    assert sorted(finalized.values_list("object_id", flat=True)) == sorted([first.pk, second.pk])


def test_voiding_and_marking_uncollectible(admin_client, admin_user, account):
    to_void, to_give_up = issued(account), issued(account)

    run_action(admin_client, "void_selected", to_void)
    run_action(admin_client, "mark_uncollectible_selected", to_give_up)

    to_void.refresh_from_db()
    to_give_up.refresh_from_db()
    assert (to_void.status, to_give_up.status) == ("void", "uncollectible")
    assert Event.objects.get(type="invoice.voided").actor_user == admin_user
    assert Event.objects.get(type="invoice.marked_uncollectible").object_id == to_give_up.pk


def test_paying_with_credit(admin_client, admin_user, account):
    invoice = issued(account, 1200)
    credit(account, 5000)

    response = run_action(admin_client, "pay_with_credit_selected", invoice)

    assert said(response) == [("success", "Paid with credit 1 invoice.")]
    invoice.refresh_from_db()
    assert (invoice.status, invoice.amount_paid) == ("paid", 1200)
    assert balance_of(account) == 3800
    assert Payment.objects.get(invoice=invoice).gateway == "credit"
    assert Event.objects.get(type="invoice.paid").actor_user == admin_user


def test_refusals_are_messages_not_errors(admin_client, account):
    opened, drafted = issued(account), draft(account)

    response = run_action(admin_client, "finalize_selected", opened, drafted)
    admin_client.get(admin_url(Invoice, "changelist"))  # shows the messages
    no_credit = run_action(admin_client, "pay_with_credit_selected", opened)

    assert response.status_code == 302
    assert said(response) == [
        ("error", f"{opened.number}: Cannot finalize this invoice: the invoice is open."),
        ("success", "Finalized 1 invoice."),
    ]
    assert said(no_credit) == [
        ("error", f"{opened.number}: The account has no credit to pay with.")
    ]
    opened.refresh_from_db()
    assert opened.status == "open"


def button_labels(client, invoice: Invoice) -> list[str]:
    response = client.get(admin_url(Invoice, "change", invoice.pk))
    return [button["label"] for button in response.context.get("invoice_buttons", [])]


def test_an_invoices_page_offers_what_its_status_allows(admin_client, account):
    drafted, opened = draft(account), issued(account)
    paid = invoice_mark_paid(invoice=issued(account), reference="T-1", actor=STAFF)
    voided = issued(account)
    run_action(admin_client, "void_selected", voided)

    assert button_labels(admin_client, drafted) == ["Finalize"]
    assert button_labels(admin_client, opened) == [
        "Void",
        "Mark uncollectible",
        "Pay with credit",
        "Mark paid…",
        "Issue a credit note…",
    ]
    assert button_labels(admin_client, paid) == ["Issue a credit note…"]
    assert button_labels(admin_client, voided) == []


def test_an_invoices_page_shows_its_lines_and_links(admin_client, everything):
    invoice = everything[Invoice]

    page = admin_client.get(admin_url(Invoice, "change", invoice.pk)).content.decode()

    assert PLAN["description"] in page
    for linked in (everything[CreditNote], everything[Payment], everything[Subscription]):
        assert admin_url(type(linked), "change", linked.pk) in page
    assert admin_url(type(invoice.account), "change", invoice.account_id) in page
    subscription_page = admin_client.get(
        admin_url(Subscription, "change", everything[Subscription].pk)
    )
    assert admin_url(Invoice, "change", invoice.pk) in subscription_page.content.decode()


def test_a_button_runs_its_service_on_post_only(admin_client, admin_user, account):
    invoice = draft(account)
    url = reverse("admin:billing_invoice_act", args=[quote(invoice.pk), "finalize"])

    got = admin_client.get(url)
    posted = admin_client.post(url)
    unknown = admin_client.post(
        reverse("admin:billing_invoice_act", args=[quote(invoice.pk), "delete"])
    )

    assert (got.status_code, unknown.status_code) == (405, 404)
    assert posted.status_code == 302
    assert posted["Location"] == admin_url(Invoice, "change", invoice.pk)
    invoice.refresh_from_db()
    assert invoice.status == "open"
    assert Event.objects.get(type="invoice.finalized").actor_user == admin_user


def test_marking_paid_asks_for_the_transfers_reference(admin_client, admin_user, account):
    invoice = issued(account)
    url = reverse("admin:billing_invoice_mark_paid", args=[quote(invoice.pk)])

    button = admin_client.post(url)
    blank = admin_client.post(url, {"confirm": "yes", "reference": "  "})
    done = admin_client.post(url, {"confirm": "yes", "reference": "NL-TRANSFER-0042"})

    assert button.status_code == 200
    assert "reference" in button.context["form"].fields
    assert not button.context["form"].is_bound
    assert blank.status_code == 200
    assert blank.context["form"].errors == {"reference": ["This field is required."]}
    assert done.status_code == 302
    assert said(done) == [("success", f"Marked {invoice.number} paid.")]
    invoice.refresh_from_db()
    assert invoice.status == "paid"
    payment = Payment.objects.get(invoice=invoice)
    assert (payment.gateway, payment.reference, payment.created_by) == (
        "bank_transfer",
        "NL-TRANSFER-0042",
        admin_user,
    )
    assert Event.objects.get(type="payment.succeeded").actor_user == admin_user


def test_marking_a_paid_invoice_paid_again_is_a_message(admin_client, account):
    invoice = invoice_mark_paid(invoice=issued(account), reference="T-1", actor=STAFF)

    response = admin_client.post(
        reverse("admin:billing_invoice_mark_paid", args=[quote(invoice.pk)]),
        {"confirm": "yes", "reference": "T-2"},
    )

    assert response.status_code == 302
    assert said(response) == [
        ("error", f"{invoice.number}: Cannot mark this invoice paid: the invoice is paid.")
    ]
    assert Payment.objects.filter(invoice=invoice).count() == 1


def test_issuing_a_credit_note_from_the_invoice(admin_client, admin_user, account):
    invoice = invoice_mark_paid(invoice=issued(account, 1200), reference="T-1", actor=STAFF)
    url = reverse("admin:billing_invoice_credit_note", args=[quote(invoice.pk)])
    form = {
        "confirm": "yes",
        "amount": "3.00",
        "reason": "product_unsatisfactory",
        "refund_to": "balance",
        "memo": "Two days of downtime",
    }

    button = admin_client.post(url)
    too_much = admin_client.post(url, {**form, "amount": "12.01"})
    done = admin_client.post(url, form)

    assert button.status_code == 200
    assert button.context["form"]["refund_to"].value() == "balance"  # nothing is owed
    assert too_much.status_code == 200
    assert too_much.context["form"].errors == {
        "amount": ["Only 12.00 EUR of what was paid is left to give back."]
    }
    assert done.status_code == 302
    note = CreditNote.objects.get(invoice=invoice)
    assert said(done) == [("success", f"Issued credit note {note.number} for {invoice.number}.")]
    assert (note.amount, note.reason, note.refund_to, note.memo, note.created_by) == (
        300,
        "product_unsatisfactory",
        "balance",
        "Two days of downtime",
        admin_user,
    )
    assert balance_of(account) == 300
    assert Event.objects.get(type="credit_note.created").actor_user == admin_user


def test_a_draft_has_nothing_to_credit(admin_client, account):
    invoice = draft(account)

    response = admin_client.post(
        reverse("admin:billing_invoice_credit_note", args=[quote(invoice.pk)]),
        {"confirm": "yes", "amount": "100", "reason": "other", "refund_to": "none"},
    )

    assert response.status_code == 302
    (level, text), *_ = said(response)
    assert (level, text.startswith(f"{invoice.pk}: A draft invoice has nothing to credit")) == (
        "error",
        True,
    )
    assert not CreditNote.objects.exists()


def test_invoices_are_found_by_number_id_and_account_name(admin_client, account, other_account):
    mine, theirs = issued(account), issued(other_account)

    def found(term: str) -> list[Invoice]:
        response = admin_client.get(admin_url(Invoice, "changelist"), {"q": term})
        return list(response.context["cl"].result_list)

    assert found(mine.number) == [mine]
    assert found(theirs.pk) == [theirs]
    assert found(account.name) == [mine]


def test_invoices_filter_by_status_reason_and_currency(admin_client, account):
    drafted, opened = draft(account), issued(account)

    response = admin_client.get(admin_url(Invoice, "changelist"), {"status__exact": "draft"})

    assert list(response.context["cl"].result_list) == [drafted]
    filters = response.context["cl"].filter_specs
    assert [spec.field.name for spec in filters] == ["status", "billing_reason", "currency"]
    assert opened not in response.context["cl"].result_list


def test_an_accounts_page_links_to_its_invoices(admin_client, account, other_account):
    mine, _ = issued(account), issued(other_account)

    page = admin_client.get(admin_url(Account, "change", account.pk)).content.decode()
    [link] = re.findall(r'<a href="([^"]+)">Invoices of this account</a>', page)
    response = admin_client.get(html.unescape(link))

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [mine]


# --- The ledger and the test clock -------------------------------------------------------------


def test_staff_adjust_a_balance_through_the_ledger(admin_client, admin_user, account):
    response = admin_client.post(
        admin_url(BalanceTransaction, "add"),
        {
            "account": account.pk,
            "amount": "25",
            "currency": "EUR",
            "description": "Compensation for the outage",
        },
    )

    assert response.status_code == 302
    entry = BalanceTransaction.objects.get()
    assert (entry.kind, entry.amount, entry.ending_balance, entry.created_by) == (
        "adjustment",
        2500,
        2500,
        admin_user,
    )
    event = Event.objects.get(type="customer.balance_changed")
    assert (event.account, event.actor_user) == (account, admin_user)


def test_an_adjustment_cannot_take_more_than_the_balance(admin_client, account):
    credit(account, 100)

    response = admin_client.post(
        admin_url(BalanceTransaction, "add"),
        {"account": account.pk, "amount": "-5.00", "currency": "EUR", "description": "Clawback"},
    )

    assert response.status_code == 200
    assert errors_of(response) == {
        "__all__": ["The account has 1.00 EUR in credit; 5.00 EUR cannot be taken from it."]
    }
    assert balance_of(account) == 100


def test_the_billing_clock_only_moves_forward(admin_client, account):
    added = admin_client.post(
        admin_url(BillingClock, "add"),
        {"account": account.pk, "now_0": "2026-03-01", "now_1": "12:00:00"},
    )
    forward = admin_client.post(
        admin_url(BillingClock, "change", account.pk), {"now_0": "2026-04-01", "now_1": "12:00:00"}
    )
    back = admin_client.post(
        admin_url(BillingClock, "change", account.pk), {"now_0": "2026-01-01", "now_1": "00:00:00"}
    )

    assert (added.status_code, forward.status_code) == (302, 302)
    assert back.status_code == 200
    assert errors_of(back) == {"now": ["A billing clock only moves forward."]}
    assert BillingClock.objects.get(account=account).now == datetime(2026, 4, 1, 12, tzinfo=UTC)


def test_staff_set_a_profile_s_tax_exemption_and_gateways_through_the_service(
    admin_client, account
):
    billing_profile_update(
        account=account, changes=BillingProfileChanges(legal_name="Blockworks"), actor=SYSTEM
    )
    url = admin_url(BillingProfile, "change", account.pk)
    page = admin_client.get(url).content.decode()
    assert 'name="payment_gateways"' in page and 'name="legal_name"' not in page  # theirs

    unknown = admin_client.post(url, {"payment_gateways": "paypal"})
    saved = admin_client.post(url, {"tax_exempt": "on", "payment_gateways": "bank_transfer"})

    assert unknown.status_code == 200
    assert "No gateway 'paypal' here" in errors_of(unknown)["payment_gateways"][0]
    assert saved.status_code == 302
    profile = BillingProfile.objects.get(account=account)
    assert (profile.tax_exempt, profile.payment_gateways) == (True, ["bank_transfer"])
    assert profile.legal_name == "Blockworks"
    event = Event.objects.filter(type="customer.billing_profile_updated").latest("created_at")
    assert event.data["previous_attributes"] == {"tax_exempt": False, "payment_gateways": []}
    assert admin_client.post(url, {"payment_gateways": ""}).status_code == 302
    assert BillingProfile.objects.get(account=account).payment_gateways == []

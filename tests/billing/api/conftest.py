"""The billing API's fixtures: an account's books (invoices in every status, a credit note, the
ledger, a payment) beside another account's, a billing-role teammate, and staff keys.

Each account runs on a billing clock, so every document has a known date (and a ``TEST-``
number).
"""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from accounts.actors import SYSTEM
from accounts.roles import Role
from billing.clock import billing_clock_advance
from billing.models import BalanceTransaction, Payment, Price, Product
from billing.services import (
    balance_change,
    credit_note_create,
    invoice_create,
    invoice_finalize,
    invoice_mark_uncollectible,
    invoice_pay_with_credit,
)
from billing.services.profile import BillingProfileChanges, billing_profile_update
from tests.factories import MembershipFactory

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
PLAN = {
    "description": "Survival SMP, 4 GB (March)",
    "quantity": 1,
    "unit_amount": 1200,
    "period_start": datetime(2026, 3, 1, tzinfo=UTC),
    "period_end": datetime(2026, 4, 1, tzinfo=UTC),
}
SETUP = {"description": "Setup fee", "quantity": 1, "unit_amount": 500}
BUYER = {
    "legal_name": "Blockworks GmbH",
    "address_line1": "Hauptstraße 5",
    "postal_code": "10115",
    "city": "Berlin",
    "country": "DE",
    "vat_id": "DE136695976",
}


def data_of(response, status: int = 200) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is True
    return body["data"]


def listed(response, key: str) -> list[str]:
    return [item["id"] for item in data_of(response)[key]]


def at(account, moment: datetime) -> None:
    billing_clock_advance(account=account, to=moment)


def issue(account, *lines, finalize: bool = True):
    invoice = invoice_create(account=account, currency="EUR", lines=list(lines) or [PLAN])
    return invoice_finalize(invoice=invoice) if finalize else invoice


def books_of(account, start: datetime = T0) -> SimpleNamespace:
    """An account's billing: 50.00 EUR of credit, a paid invoice (by credit) with a credit note
    of 3.00 EUR back to the balance, an open one, an uncollectible one and a draft, a day
    apart each."""
    at(account, start)
    billing_profile_update(account=account, changes=BillingProfileChanges.of(BUYER), actor=SYSTEM)
    topup = balance_change(
        account=account,
        amount=5000,
        currency="EUR",
        kind="adjustment",
        description="Welcome credit",
        actor=SYSTEM,
    )
    at(account, start + DAY)
    paid = invoice_pay_with_credit(invoice=issue(account, PLAN, SETUP), actor=SYSTEM)
    at(account, start + 2 * DAY)
    open_ = issue(account)
    at(account, start + 3 * DAY)
    credit_note = credit_note_create(
        invoice=paid,
        amount=300,
        reason="product_unsatisfactory",
        refund_to="balance",
        memo="Two days of downtime.",
        actor=SYSTEM,
    )
    at(account, start + 4 * DAY)
    uncollectible = invoice_mark_uncollectible(invoice=issue(account, SETUP), actor=SYSTEM)
    at(account, start + 5 * DAY)
    draft = issue(account, finalize=False)
    return SimpleNamespace(
        account=account,
        paid=paid,
        open=open_,
        uncollectible=uncollectible,
        draft=draft,
        credit_note=credit_note,
        payment=Payment.objects.get(invoice=paid),
        topup=topup,
        entries=list(BalanceTransaction.objects.filter(account=account)),
    )


@pytest.fixture
def openapi(db) -> dict:
    return APIClient().get("/v1/openapi.json").json()


@pytest.fixture
def books(account):
    return books_of(account)


@pytest.fixture
def their_books(other_account):
    return books_of(other_account, start=T0 + 10 * DAY)


@pytest.fixture
def mate(account):
    """A teammate whose role holds billing:* (the ``billing`` role)."""
    return MembershipFactory(account=account, role=Role.BILLING).user


@pytest.fixture
def mate_api(mate, account, make_token, client_for):
    return client_for(make_token(mate, account, ["billing:read", "billing:write"]))


@pytest.fixture
def reader_api(account, make_token, client_for):
    """A viewer: every read scope but no write one."""
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    return client_for(make_token(viewer, account, ["billing:read"]))


@pytest.fixture
def unscoped_api(owner, account, make_token, client_for):
    """The owner's key without any billing scope."""
    return client_for(make_token(owner, account, ["servers:read"]))


@pytest.fixture
def demoted_api(account, make_token, client_for):
    """A key with billing:* whose user has since become a developer, a role without them."""
    membership = MembershipFactory(account=account, role=Role.BILLING)
    client = client_for(make_token(membership.user, account, ["billing:read", "billing:write"]))
    membership.role = Role.DEVELOPER  # saved, so a cached key lookup is dropped too
    membership.save()
    return client


@pytest.fixture
def catalogue(db):
    """Two plans on sale (one with an archived price), one archived plan."""
    server = Product.objects.create(
        name="Minecraft 4 GB",
        kind="server",
        memory_mb=4096,
        cpu_percent=200,
        disk_mb=20480,
        games=["minecraft-java"],
        created_at=T0,
    )
    bot = Product.objects.create(
        name="Bot Small",
        kind="bot",
        memory_mb=256,
        cpu_percent=25,
        disk_mb=1024,
        runtimes=["python-3.13"],
        created_at=T0 + DAY,
    )
    archived = Product.objects.create(
        name="Old plan",
        kind="server",
        memory_mb=1024,
        cpu_percent=100,
        disk_mb=5120,
        active=False,
        created_at=T0 + 2 * DAY,
    )
    prices = {
        "server_eur": Price.objects.create(
            product=server, currency="EUR", unit_amount=1200, interval="month"
        ),
        "server_usd": Price.objects.create(
            product=server, currency="USD", unit_amount=1300, interval="month"
        ),
        "server_old": Price.objects.create(
            product=server, currency="EUR", unit_amount=900, interval="month", active=False
        ),
        "bot_eur": Price.objects.create(
            product=bot, currency="EUR", unit_amount=5, interval="hour"
        ),
        "archived_eur": Price.objects.create(
            product=archived, currency="EUR", unit_amount=100, interval="month"
        ),
    }
    return SimpleNamespace(server=server, bot=bot, archived=archived, **prices)

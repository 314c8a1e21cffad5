"""Query budgets of the billing lists, on page 1 and past the first 1,000 rows, where a page is
found by its keys first (``hosting.api.pagination.page_of``): the count, the page and at most
one prefetch, however deep the page. bench/billing.py measures the same lists at 100,000 rows.

(Page 1 of ``GET /v1/invoices`` at every page size: tests/billing/api/test_invoices_api.py.)
"""

from datetime import UTC, datetime, timedelta

import pytest

from billing.models import Invoice, InvoiceLine, Price, Product, Subscription
from hosting.api.pagination import DEEP_OFFSET
from tests.conftest import auth_queries

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ROWS = DEEP_OFFSET + 10
DEEP_PAGE = DEEP_OFFSET + 1  # of one row per page: the first page found by its keys


@pytest.fixture
def price(db):
    product = Product.objects.create(
        name="Survival 4 GB", kind="server", memory_mb=4096, cpu_percent=200, disk_mb=20480
    )
    return Price.objects.create(product=product, currency="EUR", unit_amount=1200, interval="month")


@pytest.fixture
def subscriptions(account, price) -> list[Subscription]:
    """``ROWS`` active subscriptions of the account, ordered one a minute, oldest first."""
    moments = [T0 + timedelta(minutes=n) for n in range(ROWS)]
    return Subscription.objects.bulk_create(
        Subscription(
            account=account,
            price=price,
            status="active",
            billing_cycle_anchor=at,
            current_period_start=at,
            current_period_end=at + timedelta(days=30),
            created_at=at,
        )
        for at in moments
    )


@pytest.fixture
def invoices(account, subscriptions, price) -> list[Invoice]:
    """A draft invoice of one line for each subscription, created with it."""
    invoices = Invoice.objects.bulk_create(
        Invoice(
            account=account,
            subscription=subscription,
            billing_reason="manual",
            currency="EUR",
            subtotal=1200,
            total=1200,
            amount_remaining=1200,
            created_at=subscription.created_at,
        )
        for subscription in subscriptions
    )
    InvoiceLine.objects.bulk_create(
        InvoiceLine(
            invoice=invoice, description="Survival 4 GB", price=price, unit_amount=1200, amount=1200
        )
        for invoice in invoices
    )
    return invoices


@pytest.mark.parametrize("page", [1, DEEP_PAGE])
@pytest.mark.parametrize("key", ["invoices", "subscriptions"])
def test_a_page_costs_at_most_three_queries_however_deep(
    owner_api, invoices, subscriptions, key, page, django_assert_max_num_queries
):
    rows = {"invoices": invoices, "subscriptions": subscriptions}[key]
    newest_first = sorted(rows, key=lambda row: row.created_at, reverse=True)
    owner_api.get(f"/v1/{key}")  # the first call records the key's last use; steady state follows

    # The count, the page and (invoices) its lines, plus the key unless the shared cache has it.
    with django_assert_max_num_queries(3 + auth_queries()):
        response = owner_api.get(f"/v1/{key}?per_page=1&page={page}")

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert [item["id"] for item in data[key]] == [newest_first[page - 1].id]
    assert data["pagination"]["total"] == ROWS
    if key == "invoices":
        assert [line["description"] for line in data[key][0]["lines"]] == ["Survival 4 GB"]

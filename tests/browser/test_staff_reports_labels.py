"""The staff reports in a real browser speak in names: the aging chart's buckets are "0-30
days", the fleet chart's statuses their display names and its kinds "Server" and "Bot", the
MRR chart's movements their labels; the tables say the same; before the first MRR snapshot the
MRR and churn cards say when it comes. On a desktop and at a phone's 390 px, nothing scrolls
sideways."""

from datetime import UTC, datetime, timedelta

import pytest

from analytics.services.snapshots import mrr_snapshot_take
from tests.analytics.test_reports_billing import issue, line
from tests.browser.conftest import give_second_factor
from tests.browser.test_usage_charts import PHONE, sign_in
from tests.factories import (
    AccountFactory,
    PriceFactory,
    ServerFactory,
    SubscriptionFactory,
    UserFactory,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

LABELS = 'name => window.Chart.getChart(document.querySelector(`canvas[data-chart="${name}"]`))'
CHART_LABELS = LABELS + ".data.labels"
DATASET_LABELS = LABELS + ".data.datasets.map(d => d.label)"
WIDEST = "() => document.documentElement.scrollWidth"


@pytest.fixture
def staff(db):
    user = UserFactory(email="boss@hosting.example", is_staff=True, is_superuser=True)
    user.second_factor_secret = give_second_factor(user)
    return user


@pytest.fixture
def business(db):
    """A server that failed to install, a running one, and an invoice 40 days late."""
    customer = AccountFactory(name="Late Payer")
    ServerFactory(account=customer, status="install_failed")
    ServerFactory(account=customer, status="running")
    now = datetime.now(UTC)
    issue(customer, now - timedelta(days=50), line(1999), due=now - timedelta(days=40))
    return customer


def test_the_reports_name_what_they_show_on_a_desktop_and_a_phone(
    page, staff, business, screenshot
):
    sign_in(page, staff, staff.second_factor_secret)
    for viewport, name in (({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto("/staff/reports")
        for chart in ("ar-aging", "fleet"):
            expect(page.locator(f'canvas[data-chart="{chart}"]')).to_have_attribute(
                "data-drawn", "true"
            )
        assert page.evaluate(CHART_LABELS, "ar-aging") == [
            "0\u201330 days",
            "31\u201360 days",
            "61\u201390 days",
            "Over 90 days",
        ]
        assert page.evaluate(CHART_LABELS, "fleet") == ["Install failed", "Running"]
        assert page.evaluate(DATASET_LABELS, "fleet") == ["Server"]
        fleet = page.locator('[data-report="fleet"] table')
        expect(fleet).to_contain_text("Install failed")
        expect(fleet).not_to_contain_text("install_failed")
        # No snapshot yet: the MRR and churn cards say when the first comes.
        for report in ("mrr", "churn"):
            note = page.locator(f'[data-report="{report}"] [data-empty-note]')
            expect(note).to_contain_text("No MRR snapshot has been taken yet")
            expect(note).to_contain_text("housekeeping")
        assert page.evaluate(WIDEST) <= viewport["width"], name
        screenshot(f"staff-reports-names-{name}")


def test_the_seeded_snapshot_shows_the_mrr_and_names_its_movements(page, staff, business):
    """As ./scripts/run does after seeding: a snapshot of the subscriptions paid now."""
    SubscriptionFactory(account=business, price=PriceFactory(currency="EUR", unit_amount=899))
    mrr_snapshot_take(day=datetime.now(UTC).date())
    sign_in(page, staff, staff.second_factor_secret)
    page.goto("/staff/reports")
    expect(page.locator('canvas[data-chart="mrr"]')).to_have_attribute("data-drawn", "true")
    expect(page.locator('[data-report="mrr"] [data-empty-note]')).to_have_count(0)
    assert page.evaluate(DATASET_LABELS, "mrr") == [
        "MRR at the end (EUR)",
        "New",
        "Reactivation",
        "Expansion",
        "Contraction",
        "Churn",
    ]
    expect(page.locator('[data-report="mrr"] table')).to_contain_text("8.99 EUR")
    expect(page.locator('[data-report="ar-aging"] table')).to_contain_text("31\u201360 days")

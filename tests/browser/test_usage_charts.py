"""Usage charts in a real browser: on a server's page the CPU, memory and network charts are
drawn from its history (the canvases are not blank), the range picker redraws them, and on a
phone they fit the screen."""

import re
from datetime import UTC, date, datetime, timedelta

import pytest

from analytics.services.usage import Measurement, usage_record
from tests.analytics.test_reports_mrr import snapshot
from tests.browser.conftest import give_second_factor, type_second_factor
from tests.factories import ServerFactory, UserFactory

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}
# How many pixels of a canvas are painted (not transparent): 0 for a blank chart.
PAINTED = """canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted += 1;
  return painted;
}"""


@pytest.fixture
def measured_server(account):
    server = ServerFactory(account=account, name="Charted SMP", memory_mb=2048)
    now = datetime.now(UTC)
    usage_record(
        measurements=[
            Measurement(
                instance_id=server.id,
                at=now - timedelta(minutes=5 * n),
                cpu_percent=20 + (n % 7) * 10,
                memory_bytes=(600 + n % 5 * 50) * 2**20,
                disk_bytes=2**30,
                uptime_seconds=86400 - 300 * n,
                network_rx_bytes=10**6 * (300 - n),
                network_tx_bytes=2 * 10**6 * (300 - n),
            )
            for n in range(1, 250)
        ]
    )
    return server


def sign_in(page, user, secret: str | None = None) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if secret:
        type_second_factor(page, secret)
    page.wait_for_url(re.compile(r".*/(staff)?$"))  # staff with no account: their home


def charts_drawn(page, range_: str) -> None:
    section = page.locator("[data-usage-charts]")
    expect(section).to_have_attribute("data-loaded", range_, timeout=10_000)
    for name in ("cpu", "memory", "network"):
        canvas = page.locator(f'canvas[data-chart="{name}"]')
        expect(canvas).to_be_visible()
        painted = canvas.evaluate(PAINTED)
        assert painted > 500, (name, range_, painted)


def test_the_charts_are_drawn_and_the_range_picker_redraws_them(
    page, owner, measured_server, screenshot
):
    sign_in(page, owner)
    page.goto(f"/servers/{measured_server.id}")
    charts_drawn(page, "24h")
    expect(page.locator("[data-usage-status]")).to_contain_text("Every 5 min")
    page.get_by_role("button", name="7 d").click()
    charts_drawn(page, "7d")
    expect(page.get_by_role("button", name="7 d")).to_have_attribute("aria-pressed", "true")
    # The numbers are there as a table too.
    page.get_by_text("Show the numbers as a table").click()
    expect(page.locator("[data-usage-table] tbody tr").first).to_be_visible()
    expect(page.locator("[data-uptime-strip] li")).to_have_count(30)
    screenshot("usage-charts-desktop")


def test_on_a_phone_the_charts_fit_and_are_drawn(page, owner, measured_server, screenshot):
    page.set_viewport_size(PHONE)
    sign_in(page, owner)
    page.goto(f"/servers/{measured_server.id}")
    charts_drawn(page, "24h")
    for name in ("cpu", "memory", "network"):
        box = page.locator(f'canvas[data-chart="{name}"]').bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        assert box["height"] >= 120, box
    strip = page.locator("[data-uptime-strip]").bounding_box()
    assert strip is not None and strip["x"] + strip["width"] <= PHONE["width"]
    screenshot("usage-charts-phone")


def test_the_account_overview_draws_its_charts_on_a_desktop_and_a_phone(
    page, owner, measured_server, screenshot
):
    sign_in(page, owner)
    for viewport, name in (({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto("/overview")
        expect(page.locator("[data-overview-charts]")).to_have_attribute("data-drawn", "true")
        for chart in ("daily-load", "daily-network"):
            canvas = page.locator(f'canvas[data-chart="{chart}"]')
            assert canvas.evaluate(PAINTED) > 500, (chart, name)
            box = canvas.bounding_box()
            assert box is not None and box["x"] + box["width"] <= viewport["width"]
        expect(page.locator("#top-consumers")).to_contain_text(measured_server.name)
        screenshot(f"overview-{name}")


@pytest.fixture
def staff(db):
    user = UserFactory(email="finance@hosting.example", is_staff=True)
    user.second_factor_secret = give_second_factor(user)  # staff need one for staff pages
    return user


def test_the_staff_reports_draw_their_charts_on_a_desktop_and_a_phone(
    page, staff, measured_server, screenshot
):
    today = datetime.now(UTC).date()
    first = today.replace(day=1)
    before = date(first.year - (first.month == 1), (first.month - 2) % 12 + 1, 1)
    snapshot(before, {"acct_A": ("EUR", 1000)})
    snapshot(first, {"acct_A": ("EUR", 1500), "acct_B": ("EUR", 700)})
    sign_in(page, staff, staff.second_factor_secret)
    for viewport, name in (({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto("/staff/reports")
        for chart in ("mrr", "churn", "fleet"):
            canvas = page.locator(f'canvas[data-chart="{chart}"]')
            expect(canvas).to_have_attribute("data-drawn", "true")
            assert canvas.evaluate(PAINTED) > 500, (chart, name)
            box = canvas.bounding_box()
            assert box is not None and box["x"] + box["width"] <= viewport["width"]
        screenshot(f"staff-reports-{name}")

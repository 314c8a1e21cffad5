"""Usage charts read well whatever the data's size: 70 MB used of 9 GB, 0.3 % of a core and a
few bytes of network get scales of their own (round steps, distinct labels, the unit the data
call for) with the memory limit named above the scale; near the limit it is a line on it. A
server that never ran, or has only just started, says why it has no charts yet."""

import re
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise

import pytest

from analytics.services.usage import Measurement, usage_record
from servers.models import ServerStatus
from tests.analytics.test_reports_mrr import snapshot
from tests.browser.conftest import give_second_factor, type_second_factor
from tests.factories import ServerFactory, UserFactory

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MB = 2**20
# The value axis's labels of a chart, as Chart.js drew them.
Y_LABELS = """canvas => window.Chart.getChart(canvas).scales.y.ticks.map(t => String(t.label))"""


def measure(server, *, cpu, memory, rx, tx, samples: int = 60) -> None:
    now = datetime.now(UTC)
    usage_record(
        measurements=[
            Measurement(
                instance_id=server.id,
                at=now - timedelta(minutes=5 * n),
                cpu_percent=cpu(n),
                memory_bytes=memory(n),
                disk_bytes=2**30,
                uptime_seconds=86400 - 300 * n,
                network_rx_bytes=rx(n),
                network_tx_bytes=tx(n),
            )
            for n in range(1, samples + 1)
        ]
    )


def sign_in(page, user, secret: str | None = None) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if secret:
        type_second_factor(page, secret)
    page.wait_for_url(re.compile(r".*/(staff)?$"))  # staff with no account: their home


def labels(page, chart: str) -> list[str]:
    return page.locator(f'canvas[data-chart="{chart}"]').evaluate(Y_LABELS)


def number(label: str) -> float:
    return float(label.split()[0])


def assert_readable(found: list[str], unit: str) -> None:
    """Distinct labels in one unit, from 0 up in equal steps."""
    assert len(found) >= 3, found
    assert len(set(found)) == len(found), found
    assert all(label.endswith(" " + unit) for label in found), found
    values = [number(label) for label in found]
    assert values[0] == 0, found
    steps = {round(b - a, 6) for a, b in pairwise(values)}
    assert len(steps) == 1, found


@pytest.fixture
def tiny_server(account):
    """70 MB of 9 GB, 0.1 to 0.3 % of a core, 0 to 3 bytes a sample."""
    server = ServerFactory(account=account, name="Quiet lobby", memory_mb=9 * 1024)
    measure(
        server,
        cpu=lambda n: 0.1 + (n % 3) / 10,
        memory=lambda n: (68 + n % 3) * MB,
        rx=lambda n: n % 4,
        tx=lambda n: n % 2,
    )
    return server


def test_tiny_usage_gets_scales_of_its_own_and_the_limit_is_named(
    page, owner, tiny_server, screenshot
):
    sign_in(page, owner)
    for viewport, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto(f"/servers/{tiny_server.id}")
        expect(page.locator("[data-usage-charts]")).to_have_attribute("data-loaded", "24h")
        cpu = labels(page, "cpu")
        assert_readable(cpu, "%")
        assert number(cpu[-1]) <= 0.5, cpu  # 0.3 % at most: not a 0 to 100 % scale
        memory = labels(page, "memory")
        assert_readable(memory, "MB")
        assert 70 <= number(memory[-1]) <= 100, memory  # not a 9 GB scale
        network = labels(page, "network")
        assert_readable(network, "B")
        assert all(label.split()[0].isdigit() for label in network), network  # whole bytes
        # 9 GB is far above 70 MB: named at the top of the memory chart, not the scale.
        expect(page.locator('canvas[data-chart="memory"]')).to_have_attribute("data-limit", "above")
        expect(page.locator("[data-usage-empty]")).to_be_hidden()
        screenshot(f"chart-scales-tiny-{name}")


def test_near_its_limit_the_limit_is_a_line_on_the_memory_scale(page, owner, account, screenshot):
    server = ServerFactory(account=account, name="Busy survival", memory_mb=2048)
    measure(
        server,
        cpu=lambda n: 140 + n % 5,
        memory=lambda n: (1400 + n % 7 * 20) * MB,
        rx=lambda n: 3 * 10**8 + n,
        tx=lambda n: 10**8 + n,
    )
    sign_in(page, owner)
    page.goto(f"/servers/{server.id}")
    expect(page.locator("[data-usage-charts]")).to_have_attribute("data-loaded", "24h")
    memory = labels(page, "memory")
    assert_readable(memory, "GB")
    assert number(memory[-1]) >= 2, memory  # the scale reaches the 2 GB limit
    expect(page.locator('canvas[data-chart="memory"]')).to_have_attribute("data-limit", "line")
    assert_readable(labels(page, "cpu"), "%")
    assert_readable(labels(page, "network"), "MB")
    screenshot("chart-scales-near-limit-desktop")


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (ServerStatus.STOPPED, "No samples yet: the server has not run since it was created."),
        (ServerStatus.RUNNING, "No samples yet: usage appears a minute after the server starts."),
    ],
)
def test_a_server_without_samples_says_why(page, owner, account, screenshot, status, text):
    server = ServerFactory(account=account, name="Brand new", status=status)
    sign_in(page, owner)
    for viewport, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto(f"/servers/{server.id}")
        expect(page.locator("[data-usage-charts]")).to_have_attribute("data-loaded", "24h")
        expect(page.locator("[data-usage-empty]")).to_contain_text(text)
        expect(page.locator('canvas[data-chart="cpu"]')).to_be_hidden()
        expect(page.locator("[data-uptime-total]")).not_to_contain_text("not meant")
        expect(page.get_by_text("Show the numbers as a table")).to_be_hidden()
        if status == ServerStatus.STOPPED:
            expect(page.locator("[data-uptime-total]")).to_have_text(
                "· stopped on purpose, so there is no uptime to measure"
            )
        screenshot(f"chart-empty-{status}-{name}")


def test_a_range_without_samples_says_when_the_last_were(page, owner, account):
    server = ServerFactory(account=account, name="Weekend server", status=ServerStatus.STOPPED)
    usage_record(
        measurements=[
            Measurement(
                instance_id=server.id,
                at=datetime.now(UTC) - timedelta(hours=3),
                cpu_percent=12,
                memory_bytes=500 * MB,
                disk_bytes=2**30,
                uptime_seconds=600,
                network_rx_bytes=1000,
                network_tx_bytes=1000,
            )
        ]
    )
    sign_in(page, owner)
    page.goto(f"/servers/{server.id}")
    expect(page.locator("[data-usage-charts]")).to_have_attribute("data-loaded", "24h")
    expect(page.locator('canvas[data-chart="cpu"]')).to_be_visible()
    page.get_by_role("button", name="1 h").click()
    expect(page.locator("[data-usage-charts]")).to_have_attribute("data-loaded", "1h")
    expect(page.locator("[data-usage-empty]")).to_contain_text(
        "No samples in the last 1 h: the server was not running then."
    )
    expect(page.locator('canvas[data-chart="cpu"]')).to_be_hidden()
    page.get_by_role("button", name="24 h").click()
    expect(page.locator("[data-usage-charts]")).to_have_attribute("data-loaded", "24h")
    expect(page.locator("[data-usage-empty]")).to_be_hidden()
    expect(page.locator('canvas[data-chart="cpu"]')).to_be_visible()


def test_the_overview_fits_its_scales_to_tiny_usage_and_says_when_there_is_none(
    page, owner, account, screenshot
):
    sign_in(page, owner)
    page.goto("/overview")
    expect(page.locator("[data-overview-charts]")).to_have_attribute("data-drawn", "empty")
    expect(page.locator("[data-overview-charts] [data-usage-empty]")).to_contain_text(
        "No samples yet: none of the account's servers and bots has run in the last 30 days."
    )
    screenshot("overview-empty-desktop")
    server = ServerFactory(account=account, name="Quiet lobby", memory_mb=9 * 1024)
    measure(
        server,
        cpu=lambda n: 0.1 + (n % 3) / 10,
        memory=lambda n: (68 + n % 3) * MB,
        rx=lambda n: n % 4,
        tx=lambda n: n % 2,
    )
    for viewport, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        page.goto("/overview")
        expect(page.locator("[data-overview-charts]")).to_have_attribute("data-drawn", "true")
        load = page.locator('canvas[data-chart="daily-load"]')
        axis = "canvas => window.Chart.getChart(canvas).scales[%r].ticks.map(t => String(t.label))"
        assert_readable(load.evaluate(axis % "cpu"), "%")
        assert_readable(load.evaluate(axis % "memory"), "MB")
        network = page.locator('canvas[data-chart="daily-network"]').evaluate(Y_LABELS)
        assert_readable(network, "B")
        screenshot(f"overview-tiny-{name}")


def test_the_staff_reports_label_their_axes_distinctly(page, measured_staff, screenshot):
    """MRR of a euro or two (steps of 20 cents) and churn rates: no label twice on an axis."""
    staff, secret = measured_staff
    sign_in(page, staff, secret)
    page.goto("/staff/reports")
    for chart in ("mrr", "churn"):
        canvas = page.locator(f'canvas[data-chart="{chart}"]')
        expect(canvas).to_have_attribute("data-drawn", "true")
        found = canvas.evaluate(Y_LABELS)
        assert len(found) >= 3 and len(set(found)) == len(found), (chart, found)
    screenshot("chart-scales-staff-reports-desktop")


@pytest.fixture
def measured_staff(db):
    """A staff member with a second factor, and two months of MRR snapshots of cents."""
    first = datetime.now(UTC).date().replace(day=1)
    before = date(first.year - (first.month == 1), (first.month - 2) % 12 + 1, 1)
    snapshot(before, {"acct_A": ("EUR", 100), "acct_B": ("EUR", 50), "acct_C": ("EUR", 20)})
    snapshot(first, {"acct_A": ("EUR", 120), "acct_B": ("EUR", 50)})
    staff = UserFactory(email="finance@hosting.example", is_staff=True)
    return staff, give_second_factor(staff)

"""Usage history on a server's page: shown to roles with analytics:read, its JSON for the
charts, and nothing for another account's server."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.roles import Role
from analytics.services.usage import Measurement, usage_record
from tests.dashboard import signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(account):
    server = ServerFactory(account=account, memory_mb=1024)
    now = datetime.now(UTC)
    usage_record(
        measurements=[
            Measurement(
                instance_id=server.id,
                at=now - timedelta(minutes=minutes),
                cpu_percent=minutes,
                memory_bytes=minutes * 2**20,
                disk_bytes=2**30,
                uptime_seconds=7200 - minutes * 60,
                network_rx_bytes=1000 * (60 - minutes),
                network_tx_bytes=None,
            )
            for minutes in range(50, 0, -10)
        ]
    )
    return server


def test_the_page_offers_the_charts_and_their_data(owner, server):
    client = signed_in(owner)
    page = client.get(f"/servers/{server.id}").content.decode()
    assert f'data-url="/servers/{server.id}/usage"' in page
    assert "vendor/chartjs/chart.umd.min.js" in page and "js/usage_charts.js" in page
    answer = client.get(f"/servers/{server.id}/usage", {"range": "1h"})
    assert answer.status_code == 200
    data = answer.json()["data"]
    assert data["memory_limit_bytes"] == 1024 * 2**20
    # For the empty state: what it is, whether it runs, and when it was last measured.
    assert (data["kind"], data["status"]) == ("server", "running")
    assert data["last_sample_at"] is not None and data["last_sample_at"].endswith("Z")
    assert data["metrics"]["step"] == 10
    cpu, memory, rx, tx = data["metrics"]["series"]
    assert [v for _, v in cpu["points"]] == [50.0, 40.0, 30.0, 20.0, 10.0]
    assert [v for _, v in memory["points"]] == [m * 2**20 for m in (50, 40, 30, 20, 10)]
    # The first sample found its process running: none of its count is known to be new.
    assert [v for _, v in rx["points"]] == [0, 10000, 10000, 10000, 10000]
    assert tx["points"] == []
    assert len(data["uptime"]["days"]) in (30, 31)  # the first day may be a part of one
    assert data["uptime"]["days"][-1]["uptime_percent"] == 100.0  # running since created


def test_a_server_never_measured_has_no_last_sample(owner, account):
    server = ServerFactory(account=account, status="stopped")
    data = signed_in(owner).get(f"/servers/{server.id}/usage").json()["data"]
    assert data["metrics"]["series"][0]["points"] == []
    assert (data["status"], data["last_sample_at"]) == ("stopped", None)


def test_an_unknown_range_is_the_last_24_hours(owner, server):
    answer = signed_in(owner).get(f"/servers/{server.id}/usage", {"range": "forever"})
    assert answer.json()["data"]["metrics"]["step"] == 300


def test_a_role_without_analytics_read_sees_no_charts(account, server):
    support = MembershipFactory(account=account, role=Role.SUPPORT).user
    client = signed_in(support)
    assert "data-usage-charts" not in client.get(f"/servers/{server.id}").content.decode()
    answer = client.get(f"/servers/{server.id}/usage")
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "permission_denied"


def test_bots_have_charts_and_outsiders_get_404(owner, outsider, account, server):
    bot = BotFactory(account=account)
    assert signed_in(owner).get(f"/bots/{bot.id}/usage").status_code == 200
    assert signed_in(outsider).get(f"/servers/{server.id}/usage").status_code == 404

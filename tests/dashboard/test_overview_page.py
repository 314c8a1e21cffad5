"""The account overview: servers and bots per status, the last 30 days' usage with its largest
consumers, open tickets; for roles with analytics:read, and only the account's own figures."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.actors import SYSTEM
from accounts.roles import Role
from analytics.services.usage import Measurement, usage_record
from support.models import Department
from support.services.tickets import Requester, ticket_open
from tests.analytics.test_reports_billing import issue, line
from tests.dashboard import signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db


def _used(instance, *, cpu: float, memory: int):
    usage_record(
        measurements=[
            Measurement(
                instance_id=instance.id,
                at=datetime.now(UTC) - timedelta(hours=2),
                cpu_percent=cpu,
                memory_bytes=memory,
                disk_bytes=2**30,
                uptime_seconds=30,
                network_rx_bytes=10,
                network_tx_bytes=2000,
            )
        ]
    )


@pytest.fixture
def fleet(account, other_account, owner):
    busy = ServerFactory(account=account, name="Busy SMP", status="running")
    ServerFactory(account=account, name="Idle", status="stopped")
    ServerFactory(account=account, name="Other", status="stopped")
    bot = BotFactory(account=account, name="Helper bot", status="running")
    theirs = ServerFactory(account=other_account, name="Their server", status="running")
    _used(busy, cpu=80, memory=3 * 2**30)
    _used(bot, cpu=2, memory=2**28)
    _used(theirs, cpu=99, memory=2**34)
    department = Department.objects.create(name="Technical", email="support@desk.example")
    ticket_open(
        requester=Requester(email=owner.email, user=owner, account=account),
        subject="Lag",
        body="It lags.",
        department=department,
        channel="web",
        actor=SYSTEM,
    )
    return busy, bot


def test_the_owner_sees_the_fleet_usage_and_tickets(owner, fleet):
    busy, bot = fleet
    page = signed_in(owner).get("/overview")
    assert f'href="/servers/{busy.id}"' in page.content.decode()
    assert f'href="/bots/{bot.id}"' in page.content.decode()
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/overview" aria-current="page"' in html
    assert "<dt>Running</dt><dd>1</dd>" in html and "<dt>Stopped</dt><dd>2</dd>" in html
    assert '<span id="open-tickets" class="balance-amount">1</span>' in html
    top = html.split('id="top-consumers"')[1]
    assert top.index("Busy SMP") < top.index("Helper bot")  # by CPU: 80 before 2
    assert "Their server" not in html
    assert "82.0 % of one core" in html  # 80 + 2
    assert 'id="daily-usage"' in html and "js/overview_charts.js" in html


def test_a_role_without_analytics_read_has_no_overview(account, fleet):
    support = MembershipFactory(account=account, role=Role.SUPPORT).user
    client = signed_in(support)
    assert client.get("/overview").status_code == 403
    assert 'href="/overview"' not in client.get("/").content.decode()


def test_an_outsider_sees_only_their_own(outsider, fleet):
    html = signed_in(outsider).get("/overview").content.decode()
    assert "Their server" in html and "Busy SMP" not in html


def test_the_spend_of_the_last_six_months_for_roles_that_read_billing(owner, account, fleet):
    now = datetime.now(UTC)
    issue(account, now - timedelta(days=1), line(1190))
    html = signed_in(owner).get("/overview").content.decode()
    spend = html.split('id="spend-table"')[1].split("</table>")[0]
    month = f"{now - timedelta(days=1):%Y-%m}"
    assert f"<td>{month}</td><td>EUR</td><td>1</td><td>11.90 EUR</td>" in spend
    developer = MembershipFactory(account=account, role=Role.DEVELOPER).user
    html = signed_in(developer).get("/overview").content.decode()
    assert "spend-heading" not in html and "11.90 EUR" not in html

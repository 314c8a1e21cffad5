"""Analytics within a role's reach: figures of one server (or bot) need ``analytics:read`` and
the instance read scope of its kind; reports and totals that list instances by name list only
the kinds the key may read; account-level figures need ``analytics:read``; spend also
``billing:read``. Checked with a key of every role holding all it may, and with narrower keys."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.roles import Role, expand_implied, grantable_scopes, scopes_allowed_for
from analytics.services.usage import Measurement, usage_record
from tests.dashboard import signed_in
from tests.factories import BotFactory, MembershipFactory, ServerFactory

pytestmark = pytest.mark.django_db
NOW = datetime.now(UTC)
KIND_SCOPE = {"server": "servers:read", "bot": "bots:read"}


@pytest.fixture
def api_as(account, make_token, client_for):
    """A client for a new member of ``account`` with ``role`` and a key of ``scopes`` (by
    default every scope the role may hold)."""

    def make(role: str, scopes: list[str] | None = None):
        user = MembershipFactory(account=account, role=role).user
        granted = grantable_scopes(role, is_staff=False) if scopes is None else scopes
        return client_for(make_token(user, account, granted))

    return make


@pytest.fixture
def fleet(account):
    server = ServerFactory(account=account, name="Survival")
    bot = BotFactory(account=account, name="Mod bot")
    usage_record(
        measurements=[
            Measurement(
                instance_id=instance.id,
                at=NOW - timedelta(minutes=5),
                cpu_percent=cpu,
                memory_bytes=100,
                disk_bytes=1,
                uptime_seconds=600,
            )
            for instance, cpu in ((server, 30.0), (bot, 3.0))
        ]
    )
    return {"server": server, "bot": bot}


def role_scopes(role: str) -> frozenset[str]:
    return expand_implied(scopes_allowed_for(role, is_staff=False))


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("kind", ["server", "bot"])
@pytest.mark.parametrize("what", ["metrics", "uptime"])
def test_one_instances_figures_need_analytics_and_its_kinds_read_scope(
    api_as, fleet, role, kind, what
):
    instance = fleet[kind]
    answer = api_as(role).get(f"/v1/{kind}s/{instance.id}/{what}")
    held = role_scopes(role)
    if {"analytics:read", KIND_SCOPE[kind]} <= held:
        assert answer.status_code == 200, answer.content
        return
    assert answer.status_code == 403, answer.content
    error = answer.json()["error"]
    assert error["code"] == "insufficient_scope"
    assert error["details"]["required_scopes"] == ["analytics:read", KIND_SCOPE[kind]]


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("report", ["usage", "uptime"])
def test_reports_list_only_the_kinds_the_role_may_read(api_as, fleet, role, report):
    answer = api_as(role).get(f"/v1/analytics/reports/{report}")
    held = role_scopes(role)
    if "analytics:read" not in held:
        assert answer.status_code == 403
        return
    assert answer.status_code == 200, answer.content
    rows = answer.json()["data"]["report"]["rows"]
    expected = {fleet[kind].id for kind in KIND_SCOPE if KIND_SCOPE[kind] in held}
    assert {row["instance_id"] for row in rows} == expected
    if role == Role.BILLING:  # the finding: billing listed every server and bot by name
        assert rows == []


@pytest.mark.parametrize("role", list(Role))
def test_account_usage_lists_only_the_kinds_the_role_may_read(api_as, fleet, role):
    answer = api_as(role).get("/v1/analytics/usage")
    held = role_scopes(role)
    if "analytics:read" not in held:
        assert answer.status_code == 403
        return
    usage = answer.json()["data"]["usage"]
    # The account's totals are account-level figures: every instance counts.
    assert usage["totals"]["instances"] == 2
    assert usage["totals"]["cpu_percent"] == 33.0
    expected = {fleet[kind].id for kind in KIND_SCOPE if KIND_SCOPE[kind] in held}
    assert {row["id"] for row in usage["consumers"]} == expected


@pytest.mark.parametrize(
    "scopes, kinds",
    [
        (["analytics:read"], set()),
        (["analytics:read", "servers:read"], {"server"}),
        (["analytics:read", "bots:power"], {"bot"}),  # power implies read
        (["analytics:read", "servers:read", "bots:read"], {"server", "bot"}),
    ],
)
def test_a_narrower_key_of_an_owner_sees_only_its_kinds(api_as, fleet, scopes, kinds):
    client = api_as(Role.OWNER, scopes)
    expected = {fleet[kind].id for kind in kinds}
    for report in ("usage", "uptime"):
        rows = client.get(f"/v1/analytics/reports/{report}").json()["data"]["report"]["rows"]
        assert {row["instance_id"] for row in rows} == expected
    usage = client.get("/v1/analytics/usage").json()["data"]["usage"]
    assert {row["id"] for row in usage["consumers"]} == expected
    for kind, instance in fleet.items():
        status = client.get(f"/v1/{kind}s/{instance.id}/metrics").status_code
        assert status == (200 if kind in kinds else 403)


@pytest.mark.parametrize("role", list(Role))
def test_spend_needs_analytics_and_billing_read(api_as, role):
    answer = api_as(role).get("/v1/analytics/reports/spend")
    held = role_scopes(role)
    assert answer.status_code == (200 if {"analytics:read", "billing:read"} <= held else 403)


# -- dashboard pages: the server page's usage JSON and the account overview follow the same rule


def test_the_billing_role_gets_no_server_usage_json(account, fleet):
    user = MembershipFactory(account=account, role=Role.BILLING).user
    answer = signed_in(user).get(f"/servers/{fleet['server'].id}/usage", {"range": "1h"})
    assert answer.status_code in (403, 404)


def test_the_billing_roles_overview_names_no_server(account, fleet):
    user = MembershipFactory(account=account, role=Role.BILLING).user
    page = signed_in(user).get("/overview").content.decode()
    assert "Survival" not in page and "Mod bot" not in page

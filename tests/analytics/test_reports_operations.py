"""The tickets report (volume, first response and resolution p50/p90 in business time, SLA
breaches; per department the staff member works) and the fleet report (servers and bots per
status, nodes' capacity given out), worked out by hand."""

from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from analytics.selectors.reports_operations import fleet_report, tickets_report
from servers.models import Allocation, Bot, Node
from support.models import Department, SlaPolicy, Ticket
from tests.analytics.conftest import staff_key
from tests.factories import ServerFactory, TicketFactory, UserFactory

pytestmark = pytest.mark.django_db
NOVEMBER_2 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
# Monday to Friday, 09:00 to 17:00 in Berlin: 07:00 to 15:00 UTC in early October (CEST).
OFFICE_HOURS = {
    "time_zone": "Europe/Berlin",
    "hours": {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")},
}


def utc(month: int, day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


def report(api, path: str, **params) -> dict:
    with time_machine.travel(NOVEMBER_2, tick=False):
        response = api.get(path, params)
    assert response.status_code == 200, response.content
    return response.json()["data"]["report"]


# --- Tickets ----------------------------------------------------------------------------------


def ticket(department, created, responded=None, status="open", used=0, **fields) -> Ticket:
    return TicketFactory(
        department=department,
        created_at=created,
        first_response_at=responded,
        status=status,
        sla_seconds_used=used,
        **fields,
    )


@pytest.fixture
def desk(db):
    policy = SlaPolicy.objects.create(name="Office", calendar=OFFICE_HOURS, targets={})
    office = Department.objects.create(name="Office", sla_policy=policy)
    technical = Department.objects.create(name="Technical")  # no policy: around the clock
    sales = Department.objects.create(name="Sales")
    # Office, October. Mon 5 Oct 10:00 Berlin, answered 30 minutes later: 1800 s.
    ticket(office, utc(10, 5, 8), utc(10, 5, 8, 30), "resolved", used=7200)
    # Fri 9 Oct 16:00 Berlin, answered Mon 12 Oct 10:00: 1 hour on Friday + 1 on Monday.
    ticket(office, utc(10, 9, 14), utc(10, 12, 8), "closed", used=14400, resolution_breached=True)
    # Tue 6 Oct 08:00 Berlin, before opening; answered at 09:15: 900 s. Waits on the customer.
    ticket(office, utc(10, 6, 6), utc(10, 6, 7, 15), "pending_customer", used=600)
    ticket(office, utc(10, 7, 10), first_response_breached=True)  # not answered yet
    duplicate = ticket(office, utc(10, 8, 10), utc(10, 8, 11), "closed")
    duplicate.merged_into = Ticket.objects.filter(department=office).first()
    duplicate.save()
    # Technical: one in September answered 2 hours later, around the clock (the night).
    ticket(technical, utc(9, 30, 23), utc(10, 1, 1), "resolved", used=10000)
    # and five in October, answered after 60, 120, 180, 240 and 3000 seconds.
    for seconds in (240, 60, 3000, 180, 120):
        created = utc(10, 20, 12)
        ticket(technical, created, created + timedelta(seconds=seconds), "pending_customer")
    ticket(sales, utc(10, 3, 9))
    return office, technical, sales


def test_it_measures_the_departments_the_staff_member_works(make_token, client_for, desk):
    office, technical, _ = desk
    agent, api = staff_key(make_token, client_for)
    office.members.add(agent)
    technical.members.add(agent)

    answer = report(api, "/v1/admin/reports/tickets", start_month="2026-09", end_month="2026-10")

    assert answer["parameters"] == {"start_month": "2026-09", "end_month": "2026-10"}
    assert [(column["name"], column["type"]) for column in answer["columns"]] == [
        ("month", "month"),
        ("department_id", "string"),
        ("department_name", "string"),
        ("tickets", "count"),
        ("responded", "count"),
        ("first_response_p50", "seconds"),
        ("first_response_p90", "seconds"),
        ("resolved", "count"),
        ("resolution_p50", "seconds"),
        ("resolution_p90", "seconds"),
        ("sla_breached", "count"),
        ("sla_breach_rate", "percent"),
    ]
    office_row = {"department_id": office.id, "department_name": "Office"}
    technical_row = {"department_id": technical.id, "department_name": "Technical"}
    assert answer["rows"] == [
        {
            "month": "2026-09",
            **office_row,
            "tickets": 0,
            "responded": 0,
            "first_response_p50": None,
            "first_response_p90": None,
            "resolved": 0,
            "resolution_p50": None,
            "resolution_p90": None,
            "sla_breached": 0,
            "sla_breach_rate": None,
        },
        {
            "month": "2026-09",
            **technical_row,
            "tickets": 1,
            "responded": 1,
            "first_response_p50": 7200,
            "first_response_p90": 7200,
            "resolved": 1,
            "resolution_p50": 10000,
            "resolution_p90": 10000,
            "sla_breached": 0,
            "sla_breach_rate": 0.0,
        },
        # 4 tickets (the merged duplicate left out). First responses [900, 1800, 7200]:
        # p50 is rank ceil(0.5 * 3) = 2, p90 rank ceil(0.9 * 3) = 3. Resolved or closed:
        # [7200, 14400]: ranks 1 and 2. Breached: the closed one and the unanswered one.
        {
            "month": "2026-10",
            **office_row,
            "tickets": 4,
            "responded": 3,
            "first_response_p50": 1800,
            "first_response_p90": 7200,
            "resolved": 2,
            "resolution_p50": 7200,
            "resolution_p90": 14400,
            "sla_breached": 2,
            "sla_breach_rate": 0.5,
        },
        # [60, 120, 180, 240, 3000]: p50 rank ceil(2.5) = 3, p90 rank ceil(4.5) = 5.
        {
            "month": "2026-10",
            **technical_row,
            "tickets": 5,
            "responded": 5,
            "first_response_p50": 180,
            "first_response_p90": 3000,
            "resolved": 0,
            "resolution_p50": None,
            "resolution_p90": None,
            "sla_breached": 0,
            "sla_breach_rate": 0.0,
        },
    ]


def test_a_superuser_measures_every_department(make_token, client_for, desk):
    _, api = staff_key(make_token, client_for, is_superuser=True)

    answer = report(api, "/v1/admin/reports/tickets", start_month="2026-10", end_month="2026-10")

    assert [(row["department_name"], row["tickets"]) for row in answer["rows"]] == [
        ("Office", 4),
        ("Sales", 1),
        ("Technical", 5),
    ]


def test_a_staff_member_of_no_department_gets_no_rows(make_token, client_for, desk):
    _, api = staff_key(make_token, client_for)

    assert report(api, "/v1/admin/reports/tickets")["rows"] == []


# --- Fleet ------------------------------------------------------------------------------------

_tokens = iter(range(100, 200))


def node(name: str, region: str, memory_mb: int, disk_mb: int, addresses: int = 0) -> Node:
    made = Node.objects.create(
        name=name,
        region_id=region,
        agent_url=f"https://{name}:8443",
        memory_mb=memory_mb,
        disk_mb=disk_mb,
        cpu_percent=800,
        token_key_id=f"key{next(_tokens)}",
        token_digest="0" * 64,
        token_pepper_id="t1",
    )
    for port in range(addresses):
        Allocation.objects.create(node=made, ip="203.0.113.10", port=25565 + port)
    return made


def place(instance, on: Node) -> None:
    free = Allocation.objects.filter(node=on, server=None).first()
    free.server = instance
    free.save()


@pytest.fixture
def fleet(account):
    frankfurt = node("fsn1-01", "eu-central", 16384, 100000, addresses=4)
    node("fsn1-02", "eu-central", 8192, 50000)
    ashburn = node("iad1-01", "us-east", 8192, 50000, addresses=2)
    sizes = {"memory_mb": 2048, "disk_mb": 10240}
    for status in ("running", "running", "stopped"):
        place(ServerFactory(account=account, status=status, node=frankfurt, **sizes), frankfurt)
    place(
        ServerFactory(
            account=account,
            status="running",
            region_id="us-east",
            node=ashburn,
            memory_mb=4096,
            disk_mb=20000,
        ),
        ashburn,
    )
    ServerFactory(
        account=account, status="running", node=frankfurt, deleted_at=timezone.now(), **sizes
    )
    Bot.objects.create(
        account=account,
        name="Bot",
        region_id="eu-central",
        runtime="python-3.13",
        start_command="python bot.py",
        token_encrypted="x",
        token_last4="abcd",
        node=frankfurt,
        status="running",
        memory_mb=512,
        disk_mb=1024,
    )


def test_it_counts_live_servers_and_bots_per_region_and_status(staff_api, fleet):
    answer = report(staff_api, "/v1/admin/reports/fleet")

    assert answer["parameters"] == {"group_by": "status"}
    assert answer["rows"] == [  # the deleted server is not counted
        {"kind": "server", "region": "eu-central", "status": "running", "count": 2},
        {"kind": "server", "region": "eu-central", "status": "stopped", "count": 1},
        {"kind": "server", "region": "us-east", "status": "running", "count": 1},
        {"kind": "bot", "region": "eu-central", "status": "running", "count": 1},
    ]


def test_it_reports_the_capacity_given_out_per_node(staff_api, fleet):
    answer = report(staff_api, "/v1/admin/reports/fleet", group_by="node")

    assert [row["node_name"] for row in answer["rows"]] == ["fsn1-01", "fsn1-02", "iad1-01"]
    figures = [
        {key: value for key, value in row.items() if key not in ("node_id", "node_name")}
        for row in answer["rows"]
    ]
    assert figures == [
        # 3 servers of 2048 MB and a bot of 512: 6656 of 16384 = 0.40625 → 0.4063 (half up);
        # disk 3 * 10240 + 1024 = 31744 of 100000.
        {
            "region": "eu-central",
            "memory_mb": 16384,
            "memory_allocated_mb": 6656,
            "memory_allocated_rate": 0.4063,
            "disk_mb": 100000,
            "disk_allocated_mb": 31744,
            "disk_allocated_rate": 0.3174,
            "allocations_total": 4,
            "allocations_used": 3,
        },
        {
            "region": "eu-central",
            "memory_mb": 8192,
            "memory_allocated_mb": 0,
            "memory_allocated_rate": 0.0,
            "disk_mb": 50000,
            "disk_allocated_mb": 0,
            "disk_allocated_rate": 0.0,
            "allocations_total": 0,
            "allocations_used": 0,
        },
        {
            "region": "us-east",
            "memory_mb": 8192,
            "memory_allocated_mb": 4096,
            "memory_allocated_rate": 0.5,
            "disk_mb": 50000,
            "disk_allocated_mb": 20000,
            "disk_allocated_rate": 0.4,
            "allocations_total": 2,
            "allocations_used": 1,
        },
    ]


def test_it_sums_the_nodes_of_each_region(staff_api, fleet):
    answer = report(staff_api, "/v1/admin/reports/fleet", group_by="region")

    assert answer["rows"] == [
        # 6656 of 16384 + 8192 = 24576: 0.27083 → 0.2708; 31744 of 150000: 0.21163 → 0.2116.
        {
            "region": "eu-central",
            "nodes": 2,
            "memory_mb": 24576,
            "memory_allocated_mb": 6656,
            "memory_allocated_rate": 0.2708,
            "disk_mb": 150000,
            "disk_allocated_mb": 31744,
            "disk_allocated_rate": 0.2116,
            "allocations_total": 4,
            "allocations_used": 3,
        },
        {
            "region": "us-east",
            "nodes": 1,
            "memory_mb": 8192,
            "memory_allocated_mb": 4096,
            "memory_allocated_rate": 0.5,
            "disk_mb": 50000,
            "disk_allocated_mb": 20000,
            "disk_allocated_rate": 0.4,
            "allocations_total": 2,
            "allocations_used": 1,
        },
    ]


@pytest.mark.parametrize("path", ["tickets", "fleet"])
def test_customers_cannot_read_staff_operations_reports(owner_api, path):
    with time_machine.travel(NOVEMBER_2, tick=False):
        response = owner_api.get(f"/v1/admin/reports/{path}")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"


def test_the_reports_read_a_fixed_number_of_queries(django_assert_num_queries, desk, fleet):
    superuser = UserFactory(is_staff=True, is_superuser=True)
    with django_assert_num_queries(2):  # the departments with their policies, the tickets
        tickets_report(user=superuser, first=date(2026, 9, 1), last=date(2026, 10, 1))
    with django_assert_num_queries(2):  # servers, bots
        fleet_report()
    for group_by in ("node", "region"):
        with django_assert_num_queries(1):
            fleet_report(group_by=group_by)

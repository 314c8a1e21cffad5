"""The staff home (issue 34 item 10): queues and breaches, today's billing, the nodes' health."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.actors import SYSTEM
from accounts.roles import StaffRole
from billing.models import BillingRunDay, Payment, PaymentStatus
from billing.services.job.renewals import billing_run
from servers.models import Node
from servers.services.nodes import node_authenticate, node_create
from support.models import TicketStatus
from tests.factories import (
    AccountFactory,
    DepartmentFactory,
    InvoiceFactory,
    MembershipFactory,
    ServerFactory,
    TicketFactory,
    UserFactory,
)


def staff_person(role: str | None = None, **extra):
    return UserFactory(is_staff=True, staff_role=role or "", **extra)


def signed_in(user, **kwargs) -> Client:
    client = Client()
    client.force_login(user, **kwargs)
    return client


@pytest.fixture
def node(db):
    made, token = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )
    made.token = token
    return made


def test_staff_without_an_account_land_on_their_home_from_the_root(db):
    person = staff_person(is_superuser=True)
    DepartmentFactory().members.add(person)
    client = signed_in(person)
    answer = client.get("/")
    assert answer.status_code == 302 and answer["Location"] == "/staff"
    page = client.get("/staff")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Staff home" in body and "You are not a member of any account" not in body
    assert 'id="staff-desk"' in body and 'id="staff-billing"' in body and 'id="staff-nodes"' in body
    assert "Create an account" in body  # one of their own stays one click away


def test_staff_with_an_account_keep_their_account_home_and_find_the_staff_home_in_the_menu(db):
    person = staff_person(is_superuser=True)
    MembershipFactory(user=person)
    client = signed_in(person)
    home = client.get("/")
    assert home.status_code == 200
    assert 'id="nav-staff-home" href="/staff"' in home.content.decode()


def test_customers_and_strangers_do_not_have_it(account, owner):
    assert signed_in(owner).get("/staff").status_code == 404
    anonymous = Client().get("/staff")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login")
    assert 'id="nav-staff-home"' not in signed_in(owner).get("/").content.decode()


def test_it_asks_staff_for_their_second_factor_like_every_staff_page(db):
    client = signed_in(staff_person(is_superuser=True), second_factor=False)
    answer = client.get("/staff")
    assert answer.status_code == 302 and "/auth/2fa/" in answer["Location"]


@pytest.mark.parametrize(
    ("role", "in_a_department", "panels"),
    [
        (StaffRole.SUPPORT_AGENT, True, {"desk"}),
        (StaffRole.BILLING, False, {"billing"}),
        (StaffRole.BILLING, True, {"desk", "billing"}),  # billing staff answer billing's tickets
        (StaffRole.FLEET, True, {"nodes"}),  # a role that does not work the desk
        (StaffRole.ADMINISTRATOR, True, {"desk", "billing", "nodes"}),
        (StaffRole.ADMINISTRATOR, False, {"billing", "nodes"}),  # no department: no desk
    ],
)
def test_each_role_sees_the_panels_of_its_areas(db, role, in_a_department, panels):
    person = staff_person(role)
    if in_a_department:
        DepartmentFactory().members.add(person)
    body = signed_in(person).get("/staff").content.decode()
    shown = {key for key in ("desk", "billing", "nodes") if f'id="staff-{key}"' in body}
    assert shown == panels


def test_the_desk_panel_counts_the_persons_queues_and_lists_the_breached_first_due(db):
    person = staff_person(StaffRole.SUPPORT_AGENT)
    department = DepartmentFactory(name="Game help")
    department.members.add(person)
    now = timezone.now()
    late = TicketFactory(
        department=department,
        subject="Lobby down",
        first_response_due_at=now - timedelta(hours=2),
        first_response_breached=True,
    )
    TicketFactory(
        department=department, assignee=person, resolution_due_at=now + timedelta(minutes=30)
    )
    TicketFactory(department=department, status=TicketStatus.CLOSED, first_response_breached=True)
    TicketFactory(subject="Another department's")  # not theirs
    client = signed_in(person)

    panel = client.get("/staff").context["panels"][0]["context"]["desk"]
    assert (
        panel["open"],
        panel["mine"],
        panel["unassigned"],
        panel["breached"],
        panel["due_soon"],
    ) == (
        2,
        1,
        1,
        1,
        1,
    )
    assert panel["due"][0] == late
    body = client.get("/staff").content.decode()
    assert f"#{late.number} Lobby down" in body and "Another department" not in body
    assert 'href="/desk?breached=true"' in body


def test_the_billing_panel_shows_todays_run_and_failed_payments(db):
    person = staff_person(StaffRole.BILLING)
    client = signed_in(person)
    assert "The billing job has not run today" in client.get("/staff").content.decode()

    billing_run()
    billing_run()
    billing_run(account_id=AccountFactory().id)  # a test clock's walk: not a pass of the job
    day = BillingRunDay.objects.get()
    assert day.runs == 2 and day.day == timezone.now().date()

    invoice = InvoiceFactory(finalize=True)
    Payment.objects.create(
        account=invoice.account,
        invoice=invoice,
        gateway="card",
        status=PaymentStatus.FAILED,
        amount=1234,
        currency="EUR",
        failure_message="Your card was declined.",
        failed_at=timezone.now(),
    )
    Payment.objects.create(
        account=invoice.account,
        invoice=invoice,
        gateway="card",
        status=PaymentStatus.FAILED,
        amount=500,
        currency="EUR",
        created_at=timezone.now() - timedelta(days=1),  # yesterday's: not today's
    )
    body = client.get("/staff").content.decode()
    assert "The billing job ran 2 times today" in body
    assert "12.34 EUR" in body and "Your card was declined." in body
    panel = client.get("/staff").context["panels"][0]["context"]["billing"]
    assert (panel["failed"], panel["succeeded"]) == (1, 0)


def test_the_nodes_panel_puts_the_nodes_needing_a_look_first(node, db):
    person = staff_person(StaffRole.FLEET)
    quiet = Node.objects.get(pk=node.pk)
    quiet.last_seen_at = timezone.now() - timedelta(minutes=30)
    quiet.save()
    ServerFactory(node=quiet, status="running")
    ServerFactory(node=quiet, status="install_failed")
    fine, _ = node_create(
        name="ams-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )
    Node.objects.filter(pk=fine.pk).update(
        last_seen_at=timezone.now() - timedelta(hours=3), agent_isolation="sandbox"
    )  # idle: silence says nothing
    never, _ = node_create(
        name="sgp-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )

    fleet = signed_in(person).get("/staff").context["panels"][0]["context"]["fleet"]
    problems = {each.name: each.problems for each in fleet["nodes"]}
    assert problems == {
        "fra-1": ["not_reporting", "not_isolated", "install_failed"],
        "sgp-1": ["never_connected"],
        "ams-1": [],
    }
    assert [each.name for each in fleet["nodes"]][-1] == "ams-1"
    assert (fleet["total"], fleet["with_problems"]) == (3, 2)
    quiet_row = next(each for each in fleet["nodes"] if each.name == "fra-1")
    assert (quiet_row.running, quiet_row.install_failed) == (1, 1)
    assert never.last_seen_at is None


def test_an_agents_call_is_its_last_contact_written_once_a_minute_at_most(node):
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(minutes=10))
    seen = node_authenticate(f"Bearer {node.token}").last_seen_at
    assert timezone.now() - seen < timedelta(seconds=5)
    assert Node.objects.get(pk=node.pk).last_seen_at == seen
    again = node_authenticate(f"Bearer {node.token}")
    assert again.last_seen_at == seen  # within the minute: not written again

    Node.objects.filter(pk=node.pk).update(last_seen_at=None)  # never said hello
    assert node_authenticate(f"Bearer {node.token}").last_seen_at is None


def test_it_reads_well_in_german(db):
    person = staff_person(is_superuser=True, language="de")
    body = signed_in(person).get("/staff").content.decode()
    assert '<html lang="de">' in body

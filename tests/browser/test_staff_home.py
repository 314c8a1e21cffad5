"""The staff home in a real browser (issue 34 item 10): a staff member's first page shows their
queues, today's billing and the nodes' health, at a desktop's width and a phone's."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.actors import SYSTEM
from accounts.roles import StaffRole
from billing.models import Payment, PaymentStatus
from billing.services.job.renewals import billing_run
from servers.models import Node
from servers.services.nodes import node_create
from tests.browser.conftest import give_second_factor, type_second_factor
from tests.factories import (
    DepartmentFactory,
    InvoiceFactory,
    ServerFactory,
    TicketFactory,
    UserFactory,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def staff_day(db):
    """An administrator in the Game help department, a breached ticket, a failed payment today,
    a pass of the billing job, and a node whose running server's agent went quiet."""
    person = UserFactory(
        email="lead@hosting.example", is_staff=True, staff_role=StaffRole.ADMINISTRATOR
    )
    department = DepartmentFactory(name="Game help")
    department.members.add(person)
    TicketFactory(
        department=department,
        subject="Lobby will not start",
        first_response_due_at=timezone.now() - timedelta(hours=1),
        first_response_breached=True,
    )
    billing_run()
    invoice = InvoiceFactory(finalize=True)
    Payment.objects.create(
        account=invoice.account,
        invoice=invoice,
        gateway="card",
        status=PaymentStatus.FAILED,
        amount=899,
        currency="EUR",
        failure_message="Your card was declined.",
    )
    node, _ = node_create(
        name="fra-1",
        region="eu-central",
        agent_url="http://127.0.0.1:9",
        memory_mb=8192,
        disk_mb=102400,
        cpu_percent=800,
        actor=SYSTEM,
    )
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(hours=1))
    ServerFactory(node=node, status="running")
    person.second_factor_secret = give_second_factor(person)
    return person


def sign_in(page, user) -> None:
    page.goto("/login")
    page.fill("[name=username]", user.email)
    page.fill("[name=password]", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    type_second_factor(page, user.second_factor_secret)


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_staff_member_lands_on_their_day_at_a_glance(page, staff_day, screenshot, width):
    if width == "phone":
        page.set_viewport_size(PHONE)
    sign_in(page, staff_day)
    page.wait_for_url(re.compile(r".*/staff$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Staff home")

    desk = page.locator("#staff-desk")
    expect(desk.get_by_role("heading", level=2)).to_have_text("Your queues")
    expect(desk).to_contain_text("Lobby will not start")
    expect(desk).to_contain_text("breached")
    billing = page.locator("#staff-billing")
    expect(billing).to_contain_text("The billing job ran once today")
    expect(billing).to_contain_text("8.99 EUR")
    expect(billing).to_contain_text("Your card was declined.")
    nodes = page.locator("#staff-nodes")
    expect(nodes.locator("tbody tr")).to_have_count(1)
    expect(nodes).to_contain_text("silent for over 5 min while servers run")
    for name in ("Desk", "Reports", "Admin", "API documentation"):
        expect(
            page.get_by_role("navigation", name="Staff pages").get_by_role("link", name=name)
        ).to_be_visible()
    # Nothing reaches past a phone's edge.
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    screenshot(f"staff-home-{width}")

    desk.get_by_role("link", name=re.compile("Lobby will not start")).click()
    page.wait_for_url(re.compile(r".*/desk/tickets/tkt_\w+$"))

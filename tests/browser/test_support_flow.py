"""Support in a real browser: a customer opens a ticket about their server, a staff member of
the department answers it from the desk (an internal note first, then a reply), and the
customer sees the reply, never the note, with the ticket marked answered."""

import re

import pytest

from accounts.models import User
from support.models import Department, Message, MessageKind, SlaPolicy, Ticket, TicketStatus
from tests.browser.conftest import SCREENSHOTS, give_second_factor, type_second_factor
from tests.factories import MembershipFactory, ServerFactory, UserFactory

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "correct-horse-battery"  # what tests.factories.UserFactory sets
# Around the clock, as tests/support/conftest.py sets them.
TARGETS = {
    "urgent": {"first_response_minutes": 60, "resolution_minutes": 240},
    "high": {"first_response_minutes": 120, "resolution_minutes": 480},
    "normal": {"first_response_minutes": 240, "resolution_minutes": 1440},
}
SUBJECT = "Survival SMP does not start after the update"
FIRST_MESSAGE = "Since this morning's update the server stops at 'Loading world'."
NOTE = "Internal: the node eu-central-3 had a full disk overnight; cleaned up."
REPLY = "Sorry about that: the machine ran out of disk space. Please start it again now."


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Attachments, were any sent, land in the test's own folder."""
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def technical(db):
    policy = SlaPolicy.objects.create(name="Standard", targets=TARGETS)
    Department.objects.create(name="Billing", email="billing@desk.example", sla_policy=policy)
    return Department.objects.create(
        name="Technical", email="support@desk.example", sla_policy=policy
    )


@pytest.fixture
def agent(technical):
    """A staff member of Technical."""
    user = UserFactory(email="agent@hosting.example", name="Alan Agent", is_staff=True)
    technical.members.add(user)
    user.second_factor_secret = give_second_factor(user)  # staff need one for the desk
    return user


@pytest.fixture
def desk_page(browser, live_server):
    """A second browser, cookies and all, for the staff member."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def sign_in(page, user: User, secret: str | None = None) -> None:
    page.goto("/login")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if secret:
        type_second_factor(page, secret)
    page.wait_for_url(re.compile(r".*/(staff)?$"))  # staff with no account: their home


def test_a_customer_opens_a_ticket_and_staff_answer_it_from_the_desk(
    page, desk_page, technical, agent, screenshot
):
    membership = MembershipFactory(account__name="Blocky Worlds", user__name="Cora Customer")
    customer, account = membership.user, membership.account
    ServerFactory(account=account, name="Creative lobby")
    server = ServerFactory(account=account, name="Survival SMP")

    # The customer opens a ticket about their server from Support.
    sign_in(page, customer)
    menu = page.get_by_role("navigation", name="Main")
    menu.get_by_role("link", name="Support").click()
    page.wait_for_url("/support")
    expect(page.get_by_role("heading", level=1)).to_have_text("Support")
    page.get_by_role("link", name="New ticket").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New ticket")
    page.get_by_label("Department").select_option(label="Technical")
    page.get_by_label("Priority").select_option(label="High")
    page.get_by_label("Subject").fill(SUBJECT)
    page.get_by_label("Server or bot").select_option(label="Survival SMP")
    page.get_by_label("Message").fill(FIRST_MESSAGE)
    screenshot("support-new-ticket")
    page.get_by_role("button", name="Open ticket").click()

    page.wait_for_url(re.compile(r".*/support/tkt_\w+$"))
    ticket = Ticket.objects.get()
    assert (ticket.account_id, ticket.department_id, ticket.server_id) == (
        account.id,
        technical.id,
        server.id,
    )
    assert ticket.requester_id == customer.id
    assert ticket.priority == "high"
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_contain_text(f"#{ticket.number} {SUBJECT}")
    expect(heading).to_contain_text("Open")
    expect(page.get_by_role("status")).to_have_text(
        f"Ticket #{ticket.number} is open: our answer will show on this page."
    )
    expect(page.locator("#ticket-facts")).to_contain_text("Survival SMP")
    conversation = page.locator("#conversation")
    expect(conversation).to_contain_text(FIRST_MESSAGE)
    expect(conversation).to_contain_text("Cora Customer")

    # Staff of Technical find it in the desk's queue, with the customer's server beside it.
    sign_in(desk_page, agent, agent.second_factor_secret)
    staff_menu = desk_page.get_by_role("navigation", name="Main")
    staff_menu.get_by_role("link", name="Desk").click()
    desk_page.wait_for_url("/desk")
    expect(desk_page.get_by_role("heading", level=1)).to_have_text("Desk")
    row = desk_page.locator("#desk-tickets tbody tr", has_text=SUBJECT)
    expect(row).to_have_count(1)
    expect(row).to_contain_text(customer.email)
    expect(row).to_contain_text("Blocky Worlds")
    expect(row).to_contain_text("Technical")
    expect(row).to_contain_text("High")
    row.get_by_role("link", name=f"#{ticket.number} {SUBJECT}").click()
    desk_page.wait_for_url(f"/desk/tickets/{ticket.id}")
    expect(desk_page.get_by_role("heading", level=1)).to_have_text(f"#{ticket.number} {SUBJECT}")
    expect(desk_page.locator("#conversation")).to_contain_text(FIRST_MESSAGE)
    expect(desk_page.locator("#ticket-fields")).to_contain_text("Survival SMP")
    customer_panel = desk_page.get_by_role("region", name="Customer")
    expect(customer_panel).to_contain_text("Blocky Worlds")
    expect(customer_panel.locator("#customer-servers li")).to_have_text(
        [re.compile("^Creative lobby"), re.compile("^Survival SMP")]
    )

    # The side panel's status menu chooses nothing by itself (it used to preselect "Closed").
    expect(desk_page.locator("#status-select")).to_have_value("")

    # An internal note first (it takes the unassigned ticket), then the reply to the customer.
    reply_form = desk_page.locator("#reply-form")
    reply_form.get_by_label("Internal note").check()
    expect(reply_form.get_by_label("Take the ticket: assign it to me")).to_be_checked()
    reply_form.get_by_label("Message").fill(NOTE)
    reply_form.get_by_role("button", name="Send", exact=True).click()
    expect(desk_page.get_by_role("status")).to_have_text(
        "Internal note added; the ticket is yours."
    )
    note_entry = desk_page.locator("#conversation li", has_text=NOTE)
    expect(note_entry).to_contain_text("Internal note · only staff see this")
    expect(note_entry).to_have_class(re.compile("ticket-entry-internal"))
    expect(desk_page.locator("#ticket-status")).to_have_text("Open")
    expect(reply_form.locator("#take-field")).to_have_count(0)  # it is the agent's now

    reply_form.get_by_label("Reply to customer").check()
    reply_form.get_by_label("Message").fill(REPLY)
    reply_form.get_by_role("button", name="Send", exact=True).click()
    expect(desk_page.get_by_role("status")).to_have_text("Reply sent.")
    reply_entry = desk_page.locator("#conversation li", has_text=REPLY)
    expect(reply_entry).to_contain_text("Staff reply")
    expect(reply_entry).to_contain_text("Alan Agent")
    expect(desk_page.locator("#ticket-status")).to_have_text("Answered")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    desk_page.screenshot(path=str(SCREENSHOTS / "support-desk-answered.png"), full_page=True)

    # The customer sees the reply, from the support team, and never the note.
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Answered")
    staff_entry = conversation.locator("li", has_text=REPLY)
    expect(staff_entry).to_have_count(1)
    expect(staff_entry).to_contain_text("Support team")
    expect(staff_entry).not_to_contain_text("Alan Agent")
    expect(page.locator("body")).not_to_contain_text(NOTE)
    assert NOTE not in page.content()
    assert "eu-central-3" not in page.content()
    screenshot("support-ticket-answered")

    # The list says so too.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Support").click()
    expect(page.locator(f"#ticket-{ticket.id}")).to_contain_text("Answered")

    ticket.refresh_from_db()
    assert ticket.status == TicketStatus.PENDING_CUSTOMER
    assert ticket.first_response_at is not None
    from_staff = Message.objects.filter(ticket=ticket, from_staff=True).exclude(
        kind=MessageKind.SYSTEM
    )
    assert sorted(from_staff.values_list("kind", "body", "author_id")) == sorted(
        [(MessageKind.INTERNAL, NOTE, agent.id), (MessageKind.PUBLIC, REPLY, agent.id)]
    )
    customer_messages = Message.objects.filter(ticket=ticket, from_staff=False).exclude(
        kind=MessageKind.SYSTEM
    )
    assert list(customer_messages.values_list("kind", "body", "author_id")) == [
        (MessageKind.PUBLIC, FIRST_MESSAGE, customer.id)
    ]

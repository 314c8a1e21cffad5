"""The staff desk in the dashboard: who reaches it, the queues (mine, each department, all of
mine) sorted by SLA due time with breach markers, the conversation with replies and internal
notes, macros, the side panel's changes and the customer's context beside the ticket."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from events.services import record_event
from support.models import Macro, Message, Ticket
from support.selectors import messages_visible
from support.services.tickets import Requester, ticket_open, ticket_status_change
from tests.billing.api.conftest import data_of
from tests.dashboard import messages_of, signed_in
from tests.factories import InvoiceFactory, ServerFactory, UserFactory
from tests.support.test_tickets import open_ticket, reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def both_agent(technical, billing_department):
    """A staff member of Technical and of Billing."""
    user = UserFactory(email="both@hosting.example", is_staff=True)
    technical.members.add(user)
    billing_department.members.add(user)
    return user


def ticket_url(ticket, suffix: str = "") -> str:
    return f"/desk/tickets/{ticket.id}{suffix}"


def rows(response) -> list[int]:
    return [ticket.number for ticket in response.context["tickets"]]


def queue_names(response) -> list[str]:
    return [queue["name"] for queue in response.context["queues"]]


def set_due(ticket, minutes: int | None, **fields) -> None:
    due = timezone.now() + timedelta(minutes=minutes) if minutes is not None else None
    Ticket.objects.filter(pk=ticket.pk).update(
        first_response_due_at=due, resolution_due_at=due, **fields
    )


# --- Who reaches the desk ----------------------------------------------------------------------


def test_the_desk_is_the_404_page_for_customers_and_staff_without_a_department(
    owner, account, technical, agent
):
    ticket = open_ticket(owner, account, technical)
    stranger = UserFactory(is_staff=True)
    for user in (owner, stranger):
        client = signed_in(user)
        assert client.get("/desk").status_code == 404
        assert client.get(ticket_url(ticket)).status_code == 404
    assert signed_in(agent).get("/desk").status_code == 200


def test_a_visitor_is_sent_to_sign_in(technical):
    from django.test import Client

    response = Client().get("/desk")
    assert response.status_code == 302 and "/login" in response["Location"]


def test_staff_without_an_account_see_the_desk_in_their_navigation(agent):
    body = signed_in(agent).get("/desk").content.decode()
    assert 'id="nav-desk" href="/desk" aria-current="page">Desk</a>' in body
    assert 'id="nav-desk"' not in signed_in(UserFactory(is_staff=True)).get("/").content.decode()


def test_staff_of_another_department_see_neither_the_ticket_nor_its_files(
    owner, account, technical, agent, billing_agent
):
    ticket = open_ticket(owner, account, technical)
    note = reply(ticket, agent, "Log attached", staff=True, internal=True)
    signed_in(agent).post(
        ticket_url(ticket),
        {
            "kind": "note",
            "body": "See the log",
            "attachments": [SimpleUploadedFile("crash.log", b"java.lang.OutOfMemoryError")],
        },
    )
    attachment = Message.objects.filter(ticket=ticket).exclude(pk=note.pk).last().attachments.get()
    other = signed_in(billing_agent)

    assert rows(other.get("/desk")) == []
    assert other.get(ticket_url(ticket)).status_code == 404
    assert other.post(ticket_url(ticket), {"kind": "reply", "body": "Hi"}).status_code == 404
    assert other.post(ticket_url(ticket, "/status"), {"status": "on_hold"}).status_code == 404
    assert other.get(f"/desk/attachments/{attachment.id}").status_code == 404
    assert Ticket.objects.get(pk=ticket.pk).status == "open"

    download = signed_in(agent).get(f"/desk/attachments/{attachment.id}")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"java.lang.OutOfMemoryError"
    assert download["Content-Disposition"].startswith('attachment; filename="crash.log"')
    assert download["X-Content-Type-Options"] == "nosniff"
    assert "no-store" in download["Cache-Control"] and "private" in download["Cache-Control"]


# --- Queues ------------------------------------------------------------------------------------


def test_staff_in_two_departments_see_both_queues(
    owner, account, technical, billing_department, both_agent, agent
):
    tech = open_ticket(owner, account, technical, subject="Lag")
    money = open_ticket(owner, account, billing_department, subject="Refund")
    client = signed_in(both_agent)

    everything = client.get("/desk")
    assert sorted(rows(everything)) == [tech.number, money.number]
    assert queue_names(everything) == [
        "All my departments",
        "Assigned to me",
        "Billing",
        "Technical",
    ]
    assert [queue["count"] for queue in everything.context["queues"]] == [2, 0, 1, 1]
    assert rows(client.get("/desk", {"department": billing_department.pk})) == [money.number]
    assert rows(client.get("/desk", {"department": technical.pk})) == [tech.number]
    assert rows(signed_in(agent).get("/desk")) == [tech.number]
    # A department one does not work is no choice of the menu: the filter is left out.
    refused = signed_in(agent).get("/desk", {"department": billing_department.pk})
    assert rows(refused) == [tech.number]
    assert refused.context["listing"].notices[0].startswith("The department filter was left out")


def test_mine_holds_the_tickets_given_to_me(owner, account, technical, agent):
    colleague = UserFactory(is_staff=True)
    technical.members.add(colleague)
    mine = open_ticket(owner, account, technical, subject="Mine")
    theirs = open_ticket(owner, account, technical, subject="Theirs")
    nobodys = open_ticket(owner, account, technical, subject="Nobody's")
    Ticket.objects.filter(pk=mine.pk).update(assignee=agent)
    Ticket.objects.filter(pk=theirs.pk).update(assignee=colleague)
    client = signed_in(agent)

    response = client.get("/desk", {"assignee": "me"})
    assert rows(response) == [mine.number]
    assert [queue["current"] for queue in response.context["queues"]][:2] == [False, True]
    assert rows(client.get("/desk", {"assignee": "none"})) == [nobodys.number]
    assert rows(client.get("/desk", {"assignee": colleague.pk})) == [theirs.number]


def test_the_queue_is_sorted_by_when_each_ticket_is_due(owner, account, technical, agent):
    later = open_ticket(owner, account, technical, subject="Later")
    sooner = open_ticket(owner, account, technical, subject="Sooner")
    untimed = open_ticket(owner, account, technical, subject="No target")
    answered = open_ticket(owner, account, technical, subject="Answered")
    set_due(later, 300)
    set_due(sooner, 30)
    set_due(untimed, None)
    # Answered: the first response no longer counts, its resolution is due in 100 minutes.
    Ticket.objects.filter(pk=answered.pk).update(
        first_response_at=timezone.now(),
        first_response_due_at=timezone.now() + timedelta(minutes=5),
        resolution_due_at=timezone.now() + timedelta(minutes=100),
    )
    client = signed_in(agent)

    expected = [sooner.number, answered.number, later.number, untimed.number]
    assert rows(client.get("/desk")) == expected
    assert rows(client.get("/desk", {"sort": "-due"})) == [
        later.number,
        answered.number,
        sooner.number,
        untimed.number,
    ]
    assert rows(client.get("/desk", {"sort": "number"})) == sorted(expected)


def test_late_tickets_carry_a_breach_marker_in_words(owner, account, technical, agent):
    late = open_ticket(owner, account, technical, subject="Late")
    fine = open_ticket(owner, account, technical, subject="Fine")
    set_due(late, -10, first_response_breached=True)
    client = signed_in(agent)

    body = client.get("/desk").content.decode()
    late_at, fine_at = (body.index(f'id="ticket-{each.number}"') for each in (late, fine))
    late_row = body[late_at:fine_at]
    assert "First response late" in late_row and "overdue" in late_row
    fine_row = body[fine_at:].split("</tr>")[0]
    assert "late" not in fine_row and "overdue" not in fine_row
    assert rows(client.get("/desk", {"breached": "true"})) == [late.number]
    assert rows(client.get("/desk", {"breached": "false"})) == [fine.number]
    assert "First response late" in client.get(ticket_url(late)).content.decode()


def test_finished_tickets_leave_the_queue_unless_asked_for(owner, account, technical, agent):
    waiting = open_ticket(owner, account, technical, subject="Waiting")
    done = open_ticket(owner, account, technical, subject="Done")
    ticket_status_change(ticket=done, status="resolved", actor=SYSTEM, by_staff=True)
    client = signed_in(agent)

    assert rows(client.get("/desk")) == [waiting.number]
    assert rows(client.get("/desk", {"status": "resolved"})) == [done.number]
    assert sorted(rows(client.get("/desk", {"status": "all"}))) == [waiting.number, done.number]


def test_the_queue_is_searched_by_number_subject_and_requester(owner, account, technical, agent):
    crash = open_ticket(owner, account, technical, subject="Crash on boot")
    guest, _ = ticket_open(
        requester=Requester(email="guest@elsewhere.example"),
        subject="Question",
        body="Hello",
        department=technical,
        channel="email",
        actor=SYSTEM,
    )
    client = signed_in(agent)

    assert rows(client.get("/desk", {"q": str(crash.number)})) == [crash.number]
    assert rows(client.get("/desk", {"q": f"#{guest.number}"})) == [guest.number]
    assert rows(client.get("/desk", {"q": "crash"})) == [crash.number]
    assert rows(client.get("/desk", {"q": "elsewhere"})) == [guest.number]
    assert rows(client.get("/desk", {"q": "9" * 30})) == []


def test_the_queue_reads_the_tickets_table_three_times_whatever_the_rows(
    owner, account, technical, billing_department, both_agent, django_assert_max_num_queries
):
    for number in range(3):
        ticket = open_ticket(owner, account, technical, subject=f"First {number}")
        Ticket.objects.filter(pk=ticket.pk).update(assignee=both_agent)
    client = signed_in(both_agent)
    # The session, the user, the membership, the departments (the desk's check, the
    # navigation's, the two menus), the staff menu; and of the tickets: the count, the page
    # (departments, assignees and accounts joined) and the tabs' counts.
    with django_assert_max_num_queries(12) as few:
        client.get("/desk")
    for number in range(30):
        open_ticket(owner, account, billing_department, subject=f"More {number}")
    with django_assert_max_num_queries(len(few.captured_queries)) as many:
        response = client.get("/desk")
    assert len(rows(response)) == 25
    on_tickets = [q for q in many.captured_queries if 'FROM "support_ticket"' in q["sql"]]
    assert len(on_tickets) <= 3


# --- The conversation --------------------------------------------------------------------------


def test_the_page_shows_the_whole_conversation(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical, body="It stops at 'Loading world'.")
    reply(ticket, agent, "Checking the logs", staff=True, internal=True)
    ticket_status_change(ticket=ticket, status="on_hold", actor=Actor(user=agent), by_staff=True)

    body = signed_in(agent).get(ticket_url(ticket)).content.decode()
    assert "It stops at &#x27;Loading world&#x27;." in body
    assert "Internal note · only staff see this</span>" in body and "Checking the logs" in body
    assert "ticket-entry-internal" in body
    assert "System entry</span>" in body and "Status: On hold." in body


def test_a_reply_reaches_the_customer_and_a_note_does_not(
    owner, owner_api, account, technical, agent
):
    ticket = open_ticket(owner, account, technical)
    client = signed_in(agent)

    sent = client.post(ticket_url(ticket), {"kind": "reply", "body": "Try 4 GB of memory."})
    assert sent.status_code == 302 and sent["Location"] == ticket_url(ticket)
    assert messages_of(client.get(ticket_url(ticket))) == ["Reply sent."]
    noted = client.post(ticket_url(ticket), {"kind": "note", "body": "Customer on old plan."})
    assert noted.status_code == 302

    public, internal = Message.objects.filter(ticket=ticket).order_by("created_at", "id")[1:]
    assert (public.kind, public.from_staff, public.author_id) == ("public", True, agent.pk)
    assert (internal.kind, internal.body) == ("internal", "Customer on old plan.")
    ticket.refresh_from_db()
    assert ticket.status == "pending_customer" and ticket.first_response_at is not None
    assert internal not in messages_visible(ticket, staff=False)
    shown = data_of(owner_api.get(f"/v1/tickets/{ticket.id}/messages"))["messages"]
    assert [message["body"] for message in shown][-1] == "Try 4 GB of memory."
    assert all(message["id"] != internal.id for message in shown)


def test_a_reply_may_set_the_status_after_it(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    signed_in(agent).post(
        ticket_url(ticket), {"kind": "reply", "body": "Fixed.", "set_status": "resolved"}
    )
    assert Ticket.objects.get(pk=ticket.pk).status == "resolved"


def test_refusals_of_the_reply_stay_on_the_form(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    client = signed_in(agent)

    empty = client.post(ticket_url(ticket), {"kind": "reply", "body": "  "})
    assert empty.status_code == 200
    assert empty.context["form"].errors["body"] == ["This field is required."]
    note = client.post(
        ticket_url(ticket), {"kind": "note", "body": "Keep", "set_status": "resolved"}
    )
    assert "A note leaves the status" in note.context["form"].errors["set_status"][0]
    program = client.post(
        ticket_url(ticket),
        {
            "kind": "reply",
            "body": "Here",
            "attachments": [SimpleUploadedFile("notes.txt", b"MZ\x90\x00" + b"\x00" * 60 + b"PE")],
        },
    )
    assert program.status_code == 200
    assert program.context["form"]["body"].value() == "Here"
    assert Message.objects.filter(ticket=ticket).count() == 1


def test_macros_of_the_department_and_global_ones_fill_the_form(
    owner, account, technical, billing_department, agent
):
    ticket = open_ticket(owner, account, technical)
    restart = Macro.objects.create(
        name="Restart",
        body="Please restart the server.",
        department=technical,
        set_status="pending_customer",
    )
    Macro.objects.create(name="Thanks", body="Thank you!")
    Macro.objects.create(name="Refund", body="Refunded.", department=billing_department)
    client = signed_in(agent)

    page = client.get(ticket_url(ticket))
    assert [label for _, label in page.context["form"].fields["macro"].choices][1:] == [
        "Restart",
        "Thanks",
    ]
    assert 'id="desk-macros"' in page.content.decode()
    filled = client.post(
        ticket_url(ticket),
        {"kind": "reply", "body": "Hello,", "macro": restart.pk, "insert_macro": "1"},
    )
    assert filled.status_code == 200
    form = filled.context["form"]
    assert form["body"].value() == "Hello,\n\nPlease restart the server."
    assert form["set_status"].value() == "pending_customer"
    assert Message.objects.filter(ticket=ticket).count() == 1  # nothing was sent


# --- The side panel ----------------------------------------------------------------------------


def test_assign_status_and_fields_change_the_ticket(
    owner, account, technical, billing_department, agent
):
    colleague = UserFactory(email="colleague@hosting.example", is_staff=True)
    technical.members.add(colleague)
    ticket = open_ticket(owner, account, technical)
    client = signed_in(agent)

    assigned = client.post(ticket_url(ticket, "/assign"), {"assignee": colleague.pk})
    assert assigned["Location"] == ticket_url(ticket)
    assert Ticket.objects.get(pk=ticket.pk).assignee_id == colleague.pk
    client.post(ticket_url(ticket, "/status"), {"status": "on_hold"})
    client.post(
        ticket_url(ticket, "/update"),
        {"department": technical.pk, "priority": "urgent", "tags": "Lag, minecraft, lag"},
    )
    ticket.refresh_from_db()
    assert (ticket.status, ticket.priority, ticket.tags) == (
        "on_hold",
        "urgent",
        ["lag", "minecraft"],
    )
    assert messages_of(client.get(ticket_url(ticket)))[-1] == f"Ticket #{ticket.number} updated."

    moved = client.post(
        ticket_url(ticket, "/update"),
        {"department": billing_department.pk, "priority": "urgent", "tags": "lag, minecraft"},
    )
    assert moved["Location"] == "/desk"  # no longer one of this person's tickets
    ticket.refresh_from_db()
    assert ticket.department_id == billing_department.pk and ticket.assignee_id is None


def test_refusals_of_the_side_panel_are_error_messages(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    ticket_status_change(ticket=ticket, status="resolved", actor=SYSTEM, by_staff=True)
    outsider_staff = UserFactory(is_staff=True)
    client = signed_in(agent)

    refused = client.post(ticket_url(ticket, "/status"), {"status": "on_hold"})
    assert refused["Location"] == ticket_url(ticket)
    page = client.get(ticket_url(ticket))
    assert messages_of(page) == ["Cannot move it to on_hold: the ticket is resolved."]
    assert Ticket.objects.get(pk=ticket.pk).status == "resolved"
    client.post(ticket_url(ticket, "/assign"), {"assignee": outsider_staff.pk})
    assert "not one of the available choices" in messages_of(client.get(ticket_url(ticket)))[0]
    assert Ticket.objects.get(pk=ticket.pk).assignee_id is None
    assert client.get(ticket_url(ticket, "/assign")).status_code == 405


# --- The customer beside the ticket ------------------------------------------------------------


def test_the_customer_context_shows_servers_invoices_and_activity(owner, account, technical, agent):
    ServerFactory(account=account, name="Survival", status="running")
    ServerFactory(account=account, name="Creative", status="stopped")
    invoice = InvoiceFactory(
        account=account,
        lines=[{"description": "Plan", "quantity": 1, "unit_amount": 1250}],
        finalize=True,
    )
    record_event(
        type="account.updated",
        account=account,
        object_type="account",
        obj={"id": account.id, "name": account.name},
        actor=Actor(user=owner),
    )
    ticket = open_ticket(owner, account, technical)

    response = signed_in(agent).get(ticket_url(ticket))
    customer = response.context["customer"]
    assert [server.name for server in customer["servers"]] == ["Creative", "Survival"]
    assert [each.id for each in customer["invoices"]] == [invoice.id]
    body = response.content.decode()
    assert "12.50 EUR" in body and "Running</span>" in body
    assert "ticket.created" in body and "account.updated" in body


def test_a_guest_ticket_shows_only_the_requester_address(technical, agent):
    ticket, _ = ticket_open(
        requester=Requester(email="guest@elsewhere.example"),
        subject="Question",
        body="Hello",
        department=technical,
        channel="email",
        actor=SYSTEM,
    )
    response = signed_in(agent).get(ticket_url(ticket))
    assert response.context["customer"] is None
    assert 'Guest: <span class="strong">guest@elsewhere.example</span>' in response.content.decode()


def test_replying_offers_to_take_the_ticket_and_takes_it_only_with_the_reply(
    owner, account, technical, agent, both_agent
):
    from support.services.tickets import ticket_assign

    ticket = open_ticket(owner, account, technical)
    client = signed_in(agent)
    page = client.get(ticket_url(ticket)).content.decode()
    assert 'id="take-field"' in page and 'name="take" id="id_take" checked' in page

    # A refused reply (no text) takes nothing: both happen together or neither.
    refused = client.post(ticket_url(ticket), {"kind": "reply", "body": "", "take": "on"})
    assert refused.status_code == 200
    ticket.refresh_from_db()
    assert ticket.assignee is None

    client.post(ticket_url(ticket), {"kind": "reply", "body": "On it.", "take": "on"})
    ticket.refresh_from_db()
    assert ticket.assignee == agent
    assert "Reply sent; the ticket is yours." in messages_of(client.get(ticket_url(ticket)))
    assert 'id="take-field"' not in client.get(ticket_url(ticket)).content.decode()

    # Someone else's ticket: offered, not ticked; a reply without it leaves the assignee.
    ticket_assign(ticket=ticket, assignee=both_agent, actor=Actor(user=both_agent))
    page = client.get(ticket_url(ticket)).content.decode()
    assert 'id="take-field"' in page and 'name="take" id="id_take" checked' not in page
    client.post(ticket_url(ticket), {"kind": "note", "body": "FYI"})
    ticket.refresh_from_db()
    assert ticket.assignee == both_agent


def test_the_status_menu_preselects_nothing(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    page = signed_in(agent).get(ticket_url(ticket)).content.decode()
    assert '<option value="" selected disabled>Choose a status…</option>' in page
    refused = signed_in(agent).post(ticket_url(ticket, "/status"), {"status": ""})
    ticket.refresh_from_db()
    assert refused.status_code == 302 and ticket.status == "open"

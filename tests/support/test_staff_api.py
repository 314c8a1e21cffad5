"""The staff API of the desk (``admin:read`` / ``admin:write``): the tickets of the staff
member's departments, internal notes, assignment, status, department and priority, merging;
a staff member of another department sees none of them."""

import pytest

from accounts.roles import Role
from events.models import Event
from support.models import Message, Ticket
from tests.billing.api.conftest import data_of, listed
from tests.envelopes import error_of
from tests.factories import AccountFactory, MembershipFactory
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db
STAFF = ["admin:read", "admin:write"]


@pytest.fixture
def desk_account(db):
    return AccountFactory(name="Hosting Company")


def staff_client(user, desk_account, make_token, client_for, scopes=STAFF):
    MembershipFactory(account=desk_account, user=user, role=Role.OWNER)
    return client_for(make_token(user, desk_account, scopes))


@pytest.fixture
def agent_api(agent, desk_account, make_token, client_for):
    return staff_client(agent, desk_account, make_token, client_for)


@pytest.fixture
def billing_agent_api(billing_agent, desk_account, make_token, client_for):
    return staff_client(billing_agent, desk_account, make_token, client_for)


def test_staff_see_the_tickets_of_their_departments_with_the_sla(
    agent_api, billing_agent_api, owner, account, technical
):
    ticket = open_ticket(owner, account, technical)

    assert listed(agent_api.get("/v1/admin/tickets"), "tickets") == [ticket.id]
    shown = data_of(agent_api.get(f"/v1/admin/tickets/{ticket.id}"))["ticket"]
    assert shown["assignee"] is None and shown["sla"]["paused"] is False
    assert shown["sla"]["first_response_due_at"] is not None
    assert listed(billing_agent_api.get("/v1/admin/tickets"), "tickets") == []
    other = billing_agent_api.get(f"/v1/admin/tickets/{ticket.id}")
    assert error_of(other, 404)["code"] == "not_found"


def test_a_customer_key_cannot_use_the_staff_api(owner_api, owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    refused = owner_api.get(f"/v1/admin/tickets/{ticket.id}")
    assert error_of(refused, 403)["code"] == "insufficient_scope"


def test_notes_replies_assignment_and_status(
    agent_api, agent, owner, owner_api, account, technical
):
    ticket = open_ticket(owner, account, technical)
    path = f"/v1/admin/tickets/{ticket.id}"

    note = agent_api.post(
        f"{path}/messages", {"body": "Check the disk.", "internal": True}, format="json"
    )
    reply = agent_api.post(
        f"{path}/messages", {"body": "Restored.", "set_status": "resolved"}, format="json"
    )
    assigned = agent_api.post(f"{path}/assign", {"assignee": agent.id}, format="json")

    assert data_of(note, 201)["message"]["kind"] == "internal"
    assert data_of(reply, 201)["message"]["kind"] == "public"
    assert data_of(assigned)["ticket"]["assignee"] == agent.id
    assert data_of(agent_api.get(path))["ticket"]["status"] == "resolved"

    def bodies(response):
        return [each["body"] for each in data_of(response)["messages"]]

    staff_view = bodies(agent_api.get(f"{path}/messages"))
    customer_view = bodies(owner_api.get(f"/v1/tickets/{ticket.id}/messages"))
    assert "Check the disk." in staff_view and "Check the disk." not in customer_view
    assert "Restored." in customer_view
    reopened = agent_api.post(f"{path}/status", {"status": "open"}, format="json")
    assert data_of(reopened)["ticket"]["status"] == "open"
    closed = agent_api.post(f"{path}/status", {"status": "closed"}, format="json")
    again = agent_api.post(f"{path}/status", {"status": "open"}, format="json")
    assert data_of(closed)["ticket"]["status"] == "closed"
    assert error_of(again, 409)["details"] == {"status": "closed", "allowed_statuses": []}


def test_assignment_outside_the_department_is_refused(
    agent_api, billing_agent, owner, account, technical
):
    ticket = open_ticket(owner, account, technical)
    refused = agent_api.post(
        f"/v1/admin/tickets/{ticket.id}/assign", {"assignee": billing_agent.id}, format="json"
    )
    assert error_of(refused, 400)["details"]["fields"][0]["code"] == "not_in_department"
    unknown = agent_api.post(
        f"/v1/admin/tickets/{ticket.id}/assign", {"assignee": "usr_x"}, format="json"
    )
    assert error_of(unknown, 400)["details"]["fields"][0]["code"] == "not_found"


def test_moving_to_another_department_and_merging(
    agent_api, owner, account, technical, billing_department
):
    first, duplicate = (
        open_ticket(owner, account, technical),
        open_ticket(owner, account, technical),
    )
    merged = agent_api.post(
        f"/v1/admin/tickets/{duplicate.id}/merge", {"into": first.id}, format="json"
    )
    assert data_of(merged)["ticket"]["merged_into"] == first.id
    assert Message.objects.filter(ticket=first).count() == 3

    moved = agent_api.patch(
        f"/v1/admin/tickets/{first.id}",
        {"priority": "urgent", "tags": ["Nether"], "department": billing_department.id},
        format="json",
    )

    ticket = data_of(moved)["ticket"]
    assert (ticket["priority"], ticket["tags"], ticket["department"]) == (
        "urgent",
        ["nether"],
        billing_department.id,
    )
    assert Event.objects.filter(type="ticket.updated", object_id=first.id).exists()
    # The agent is not in Billing: the ticket has left their desk.
    assert error_of(agent_api.get(f"/v1/admin/tickets/{first.id}"), 404)["code"] == "not_found"


def test_the_list_filters_for_the_desk(agent_api, agent, owner, account, technical):
    breached = open_ticket(owner, account, technical)
    Ticket.objects.filter(pk=breached.pk).update(first_response_breached=True)
    mine = open_ticket(owner, account, technical)
    agent_api.post(f"/v1/admin/tickets/{mine.id}/assign", {"assignee": agent.id}, format="json")

    def ids(**params):
        return listed(agent_api.get("/v1/admin/tickets", params), "tickets")

    assert ids(breached="true") == [breached.id]
    assert ids(assignee=agent.id) == [mine.id]
    assert ids(assignee="none") == [breached.id]
    assert ids(account=account.id, ordering="resolution_due_at") == [breached.id, mine.id]
    wrong = agent_api.get("/v1/admin/tickets", {"breached": "AAA"})
    assert error_of(wrong, 400)["code"] == "invalid_parameter"

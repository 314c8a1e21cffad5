"""Tickets through their services: opening, the conversation and its status, internal notes,
assignment, links to the account's objects, rating, merging and closing resolved tickets."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.actors import SYSTEM, Actor
from events.models import Event
from hosting.errors import Conflict, InvalidState, PermissionDenied, ValidationFailed
from support.models import Message, Ticket
from support.services.tickets import (
    Requester,
    ticket_assign,
    ticket_close,
    ticket_merge,
    ticket_open,
    ticket_rate,
    ticket_reopen,
    ticket_reply,
    ticket_status_change,
    ticket_update,
    tickets_autoclose,
)
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db


def open_ticket(owner, account, department, **kwargs):
    requester = Requester(email=owner.email, name="Owner", user=owner, account=account)
    ticket, _ = ticket_open(
        requester=requester,
        subject=kwargs.pop("subject", "Server will not start"),
        body=kwargs.pop("body", "It stops at 'Loading world'."),
        department=department,
        channel="web",
        actor=Actor(user=owner),
        **kwargs,
    )
    return ticket


def reply(ticket, who, body="More", *, staff, **kwargs):
    return ticket_reply(
        ticket=ticket, body=body, actor=Actor(user=who), by_staff=staff, channel="web", **kwargs
    )


def status_of(ticket) -> str:
    return Ticket.objects.get(pk=ticket.pk).status


def test_opening_numbers_the_ticket_starts_its_clocks_and_records_it(owner, account, technical):
    before = timezone.now()
    first = open_ticket(owner, account, technical)
    second = open_ticket(owner, account, technical, priority="urgent")

    assert second.number == first.number + 1
    assert (first.status, first.priority, first.channel) == ("open", "normal", "web")
    assert first.first_response_due_at - before >= timedelta(minutes=240)
    assert first.first_response_due_at - before < timedelta(minutes=241)
    assert second.resolution_due_at - second.created_at == timedelta(minutes=240)
    [message] = Message.objects.filter(ticket=first)
    assert (message.kind, message.author, message.body) == (
        "public",
        owner,
        "It stops at 'Loading world'.",
    )
    event = Event.objects.get(type="ticket.created", object_id=first.id)
    assert event.account_id == account.id and event.data["object"]["number"] == first.number
    assert "assignee" not in event.data["object"]  # the customer's view


def test_a_ticket_links_only_objects_of_its_account(owner, account, other_account, technical):
    ours = ServerFactory(account=account)
    theirs = ServerFactory(account=other_account)
    ticket = open_ticket(owner, account, technical, links={"server": ours.id})
    assert ticket.server == ours

    with pytest.raises(ValidationFailed) as refused:
        open_ticket(owner, account, technical, links={"server": theirs.id})
    assert refused.value.details["fields"][0] == {
        "name": "server",
        "code": "not_found",
        "message": f"No server {theirs.id} in this account.",
    }


def test_a_ticket_opens_only_in_an_active_department(owner, account, technical):
    technical.active = False
    technical.save()
    with pytest.raises(ValidationFailed):
        open_ticket(owner, account, technical)
    assert not Ticket.objects.exists()


def test_the_conversation_moves_the_status_back_and_forth(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)

    reply(ticket, agent, "Try a fresh world.", staff=True)
    assert status_of(ticket) == "pending_customer"
    assert Ticket.objects.get(pk=ticket.pk).first_response_at is not None
    reply(ticket, owner, "Still broken.", staff=False)
    assert status_of(ticket) == "pending_staff"
    reply(ticket, agent, "Fixed the permissions.", staff=True, set_status="resolved")
    assert status_of(ticket) == "resolved"
    reply(ticket, owner, "It broke again.", staff=False)  # a reply reopens
    assert status_of(ticket) == "pending_staff"

    status_changes = Event.objects.filter(type="ticket.status_changed").order_by("created_at")
    changes = [event.data["previous_attributes"]["status"] for event in status_changes]
    assert changes == ["open", "pending_customer", "pending_staff", "resolved"]
    assert Event.objects.filter(type="ticket.replied").count() == 4


def test_an_internal_note_changes_nothing_and_is_never_an_event(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    events = Event.objects.count()

    note = reply(ticket, agent, "Customer is on the old plan.", staff=True, internal=True)

    assert note.kind == "internal"
    assert status_of(ticket) == "open"
    assert Ticket.objects.get(pk=ticket.pk).first_response_at is None
    assert Event.objects.count() == events
    with pytest.raises(PermissionDenied):
        reply(ticket, owner, "Sneaky", staff=False, internal=True)


def test_a_closed_ticket_takes_no_reply_and_cannot_reopen(owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    ticket_close(ticket=ticket, actor=Actor(user=owner))

    with pytest.raises(InvalidState) as refused:
        reply(ticket, owner, staff=False)
    assert refused.value.details == {"status": "closed", "allowed_statuses": []}
    with pytest.raises(InvalidState):
        ticket_reopen(ticket=ticket, actor=Actor(user=owner))
    system = Message.objects.filter(ticket=ticket, kind="system").get()
    assert system.body == "Status: Closed."


def test_customers_only_close_or_reopen_a_resolved_ticket(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    with pytest.raises(PermissionDenied):
        ticket_status_change(
            ticket=ticket, status="on_hold", actor=Actor(user=owner), by_staff=False
        )
    with pytest.raises(InvalidState):
        ticket_reopen(ticket=ticket, actor=Actor(user=owner))  # it is open already
    ticket_status_change(ticket=ticket, status="resolved", actor=Actor(user=agent), by_staff=True)
    ticket_reopen(ticket=ticket, actor=Actor(user=owner))
    assert status_of(ticket) == "open"
    assert Ticket.objects.get(pk=ticket.pk).resolved_at is None


def test_assignment_is_to_staff_of_the_department(owner, account, technical, agent, billing_agent):
    ticket = open_ticket(owner, account, technical)
    with pytest.raises(ValidationFailed) as refused:
        ticket_assign(ticket=ticket, assignee=billing_agent, actor=Actor(user=agent))
    assert refused.value.details["fields"][0]["code"] == "not_in_department"

    ticket_assign(ticket=ticket, assignee=agent, actor=Actor(user=agent))

    assert Ticket.objects.get(pk=ticket.pk).assignee == agent
    event = Event.objects.get(type="ticket.assigned")
    assert event.data["previous_attributes"] == {}  # customers never see who (issue 28)
    assert (
        Message.objects.filter(ticket=ticket, kind="system").get().body.startswith("Assigned to ")
    )


def test_auto_assignment_takes_the_department_s_staff_in_turn(
    owner, account, technical, agent, settings
):
    from tests.factories import UserFactory

    second = UserFactory(email="second@hosting.example", is_staff=True)
    technical.members.add(second)
    settings.SUPPORT_AUTO_ASSIGN = True

    assignees = [open_ticket(owner, account, technical).assignee for _ in range(4)]

    assert {assignees[0], assignees[1]} == {agent, second}
    assert assignees[2:] == assignees[:2]  # each in turn, the longest without one first


def test_moving_a_ticket_to_another_department_retargets_and_unassigns(
    owner, account, technical, billing_department, agent
):
    ticket = open_ticket(owner, account, technical)
    ticket_assign(ticket=ticket, assignee=agent, actor=Actor(user=agent))

    ticket = ticket_update(
        ticket=ticket,
        changes={
            "department": billing_department.id,
            "priority": "urgent",
            "tags": ["Minecraft", " crash ", "minecraft"],
        },
        actor=Actor(user=agent),
    )

    assert (ticket.department, ticket.assignee, ticket.priority) == (
        billing_department,
        None,
        "urgent",
    )
    assert ticket.tags == ["crash", "minecraft"]
    assert ticket.first_response_due_at == ticket.created_at + timedelta(minutes=60)
    with pytest.raises(ValidationFailed):
        ticket_update(ticket=ticket, changes={"status": "closed"}, actor=Actor(user=agent))


def test_a_rating_comes_after_resolution(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    with pytest.raises(InvalidState):
        ticket_rate(ticket=ticket, rating=5, actor=Actor(user=owner))
    ticket_status_change(ticket=ticket, status="resolved", actor=Actor(user=agent), by_staff=True)
    for bad in (0, 6, "5", True):
        with pytest.raises(ValidationFailed):
            ticket_rate(ticket=ticket, rating=bad, actor=Actor(user=owner))

    ticket = ticket_rate(ticket=ticket, rating=4, comment="Quick!", actor=Actor(user=owner))

    assert (ticket.rating, ticket.rating_comment) == (4, "Quick!")


def test_merging_moves_the_conversation_and_closes_the_duplicate(
    owner, account, other_account, outsider, technical, agent
):
    target = open_ticket(owner, account, technical, body="First")
    duplicate = open_ticket(owner, account, technical, body="Second")
    theirs = open_ticket(outsider, other_account, technical)

    with pytest.raises(ValidationFailed):
        ticket_merge(source=theirs, target=target, actor=Actor(user=agent))
    ticket_merge(source=duplicate, target=target, actor=Actor(user=agent))

    duplicate.refresh_from_db()
    assert (duplicate.status, duplicate.merged_into) == ("closed", target)
    bodies = list(Message.objects.filter(ticket=target).values_list("body", flat=True))
    assert bodies == ["First", "Second", f"Ticket #{duplicate.number} was merged into this one."]


def test_resolved_tickets_close_after_the_quiet_days(owner, account, technical, agent, settings):
    settings.SUPPORT_AUTOCLOSE_DAYS = 7
    old = open_ticket(owner, account, technical)
    recent = open_ticket(owner, account, technical)
    for ticket in (old, recent):
        ticket_status_change(ticket=ticket, status="resolved", actor=SYSTEM, by_staff=True)
    Ticket.objects.filter(pk=old.pk).update(resolved_at=timezone.now() - timedelta(days=8))

    assert tickets_autoclose() == 1

    assert (status_of(old), status_of(recent)) == ("closed", "resolved")


def test_the_same_e_mail_is_one_message(owner, account, technical):
    ticket = open_ticket(owner, account, technical)
    reply(ticket, owner, staff=False, email_message_id="abc@mail.example")
    with pytest.raises(Conflict):
        reply(ticket, owner, staff=False, email_message_id="abc@mail.example")
    assert Message.objects.filter(email_message_id="abc@mail.example").count() == 1

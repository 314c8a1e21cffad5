"""SLA clocks on tickets: due times in business hours, the resolution clock paused while the
ticket waits on the customer or is on hold, retargeting, and breaches flagged once as events."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.actors import SYSTEM, Actor
from events.models import Event
from support.models import Department, SlaPolicy, Ticket
from support.services.sla import tickets_sla_check
from support.services.tickets import ticket_reply, ticket_status_change, ticket_update
from support.upkeep import run as upkeep_run
from tests.support.test_tickets import open_ticket

pytestmark = pytest.mark.django_db

# Monday to Friday, 09:00 to 17:00 in Berlin (UTC+1 in November).
OFFICE = {
    "time_zone": "Europe/Berlin",
    "hours": {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")},
}
TARGETS = {"normal": {"first_response_minutes": 120, "resolution_minutes": 600}}
FRIDAY_4PM = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)  # 16:00 in Berlin


@pytest.fixture
def office(db):
    policy = SlaPolicy.objects.create(name="Office hours", targets=TARGETS, calendar=OFFICE)
    return Department.objects.create(name="Office", sla_policy=policy)


def test_due_times_count_business_hours_only(owner, account, office):
    with time_machine.travel(FRIDAY_4PM, tick=False):
        ticket = open_ticket(owner, account, office)

    # One business hour left on Friday, then Monday from 09:00 (08:00 UTC).
    assert ticket.first_response_due_at == datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    assert ticket.resolution_due_at == datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # Tue 10:00


def test_the_resolution_clock_pauses_while_the_customer_is_asked(owner, account, office, agent):
    office.members.add(agent)
    with time_machine.travel(FRIDAY_4PM, tick=False):
        ticket = open_ticket(owner, account, office)
    monday_10 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # 10:00 Berlin
    with time_machine.travel(monday_10, tick=False):
        ticket_reply(
            ticket=ticket,
            body="Which world?",
            actor=Actor(user=agent),
            by_staff=True,
            channel="web",
        )
    paused = Ticket.objects.get(pk=ticket.pk)
    assert paused.sla_running_since is None
    assert paused.sla_seconds_used == 2 * 3600  # Friday 16 to 17, Monday 09 to 10

    # The customer answers on Wednesday at 09:00 Berlin: 8 hours of the target remain.
    with time_machine.travel(datetime(2026, 11, 25, 8, 0, tzinfo=UTC), tick=False):
        ticket_reply(
            ticket=ticket,
            body="The nether.",
            actor=Actor(user=owner),
            by_staff=False,
            channel="web",
        )

    resumed = Ticket.objects.get(pk=ticket.pk)
    assert resumed.status == "pending_staff"
    assert resumed.resolution_due_at == datetime(2026, 11, 25, 16, 0, tzinfo=UTC)  # Wed 17:00
    assert resumed.first_response_at == monday_10 and not resumed.first_response_breached


def test_on_hold_pauses_too_and_a_new_priority_retargets(owner, account, office, agent):
    office.sla_policy.targets |= {
        "urgent": {"first_response_minutes": 30, "resolution_minutes": 120}
    }
    office.sla_policy.save()
    with time_machine.travel(datetime(2026, 11, 23, 9, 0, tzinfo=UTC), tick=False):  # Mon 10:00
        ticket = open_ticket(owner, account, office)
    with time_machine.travel(datetime(2026, 11, 23, 10, 0, tzinfo=UTC), tick=False):
        ticket_status_change(ticket=ticket, status="on_hold", actor=SYSTEM, by_staff=True)
    with time_machine.travel(datetime(2026, 11, 24, 8, 0, tzinfo=UTC), tick=False):  # Tue 09:00
        ticket_status_change(ticket=ticket, status="pending_staff", actor=SYSTEM, by_staff=True)
        ticket = ticket_update(
            ticket=Ticket.objects.get(pk=ticket.pk),
            changes={"priority": "urgent"},
            actor=Actor(user=agent),
        )

    # One of the urgent target's two hours was used on Monday: one is left from Tue 09:00.
    assert ticket.resolution_due_at == datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    assert ticket.first_response_due_at == datetime(2026, 11, 23, 9, 30, tzinfo=UTC)


def test_breaches_are_flagged_once_as_events(owner, account, office):
    with time_machine.travel(FRIDAY_4PM, tick=False):
        ticket = open_ticket(owner, account, office)

    assert tickets_sla_check(now=datetime(2026, 11, 23, 8, 59, tzinfo=UTC)) == 0
    assert tickets_sla_check(now=datetime(2026, 11, 23, 9, 0, tzinfo=UTC)) == 1
    with time_machine.travel(datetime(2026, 11, 30, tzinfo=UTC), tick=False):
        assert upkeep_run()["ticket SLA breaches flagged"] == 1  # the resolution, once

    ticket.refresh_from_db()
    assert ticket.first_response_breached and ticket.resolution_breached
    breached = Event.objects.filter(type="ticket.sla_breached").order_by("created_at")
    assert [event.data["object"]["breached"] for event in breached] == [
        "first_response",
        "resolution",
    ]
    assert tickets_sla_check(now=datetime(2026, 12, 30, tzinfo=UTC)) == 0


def test_a_waiting_ticket_does_not_breach_its_resolution(owner, account, office, agent):
    office.members.add(agent)
    with time_machine.travel(FRIDAY_4PM, tick=False):
        ticket = open_ticket(owner, account, office)
        ticket_reply(
            ticket=ticket,
            body="Which world?",
            actor=Actor(user=agent),
            by_staff=True,
            channel="web",
        )

    assert tickets_sla_check(now=FRIDAY_4PM + timedelta(days=30)) == 0

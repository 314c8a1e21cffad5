"""The desk's mail out, sent by the worker as the real task runs: public replies reach the
requester and the CC'd teammates (never their author) with the signed Reply-To and threading
headers, internal notes reach nobody, staff hear of new tickets, customers' replies and
assignments; and an answer to the desk's own Message-ID threads back."""

import pytest
from django.core import mail
from django_tasks_db.models import DBTaskResult

from accounts.actors import Actor
from hosting.errors import ValidationFailed
from support.models import Message
from support.services.mail import mail_receive
from support.services.notifications import (
    message_id_header,
    reply_address,
    ticket_assigned_mail_send,
    ticket_message_mail_send,
)
from support.services.tickets import Requester, ticket_assign, ticket_open
from tests.factories import UserFactory
from tests.support.test_tickets import open_ticket, reply

pytestmark = pytest.mark.django_db
TASKS = (ticket_message_mail_send, ticket_assigned_mail_send)


@pytest.fixture(autouse=True)
def desk(settings):
    settings.SUPPORT_REPLY_ADDRESS = "support@desk.example"
    settings.SITE_URL = "https://panel.example"


def send_desk_mail() -> list[mail.EmailMessage]:
    """Run the queued desk mail as the worker would, oldest first; return the outbox."""
    paths = [each.module_path for each in TASKS]
    by_path = {each.module_path: each for each in TASKS}
    for result in DBTaskResult.objects.ready().filter(task_path__in=paths).order_by("enqueued_at"):
        result.claim("tests")
        task = by_path[result.task_path]
        result.set_successful(
            task.call(*result.args_kwargs["args"], **result.args_kwargs["kwargs"])
        )
    return mail.outbox


def to_customers(outbox):
    return [each for each in outbox if "Auto-Submitted" not in each.extra_headers]


def to_staff(outbox):
    return [each for each in outbox if "Auto-Submitted" in each.extra_headers]


def test_a_staff_reply_mails_the_requester_and_cc_with_the_signed_reply_to(
    owner, teammate, account, technical, agent
):
    ticket = open_ticket(owner, account, technical, cc=[teammate.email.upper()])
    send_desk_mail()
    mail.outbox.clear()

    message = reply(ticket, agent, "Restarted it for you.", staff=True)
    sent = to_customers(send_desk_mail())

    assert len(sent) == 1
    email = sent[0]
    assert email.to == [owner.email, teammate.email]
    assert email.reply_to == [reply_address(ticket)]
    assert email.subject == f"[#{ticket.number}] Server will not start"
    assert "Restarted it for you." in email.body
    assert f"https://panel.example/support/{ticket.id}" in email.body
    assert email.extra_headers["Message-ID"] == message_id_header(message)
    first = ticket.messages.order_by("created_at").first()
    assert email.extra_headers["In-Reply-To"] == message_id_header(first)
    assert email.from_email == "Technical <support@desk.example>"


def test_internal_notes_are_mailed_to_nobody(owner, account, technical, agent):
    ticket = open_ticket(owner, account, technical)
    send_desk_mail()
    mail.outbox.clear()

    reply(ticket, agent, "Customer is on the old plan; do not refund.", staff=True, internal=True)

    assert send_desk_mail() == []
    assert not DBTaskResult.objects.filter(task_path=ticket_message_mail_send.module_path).exclude(
        status="SUCCESSFUL"
    )


def test_the_author_is_not_mailed_their_own_reply_but_their_teammate_is(
    owner, teammate, account, technical, agent
):
    ticket = open_ticket(owner, account, technical, cc=[teammate.email])
    mail.outbox.clear()
    DBTaskResult.objects.all().delete()

    reply(ticket, teammate, "Same on my side.", staff=False)
    outbox = send_desk_mail()

    assert [each.to for each in to_customers(outbox)] == [[owner.email]]
    # Nobody is assigned: the department's staff hear of it.
    (notice,) = to_staff(outbox)
    assert notice.to == [agent.email]
    assert "Same on my side." in notice.body
    assert notice.extra_headers["Auto-Submitted"] == "auto-generated"


def test_a_new_ticket_notifies_the_department_and_not_the_requester(
    owner, account, technical, agent, billing_agent
):
    open_ticket(owner, account, technical, body="World will not load.")

    outbox = send_desk_mail()

    assert to_customers(outbox) == []
    (notice,) = to_staff(outbox)
    assert notice.to == [agent.email]  # not Billing's staff
    assert "New ticket" in notice.body and "World will not load." in notice.body


def test_a_ticket_opened_by_staff_for_a_customer_mails_the_customer(
    owner, account, technical, agent
):
    ticket_open(
        requester=Requester(email=owner.email, user=owner, account=account),
        subject="Planned maintenance",
        body="We will move your server tonight.",
        department=technical,
        channel="web",
        actor=Actor(user=agent),
        by_staff=True,
    )

    (email,) = to_customers(send_desk_mail())

    assert email.to == [owner.email]
    assert "We will move your server tonight." in email.body


def test_an_assignment_notifies_the_assignee_but_not_who_took_it(owner, account, technical, agent):
    colleague = UserFactory(email="colleague@hosting.example", is_staff=True)
    technical.members.add(colleague)
    ticket = open_ticket(owner, account, technical)
    send_desk_mail()
    mail.outbox.clear()

    ticket_assign(ticket=ticket, assignee=colleague, actor=Actor(user=agent))
    (notice,) = send_desk_mail()
    assert notice.to == [colleague.email]
    assert f"https://panel.example/desk/tickets/{ticket.id}" in notice.body

    mail.outbox.clear()
    ticket_assign(ticket=ticket, assignee=agent, actor=Actor(user=agent))
    assert send_desk_mail() == []


def test_cc_takes_only_members_of_the_account(owner, account, technical, outsider):
    with pytest.raises(ValidationFailed) as refused:
        open_ticket(owner, account, technical, cc=[outsider.email])

    assert refused.value.details["fields"][0]["code"] == "not_a_member"
    assert outsider.email in refused.value.details["fields"][0]["message"]


def test_a_mail_answer_to_the_desks_message_id_threads_onto_the_ticket(
    owner, account, technical, agent
):
    ticket = open_ticket(owner, account, technical)
    message = reply(ticket, agent, "Which version?", staff=True)
    raw = (
        f"From: {owner.email}\r\nTo: help@elsewhere.example\r\nSubject: Re: it\r\n"
        f"Message-ID: <answer-1@mail.example>\r\nIn-Reply-To: {message_id_header(message)}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\n1.21, thanks.\r\n"
    ).encode()

    outcome = mail_receive(raw)

    assert (outcome.result, outcome.ticket) == ("replied", ticket)
    assert Message.objects.get(email_message_id="answer-1@mail.example").body == "1.21, thanks."


def test_teammates_copied_on_a_new_mail_are_kept_and_strangers_are_not(
    owner, teammate, account, technical, settings
):
    # Only authenticated mail opens a ticket in an account (issue 28).
    settings.SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = ["mx.desk.example"]
    domain = owner.email.rpartition("@")[2]
    raw = (
        f"Authentication-Results: mx.desk.example; dmarc=pass header.from={domain}\r\n"
        f"From: {owner.email}\r\nTo: support@desk.example\r\n"
        f"Cc: {teammate.email}, stranger@else.example\r\nSubject: Lag\r\n"
        "Message-ID: <new-1@mail.example>\r\nContent-Type: text/plain\r\n\r\nLag spikes.\r\n"
    ).encode()

    ticket = mail_receive(raw).ticket

    assert ticket.cc == [teammate.email]


def test_the_api_takes_cc_of_teammates_only(owner_api, teammate, outsider, technical):
    client = owner_api
    body = {"subject": "Lag", "body": "Spikes", "department": technical.id}

    refused = client.post("/v1/tickets", {**body, "cc": [outsider.email]}, format="json")
    made = client.post("/v1/tickets", {**body, "cc": [teammate.email]}, format="json")

    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["fields"][0]["code"] == "not_a_member"
    assert made.status_code == 201
    assert made.json()["data"]["ticket"]["cc"] == [teammate.email]
